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
  /** The user's home directory: where pipx and `uv tool` install, in `.local/bin`. */
  home?: string;
}

const DAEMON = "ollie-lsp";

/** `name` in PATH's absolute directories. A relative entry (`.`, `bin`, `node_modules/.bin`) names a directory of the
 * workspace folder the daemon starts in: a repository's `bin/ollie-lsp` would run there as the user, unsandboxed. */
function onPath(name: string, options: ResolveOptions): string | undefined {
  for (const dir of options.pathEnv.split(path.delimiter)) {
    if (path.isAbsolute(dir) && options.isExecutable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

/** `args` for `command`, with `-P` first when it is a Python running a module (`python3 -m ollie_lsp`): `-m` puts the
 * working directory, the workspace folder, first on the import path, so a repository carrying `ollie_lsp/` would run
 * as the user instead of ollie. `-P` (Python 3.11, as ollie needs) leaves it off; `-I` already does. */
export function withSafePath(command: string, args: string[]): string[] {
  const module = args.indexOf("-m");
  const python = /^python[0-9.]*$/.test(path.basename(command));
  if (!python || module < 0 || args.slice(0, module).some((arg) => arg === "-P" || arg === "-I")) return args;
  return ["-P", ...args];
}

/** The daemon command: the (user's) setting, else `ollie-lsp` on PATH; a program named without a directory is found
 * here, never left to the spawn's own PATH lookup (which takes relative entries from the workspace folder).
 *
 * Never a workspace folder's `.venv/bin/ollie-lsp`: a repository may carry one, and it would run as the user,
 * outside any sandbox, as soon as the chat opens. */
export function resolveServerCommand(options: ResolveOptions): ServerCommand | { error: string } {
  const configured = options.configured.trim();
  if (path.basename(configured) !== configured) return { command: configured, args: withSafePath(configured, options.args) };
  if (configured) {
    const found = onPath(configured, options);
    if (found) return { command: found, args: withSafePath(found, options.args) };
    return { error: `Cannot find "${configured}" ("ollie.serverCommand") in PATH's absolute directories: set its full path.` };
  }
  const found = onPath(DAEMON, options);
  if (found) return { command: found, args: options.args };
  // Installed as README says, in a directory the editor's PATH lacks (pipx's warning about it scrolls by): not run
  // from there unasked, but named, with the fix.
  const installed = options.home ? path.join(options.home, ".local", "bin", DAEMON) : undefined;
  if (installed && options.isExecutable(installed)) {
    return {
      error:
        `${DAEMON} is in ${path.dirname(installed)}, which is not on PATH: run "pipx ensurepath" and restart VS Code ` +
        `from a new shell; or set "ollie.serverCommand" to "${installed}".`,
    };
  }
  return {
    error:
      `Cannot find ${DAEMON} on PATH: install it with ` +
      `"pipx install ollie-agent" (Debian/Ubuntu: "sudo apt install pipx" first) or "uv tool install ollie-agent", ` +
      `then restart VS Code; or set "ollie.serverCommand" to its path.`,
  };
}
