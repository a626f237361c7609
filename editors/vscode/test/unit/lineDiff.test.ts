import assert from "node:assert/strict";
import { test } from "node:test";
import { lineDiff, splitLines } from "../../src/lib/lineDiff";

const lines = (n: number, prefix = "line") => Array.from({ length: n }, (_, i) => `${prefix} ${i + 1}`).join("\n") + "\n";

test("a replaced line shows as removed then added, with context and both line numbers", () => {
  const { hunks, added, removed } = lineDiff("def greet():\n    return 'hi'\n", "def greet():\n    return 'hello'\n");
  assert.deepEqual([added, removed], [1, 1]);
  assert.equal(hunks.length, 1);
  assert.deepEqual(hunks[0].lines, [
    { kind: "context", text: "def greet():", oldLine: 1, newLine: 1 },
    { kind: "removed", text: "    return 'hi'", oldLine: 2 },
    { kind: "added", text: "    return 'hello'", newLine: 2 },
  ]);
});

test("far-apart changes are separate hunks with three lines of context; line numbers follow insertions", () => {
  const before = lines(30);
  const after = before.replace("line 5\n", "line 5\ninserted\n").replace("line 25\n", "line twenty-five\n");
  const { hunks, added, removed } = lineDiff(before, after);
  assert.deepEqual([added, removed], [2, 1]);
  assert.equal(hunks.length, 2);
  assert.deepEqual([hunks[0].oldStart, hunks[0].newStart], [3, 3]);
  assert.deepEqual(hunks[0].lines.map((l) => l.kind), ["context", "context", "context", "added", "context", "context", "context"]);
  const changed = hunks[1].lines.find((l) => l.kind === "added");
  assert.deepEqual(changed, { kind: "added", text: "line twenty-five", newLine: 26 });
  assert.equal(hunks[1].lines.find((l) => l.kind === "removed")?.oldLine, 25);
});

test("added and deleted files, no change, CRLF and a missing final newline", () => {
  assert.deepEqual(lineDiff(null, "a\nb\n").hunks[0].lines.map((l) => [l.kind, l.newLine]), [["added", 1], ["added", 2]]);
  assert.deepEqual(lineDiff("a\n", null), { hunks: [{ oldStart: 1, newStart: 1, lines: [{ kind: "removed", text: "a", oldLine: 1 }] }], added: 0, removed: 1 });
  assert.deepEqual(lineDiff("same\n", "same\n"), { hunks: [], added: 0, removed: 0 });
  assert.deepEqual(splitLines("a\r\nb"), ["a", "b"]);
  assert.deepEqual(splitLines(""), []);
});

test("a huge rewrite falls back to all removed then all added instead of a quadratic table", () => {
  // Every other line is the same in both (not the first or last): a table would keep those 1,500 as context and
  // change 1,501 lines each way; the fallback keeps none.
  const alternating = (prefix: string) => Array.from({ length: 3001 }, (_, i) => (i % 2 ? "same" : `${prefix} ${i}`)).join("\n") + "\n";
  const { added, removed } = lineDiff(alternating("old"), alternating("new"));
  assert.deepEqual([added, removed], [3001, 3001]);
});
