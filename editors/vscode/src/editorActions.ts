// What the chat's code blocks do in the editor: copy, insert at the cursor, apply to a file.

import * as path from "node:path";
import * as vscode from "vscode";
import { isInsideWorkspace, workspaceRelative } from "./lib/workspacePath";

/**
 * The URI of `file`: absolute as is, relative to `base` (the session's directory: the model writes paths relative to
 * it, in a multi-root window maybe not the first folder), else to the first workspace folder; undefined with neither.
 */
export function workspaceUri(file: string, base?: string): vscode.Uri | undefined {
  if (path.isAbsolute(file)) return vscode.Uri.file(file);
  if (base) return vscode.Uri.file(path.join(base, file));
  const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === "file");
  return folder ? vscode.Uri.joinPath(folder.uri, file) : undefined;
}

/** Whether `file` (as `workspaceUri` takes it) is open in the editor with unsaved changes. */
export function unsavedInEditor(file: string, base?: string): boolean {
  const uri = workspaceUri(file, base)?.toString();
  return vscode.workspace.textDocuments.some((doc) => doc.uri.toString() === uri && doc.isDirty);
}

function targetEditor(): vscode.TextEditor | undefined {
  // The chat has the focus when its button is pressed: the last active text editor is the target.
  return vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
}

/** Whether the file of `uri` is inside a workspace folder once symlinks are resolved (non-file URIs: per VS Code). */
export async function isInsideWorkspaceUri(uri: vscode.Uri): Promise<boolean> {
  if (uri.scheme !== "file") return vscode.workspace.getWorkspaceFolder(uri) !== undefined;
  return isInsideWorkspace(uri.fsPath, fileFolders());
}

function fileFolders(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
}

/** Copy the code, insert it at the cursor (replacing the selection), or apply it as the whole text of `file` (else the active editor's file). */
export async function runCodeAction(action: "copy" | "insert" | "apply", code: string, file?: string, base?: string): Promise<void> {
  if (action === "copy") {
    await vscode.env.clipboard.writeText(code);
    vscode.window.setStatusBarMessage("$(copy) Ollie: code copied", 2000);
    return;
  }
  if (action === "insert") {
    const editor = targetEditor();
    if (!editor) throw new Error("open a file to insert the code into");
    await vscode.window.showTextDocument(editor.document, editor.viewColumn);
    await editor.edit((edit) => edit.replace(editor.selection, code));
    return;
  }
  const uri = file ? workspaceUri(file, base) : targetEditor()?.document.uri;
  if (!uri) throw new Error("open the file to apply the code to (or name it in the code block)");
  // Resolved first: a workspace symlink to a file outside would otherwise pass for a workspace file.
  if (!(await isInsideWorkspaceUri(uri))) throw new Error(`${uri.fsPath} is outside the workspace: not applied`);
  // A fence names no hidden part, but a workspace link may lead to one (`cfg` -> `.git/config`, which tool code may
  // not write and git runs programs from): the model's named file is never written there.
  const real = file ? await workspaceRelative(uri.fsPath, fileFolders()) : undefined;
  if (real?.split(path.sep).some((part) => part.startsWith("."))) throw new Error(`${file} leads to ${real}, a hidden file: not applied`);
  let document: vscode.TextDocument;
  try {
    document = await vscode.workspace.openTextDocument(uri);
  } catch {
    // A file that does not exist yet: create it with the code.
    const create = new vscode.WorkspaceEdit();
    create.createFile(uri, { ignoreIfExists: true });
    await vscode.workspace.applyEdit(create);
    document = await vscode.workspace.openTextDocument(uri);
  }
  const whole = new vscode.Range(document.positionAt(0), document.positionAt(document.getText().length));
  const edit = new vscode.WorkspaceEdit();
  // The edit lands in the editor's undo history, unsaved: the user reviews it, then saves or undoes.
  edit.replace(uri, whole, code, { label: "Ollie: apply code block", needsConfirmation: false });
  if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`could not apply the code to ${vscode.workspace.asRelativePath(uri)}`);
  await vscode.window.showTextDocument(document, { preview: false });
}
