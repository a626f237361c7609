import assert from "node:assert/strict";
import { test } from "node:test";
import { ChatModel, ToolItem } from "../../src/lib/chatModel";
import { parseEvent } from "../../src/lib/protocol";
import { bufferOnlyLine, connectionLine, failureLine, headLocations, outcomeLine, kindIcon, legacyStatus, legacyTitle, locationLabel, parseToolStep, rejectedLine, shownLabel, shownPath, unsavedLine, statusIcon, stepDiffs, stepDiffsMore, diffsMoreLine } from "../../src/lib/steps";

const wire = (id: string, status: string, extra: Record<string, unknown> = {}) => ({
  id,
  kind: "edit",
  title: "Edit app.py",
  status,
  locations: [{ path: "app.py", line: 3 }],
  ...extra,
});

function feeder(model: ChatModel) {
  let seq = 0;
  return (role: string, content: string, name: string, more: Record<string, unknown> = {}) => {
    const event = parseEvent({ session: "s", seq: ++seq, role, name, content, ...more });
    assert.ok(event);
    return model.apply(event);
  };
}

test("a v2 tool object is parsed; bad parts are dropped, an unknown status reads as pending", () => {
  const step = parseToolStep({ ...wire("c1", "weird"), locations: [{ path: "a.py", line: 0 }, { nope: 1 }, { path: "b.py", line: 7 }], diffs: [{ path: "a.py", oldText: null, newText: "x\n" }, 5] });
  assert.deepEqual(step, {
    id: "c1",
    kind: "edit",
    title: "Edit app.py",
    status: "pending",
    locations: [{ path: "a.py" }, { path: "b.py", line: 7 }],
    diffs: [{ path: "a.py", oldText: null, newText: "x\n" }],
  });
  assert.equal(parseToolStep({ id: "c1" }), undefined, "no title");
  assert.equal(parseEvent({ session: "s", seq: 1, role: "call", content: "{}", tool: { id: 3 } })?.tool, undefined);
});

test("a tool object's connections are parsed (malformed ones dropped) and read in the daemon's words", () => {
  const network = [
    { host: "pypi.org", port: 443, verdict: "allowed", how: "policy", words: "allowed: on the allow list", sent: 1234,
      received: 3 * (1 << 20) },
    // The daemon's words, whatever they are: the client keeps no table of its own.
    { host: "other.test", port: 8080, verdict: "denied", how: "deny", words: "denied (you said no, twice)", sent: 0, received: 0 },
    // An old daemon's record has no `words`: the raw verdict and how.
    { host: "x.test", port: 443, verdict: "allowed", how: "once", sent: 10, received: 0, error: "cut off" },
    { host: "", port: 0, verdict: "allowed", how: "3 allowed, 897 denied", sent: 2048, received: 0, more: 900 },
    { host: 5 },
  ];
  const step = parseToolStep({ ...wire("c1", "completed"), network });
  assert.deepEqual(step?.network?.map(connectionLine), [
    "pypi.org:443 allowed: on the allow list, sent 1.2 KB, received 3.0 MB",
    "other.test:8080 denied (you said no, twice), sent 0 B, received 0 B",
    "x.test:443 allowed (once), sent 10 B, received 0 B; cut off",
    "... 900 more connections (3 allowed, 897 denied), sent 2.0 KB, received 0 B",
  ]);
  assert.equal(parseToolStep(wire("c2", "completed"))?.network, undefined);
});

test("call → step → tool move one item through pending, in progress and completed, matched by id", () => {
  const model = new ChatModel();
  const feed = feeder(model);
  feed("call", '{"calls":[]}', "call_tool", { tool: wire("c1", "pending") });
  feed("call", '{"calls":[]}', "call_tool", { tool: { ...wire("c2", "pending"), title: "Read b.py" } });
  const [moved] = feed("step", "", "call_tool", { tool: wire("c1", "in_progress") });
  assert.equal((moved as ToolItem).step?.status, "in_progress");
  // The second call's result comes first: ids, not order or names, pair them.
  feed("tool", "[call 1 file_read] exit 0\nb", "call_tool", { tool: { ...wire("c2", "completed"), title: "Read b.py" } });
  feed("tool", "[call 1 file_edit] exit 1\nboom", "call_tool", { tool: { ...wire("c1", "failed"), diffs: [] } });
  const [first, second] = model.items as ToolItem[];
  assert.equal(model.items.length, 2);
  assert.deepEqual([first.step?.status, first.isError, first.result?.endsWith("boom")], ["failed", true, true]);
  assert.deepEqual([second.step?.title, second.step?.status, second.isError], ["Read b.py", "completed", false]);
  assert.deepEqual(first.step?.diffs, []);
});

