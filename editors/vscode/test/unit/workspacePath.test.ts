import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { isInsideWorkspace, workspaceRelative } from "../../src/lib/workspacePath";

// A real workspace on disk with a symlink pointing outside it.
function setup(): { root: string; workspace: string; outside: string } {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ollie-ws-")));
  const workspace = path.join(root, "project");
  const outside = path.join(root, "secrets");
  fs.mkdirSync(path.join(workspace, "src"), { recursive: true });
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(workspace, "src", "app.py"), "print(1)\n");
  fs.writeFileSync(path.join(outside, "key"), "secret\n");
  fs.symlinkSync(outside, path.join(workspace, "escape"));
  fs.symlinkSync(path.join(outside, "key"), path.join(workspace, "key-link"));
  return { root, workspace, outside };
}

test("a workspace file is inside; absolute paths elsewhere and ../ escapes are not", async () => {
  const { root, workspace, outside } = setup();
  assert.equal(await isInsideWorkspace(path.join(workspace, "src", "app.py"), [workspace]), true);
  assert.equal(await isInsideWorkspace(path.join(workspace, "src", "new.py"), [workspace]), true, "a file Apply will create");
  assert.equal(await isInsideWorkspace(path.join(workspace, "..foo"), [workspace]), true, "a name starting with .. is still inside");
  assert.equal(await isInsideWorkspace(path.join(outside, "key"), [workspace]), false);
  assert.equal(await isInsideWorkspace("/etc/passwd", [workspace]), false);
  assert.equal(await isInsideWorkspace(path.join(workspace, "..", "secrets", "key"), [workspace]), false);
  assert.equal(await isInsideWorkspace(path.join(workspace, "src", "app.py"), []), false, "no folder: nothing is inside");
  fs.rmSync(root, { recursive: true });
});

test("a workspace symlink pointing outside is resolved first and refused", async () => {
  const { root, workspace } = setup();
  assert.equal(await isInsideWorkspace(path.join(workspace, "key-link"), [workspace]), false, "a file symlink");
  assert.equal(await isInsideWorkspace(path.join(workspace, "escape", "key"), [workspace]), false, "a file under a directory symlink");
  assert.equal(await isInsideWorkspace(path.join(workspace, "escape", "new-file"), [workspace]), false, "a new file under a directory symlink");
  // The workspace itself opened through a symlink still counts as inside.
  const alias = path.join(root, "alias");
  fs.symlinkSync(workspace, alias);
  assert.equal(await isInsideWorkspace(path.join(workspace, "src", "app.py"), [alias]), true);
  fs.rmSync(root, { recursive: true });
});

test("a workspace link is named by where it leads inside the workspace (Apply refuses a hidden one)", async () => {
  const { root, workspace } = setup();
  fs.mkdirSync(path.join(workspace, ".git"));
  fs.writeFileSync(path.join(workspace, ".git", "config"), "[core]\n");
  fs.symlinkSync(".git/config", path.join(workspace, "cfg.ini"));
  fs.symlinkSync(".git", path.join(workspace, "meta"));
  assert.equal(await workspaceRelative(path.join(workspace, "cfg.ini"), [workspace]), path.join(".git", "config"));
  assert.equal(await workspaceRelative(path.join(workspace, "meta", "hooks", "pre-commit"), [workspace]), path.join(".git", "hooks", "pre-commit"));
  assert.equal(await workspaceRelative(path.join(workspace, "src", "app.py"), [workspace]), path.join("src", "app.py"));
  assert.equal(await workspaceRelative(path.join(workspace, "key-link"), [workspace]), undefined, "outside");
  fs.rmSync(root, { recursive: true });
});
