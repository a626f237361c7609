import assert from "node:assert/strict";
import { test } from "node:test";
import { changedFilesOf, mergeChanges, parsePermissionRequest } from "../../src/lib/permission";

test("an ollie/permission request: the session, the step with its diff preview, what Allow always covers", () => {
  const raw = {
    session: "1-a",
    step: { id: "c1/1", kind: "edit", title: "Edit app.py", locations: [{ path: "app.py" }], diff: { path: "app.py", oldText: "a\n", newText: "b\n" } },
    options: [{ id: "allow_once", name: "Allow once" }],
    always: "edit steps",
  };
  assert.deepEqual(parsePermissionRequest(raw), {
    session: "1-a",
    step: { id: "c1/1", kind: "edit", title: "Edit app.py", locations: [{ path: "app.py" }], diff: { path: "app.py", oldText: "a\n", newText: "b\n" } },
    always: "edit steps",
  });
  const command = parsePermissionRequest({ session: "s", step: { id: "c2", kind: "execute", title: "Run `pytest -q`", locations: [], prefix: "pytest" } });
  assert.equal(command?.step.prefix, "pytest");
  assert.equal(command?.always, "");
  assert.equal(parsePermissionRequest({ session: "s", step: { id: "c" } }), undefined, "a step needs a title");
  assert.equal(parsePermissionRequest({ step: { id: "c", title: "t" } }), undefined, "and a session");
});

test("ollie/changes files get +/- counts from their hunks (or the texts), unsaved editor edits marked; an undo marks what left the list", () => {
  const raw = {
    turn: 2,
    files: [
      { path: "app.py", status: "modified", oldText: "a\n", newText: "b\nc\n", hunks: [{ oldStart: 1, oldLines: 1, newStart: 1, newLines: 2, lines: ["-a\n", "+b\n", "+c\n"] }] },
      { path: "new.txt", status: "added", oldText: null, newText: "x\ny\n" },
      { path: "open.py", status: "modified", oldText: "a\n", newText: "b\n", hunks: [{ oldStart: 1, oldLines: 1, newStart: 1, newLines: 1, lines: ["-a\n", "+b\n"] }], inEditor: true },
      { nope: true },
    ],
  };
  const { turn, files } = changedFilesOf(raw);
  assert.equal(turn, 2);
  assert.deepEqual(files, [
    { path: "app.py", status: "modified", added: 2, removed: 1 },
    { path: "new.txt", status: "added", added: 2, removed: 0 },
    { path: "open.py", status: "modified", added: 1, removed: 1, inEditor: true },
  ]);
  assert.deepEqual(changedFilesOf({ turn: null, files: [] }), { turn: null, files: [] });
  const after = mergeChanges(files.slice(0, 2), [{ path: "new.txt", status: "added", added: 1, removed: 0 }]);
  assert.deepEqual(after, [
    { path: "app.py", status: "modified", added: 2, removed: 1, undone: true },
    { path: "new.txt", status: "added", added: 1, removed: 0 },
  ]);
});
