import assert from "node:assert/strict";
import { test } from "node:test";
import {
  BadParams,
  MAX_DIAGNOSTICS,
  capDiagnostics,
  parseDiagnosticsParams,
  parsePositionParams,
  parseSymbolsParams,
  severityName,
  symbolKindName,
  toEditorPosition,
  toOpenFiles,
  toWireDiagnostic,
  toWireLocations,
  toWireSymbol,
} from "../../src/editorTools";

const file = (fsPath: string) => ({ scheme: "file", fsPath });
const span = (l1: number, c1: number, l2: number, c2: number) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });

test("a VS Code diagnostic becomes the wire's 1-based diagnostic with severity words", () => {
  const wire = toWireDiagnostic("/w/bad.ts", { range: span(2, 4, 2, 9), severity: 0, message: "Type 'string' is not assignable to type 'number'.", source: "ts", code: 2322 });
  assert.deepEqual(wire, { path: "/w/bad.ts", line: 3, column: 5, endLine: 3, endColumn: 10, severity: "error", message: "Type 'string' is not assignable to type 'number'.", source: "ts", code: "2322" });
  assert.deepEqual([0, 1, 2, 3, 9].map(severityName), ["error", "warning", "information", "hint", "error"]);
  const coded = toWireDiagnostic("/w/a.py", { range: span(0, 0, 0, 1), severity: 1, message: "m", code: { value: "E501" } });
  assert.equal(coded.code, "E501");
  assert.equal(coded.source, undefined, "no source key when the editor gave none");
});

test("wire positions are 1-based and editor positions 0-based, never negative", () => {
  assert.deepEqual(toEditorPosition(1, 1), { line: 0, character: 0 });
  assert.deepEqual(toEditorPosition(12, 7), { line: 11, character: 6 });
  assert.deepEqual(toEditorPosition(0, 0), { line: 0, character: 0 });
});

test("locations and location links become wire locations, non-file ones and repeats dropped", () => {
  const found = toWireLocations([
    { uri: file("/w/a.ts"), range: span(4, 2, 4, 8) },
    { targetUri: file("/w/b.ts"), targetRange: span(0, 0, 9, 1), targetSelectionRange: span(1, 9, 1, 12) },
    { uri: { scheme: "untitled", fsPath: "Untitled-1" }, range: span(0, 0, 0, 1) },
    { uri: file("/w/a.ts"), range: span(4, 2, 4, 8) },
  ]);
  assert.deepEqual(found, [
    { path: "/w/a.ts", line: 5, column: 3, endLine: 5, endColumn: 9 },
    { path: "/w/b.ts", line: 2, column: 10, endLine: 2, endColumn: 13 },
  ]);
  assert.deepEqual(toWireLocations(undefined), []);
});

test("workspace symbols carry a lower-case kind word and their container", () => {
  const symbol = toWireSymbol({ name: "greet", kind: 11, containerName: "app", location: { uri: file("/w/app.ts"), range: span(3, 16, 5, 1) } });
  assert.deepEqual(symbol, { name: "greet", kind: "function", path: "/w/app.ts", line: 4, column: 17, container: "app" });
  assert.deepEqual([4, 5, 12, 13, 21].map(symbolKindName), ["class", "method", "variable", "constant", "enum member"]);
  assert.equal(toWireSymbol({ name: "x", kind: 12, location: { uri: { scheme: "vscode-notebook-cell", fsPath: "" }, range: span(0, 0, 0, 1) } }), undefined);
});

test("open files: file tabs once each, dirty when any tab is, the focused one marked", () => {
  const files = toOpenFiles(
    [
      { uri: file("/w/a.ts"), dirty: false },
      { uri: file("/w/b.ts"), dirty: true },
      { uri: { scheme: "ollie-diff", fsPath: "/a.ts" }, dirty: false },
      { uri: file("/w/a.ts"), dirty: true },
    ],
    file("/w/b.ts"),
  );
  assert.deepEqual(files, [
    { path: "/w/a.ts", focused: false, dirty: true },
    { path: "/w/b.ts", focused: true, dirty: true },
  ]);
});

test("bad params name the field", () => {
  assert.equal(parseDiagnosticsParams({}), undefined);
  assert.deepEqual(parseDiagnosticsParams({ paths: ["/w/a.ts"] }), ["/w/a.ts"]);
  assert.throws(() => parseDiagnosticsParams({ paths: "a.ts" }), /paths: must be an array/);
  assert.throws(() => parseDiagnosticsParams({ paths: ["rel.ts"] }), (err: Error) => err instanceof BadParams && /paths\[0\]/.test(err.message));
  assert.deepEqual(parsePositionParams({ path: "/w/a.ts", line: 3, column: 5 }), { path: "/w/a.ts", position: { line: 2, character: 4 } });
  assert.throws(() => parsePositionParams({ path: "a.ts", line: 0, column: "x" }), /path: must be an absolute path; line: must be an integer >= 1; column/);
  assert.equal(parseSymbolsParams({ query: "" }), "");
  assert.throws(() => parseSymbolsParams({}), /query: must be a string/);
});

test("a diagnostics answer is capped, errors first, so a huge workspace cannot stall the daemon", () => {
  const d = (severity: number, message: string) => ({ range: span(0, 0, 0, 1), severity, message });
  // Each hint counts the times its message is read: only the ones kept are converted.
  let converted = 0;
  const hints = Array.from({ length: 200_000 }, (_, i) => ({
    range: span(0, 0, 0, 1),
    severity: 3,
    get message() {
      converted++;
      return `hint ${i}`;
    },
  }));
  const found = [
    ["/w/noisy.ts", hints],
    ["/w/a.ts", [d(1, "warn a"), d(0, "err a")]],
    ["/w/b.ts", [d(2, "info b"), d(0, "err b"), d(7, "odd severity counts as an error")]],
  ] as const;
  const capped = capDiagnostics(found);
  assert.equal(converted, MAX_DIAGNOSTICS - 5, "only the hints kept were converted, not all 200k");
  assert.equal(capped.length, MAX_DIAGNOSTICS);
  assert.deepEqual(capped.slice(0, 5).map((w) => w.message), ["err a", "err b", "odd severity counts as an error", "warn a", "info b"]);
  assert.equal(capped[5].message, "hint 0");
  assert.equal(capped[5].path, "/w/noisy.ts");
  assert.deepEqual(capDiagnostics(found, 2).map((w) => w.severity), ["error", "error"]);
  assert.deepEqual(capDiagnostics([["/w/a.ts", [d(1, "w"), d(0, "e")]]]).map((w) => w.message), ["e", "w"], "under the cap: all of them, errors first");
});
