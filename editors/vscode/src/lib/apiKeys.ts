// Which environment variable holds each backend's API key (core/ollie/backend/settings.py KEY_VARS).

/** A backend that needs a key, and where the daemon reads it. */
export interface KeyBackend {
  backend: string;
  env: string;
  label: string;
}

export const KEY_BACKENDS: readonly KeyBackend[] = [
  { backend: "openai", env: "OLLIE_OPENAI_KEY", label: "OpenAI or an OpenAI-compatible API" },
  { backend: "openrouter", env: "OLLIE_OPENAI_KEY", label: "OpenRouter" },
  { backend: "anthropic", env: "OLLIE_ANTHROPIC_KEY", label: "Anthropic" },
];

/** The SecretStorage key that keeps the value of environment variable `env`. */
export function secretKey(env: string): string {
  return `ollie.env.${env}`;
}

/** Every environment variable a stored key can go to, once each. */
export function keyVariables(): string[] {
  return [...new Set(KEY_BACKENDS.map((b) => b.env))];
}

/** Stored values as the daemon's environment; unset and blank ones are left out. */
export function keyEnvironment(stored: ReadonlyMap<string, string | undefined>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of keyVariables()) {
    const value = stored.get(name)?.trim();
    if (value) env[name] = value;
  }
  return env;
}