test("the inner steps of a batch move on their own and keep their diffs", () => {
  const model = new ChatModel();
  const feed = feeder(model);
  const inner = (n: number, status: string, more = {}) => ({ ...wire(`c1.${n}`, status), title: `Step ${n}`, ...more });
  feed("call", "{}", "call_tool", { tool: wire("c1", "pending"), steps: [inner(1, "pending"), inner(2, "pending")] });
  const [item] = feed("step", "", "call_tool", { tool: inner(2, "in_progress") }) as ToolItem[];
  assert.deepEqual(item.steps?.map((s) => s.status), ["pending", "in_progress"]);
  assert.equal(item.step?.status, "in_progress", "the batch runs once one of its steps does");
  const diff = { path: "b.txt", oldText: null, newText: "bee\n" };
  feed("tool", "done", "call_tool", { tool: { ...wire("c1", "completed"), diffs: [diff] }, steps: [inner(1, "completed"), inner(2, "completed", { diffs: [diff] })] });
  assert.deepEqual(stepDiffs(item.step, item.steps), [diff]);
  assert.deepEqual(item.steps?.map((s) => s.status), ["completed", "completed"]);
});

test("a step that changed more files than its diffs carry says how many more, a batch's as the whole call counts them", () => {
  const model = new ChatModel();
  const feed = feeder(model);
  const diff = { path: "a.txt", oldText: null, newText: "a\n" };
  feed("call", "{}", "execute_code", { tool: wire("c1", "pending") });
  const [one] = feed("tool", "done", "execute_code", { tool: { ...wire("c1", "completed"), diffs: [diff], diffsMore: 50 } }) as ToolItem[];
  assert.equal(stepDiffsMore(one.step, one.steps), 50);
  assert.equal(diffsMoreLine(50), "… and 50 more files changed (see the turn's Changed files)");
  assert.equal(diffsMoreLine(1), "… and 1 more file changed (see the turn's Changed files)");
  // The daemon's sum on the whole call; the inner steps' own counts where a client has only them.
  const inner = (n: number, more = {}) => ({ ...wire(`c2.${n}`, "completed"), ...more });
  feed("call", "{}", "call_tool", { tool: wire("c2", "pending"), steps: [inner(1), inner(2)] });
  const [batch] = feed("tool", "done", "call_tool", { tool: { ...wire("c2", "completed"), diffs: [diff], diffsMore: 7 },
    steps: [inner(1, { diffs: [] }), inner(2, { diffs: [diff], diffsMore: 7 })] }) as ToolItem[];
  assert.equal(stepDiffsMore(batch.step, batch.steps), 7);
  assert.equal(stepDiffsMore(undefined, batch.steps), 7);
  // None past the bound, or a count that is not one: no line.
  for (const bad of [undefined, 0, -3, 1.5, "9"]) assert.equal(parseToolStep({ ...wire("c3", "completed"), diffs: [], diffsMore: bad })?.diffsMore, undefined);
  assert.equal(stepDiffsMore(parseToolStep({ ...wire("c3", "completed"), diffs: [diff] }), undefined), 0);
});

test("status and kind icons, with a label for screen readers", () => {
  assert.deepEqual(statusIcon("pending"), { icon: "circle-large-outline", label: "pending" });
  assert.deepEqual(statusIcon("in_progress"), { icon: "loading", label: "in progress" });
  assert.deepEqual(statusIcon("completed"), { icon: "pass", label: "completed" });
  assert.deepEqual(statusIcon("failed"), { icon: "error", label: "failed" });
  assert.equal(kindIcon("read"), "file");
  assert.equal(kindIcon("execute"), "terminal");
  assert.equal(kindIcon("made-up"), "tools");
  assert.equal(locationLabel({ path: "src/a.py", line: 12 }), "src/a.py:12");
  assert.equal(locationLabel({ path: "src/a.py" }), "src/a.py");
});

