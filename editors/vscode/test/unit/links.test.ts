import assert from "node:assert/strict";
import { test } from "node:test";
import { linkedFile, looksLikePath, parseFenceInfo, splitPathLine } from "../../src/lib/links";

test("a code fence names its language and, optionally, its file", () => {
  assert.deepEqual(parseFenceInfo("python"), { lang: "python" });
  assert.deepEqual(parseFenceInfo("python greet.py"), { lang: "python", file: "greet.py" });
  assert.deepEqual(parseFenceInfo("python title=src/greet.py"), { lang: "python", file: "src/greet.py" });
  assert.deepEqual(parseFenceInfo('ts file="a/b.ts"'), { lang: "ts", file: "a/b.ts" });
  assert.deepEqual(parseFenceInfo("python:app.py"), { lang: "python", file: "app.py" });
  assert.deepEqual(parseFenceInfo("app.py"), { lang: "py", file: "app.py" });
  assert.deepEqual(parseFenceInfo(""), { lang: "" });
  assert.deepEqual(parseFenceInfo("bash {linenos}"), { lang: "bash" });
});

test("what reads as a file path (and may link to the workspace file), and what does not", () => {
  for (const yes of ["hello.py", "src/app.py", "./a/b.ts", "../x.md", "hello.py:12", "README.md", "a-b_c.test.ts"]) assert.ok(looksLikePath(yes), yes);
  for (const no of ["http://hello.py", "https://x.org/a.py", "1.2.3", "hello", "e.g. this", "foo()", "a.b c.d", "x".repeat(301) + ".py", ""]) {
    assert.ok(!looksLikePath(no), no);
  }
  assert.deepEqual(splitPathLine("hello.py:12"), { path: "hello.py", line: 12 });
  assert.deepEqual(splitPathLine("hello.py"), { path: "hello.py" });
});

test("a markdown link to a file opens that file (at its line); web, command and script links are not files", () => {
  assert.deepEqual(linkedFile("app.py"), { path: "app.py" });
  assert.deepEqual(linkedFile("./src/app.ts#L12"), { path: "./src/app.ts", line: 12 });
  assert.deepEqual(linkedFile("src/app.ts#L3-L5"), { path: "src/app.ts", line: 3 });
  assert.deepEqual(linkedFile("app.py:7"), { path: "app.py", line: 7 });
  assert.deepEqual(linkedFile("my%20dir/a%20b.py"), { path: "my dir/a b.py" });
  assert.deepEqual(linkedFile("/abs/file.py"), { path: "/abs/file.py" });
  for (const href of ["https://example.com/a.py", "http://x", "command:ollie.newSession", "javascript:alert(1)", "mailto:a@b.c", "vscode:extension/x", "#top", "//evil.com/a.py", "", "%E0%A4%A.py"]) {
    assert.equal(linkedFile(href), undefined, href);
  }
});
