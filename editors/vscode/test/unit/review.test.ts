import assert from "node:assert/strict";
import { test } from "node:test";
import { describeHunk, hunkAnchorLine, hunkAtLine, hunkKey, parseChanges, staleReason, undoFailureMessage, undoParams } from "../../src/review/hunks";
import { changedCounts, namedBuildOutput, planTurns, turnItems, turnPrompts, turnsPlaceholder } from "../../src/review/turns";

// Two hunks of one file, as `ollie/changes` lists them: line 2 replaced, and a line added after line 9.
const changes = {
  turn: 3,
  files: [
    {
      path: "app.py",
      status: "modified",
      binary: false,
      oldText: "a\nb\nc\n",
      newText: "a\nB\nc\n",
      hunks: [
        { oldStart: 2, oldLines: 1, newStart: 2, newLines: 1, lines: ["-b\n", "+B\n"] },
        { oldStart: 9, oldLines: 0, newStart: 10, newLines: 1, lines: ["+tail\n"] },
        { oldStart: 12, oldLines: 2, newStart: 12, newLines: 0, lines: ["-x\n", "-y\n"] },
      ],
    },
    { path: 42 },
    { path: "img.png", status: "added", binary: true, oldText: null, newText: null, hunks: "nope" },
  ],
};

test("ollie/changes parses, dropping malformed files", () => {
  const parsed = parseChanges(changes);
  assert.equal(parsed.turn, 3);
  assert.deepEqual(parsed.files.map((f) => f.path), ["app.py", "img.png"]);
  assert.equal(parsed.files[0].hunks.length, 3);
  assert.deepEqual(parsed.files[1], { path: "img.png", status: "added", binary: true, oldText: null, newText: null, added: 0, removed: 0, hunks: [], inEditor: false });
  assert.equal(parsed.more, 0);
  assert.deepEqual(parseChanges({ turn: null, files: [] }), { turn: null, files: [], more: 0 });
  assert.deepEqual(parseChanges("garbage"), { turn: null, files: [], more: 0 });
  // Past its bound the daemon lists a turn's first files and counts the rest; a count that is none is 0.
  assert.equal(parseChanges({ ...changes, more: 1400 }).more, 1400);
  assert.equal(parseChanges({ ...changes, more: -3 }).more, 0);
  assert.equal(parseChanges({ ...changes, more: "9" }).more, 0);
});

test("a hunk's actions sit on its first new line; a pure deletion on the line after it", () => {
  const [replace, add, del] = parseChanges(changes).files[0].hunks;
  assert.equal(hunkAnchorLine(replace, 20), 1);
  assert.equal(hunkAnchorLine(add, 20), 9);
  assert.equal(hunkAnchorLine(del, 20), 12);
  assert.equal(hunkAnchorLine(del, 5), 4, "clamped to the document's last line");
  assert.equal(hunkAtLine([replace, add, del], 9, 20), 1);
  assert.equal(hunkAtLine([replace, add, del], 12, 20), 2);
  assert.equal(hunkAtLine([replace, add, del], 5, 20), undefined);
  assert.equal(describeHunk(replace), "+1 −1 at line 2");
  assert.equal(describeHunk(del), "−2 at line 13");
});

test("hunk → undo params: 0-based hunk index, the review's turn and session", () => {
  assert.deepEqual(undoParams({ session: "s1", turn: 3, path: "app.py" }, 1), { session: "s1", turn: 3, path: "app.py", hunk: 1 });
  assert.deepEqual(undoParams({ path: "app.py", turn: null }), { path: "app.py" }, "no hunk: the whole file; no turn: the last");
  assert.deepEqual(undoParams({ session: "s1", turn: 2, path: "a" }, 0), { session: "s1", turn: 2, path: "a", hunk: 0 });
});

test("a hunk's key survives other hunks being undone (their new lines shift, their old lines do not)", () => {
  const [, add] = parseChanges(changes).files[0].hunks;
  assert.equal(hunkKey(add), hunkKey({ ...add, newStart: 9 }));
  assert.notEqual(hunkKey(add), hunkKey({ ...add, lines: ["+other\n"] }));
});

test("a stale undo is said plainly, naming the file", () => {
  const stale = undoFailureMessage("app.py", { code: -32003, message: "stale: app.py: the editor's text changed since this change; undo refused" });
  assert.match(stale, /cannot undo the change to app\.py: the file changed since this turn/);
  assert.match(stale, /Your edits are kept/);
  assert.doesNotMatch(stale, /stale:|undo refused\)/);
  assert.equal(staleReason("stale: app.py: edited since; undo refused"), "app.py: edited since", "the chat's short form");
  assert.equal(undoFailureMessage("a", { code: -32602, message: "Invalid params: session: a turn is running" }), "Ollie: undo of a failed: Invalid params: session: a turn is running");
});