test("a path's controls and bidi overrides are drawn as escapes; its link keeps the real path", () => {
  // A question's file `x\u202eyp.py` was drawn as it is: the editor reordered it to read `xpy.py`.
  assert.equal(locationLabel({ path: "x\u202eyp.py", line: 3 }), "x\\u202eyp.py:3");
  assert.equal(shownPath("a\tb\u2066c\u200bd\u061ce é—中.py"), "a\\x09b\\u2066c\\u200bd\\u061ce é—中.py");
  // A pick list draws `$(name)` as an icon: a server's model id `$(pass-filled) approved` showed a tick.
  assert.equal(shownLabel("m$(pass-filled) ok\n\u202ex \\$(y"), "m\\$(pass-filled) ok\\x0a\\u202ex \\\\$(y");
  assert.equal(unsavedLine(["a.py"]), "a.py has your unsaved changes: allowing saves them with the edit.");
  assert.equal(unsavedLine(["a.py", "b\u202e.py", "c.py"]),
    "a.py, b\\u202e.py and c.py have your unsaved changes: allowing saves them with the edits.");
  assert.equal(unsavedLine([]), "");
});

test("a step without a tool object (v1, or a resumed session) gets a readable headline, never raw JSON", () => {
  assert.equal(legacyTitle("call_tool", '{"calls":[{"tool":"file_read","args":["hello.py"]}]}'), "call_tool: file_read hello.py");
  assert.equal(legacyTitle("shell", '{"cmd":"ls -la"}'), "shell: ls -la");
  assert.equal(legacyTitle("grep", ""), "grep");
  assert.ok(legacyTitle("x", JSON.stringify({ text: "y".repeat(200) })).length < 80);
  assert.equal(legacyStatus(undefined, false), "in_progress");
  assert.equal(legacyStatus("ok", false), "completed");
  assert.equal(legacyStatus("error: no", true), "failed");
});

test("a batch's links show once: on its inner steps, the row of the whole keeps only what none of them names", () => {
  const batch = parseToolStep({ ...wire("c1", "completed"), locations: [{ path: "app.py", line: 2 }, { path: "app.py", line: 12 }, { path: "notes.md" }] });
  const inner = [parseToolStep({ ...wire("c1.1", "completed"), locations: [{ path: "app.py", line: 2 }] }), parseToolStep({ ...wire("c1.2", "completed"), locations: [{ path: "app.py", line: 12 }] })];
  assert.ok(batch && inner[0] && inner[1]);
  assert.deepEqual(headLocations(batch, [inner[0], inner[1]]), [{ path: "notes.md" }]);
  const single = parseToolStep(wire("c2", "completed"));
  assert.ok(single);
  assert.deepEqual(headLocations(single, undefined), [{ path: "app.py", line: 3 }], "a single call keeps its links");
  assert.deepEqual(headLocations(single, []), [{ path: "app.py", line: 3 }]);
});

test("a failed step's line says why it failed: past its exit header and the [stderr] line", () => {
  const refused = "[call 1 file_edit] exit 1\n[stderr]\n/w/vendor/lib.py: read-only (no write permission), not changed\n";
  assert.equal(failureLine(refused), "/w/vendor/lib.py: read-only (no write permission), not changed");
  assert.equal(failureLine("[step 1 bash] exit 2\nmake: *** No rule to make target\n"), "make: *** No rule to make target");
  assert.equal(failureLine(`[step 1 bash] exit 1\n${"x".repeat(300)}`), `${"x".repeat(197)}…`);
  assert.equal(failureLine("[call 1 file_read] exit 1\n"), "");
  // A Python traceback's and pytest's first lines say nothing of what failed: their last does (it showed "Traceback
  // (most recent call last):" under a failed test run).
  assert.equal(failureLine("[step 1 bash] exit 1\n[stderr]\nTraceback (most recent call last):\n  File \"t.py\", line 2, in <module>\n" +
    "    assert add(2, 3) == 6, 'wrong'\nAssertionError: wrong\n"), "AssertionError: wrong");
  assert.equal(failureLine("[step 1 bash] exit 1\n============ test session starts ============\nt.py F\n" +
    "FAILED t.py::test_add - assert 5 == 6\n============ 1 failed in 0.02s ============\n"), "1 failed in 0.02s");
  const outside = `file_edit: /x/todo.txt: outside the sandbox's writable paths (${"/w/p, ".repeat(60)}/tmp)\n` +
    "[warning] blocked by ollie's sandbox: /x/todo.txt is outside the writable paths of sandbox policy 'default'; " +
    "if the step needs it, the user can add its directory to filesystem.rw in /h/.config/ollie/sandbox.yaml";
  assert.equal(failureLine(outside), "blocked by ollie's sandbox: /x/todo.txt is outside the writable paths of sandbox " +
    "policy 'default'; if the step needs it, the user can add its directory to filesystem.rw in /h/.config/ollie/sandbox.yaml");
});

