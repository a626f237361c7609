import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { daemonSettings, settingValue, USER_ONLY } from "../../src/lib/settings";

const from = (values: Record<string, unknown>) => daemonSettings((name) => values[name]);

test("the daemon's settings of the right type are read as written", () => {
  const { settings, warnings } = from({
    serverCommand: " /opt/ollie-lsp ", serverArgs: ["--verbose"], serverEnv: { OLLIE_MODEL: "m", PORT: 8080 }, agent: "plan", backend: "", model: null,
  });
  assert.deepEqual(warnings, []);
  assert.deepEqual(settings, { serverCommand: "/opt/ollie-lsp", serverArgs: ["--verbose"], serverEnv: { OLLIE_MODEL: "m", PORT: "8080" }, agent: "plan" });
  assert.deepEqual(from({}).settings, { serverCommand: "", serverArgs: [], serverEnv: {} });
});

test("a wrong type in settings.json is ignored with a warning naming the setting, never thrown", () => {
  // `"ollie.serverCommand": 5` made resolveServerCommand throw on .trim(): the daemon never started, with no message.
  const { settings, warnings } = from({ serverCommand: 5, serverArgs: "--verbose", serverEnv: ["A=1"], agent: { name: "plan" }, model: true });
  assert.deepEqual(settings, { serverCommand: "", serverArgs: [], serverEnv: {} });
  assert.deepEqual(warnings, [
    '"ollie.serverArgs" must be a list of strings: its value is ignored.',
    '"ollie.serverEnv" must be an object of names to strings: its value is ignored.',
    '"ollie.serverCommand" must be a string: its value is ignored.',
    '"ollie.agent" must be a string: its value is ignored.',
    '"ollie.model" must be a string: its value is ignored.',
  ]);
  assert.deepEqual(from({ serverEnv: { OK: "1", BAD: { x: 1 } } }).settings.serverEnv, { OK: "1" });
  assert.deepEqual(from({ serverEnv: { OK: "1", BAD: { x: 1 } } }).warnings, ['"ollie.serverEnv.BAD" must be a string: its value is ignored.']);
});

test("a workspace's settings cannot choose the daemon command, its environment, the agent or the backend", () => {
  const repo = { globalValue: undefined, workspaceValue: "yolo" };
  assert.deepEqual(settingValue("agent", repo, "yolo"), { value: undefined, ignored: true });
  assert.deepEqual(settingValue("serverCommand", { globalValue: "/usr/bin/ollie-lsp", workspaceFolderValue: "./evil.sh" }, "./evil.sh"),
    { value: "/usr/bin/ollie-lsp", ignored: true });
  assert.deepEqual(settingValue("serverEnv", { globalValue: { A: "1" } }, { A: "1" }), { value: { A: "1" }, ignored: false });
  // The backend decides where the stored API key is sent: a repository's choice would send it to another's URL.
  assert.deepEqual(settingValue("backend", { globalValue: "anthropic", workspaceValue: "openai" }, "openai"),
    { value: "anthropic", ignored: true });
  // The model is billed to the user's key: a repository's choice could be a dearer one.
  assert.deepEqual(settingValue("model", { globalValue: "small", workspaceValue: "dear" }, "dear"), { value: "small", ignored: true });
  assert.deepEqual(settingValue("historyPageSize", { workspaceValue: 50 }, 50), { value: 50, ignored: false });
});

test("package.json scopes every setting a repository must not choose to the application, so VS Code ignores a workspace's", () => {
  // VS Code reads an `application` setting from the user's settings only; `window` (the default) and `resource` ones
  // from a workspace's too (`machine` ones, in a remote window, from the remote's only: code-server's user settings
  // were dropped). Only the chat's page size is harmless per folder.
  const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "..", "package.json"), "utf8"));
  const properties = manifest.contributes.configuration.properties as Record<string, { scope?: string }>;
  const scopes = Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name.replace(/^ollie\./, ""), schema.scope]));
  for (const name of USER_ONLY) assert.equal(scopes[name], "application", `ollie.${name}`);
  assert.deepEqual(Object.keys(scopes).filter((name) => !USER_ONLY.has(name)), ["historyPageSize"]);
  assert.equal(scopes.historyPageSize, "window");
});
