// Onboarding: what the empty chat shows when `ollie/state`'s `backendStatus` says no turn can run yet.

/** `backendStatus` of `ollie/state` (PROTOCOL.md). */
export interface BackendStatus {
  ok: boolean;
  backend: string;
  model: string;
  /** Where the backend was asked ("" when unknown). */
  url: string;
  reachable: boolean | null;
  modelPresent: boolean | null;
  keySet: boolean | null;
  error: string;
  hint: string;
  /** The file the daemon reads its settings from, KEY=VALUE lines ("" when it did not say). */
  settingsFile: string;
}

/** What the onboarding panel shows: a headline, the daemon's error, the steps to take, and which buttons. */
export interface Onboarding {
  title: string;
  error: string;
  steps: string[];
  /** Offer "Set API key" (the backend needs a key, it is missing or was refused, or none could be built). */
  offerKey: boolean;
  /** Offer to open the setting `ollie.serverEnv` (the server cannot be reached: its URL may be wrong). */
  offerSettings: boolean;
}

function boolOrNull(value: unknown): boolean | null {
  return typeof value === "boolean" ? value : null;
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** The `backendStatus` of an `ollie/state` result, or undefined when it has none. */
export function parseBackendStatus(raw: unknown): BackendStatus | undefined {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return undefined;
  const status = (raw as Record<string, unknown>).backendStatus;
  if (typeof status !== "object" || status === null || Array.isArray(status)) return undefined;
  const s = status as Record<string, unknown>;
  if (typeof s.ok !== "boolean") return undefined;
  return {
    ok: s.ok,
    backend: text(s.backend),
    model: text(s.model),
    url: text(s.url),
    reachable: boolOrNull(s.reachable),
    modelPresent: boolOrNull(s.modelPresent),
    keySet: boolOrNull(s.keySet),
    error: text(s.error),
    hint: text(s.hint),
    settingsFile: text(s.settingsFile),
  };
}

const KEYED = new Set(["openai", "openrouter", "anthropic"]);

/** Whether a URL names this machine (a local server the user starts), not a host across the network. */
function onThisMachine(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return host === "localhost" || host.endsWith(".localhost") || host.startsWith("127.") || host === "[::1]" || host === "0.0.0.0";
  } catch {
    return false;
  }
}

/** The onboarding for a status, or null when the backend can take a turn. */
export function onboardingFor(status: BackendStatus | undefined): Onboarding | null {
  if (!status || status.ok) return null;
  const steps: string[] = [];
  const model = status.model || "<model>";
  const unbuilt = status.backend === "none" || status.backend === "";
  // An OpenAI-compatible backend is named after its provider (groq, together...): keySet, not the name, says it takes a key.
  const keyed = status.keySet !== null || KEYED.has(status.backend);
  const keyProblem = status.keySet === false || (keyed && status.reachable === true && status.modelPresent === null);
  let title: string;
  // Ollama not running: the daemon's hint says the same as the steps, in environment variables a
  // VS Code user has nowhere to type; the hosted-API way here is the Set API key button.
  const ollamaDown = !unbuilt && status.backend === "ollama" && status.reachable === false;
  // Any other server that cannot be reached: a key would not help, and the daemon's hint says in environment
  // variables what the step says in `ollie.serverEnv`.
  const unreachable = !unbuilt && !ollamaDown && status.modelPresent !== false && status.reachable === false;
  if (unbuilt) {
    title = "Choose a model backend";
    steps.push("Pick a backend and enter its API key (Set API key), or run a local model with Ollama.");
  } else if (ollamaDown) {
    title = "Ollama is not running";
    steps.push(
      "Start Ollama: `ollama serve`",
      `Pull the model: \`ollama pull ${model}\``,
      "Or use a hosted model: Set API key picks OpenAI, OpenRouter or Anthropic and keeps the key in VS Code's secret storage.",
    );
  } else if (status.modelPresent === false) {
    title = `The model ${model} is missing`;
    steps.push(status.backend === "ollama" ? `Pull it: \`ollama pull ${model}\`` : "Pick another model (Ollie: Switch Model) or set `ollie.model`.");
  } else if (unreachable) {
    // `backend` is a name the daemon derived ("local" for any server on this machine): the URL is what the user typed.
    title = status.url ? `The model server at ${status.url} cannot be reached` : `${status.backend} cannot be reached`;
    steps.push(status.backend === "local" || onThisMachine(status.url)
      ? "Start the model server, or, if it listens elsewhere, correct its URL in `ollie.serverEnv`."
      : "Check the network, or correct the server's URL in `ollie.serverEnv`.");
  } else if (keyProblem) {
    title = `${status.backend} needs an API key`;
    steps.push("Enter the key (Set API key); it is kept in VS Code's secret storage, not in settings.");
  } else {
    title = `${status.backend || "The backend"} is not ready`;
  }
  // The daemon's hint is a clause ("check the network, or ..."); as a step it starts like the others.
  if (status.hint && !ollamaDown && !unreachable && !steps.some((s) => s.includes(status.hint))) {
    steps.push(status.hint.charAt(0).toUpperCase() + status.hint.slice(1));
    // Its settings are environment variables: where they go, as the daemon reads them.
    if (status.settingsFile) steps.push(`Settings such as these go in \`ollie.serverEnv\`, or in ${status.settingsFile} (KEY=VALUE lines).`);
  }
  steps.push("Then press Check again.");
  return { title, error: status.error, steps, offerKey: unbuilt || keyProblem || ollamaDown || (keyed && !unreachable),
    offerSettings: unreachable };
}

/** A failed turn's error as the chat shows it: the problem the onboarding shows, with what to do, is pointed to, not
 * said again under it (the same words, and its daemon's hint in environment variables). */
export function turnError(status: BackendStatus | undefined, error: string): string {
  if (!status || !onboardingFor(status) || !status.error || !error.includes(status.error)) return error;
  return "Ollie cannot take a turn yet (see above: what to do)";
}