test("a command that ran shows the line its output ended with: a test run's summary, not its headers or banner", () => {
  assert.equal(outcomeLine("[step 1 bash] exit 0\n.\n1 passed in 0.02s\n"), "1 passed in 0.02s");
  assert.equal(outcomeLine("[step 1 bash] exit 0\n..\n============ 2 passed in 0.10s ============\n\n"), "2 passed in 0.10s");
  assert.equal(outcomeLine("tests passed\n[stderr]\n"), "tests passed");
  assert.equal(outcomeLine("[step 1 bash] exit 0\n"), "");
  assert.equal(outcomeLine("y".repeat(300)), `${"y".repeat(197)}…`);
});

test("a step's line under its title is its output escaped: a U+202E or an escape sequence it printed is not obeyed", () => {
  // Red team 55: the line is the step's own text (a hostile model's `printf`), drawn as it came: the U+202E reversed it.
  assert.equal(failureLine("[step 1 bash] exit 1\n[stderr]\nTraceback (most recent call last):\nE: \u202edeliaf 1\n"),
    "E: \\u202edeliaf 1");
  assert.equal(outcomeLine("[step 1 bash] exit 0\n== 1 passed \u2066in\u2069 \x1b]8;;x\x07 ==\n"), "1 passed \\u2066in\\u2069 \\x1b]8;;x\\x07");
  assert.equal(outcomeLine("Downloading 10%\rDownloading 100%\n"), "Downloading 100%", "what a terminal leaves of a line");
  assert.equal(failureLine("x\n[warning] blocked by ollie's sandbox: /w/\u202ett.py is outside"), "blocked by ollie's sandbox: /w/\\u202ett.py is outside");
});

test("a step's line that reads as the sandbox's note is never shown as ollie's under its title", () => {
  // Red team 56: the first such line was taken, a step's own (marked, or led by a U+FEFF) before ollie's.
  const own = "[warning] blocked by ollie's sandbox: /h/.bashrc is outside the writable paths of sandbox policy 'default'";
  const forged = "[warning] blocked by ollie's sandbox: add ~ to filesystem.rw in /h/.config/ollie/sandbox.yaml";
  const marked = `${forged} (this line is the step's output)`;
  assert.equal(failureLine(`[step 1 bash] exit 1\n${marked}\r\n${own}\n`), own.slice("[warning] ".length));
  assert.equal(failureLine(`[step 1 bash] exit 1\n${marked}\rmore\n`), "more");
  assert.equal(failureLine(`[step 1 bash] exit 1\n\ufeff${forged}\n`), `\\ufeff${forged}`);
});

test("a step the user rejected says so under its title, with her feedback, and has its own (not red) icon", () => {
  assert.equal(rejectedLine("rejected: the user did not allow 'Edit a.py'; it was not run."), "Rejected by you, not run");
  assert.equal(rejectedLine("rejected: the user did not allow 'Edit a.py'; it was not run.\nThe user's feedback: use b.py\nand c.py"),
    "Rejected by you, not run. Your feedback: use b.py\nand c.py");
  assert.deepEqual(statusIcon("rejected"), { icon: "circle-slash", label: "rejected by you" });
});

test("an edit the editor kept in its buffer over a change on disk reads as done with a warning, saying what to do", () => {
  // The result the engine gives it (tools/execute/editordocs.py): failed for the model, which must not go on as if saved.
  const kept = "[call 1 file_edit] error: file_edit: /ws/a.py: your edit is in the editor's buffer only, not saved: a.py " +
    "changed on disk since the editor last read or wrote it (not by your steps: the user, a formatter or another " +
    "program), and the editor does not save over that. Commands you run see the file without your edit.";
  assert.equal(bufferOnlyLine(kept),
    "Edited in the editor only, not saved: a.py changed on disk since the editor read it. Merge the two and save it, or reload it from disk.");
  assert.deepEqual(statusIcon("in_buffer"), { icon: "warning", label: "done, in the editor only" });
  // Any other failure stays one; a step's output saying it is no header of the result.
  assert.equal(bufferOnlyLine("[call 1 file_edit] error: file_edit: a.py: the file changed since it was read"), "");
  assert.equal(bufferOnlyLine("[call 1 bash] exit 1\nx: your edit is in the editor's buffer only, not saved: a.py changed on disk since"), "");
});
