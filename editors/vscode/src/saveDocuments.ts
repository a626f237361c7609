// ollie/saveDocuments: the daemon asks to save the documents the model just edited (through
// workspace/applyEdit), so that the commands the model runs next see its edits on disk. Only those
// documents are saved; the user's other unsaved files are left alone. One whose file changed on disk
// since the document last agreed with it (the user's `git checkout`, a formatter, another editor) is
// not saved (`changedOnDisk`): that change is not in the buffer, and the save would write over it.

import * as vscode from "vscode";
import { ResponseError } from "vscode-languageclient/node";
import { Daemon } from "./daemon";
import { fileDigest, holdsText, stampedDigest } from "./lib/fileDigest";
import { parseSaveDocumentsParams } from "./lib/protocol";

// Document URI -> its file's mtime and content digest when the document last agreed with the disk (opened, saved,
// reloaded); neither when it was never seen to agree: the disk held other text by the time it was looked at.
const agreed = new Map<string, { time?: number; digest?: string }>();

async function mtime(uri: vscode.Uri): Promise<number | undefined> {
  try {
    return (await vscode.workspace.fs.stat(uri)).mtime;
  } catch {
    return undefined; // gone (or unreadable): no file to agree with
  }
}

async function note(doc: vscode.TextDocument): Promise<void> {
  if (doc.uri.scheme !== "file" || doc.isDirty) return;
  // Noted only while the file holds the text this event tells (else the last note stands): the first keystroke's change
  // comes before VS Code marks the document dirty, and a busy extension host hears of it (or of a revert, the open)
  // after a `git checkout` made just then: that checkout must not pass for what the document read.
  const { stamp: time, digest, otherText } = await stampedDigest(() => mtime(doc.uri), doc.uri.fsPath, doc.getText());
  if (otherText) {
    // Never seen to agree (the open heard of after the checkout): the disk holds what the document did not read.
    if (!agreed.has(doc.uri.toString())) agreed.set(doc.uri.toString(), {});
    return;
  }
  if (time === undefined) agreed.delete(doc.uri.toString());
  else agreed.set(doc.uri.toString(), { time, digest });
}

/** Whether the file changed since the document last agreed with it: a new mtime with the very same bytes (`sed -i`
 * that matched nothing, a formatter with nothing to do) is no change, nothing on disk would be lost. Nor is a file that
 * holds the document's own text: a rewind (or its undo) put the same text on the disk and in the buffer, which was
 * left unsaved, asking her to save a file that already was what the buffer shows (VS Code's save compares the bytes
 * too, and writes them without a conflict). */
async function changedOnDisk(doc: vscode.TextDocument): Promise<boolean> {
  const known = agreed.get(doc.uri.toString());
  const time = await mtime(doc.uri);
  if (known === undefined || (known.time !== undefined && time === known.time)) return false;
  if (known.digest === undefined || (await fileDigest(doc.uri.fsPath)) !== known.digest) {
    return !(await holdsText(doc.uri.fsPath, doc.getText()));
  }
  known.time = time ?? known.time;
  return false;
}

async function save(raw: unknown): Promise<{ saved: string[]; changedOnDisk: string[] }> {
  const uris = parseSaveDocumentsParams(raw);
  if (!uris) throw new ResponseError(-32602, "Invalid params: uris: must be an array of document URIs");
  const saved: string[] = [];
  const changed: string[] = [];
  for (const uri of uris) {
    const path = vscode.Uri.parse(uri).fsPath;
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === path);
    if (!doc) continue;
    if (await changedOnDisk(doc)) {
      changed.push(uri);
      continue;
    }
    // save() answers false for a document that was not dirty: then the disk holds its text already.
    if ((await doc.save()) || !doc.isDirty) saved.push(uri);
  }
  return { saved, changedOnDisk: changed };
}

/** Answer `ollie/saveDocuments` and announce it (`initializationOptions.saveDocuments`). */
export function serveSaveDocuments(daemon: Daemon): vscode.Disposable {
  void Promise.all(vscode.workspace.textDocuments.map(note));
  return vscode.Disposable.from(
    daemon.serve("ollie/saveDocuments", save, { saveDocuments: true }),
    vscode.workspace.onDidOpenTextDocument(note),
    vscode.workspace.onDidSaveTextDocument(note),
    // A clean document after a change: VS Code reloaded it from the disk (or the user undid back to it).
    vscode.workspace.onDidChangeTextDocument((e) => void note(e.document)),
    // No forgetting at onDidCloseTextDocument: VS Code fires it (and a new open) when a document's language changes,
    // unsaved edits and all, and a dirty document is never noted again; a document opened clean is noted afresh.
  );
}
