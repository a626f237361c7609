// Issue 19's editor tools, the pure half: params of the daemon's `ollie/editor/*` requests and
// VS Code's answers (diagnostics, locations, symbols) turned into the wire shapes (1-based lines
// and columns, absolute paths). No `vscode` import here, so node:test runs it; editorToolsServe.ts
// binds it to the editor.

import { isObject } from "./lib/json";

/** The server→client requests of the editor-tools contract. */
export const EDITOR_METHODS = {
  diagnostics: "ollie/editor/diagnostics",
  definition: "ollie/editor/definition",
  references: "ollie/editor/references",
  symbols: "ollie/editor/symbols",
  openFiles: "ollie/editor/openFiles",
} as const;

export type Severity = "error" | "warning" | "information" | "hint";

export interface WireDiagnostic {
  path: string;
  line: number;
  column: number;
  endLine?: number;
  endColumn?: number;
  severity: Severity;
  message: string;
  source?: string;
  code?: string;
}

export interface WireLocation {
  path: string;
  line: number;
  column: number;
  endLine?: number;
  endColumn?: number;
}

export interface WireSymbol {
  name: string;
  kind: string;
  path: string;
  line: number;
  column: number;
  container?: string;
}

export interface WireOpenFile {
  path: string;
  focused: boolean;
  dirty: boolean;
}

/** A 0-based editor position (vscode.Position's shape). */
export interface Pos {
  line: number;
  character: number;
}

/** A 0-based editor range (vscode.Range's shape). */
export interface Span {
  start: Pos;
  end: Pos;
}

/** The parts of a vscode.Uri used here. */
export interface UriLike {
  scheme: string;
  fsPath: string;
}

/** The parts of a vscode.Diagnostic used here (severity: VS Code's enum, Error = 0 ... Hint = 3). */
export interface DiagnosticLike {
  range: Span;
  severity: number;
  message: string;
  source?: string;
  code?: string | number | { value: string | number };
}

/** A vscode.Location or vscode.LocationLink. */
export type LocationLike = { uri: UriLike; range: Span } | { targetUri: UriLike; targetRange: Span; targetSelectionRange?: Span };

/** The parts of a vscode.SymbolInformation used here. */
export interface SymbolLike {
  name: string;
  kind: number;
  containerName?: string;
  location: { uri: UriLike; range: Span };
}

/** Params that cannot be used: answered `-32602` with this message (it names the field). */
export class BadParams extends Error {}

const SEVERITIES: Severity[] = ["error", "warning", "information", "hint"];

// vscode.SymbolKind, in enum order (File = 0).
const SYMBOL_KINDS = [
  "file", "module", "namespace", "package", "class", "method", "property", "field", "constructor", "enum",
  "interface", "function", "variable", "constant", "string", "number", "boolean", "array", "object", "key",
  "null", "enum member", "struct", "event", "operator", "type parameter",
];

/** The wire's lower-case word for a vscode.SymbolKind. */
export function symbolKindName(kind: number): string {
  return SYMBOL_KINDS[kind] ?? "symbol";
}

/** The wire's severity word for a vscode.DiagnosticSeverity (unknown values count as errors). */
export function severityName(severity: number): Severity {
  return SEVERITIES[severity] ?? "error";
}

/** A 1-based wire line/column as a 0-based editor position (never negative). */
export function toEditorPosition(line: number, column: number): Pos {
  return { line: Math.max(0, line - 1), character: Math.max(0, column - 1) };
}

/** A 0-based editor range as 1-based wire fields. */
export function toWireSpan(range: Span): { line: number; column: number; endLine: number; endColumn: number } {
  return { line: range.start.line + 1, column: range.start.character + 1, endLine: range.end.line + 1, endColumn: range.end.character + 1 };
}

function codeText(code: DiagnosticLike["code"]): string | undefined {
  if (code === undefined || code === null) return undefined;
  return String(typeof code === "object" ? code.value : code);
}

/** One editor diagnostic of the file at `path` as the wire's diagnostic. */
export function toWireDiagnostic(path: string, diagnostic: DiagnosticLike): WireDiagnostic {
  const wire: WireDiagnostic = { path, ...toWireSpan(diagnostic.range), severity: severityName(diagnostic.severity), message: diagnostic.message };
  if (diagnostic.source) wire.source = diagnostic.source;
  const code = codeText(diagnostic.code);
  if (code) wire.code = code;
  return wire;
}

/** The most diagnostics one answer carries: a workspace with 200k of them must not stall the daemon. */
export const MAX_DIAGNOSTICS = 500;

