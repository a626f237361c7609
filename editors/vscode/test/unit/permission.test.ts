import assert from "node:assert/strict";
import { test } from "node:test";
import { type ChatItem, networkTarget } from "../../src/lib/chatModel";
import { changedFilesOf, mergeChanges, parsePermissionRequest } from "../../src/lib/permission";
import { KEYBOARD_QUIET_MS, keyboardAnswerAllowed, questionA11y, questionToFocus } from "../../src/lib/question";

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
    offered: ["allow_once"],
  });
  const command = parsePermissionRequest({ session: "s", step: { id: "c2", kind: "execute", title: "Run `pytest -q …`", locations: [], prefix: "pytest", code: "pytest -q\nrm -rf build" } });
  assert.equal(command?.step.prefix, "pytest");
  assert.equal(command?.step.code, "pytest -q\nrm -rf build");
  assert.equal(command?.always, "");
  assert.equal(command?.offered, undefined, "no options: every answer that fits the step");
  assert.equal(parsePermissionRequest({ session: "s", step: { id: "c" } }), undefined, "a step needs a title");
  assert.equal(parsePermissionRequest({ step: { id: "c", title: "t" } }), undefined, "and a session");
});

test("a batch question's previews: each well-formed diff kept in order, the count of edits left without one", () => {
  const diffs = [{ path: "a.py", oldText: "a\n", newText: "b\n" }, { oldText: "no path" }, { path: "new.py", oldText: null, newText: "n\n" }];
  const batch = parsePermissionRequest({ session: "s", step: { id: "c.1", title: "Edit a.py and 7 more steps", diffs, diffsMore: 5 } });
  assert.deepEqual(batch?.step.diffs, [diffs[0], diffs[2]]);
  assert.equal(batch?.step.diffsMore, 5);
  const odd = parsePermissionRequest({ session: "s", step: { id: "c.1", title: "t", diffs: "a.py", diffsMore: "5" } });
  assert.equal(odd?.step.diffs, undefined);
  assert.equal(odd?.step.diffsMore, undefined);
});

test("ollie/changes files get the daemon's +/- counts (a text too long to diff has them without hunks), unsaved editor edits marked; an undo marks what left the list", () => {
  const raw = {
    turn: 2,
    files: [
      { path: "app.py", status: "modified", oldText: "a\n", newText: "b\nc\n", added: 2, removed: 1, hunks: [{ oldStart: 1, oldLines: 1, newStart: 1, newLines: 2, lines: ["-a\n", "+b\n", "+c\n"] }] },
      { path: "new.txt", status: "added", oldText: null, newText: "x\ny\n", added: 2, removed: 0 },
      { path: "open.py", status: "modified", oldText: "a\n", newText: "b\n", added: 1, removed: 1, hunks: [{ oldStart: 1, oldLines: 1, newStart: 1, newLines: 1, lines: ["-a\n", "+b\n"] }], inEditor: true },
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
  assert.deepEqual(changedFilesOf({ turn: null, files: [] }), { turn: null, files: [], more: 0 });
  assert.equal(changedFilesOf({ ...raw, more: 7 }).more, 7);
  const after = mergeChanges(files.slice(0, 2), [{ path: "new.txt", status: "added", added: 1, removed: 0 }]);
  assert.deepEqual(after, [
    { path: "app.py", status: "modified", added: 2, removed: 1, undone: true },
    { path: "new.txt", status: "added", added: 1, removed: 0 },
  ]);
});

test("a new open question takes the focus once; answered ones and ones that had it do not", () => {
  const step = { id: "c1", kind: "edit", title: "Edit app.py", locations: [] };
  const open: ChatItem = { kind: "permission", id: 4, step, always: "edit steps" };
  const answered: ChatItem = { kind: "permission", id: 3, step, always: "", outcome: "allow_once" };
  const reply: ChatItem = { kind: "assistant", id: 2, text: "ok" };
  assert.equal(questionToFocus([reply, answered, open], new Set()), 4);
  assert.equal(questionToFocus([reply, answered, open], new Set([4])), undefined, "an update of the same question leaves the focus alone");
  assert.equal(questionToFocus([reply, answered], new Set()), undefined);
});

test("a waiting question is an alert dialog naming the step and its choices; once answered, a plain group", () => {
  const step = { id: "c1", kind: "execute", title: "Run `pytest -q`", locations: [] };
  assert.deepEqual(questionA11y({ kind: "permission", id: 1, step, always: "pytest commands" }), {
    role: "alertdialog",
    label: 'Ollie asks to Run `pytest -q`: allow once, allow always, or reject. "Allow always" covers pytest commands.',
  });
  assert.deepEqual(questionA11y({ kind: "permission", id: 1, step, always: "", outcome: "reject" }), { role: "group", label: "Approval: Run `pytest -q`" });
});

test("a key answers a question only after a pause in typing (keys meant for the prompt do not)", () => {
  const focusedAt = 10_000;
  assert.equal(keyboardAnswerAllowed(focusedAt + 100, focusedAt), false, "an Enter still meant for the prompt");
  assert.equal(keyboardAnswerAllowed(focusedAt + KEYBOARD_QUIET_MS, focusedAt), true);
  assert.equal(keyboardAnswerAllowed(focusedAt + 5_000, focusedAt), true);
});

test("a network question: the connection parsed, and heard as the host first", () => {
  const raw = {
    session: "s",
    step: { id: "c1/net/pypi.org:443", kind: "fetch", title: "connect to pypi.org:443 (network; step: Run `pip install x`; process: pip)", locations: [], prefix: "pypi.org:443", network: { host: "pypi.org", port: 443, scheme: "connect" } },
    always: "connections to pypi.org:443 in this and later sessions",
  };
  const request = parsePermissionRequest(raw);
  assert.deepEqual(request?.step.network, { host: "pypi.org", port: 443, scheme: "connect" });
  const item: ChatItem = { kind: "permission", id: 1, step: request!.step, always: request!.always };
  const { role, label } = questionA11y(item as Extract<ChatItem, { kind: "permission" }>);
  assert.equal(role, "alertdialog");
  assert.match(label, /^Allow network access to pypi\.org:443\? Asked by the step: Run `pip install x`; process: pip\. Allow once, allow for this session, always allow, or deny\. "Always allow" covers connections to pypi\.org:443 in this and later sessions\.$/);
  const v6 = parsePermissionRequest({ session: "s", step: { ...raw.step, network: { host: "2001:db8::1", port: 8443, scheme: "http" } } });
  assert.equal(networkTarget(v6!.step.network!), "[2001:db8::1]:8443");
  assert.equal(parsePermissionRequest({ session: "s", step: { ...raw.step, network: { host: "x", port: "443" } } })?.step.network, undefined, "a port is a number");
});
