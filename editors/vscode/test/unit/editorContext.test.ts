import assert from "node:assert/strict";
import { test } from "node:test";
import { buildEditorContext, contextParam, describeEditorContext, promptLabels } from "../../src/lib/editorContext";

const at = (line: number, character: number) => ({ line, character });

test("a selection sends the file, its range and the selected text", () => {
  const context = buildEditorContext({
    uri: "file:///w/src/app.py",
    languageId: "python",
    selectionStart: at(2, 4),
    selectionEnd: at(5, 0),
    selectedText: "def f():\n    pass\n",
  });
  assert.deepEqual(context, {
    uri: "file:///w/src/app.py",
    languageId: "python",
    range: { start: { line: 2, character: 4 }, end: { line: 5, character: 0 } },
    selection: "def f():\n    pass\n",
  });
});

test("an empty selection sends only the file", () => {
  const context = buildEditorContext({ uri: "file:///w/a.ts", selectionStart: at(3, 1), selectionEnd: at(3, 1), selectedText: "" });
  assert.deepEqual(context, { uri: "file:///w/a.ts" });
});

test("the label uses 1-based lines and skips a last line selected only up to column 0", () => {
  assert.equal(describeEditorContext({ uri: "file:///w/a%20b.py" }), "a b.py");
  assert.equal(describeEditorContext({ uri: "note://readme", mcpServer: "t" }), "t: note://readme");
  assert.equal(describeEditorContext({ uri: "file:///w/a.py", range: { start: at(2, 4), end: at(5, 0) } }), "a.py:3-5");
  assert.equal(describeEditorContext({ uri: "file:///w/a.py", range: { start: at(2, 0), end: at(2, 9) } }), "a.py:3");
});

test("a label draws another's names escaped: a workspace file's, an MCP server's resource, an image's", () => {
  // Red team 53: the chip of a prompt taken back from the queue, its bubble in the chat and the Ask box named a file
  // `a<U+202E>txt.exe` (the model's, the workspace's) reversed, and a hostile server's resource URI with its line breaks.
  assert.equal(describeEditorContext({ uri: "file:///w/a%E2%80%AEtxt.exe", range: { start: at(0, 0), end: at(0, 3) } }),
    "a\\u202etxt.exe:1");
  assert.deepEqual(promptLabels([{ uri: "note://r\n  ok\u202e", mcpServer: "s" }], [{ name: "x\u202egnp.png", data: "" }]),
    ["s: note://r\\x0a  ok\\u202e", "image: x\\u202egnp.png"]);
});

test("the label of a selection too long to send whole names the lines the daemon keeps", () => {
  // 28 characters a line: the daemon's 20,000-character cut keeps 714 whole lines (tests/lsp/test_context_items.py).
  const rows = Array.from({ length: 200_000 }, (_, n) => `row ${String(n + 1).padStart(6, "0")} of the big table`);
  const whole = { uri: "file:///w/big.txt", range: { start: at(0, 0), end: at(200_000, 0) } };
  assert.equal(describeEditorContext({ ...whole, selection: rows.join("\n") + "\n" }), "big.txt:1-714");
  assert.equal(describeEditorContext({ ...whole, range: { start: at(4, 0), end: at(6, 0) }, selection: "a\nb\n" }),
    "big.txt:5-6");
  assert.equal(describeEditorContext({ ...whole, selection: "é".repeat(25_000) }), "big.txt:1");
});

test("a prompt's context items go as one object (any daemon) or as the list", () => {
  const a = { uri: "file:///w/a.py" };
  const b = { uri: "file:///w/b.py", range: { start: at(0, 0), end: at(1, 0) } };
  assert.equal(contextParam([]), undefined);
  assert.deepEqual(contextParam([a]), a);
  assert.deepEqual(contextParam([a, b]), [a, b]);
  assert.deepEqual([a, b].map(describeEditorContext), ["a.py", "b.py:1"]);
});
