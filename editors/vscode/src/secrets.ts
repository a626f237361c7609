// API keys kept in VS Code's SecretStorage (never in settings.json), passed to the daemon's environment.

import * as vscode from "vscode";
import { Daemon } from "./daemon";
import { KEY_BACKENDS, keyEnvironment, keyVariables, secretKey } from "./lib/apiKeys";

/** The stored keys as environment variables for the daemon. */
export async function storedKeyEnvironment(secrets: vscode.SecretStorage): Promise<Record<string, string>> {
  const names = keyVariables();
  const values = await Promise.all(names.map((name) => secrets.get(secretKey(name))));
  return keyEnvironment(new Map(names.map((name, i) => [name, values[i]])));
}

/** `Ollie: Set API Key`: pick a backend, enter its key (empty removes it), restart the daemon with it. */
export async function setApiKey(secrets: vscode.SecretStorage, daemon: Daemon, turnRunning: () => boolean): Promise<void> {
  const picked = await vscode.window.showQuickPick(
    KEY_BACKENDS.map((b) => ({ label: b.backend, description: b.label, detail: `kept in VS Code's secret storage, passed to the daemon as ${b.env}`, entry: b })),
    { title: "Ollie: Set API Key — which backend?" },
  );
  if (!picked) return;
  const { backend, env } = picked.entry;
  const key = await vscode.window.showInputBox({
    title: `Ollie: ${backend} API key`,
    prompt: `The key for ${picked.entry.label} (empty: remove the stored key)`,
    password: true,
    ignoreFocusOut: true,
  });
  if (key === undefined) return;
  if (key.trim()) await secrets.store(secretKey(env), key.trim());
  else await secrets.delete(secretKey(env));
  const config = vscode.workspace.getConfiguration("ollie");
  // The user just said which backend they use; a settings change restarts the daemon by itself.
  // The user's own setting: a workspace's "ollie.backend" is ignored (lib/settings.ts, USER_ONLY).
  if (key.trim() && config.inspect<string>("backend")?.globalValue !== backend) {
    await config.update("backend", backend, vscode.ConfigurationTarget.Global);
    void vscode.window.showInformationMessage(`Ollie: ${backend} key stored; the daemon restarts with the ${backend} backend.`);
    return;
  }
  if (turnRunning()) {
    const now = await vscode.window.showInformationMessage(`Ollie: ${backend} key ${key.trim() ? "stored" : "removed"}; it applies when the daemon restarts.`, "Restart Now");
    if (now) await daemon.restart();
    return;
  }
  await daemon.restart();
  void vscode.window.showInformationMessage(`Ollie: ${backend} key ${key.trim() ? "stored" : "removed"}; the daemon restarted with it.`);
}