test("rewind offers turns newest first, each described by the prompt that started it", () => {
  const messages = [
    { role: "user", content: "<editor-context>\nFile: a.py (python)\n</editor-context>\n\nFix the bug\nplease", turn: 1 },
    { role: "assistant", content: "done" },
    // Injected into the turn: a user message that starts none (it made every turn "Turn N" alone).
    { role: "user", content: "and the docs" },
    { role: "user", content: "Add tests", turn: 2 },
  ];
  assert.deepEqual([...turnPrompts(messages)], [[1, "Fix the bug\nplease"], [2, "Add tests"]]);
  const items = turnItems(2, turnPrompts(messages), new Map([[1, 2], [2, 0]]));
  assert.deepEqual(items, [
    { turn: 2, label: "Turn 2", description: "Add tests · changed no files" },
    { turn: 1, label: "Turn 1", description: "Fix the bug · changed 2 files" },
  ]);
  // The counts, from the history's marks (a turn without one changed none; a mark of no such turn, or malformed, is none).
  const marked = [{ role: "assistant", content: "done", turnChanges: { turn: 1, files: 2 } }, { turnChanges: { turn: 9, files: 1 } },
    { turnChanges: { turn: 2, files: "3" } }, null];
  assert.deepEqual([...changedCounts(marked, 2)], [[1, 2], [2, 0]]);
  // A turn whose count is not known (its end's diff failed, an older log) may have changed files: never "no files".
  const unknown = changedCounts([...marked, { turnChanges: { turn: 2, unknown: true } }], 2);
  assert.deepEqual([...unknown], [[1, 2], [2, -1]]);
  assert.equal(turnItems(2, new Map(), unknown)[0].description, "changes unknown");
  // A turn that changed the plan: a rewind puts it back, so not "changed no files" as if rewinding it did nothing.
  const plans = planTurns([...marked, { turnChanges: { turn: 2, files: 0, plan: true } }, { turnChanges: { turn: 3, plan: "yes" } }]);
  assert.deepEqual([...plans], [2]);
  assert.deepEqual(turnItems(2, new Map(), new Map([[1, 2], [2, 0]]), new Set([1, 2])).map((i) => i.description), ["changed the plan, no files", "changed 2 files, and the plan"]);
  // Turn 1's prompt compacted away: its description is what it changed alone.
  const unlabelled = turnItems(3, new Map([[2, "two"], [3, "three"]]), new Map([[3, 1]]));
  assert.deepEqual(unlabelled.map((i) => i.description), ["three · changed 1 file", "two", ""]);
  // A shared session's prompts are a teammate's: her `$(check)` is no icon in the pick, her U+202E reverses nothing.
  assert.equal(turnItems(1, new Map([[1, "$(check) approved \u202efdp.exe"]]), new Map([[1, 0]]))[0].description,
    "\\$(check) approved \\u202efdp.exe · changed no files");
});

test("\"Turn 3\" typed in a long session's rewind pick ranks turn 3 first, before turns 30-37", () => {
  const prompts = new Map(Array.from({ length: 37 }, (_, i) => [i + 1, i === 2 ? "Fix the off-by-one in the pager" : `Go on ${i + 1}`]));
  const items = turnItems(37, prompts, new Map());
  // As VS Code's quick pick ranks a filter's matches (compareAnything on the labels): those whose label starts with
  // what was typed first, the shorter of two such first, the list's order otherwise.
  const typed = "turn 3";
  const starts = (label: string): number => (label.toLowerCase().startsWith(typed) ? 0 : 1);
  const ranked = items.filter((i) => i.label.toLowerCase().includes(typed) || i.description.toLowerCase().includes(typed))
    .sort((a, b) => starts(a.label) - starts(b.label) || (starts(a.label) ? 0 : a.label.length - b.label.length));
  assert.deepEqual(ranked.map((i) => i.turn), [3, 37, 36, 35, 34, 33, 32, 31, 30]);
});

test("the rewind pick's placeholder names a turn the session has, and counts one turn as one", () => {
  assert.equal(turnsPlaceholder(37), '37 turns, newest first: type to filter (e.g. "Turn 3", or a word of its prompt)');
  assert.equal(turnsPlaceholder(2), '2 turns, newest first: type to filter (e.g. "Turn 2", or a word of its prompt)');
  assert.equal(turnsPlaceholder(1), '1 turn: type to filter (e.g. "Turn 1", or a word of its prompt)');
});

test("a rewind's notice names the build output it put back as the engine's /rewind does: 3, then how many more", () => {
  // It said "and 1 build output file", naming none.
  assert.equal(namedBuildOutput([]), "");
  assert.equal(namedBuildOutput(["__pycache__/a.pyc"]), "__pycache__/a.pyc");
  assert.equal(namedBuildOutput(["a.pyc", "b.pyc", "c.pyc", "d.pyc", "e.pyc"]), "a.pyc, b.pyc, c.pyc and 2 more");
  // Red team 53: the names are the files a step made where git ignores them; the notice made one a command link
  // (VS Code runs `command:` links in a notification at a click) and let its U+202E reverse the rest.
  const link = "__pycache__/[Show restored files](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22id%5Cn%22%7D)";
  assert.equal(namedBuildOutput([link, "x\u202ecyp.pyc"]),
    "__pycache__/[Show restored files]\u200b(command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22id%5Cn%22%7D), x\\u202ecyp.pyc");
});
