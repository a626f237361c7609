// Which command starts the ollie-lsp daemon.

import * as path from "node:path";

export interface ServerCommand {
  command: string;
  args: string[];
}

export interface ResolveOptions {
  /** The `ollie.serverCommand` setting ("" when unset). */
  configured: string;
  args: string[];
  /** The PATH environment variable. */
  pathEnv: string;
  workspaceDirs: string[];
  isExecutable: (file: string) => boolean;
}

const DAEMON = "ollie-lsp";

/** The daemon command: the setting, else `ollie-lsp` on PATH, else a workspace `.venv/bin/ollie-lsp`. */
export function resolveServerCommand(options: ResolveOptions): ServerCommand | { error: string } {
  const configured = options.configured.trim();
  if (configured) return { command: configured, args: options.args };
  for (const dir of options.pathEnv.split(path.delimiter)) {
    if (dir && options.isExecutable(path.join(dir, DAEMON))) return { command: path.join(dir, DAEMON), args: options.args };
  }
  for (const root of options.workspaceDirs) {
    const candidate = path.join(root, ".venv", "bin", DAEMON);
    if (options.isExecutable(candidate)) return { command: candidate, args: options.args };
  }
  return {
    error:
      `Cannot find ${DAEMON} (looked on PATH and in each workspace folder's .venv/bin): install it with ` +
      `"pipx install ollie-agent" (Debian/Ubuntu: "sudo apt install pipx" first) or "uv tool install ollie-agent", ` +
      `then restart VS Code; or set "ollie.serverCommand" to its path.`,
  };
}
