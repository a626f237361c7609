// Issue 19's editor tools, the editor half: answers the daemon's `ollie/editor/*` requests from
// VS Code's diagnostics, its language features (`vscode.execute*Provider`) and its tabs.

import * as vscode from "vscode";
import { ResponseError } from "vscode-languageclient/node";
import { Daemon } from "./daemon";
import {
  BadParams,
  capDiagnostics,
  EDITOR_METHODS,
  LocationLike,
  SymbolLike,
  WireDiagnostic,
  parseDiagnosticsParams,
  parsePositionParams,
  parseSymbolsParams,
  toOpenFiles,
  toWireLocations,
  toWireSymbol,
} from "./editorTools";
import { DiagnosticsFreshness } from "./lib/diagnosticsFreshness";
import { errorText } from "./lib/errors";

// The daemon gives up after a few seconds; answer before that with what the editor has.
const WAIT_MS = 2000;

function timeout<T>(ms: number, value: T): Promise<T> {
  return new Promise((resolve) => setTimeout(() => resolve(value), ms));
}

// Diagnostics are what the editor has now, at once. Files are never opened to get more: the daemon
// would then see them as open documents and send the model's edits of them to an unseen buffer
// instead of the disk. After an edit the daemon asks at once and, until an answer's `upToDate` names
// the files, again each settle delay (until its wait ends).
async function diagnostics(raw: unknown, freshness: DiagnosticsFreshness): Promise<{ diagnostics: WireDiagnostic[]; upToDate?: string[] }> {
  const paths = parseDiagnosticsParams(raw);
  const found: [vscode.Uri, readonly vscode.Diagnostic[]][] = paths
    ? paths.map((p) => [vscode.Uri.file(p), vscode.languages.getDiagnostics(vscode.Uri.file(p))])
    : vscode.languages.getDiagnostics().filter(([uri]) => uri.scheme === "file");
  const answer = { diagnostics: capDiagnostics(found.map(([uri, list]) => [uri.fsPath, list] as const)) };
  // Asked of the files an edit changed (the daemon's wait); not of every file, which may be thousands.
  if (!paths) return answer;
  const now = Date.now();
  const languages = openLanguages();
  const upToDate = found.filter(([uri]) => freshness.upToDate(uri.toString(), { language: languages.get(uri.toString()) }, now));
  return { ...answer, upToDate: upToDate.map(([uri]) => uri.fsPath) };
}

/** The language of each document the editor holds, by its URI. */
function openLanguages(): Map<string, string> {
  return new Map(vscode.workspace.textDocuments.map((doc) => [doc.uri.toString(), doc.languageId]));
}

/** Follow what changes the freshness of diagnostics: documents opened, edited and closed, diagnostics changed. */
function watchFreshness(freshness: DiagnosticsFreshness): vscode.Disposable[] {
  return [
    vscode.workspace.onDidOpenTextDocument((doc) => freshness.textChanged(doc.uri.toString(), Date.now())),
    vscode.workspace.onDidChangeTextDocument((event) => {
      if (event.contentChanges.length) freshness.textChanged(event.document.uri.toString(), Date.now());
    }),
    vscode.workspace.onDidCloseTextDocument((doc) => freshness.closed(doc.uri.toString())),
    vscode.languages.onDidChangeDiagnostics((event) => {
      const now = Date.now();
      const languages = openLanguages();
      for (const uri of event.uris) freshness.diagnosticsChanged(uri.toString(), languages.get(uri.toString()), now);
    }),
  ];
}

async function provider<T>(command: string, ...args: unknown[]): Promise<T | undefined> {
  const answer = Promise.resolve(vscode.commands.executeCommand<T>(command, ...args));
  const result = await Promise.race([answer, timeout(WAIT_MS, "timeout" as const)]);
  if (result === "timeout") {
    throw new ResponseError(-32603, `the editor's language servers gave no answer within ${WAIT_MS / 1000} s (still starting?)`);
  }
  return result;
}

async function locations(raw: unknown, command: string): Promise<{ locations: ReturnType<typeof toWireLocations> }> {
  const { path, position } = parsePositionParams(raw);
  const uri = vscode.Uri.file(path);
  // The provider command loads a file that is not open for the call only.
  const found = await provider<LocationLike[]>(command, uri, new vscode.Position(position.line, position.character));
  return { locations: toWireLocations(found) };
}

async function symbols(raw: unknown): Promise<{ symbols: ReturnType<typeof toWireSymbol>[] }> {
  const query = parseSymbolsParams(raw);
  const found = (await provider<SymbolLike[]>("vscode.executeWorkspaceSymbolProvider", query)) ?? [];
  return { symbols: found.map(toWireSymbol).filter((s) => s !== undefined) };
}

function openFiles(): { files: ReturnType<typeof toOpenFiles> } {
  const tabs: { uri: vscode.Uri; dirty: boolean }[] = [];
  for (const tab of vscode.window.tabGroups.all.flatMap((group) => group.tabs)) {
    const input = tab.input;
    if (input instanceof vscode.TabInputText) tabs.push({ uri: input.uri, dirty: tab.isDirty });
    else if (input instanceof vscode.TabInputTextDiff) tabs.push({ uri: input.modified, dirty: tab.isDirty });
  }
  return { files: toOpenFiles(tabs, vscode.window.activeTextEditor?.document.uri) };
}

/** Wrap a handler: bad params become `-32602`, any other failure a plain error the daemon passes to the model. */
function guarded(handler: (raw: unknown) => Promise<unknown>): (raw: unknown) => Promise<unknown> {
  return async (raw) => {
    try {
      return await handler(raw);
    } catch (err) {
      if (err instanceof ResponseError) throw err;
      if (err instanceof BadParams) throw new ResponseError(-32602, err.message);
      throw new ResponseError(-32603, errorText(err));
    }
  };
}

/** Answer the editor-tools requests and announce it (`initializationOptions.editorTools`). */
export function serveEditorTools(daemon: Daemon): vscode.Disposable[] {
  const announce = { editorTools: true };
  const freshness = new DiagnosticsFreshness();
  return [
    ...watchFreshness(freshness),
    daemon.serve(EDITOR_METHODS.diagnostics, guarded((raw) => diagnostics(raw, freshness)), announce),
    daemon.serve(EDITOR_METHODS.definition, guarded((raw) => locations(raw, "vscode.executeDefinitionProvider"))),
    daemon.serve(EDITOR_METHODS.references, guarded((raw) => locations(raw, "vscode.executeReferenceProvider"))),
    daemon.serve(EDITOR_METHODS.symbols, guarded(symbols)),
    daemon.serve(EDITOR_METHODS.openFiles, guarded(async () => openFiles())),
  ];
}
