import assert from "node:assert/strict";
import { test } from "node:test";
import { DiagnosticsFreshness, QUIET_MS } from "../../src/lib/diagnosticsFreshness";

const open = (language: string) => ({ language });
const closed = { language: undefined };

test("a file no language server reports on is up to date at once: the daemon's wait ends", () => {
  const fresh = new DiagnosticsFreshness();
  fresh.diagnosticsChanged("file:///w/bad.ts", "typescript", 10);
  fresh.textChanged("file:///w/notes.md", 20);
  assert.equal(fresh.upToDate("file:///w/notes.md", open("markdown"), 21), true, "no markdown document was ever reported on");
  assert.equal(fresh.upToDate("file:///w/app.py", closed, 21), true, "not open, never reported on: no server reads it");
});

test("an open document of a served language is up to date only once its diagnostics changed after its text and went quiet", () => {
  const fresh = new DiagnosticsFreshness();
  fresh.textChanged("file:///w/a.ts", 0);
  fresh.diagnosticsChanged("file:///w/a.ts", "typescript", 100);
  assert.equal(fresh.upToDate("file:///w/b.ts", open("typescript"), 150), false, "TypeScript's server may not have reported on b.ts yet");
  assert.equal(fresh.upToDate("file:///w/a.ts", open("typescript"), 100 + QUIET_MS - 1), false, "a server publishes in parts");
  assert.equal(fresh.upToDate("file:///w/a.ts", open("typescript"), 100 + QUIET_MS), true);
  fresh.textChanged("file:///w/a.ts", 1000);
  assert.equal(fresh.upToDate("file:///w/a.ts", open("typescript"), 5000), false, "the edit is not analyzed yet: the old diagnostics are stale");
  fresh.diagnosticsChanged("file:///w/a.ts", "typescript", 1200);
  assert.equal(fresh.upToDate("file:///w/a.ts", open("typescript"), 1200 + QUIET_MS), true);
});

test("a file reported on before and not open now is never said up to date: when its disk content changed is not known", () => {
  const fresh = new DiagnosticsFreshness();
  fresh.diagnosticsChanged("file:///w/lib.py", undefined, 10);
  fresh.closed("file:///w/lib.py");
  assert.equal(fresh.upToDate("file:///w/lib.py", closed, 10_000), false);
});
