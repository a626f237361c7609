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
  isExecutable: (file: string) => boolean;
}

const DAEMON = "ollie-lsp";

/** The daemon command: the (user's) setting, else `ollie-lsp` on PATH.
 *
 * Never a workspace folder's `.venv/bin/ollie-lsp`: a repository may carry one, and it would run as the user,
 * outside any sandbox, as soon as the chat opens. */
export function resolveServerCommand(options: ResolveOptions): ServerCommand | { error: string } {
  const configured = options.configured.trim();
  if (configured) return { command: configured, args: options.args };
  for (const dir of options.pathEnv.split(path.delimiter)) {
    if (dir && options.isExecutable(path.join(dir, DAEMON))) return { command: path.join(dir, DAEMON), args: options.args };
  }
  return {
    error:
      `Cannot find ${DAEMON} on PATH: install it with ` +
      `"pipx install ollie-agent" (Debian/Ubuntu: "sudo apt install pipx" first) or "uv tool install ollie-agent", ` +
      `then restart VS Code; or set "ollie.serverCommand" to its path.`,
  };
}
