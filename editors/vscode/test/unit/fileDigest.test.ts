import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { fileDigest, holdsOtherText, holdsText, stampedDigest } from "../../src/lib/fileDigest";

test("a file rewritten with its own bytes keeps its digest; a changed one, a link, a FIFO and a big one have none alike", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "digest-"));
  const file = path.join(dir, "a.py");
  fs.writeFileSync(file, "x = 1\n");
  const before = await fileDigest(file);
  assert.match(before ?? "", /^[0-9a-f]{64}$/);
  execFileSync("sed", ["-i", "s/no such text/y/", file]); // a new inode and mtime, the same bytes
  assert.equal(await fileDigest(file), before);
  fs.writeFileSync(file, "x = 2\n");
  assert.notEqual(await fileDigest(file), before);
  fs.symlinkSync(file, path.join(dir, "link.py"));
  assert.equal(await fileDigest(path.join(dir, "link.py")), undefined, "never read through a link");
  execFileSync("mkfifo", [path.join(dir, "fifo")]);
  assert.equal(await fileDigest(path.join(dir, "fifo")), undefined, "a FIFO answers at once, unread");
  assert.equal(await fileDigest(file, 5), undefined, "past the bound");
  assert.equal(await fileDigest(path.join(dir, "gone")), undefined);
  fs.rmSync(dir, { recursive: true });
});

test("a write landing between the stamp and the read leaves no digest: the stamp alone then says it changed", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "digest-"));
  const file = path.join(dir, "a.py");
  fs.writeFileSync(file, "x = 1\n");
  const mtime = async () => fs.statSync(file).mtimeMs;
  const quiet = await stampedDigest(mtime, file);
  assert.equal(quiet.digest, await fileDigest(file));
  let stamps = 0;
  const raced = await stampedDigest(async () => {
    const time = await mtime();
    if (stamps++ === 0) {
      // A step's write (a new file renamed over it) just after the stamp was taken, an mtime later.
      fs.writeFileSync(path.join(dir, "new"), "x = 2\n");
      fs.utimesSync(path.join(dir, "new"), new Date(), new Date(time + 5000));
      fs.renameSync(path.join(dir, "new"), file);
    }
    return time;
  }, file);
  assert.equal(raced.stamp, quiet.stamp);
  assert.equal(raced.digest, undefined, "the new content's digest beside the old stamp");
  fs.rmSync(dir, { recursive: true });
});

test("a file that holds other text than the editor read from it is told; its line ends, a BOM or another encoding are not", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "digest-"));
  const file = path.join(dir, "a.py");
  const mtime = async () => fs.statSync(file).mtimeMs;
  fs.writeFileSync(file, "x = 5  # checked out\n"); // the user's checkout, landed before the late open event was seen
  assert.equal((await stampedDigest(mtime, file, "x = 1\n")).otherText, true);
  assert.equal((await stampedDigest(mtime, file, "x = 5  # checked out\n")).otherText, false);
  assert.equal((await stampedDigest(mtime, file)).otherText, false, "no text, nothing to compare");
  assert.equal(holdsOtherText(Buffer.from("\ufeffx = 1\r\ny = 2\n"), "x = 1\ny = 2\n"), false, "a BOM and mixed line ends");
  assert.equal(holdsOtherText(Buffer.from("x = 'caf\xe9'\n", "latin1"), "x = 'café'\n"), false, "not UTF-8: cannot tell");
  assert.equal(holdsOtherText(Buffer.from("x = 'café'\n"), "x = 'cafe'\n"), true);
  // UTF-16 with no BOM (VS Code reads it as such): as UTF-8, its NULs made it other text, changed on disk until saved.
  for (const encoding of ["utf16le", "utf16be"] as const) {
    const utf16 = (s: string) => (encoding === "utf16le" ? Buffer.from(s, "utf16le") : Buffer.from(s, "utf16le").swap16());
    assert.equal(holdsOtherText(utf16("x = 1\r\n"), "x = 1\n"), false, `${encoding}, no BOM`);
    assert.equal(holdsOtherText(utf16("x = 'café'\n"), "x = 'café'\n"), false, `${encoding}, no BOM, not ASCII`);
    assert.equal(holdsOtherText(utf16("\ufeffx = 1\n"), "x = 1\n"), false, `${encoding}, a BOM`);
    assert.equal(holdsOtherText(utf16("x = 2\n"), "x = 1\n"), true, `${encoding}, other text`);
  }
  // UTF-8 holding a NUL, an odd number of bytes: no UTF-16 decodes it, and it passed for the editor's text.
  assert.equal(holdsOtherText(Buffer.from("x = 2\0\n"), "x = 1\n"), true, "UTF-8 with a NUL, odd length");
  fs.rmSync(dir, { recursive: true });
});

test("a file holds an editor's text when its bytes are that text's, as UTF-8 (a BOM aside), and is a regular file", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "digest-"));
  const file = path.join(dir, "calc.py");
  fs.writeFileSync(file, "\ufeffx = 1\r\n");
  assert.equal(await holdsText(file, "x = 1\r\n"), true);
  assert.equal(await holdsText(file, "x = 1\n"), false, "other line ends: saving would write other bytes");
  fs.writeFileSync(file, Buffer.from("x = 'caf\xe9'\n", "latin1"));
  assert.equal(await holdsText(file, "x = 'café'\n"), false, "not UTF-8");
  fs.writeFileSync(file, "x = 1\n");
  fs.symlinkSync(file, path.join(dir, "link.py"));
  assert.equal(await holdsText(path.join(dir, "link.py"), "x = 1\n"), false, "never read through a link");
  assert.equal(await holdsText(path.join(dir, "gone.py"), ""), false);
  fs.rmSync(dir, { recursive: true });
});
