// ollie/saveDocuments: the daemon asks to save the documents the model just edited (through
// workspace/applyEdit), so that the commands the model runs next see its edits on disk. Only those
// documents are saved; the user's other unsaved files are left alone.

import * as vscode from "vscode";
import { ResponseError } from "vscode-languageclient/node";
import { Daemon } from "./daemon";
import { parseSaveDocumentsParams } from "./lib/protocol";

async function save(raw: unknown): Promise<{ saved: string[] }> {
  const uris = parseSaveDocumentsParams(raw);
  if (!uris) throw new ResponseError(-32602, "Invalid params: uris: must be an array of document URIs");
  const saved: string[] = [];
  for (const uri of uris) {
    const path = vscode.Uri.parse(uri).fsPath;
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === path);
    if (!doc) continue;
    // save() answers false for a document that was not dirty: then the disk holds its text already.
    if ((await doc.save()) || !doc.isDirty) saved.push(uri);
  }
  return { saved };
}

/** Answer `ollie/saveDocuments` and announce it (`initializationOptions.saveDocuments`). */
export function serveSaveDocuments(daemon: Daemon): vscode.Disposable {
  return daemon.serve("ollie/saveDocuments", save, { saveDocuments: true });
}