/** At most `max` diagnostics of the files found, errors first, then warnings, information, hints (each in file order). */
export function capDiagnostics(
  found: readonly (readonly [string, readonly DiagnosticLike[]])[],
  max: number = MAX_DIAGNOSTICS,
): WireDiagnostic[] {
  const out: WireDiagnostic[] = [];
  // One pass per severity, converting only what is kept: 200k entries cost four cheap scans, no 200k objects.
  for (let rank = 0; rank < SEVERITIES.length && out.length < max; rank++) {
    for (const [path, list] of found) {
      for (const diagnostic of list) {
        if (SEVERITIES.indexOf(severityName(diagnostic.severity)) !== rank) continue;
        out.push(toWireDiagnostic(path, diagnostic));
        if (out.length >= max) return out;
      }
    }
  }
  return out;
}

/** A Location or LocationLink as the wire's location, or undefined for a non-file one (untitled, virtual). */
export function toWireLocation(location: LocationLike): WireLocation | undefined {
  const [uri, range] = "targetUri" in location ? [location.targetUri, location.targetSelectionRange ?? location.targetRange] : [location.uri, location.range];
  return uri.scheme === "file" ? { path: uri.fsPath, ...toWireSpan(range) } : undefined;
}

/** Locations without duplicates (several providers often answer the same place) and non-file ones. */
export function toWireLocations(locations: readonly LocationLike[] | undefined): WireLocation[] {
  const seen = new Set<string>();
  const out: WireLocation[] = [];
  for (const location of locations ?? []) {
    const wire = toWireLocation(location);
    const key = wire && `${wire.path}:${wire.line}:${wire.column}`;
    if (!wire || !key || seen.has(key)) continue;
    seen.add(key);
    out.push(wire);
  }
  return out;
}

/** A workspace symbol as the wire's symbol, or undefined outside the file system. */
export function toWireSymbol(symbol: SymbolLike): WireSymbol | undefined {
  const { uri, range } = symbol.location;
  if (uri.scheme !== "file") return undefined;
  const wire: WireSymbol = { name: symbol.name, kind: symbolKindName(symbol.kind), path: uri.fsPath, line: range.start.line + 1, column: range.start.character + 1 };
  if (symbol.containerName) wire.container = symbol.containerName;
  return wire;
}

function isAbsolute(path: string): boolean {
  return path.startsWith("/") || /^[A-Za-z]:[\\/]/.test(path);
}

/** `ollie/editor/diagnostics` params: the absolute paths asked for, or undefined for every file. */
export function parseDiagnosticsParams(raw: unknown): string[] | undefined {
  const paths = isObject(raw) ? raw.paths : undefined;
  if (paths === undefined || paths === null) return undefined;
  if (!Array.isArray(paths)) throw new BadParams("Invalid params: paths: must be an array of absolute paths");
  paths.forEach((path, index) => {
    if (typeof path !== "string" || !isAbsolute(path)) throw new BadParams(`Invalid params: paths[${index}]: must be an absolute path`);
  });
  return paths as string[];
}

/** `ollie/editor/definition` / `references` params: an absolute path and a 1-based line and column. */
export function parsePositionParams(raw: unknown): { path: string; position: Pos } {
  const params = isObject(raw) ? raw : {};
  const problems: string[] = [];
  if (typeof params.path !== "string" || !isAbsolute(params.path)) problems.push("path: must be an absolute path");
  for (const field of ["line", "column"]) {
    const value = params[field];
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1) problems.push(`${field}: must be an integer >= 1`);
  }
  if (problems.length) throw new BadParams(`Invalid params: ${problems.join("; ")}`);
  return { path: params.path as string, position: toEditorPosition(params.line as number, params.column as number) };
}

/** `ollie/editor/symbols` params: the query (may be empty). */
export function parseSymbolsParams(raw: unknown): string {
  const query = isObject(raw) ? raw.query : undefined;
  if (typeof query !== "string") throw new BadParams("Invalid params: query: must be a string");
  return query;
}

/** Open files from the editor's tabs: file tabs only, once each, the focused one marked. */
export function toOpenFiles(tabs: readonly { uri: UriLike; dirty: boolean }[], focused: UriLike | undefined): WireOpenFile[] {
  const byPath = new Map<string, WireOpenFile>();
  for (const { uri, dirty } of tabs) {
    if (uri.scheme !== "file") continue;
    const before = byPath.get(uri.fsPath);
    byPath.set(uri.fsPath, { path: uri.fsPath, focused: false, dirty: dirty || (before?.dirty ?? false) });
  }
  if (focused?.scheme === "file") {
    const entry = byPath.get(focused.fsPath) ?? { path: focused.fsPath, focused: false, dirty: false };
    byPath.set(focused.fsPath, { ...entry, focused: true });
  }
  return [...byPath.values()];
}
