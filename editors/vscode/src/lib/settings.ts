// The daemon's settings as read from settings.json, where a user may have written any JSON: a wrong type is
// dropped with a warning that names the setting, never thrown (that left the daemon unstarted, silently).

/** The settings the daemon is started with, each of its proper type. */
export interface DaemonSettings {
  serverCommand: string;
  serverArgs: string[];
  serverEnv: Record<string, string>;
  agent?: string;
  backend?: string;
  model?: string;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() ? value.trim() : undefined;
}

/** Read the daemon's settings from `get(name)`; `warnings` says which values were ignored, and why. */
export function daemonSettings(get: (name: string) => unknown): { settings: DaemonSettings; warnings: string[] } {
  const warnings: string[] = [];
  const wrong = (name: string, want: string) => warnings.push(`"ollie.${name}" must be ${want}: its value is ignored.`);
  const optional = (name: string): string | undefined => {
    const value = get(name);
    if (value !== undefined && value !== null && typeof value !== "string") wrong(name, "a string");
    return text(value);
  };
  let serverArgs: string[] = [];
  const args = get("serverArgs");
  if (Array.isArray(args) && args.every((a) => typeof a === "string")) serverArgs = args;
  else if (args !== undefined && args !== null) wrong("serverArgs", "a list of strings");
  const serverEnv: Record<string, string> = {};
  const env = get("serverEnv");
  if (env !== undefined && env !== null && (typeof env !== "object" || Array.isArray(env))) wrong("serverEnv", "an object of names to strings");
  else if (env) {
    for (const [name, value] of Object.entries(env)) {
      // A number or a boolean is meant as its text; anything else cannot be an environment value.
      if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") serverEnv[name] = String(value);
      else wrong(`serverEnv.${name}`, "a string");
    }
  }
  const settings: DaemonSettings = { serverCommand: optional("serverCommand") ?? "", serverArgs, serverEnv };
  for (const name of ["agent", "backend", "model"] as const) {
    const value = optional(name);
    if (value) settings[name] = value;
  }
  return { settings, warnings };
}

/** What a workspace's own settings may not choose, only the user's: the command Ollie runs, its arguments and
 * environment (the backends' URLs among them), the agent (a repository could pick `yolo`, whose tools run outside
 * the sandbox), the backend (a repository could send the key stored for one backend to another's URL) and the
 * model (a repository could pick a dearer one, billed to the user's key). package.json scopes them `application`, so
 * VS Code drops a workspace's values itself; this check holds where it does not. */
export const USER_ONLY: ReadonlySet<string> = new Set(["serverCommand", "serverArgs", "serverEnv", "agent", "backend", "model"]);

/** The layers of one setting (`WorkspaceConfiguration.inspect`), as far as they matter here. */
export interface SettingLayers {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/** The value to start the daemon with: for a USER_ONLY setting the user's own (a workspace's is `ignored`), else
 * the effective one. */
export function settingValue(name: string, layers: SettingLayers | undefined, effective: unknown): { value: unknown; ignored: boolean } {
  if (!USER_ONLY.has(name)) return { value: effective, ignored: false };
  const ignored = layers?.workspaceValue !== undefined || layers?.workspaceFolderValue !== undefined;
  return { value: layers?.globalValue, ignored };
}
