import assert from "node:assert/strict";
import { test } from "node:test";
import { BackendStatus, onboardingFor, parseBackendStatus, turnError } from "../../src/lib/backend";

const status = (patch: Partial<BackendStatus>): BackendStatus => ({
  ok: false,
  backend: "ollama",
  model: "qwen3",
  url: "",
  reachable: null,
  modelPresent: null,
  keySet: null,
  error: "",
  hint: "",
  settingsFile: "",
  ...patch,
});

test("backendStatus is read from ollie/state; without it there is no onboarding", () => {
  const raw = { session: "s", backendStatus: { ok: false, backend: "ollama", model: "qwen3", reachable: false, modelPresent: null, keySet: null, error: "refused", hint: "start it" } };
  assert.deepEqual(parseBackendStatus(raw), status({ reachable: false, error: "refused", hint: "start it" }));
  assert.equal(parseBackendStatus({ session: "s" }), undefined);
  assert.equal(parseBackendStatus({ backendStatus: { backend: "x" } }), undefined, "no ok");
  assert.equal(onboardingFor(undefined), null);
  assert.equal(onboardingFor(status({ ok: true })), null);
});

test("Ollama not running: start it and pull the model, then check again", () => {
  const help = onboardingFor(status({ reachable: false, error: "cannot connect", hint: "start Ollama" }));
  assert.ok(help);
  assert.equal(help.title, "Ollama is not running");
  assert.deepEqual(help.steps.slice(0, 2), ["Start Ollama: `ollama serve`", "Pull the model: `ollama pull qwen3`"]);
  assert.match(help.steps[2], /Or use a hosted model: Set API key/);
  assert.equal(help.steps.at(-1), "Then press Check again.");
  assert.equal(help.offerKey, true, "a user without Ollama gets the Set API key button");
  // The daemon's hint repeats the steps in environment variables a VS Code user has nowhere to type.
  const hinted = onboardingFor(status({ reachable: false, hint: "start Ollama (`ollama serve`) ...; or use a hosted API: OLLIE_BACKEND=openai and OLLIE_OPENAI_KEY" }));
  assert.ok(!hinted?.steps.some((step) => step.includes("OLLIE_BACKEND")), "no environment-variable instructions");
  assert.equal(hinted?.steps.length, 4);
});

test("the daemon's hint is shown as a sentence where it adds something", () => {
  const help = onboardingFor(status({ backend: "openai", keySet: true, hint: "the server is slow or unreachable; check its URL and the network" }));
  assert.ok(help?.steps.includes("The server is slow or unreachable; check its URL and the network"));
});

test("where the hint's settings go is the daemon's word: its settingsFile", () => {
  const raw = { backendStatus: { ok: false, backend: "openai", model: "gpt-x", url: "https://api.example/v1", reachable: true, modelPresent: false, keySet: true, error: "openai has no model 'gpt-x'", hint: "set OLLIE_MODEL to one it has", settingsFile: "/home/me/.config/ollie-work/env" } };
  const help = onboardingFor(parseBackendStatus(raw));
  assert.deepEqual(help?.steps.slice(1, 3), ["Set OLLIE_MODEL to one it has",
    "Settings such as these go in `ollie.serverEnv`, or in /home/me/.config/ollie-work/env (KEY=VALUE lines)."]);
  assert.ok(!onboardingFor(status({ backend: "openai", keySet: true, hint: "h" }))?.steps.some((s) => s.startsWith("Settings")),
    "a daemon that does not say names no file");
});

test("a server that cannot be reached is named by the URL the user configured, not the daemon's name for it", () => {
  const raw = { backendStatus: { ok: false, backend: "local", model: "m", url: "http://127.0.0.1:8080/v1", reachable: false, modelPresent: null, keySet: true, error: "local: cannot connect", hint: "" } };
  const help = onboardingFor(parseBackendStatus(raw));
  assert.equal(help?.title, "The model server at http://127.0.0.1:8080/v1 cannot be reached");
  assert.match(help?.steps[0] ?? "", /^Start the model server, or, if it listens elsewhere, correct its URL in `ollie.serverEnv`/);
  assert.ok(!help?.title.includes("local"), "the daemon's derived name is not what the user typed");
});

test("a server that is down: check again or open ollie.serverEnv, no key, the daemon's hint not repeated", () => {
  // As the daemon says it of an OpenAI-compatible server on this machine that is not running (it takes a key: keySet).
  const down = status({ backend: "local", model: "m", url: "http://localhost:8080/v1", reachable: false, keySet: true,
    error: "local: cannot connect to http://localhost:8080/v1",
    hint: "check the network, or set OLLIE_OPENAI_BASE_URL to the API's URL (now http://localhost:8080/v1)" });
  const help = onboardingFor(down);
  assert.deepEqual(help?.steps, ["Start the model server, or, if it listens elsewhere, correct its URL in `ollie.serverEnv`.", "Then press Check again."]);
  assert.equal(help?.offerKey, false, "a key does not start a server");
  assert.equal(help?.offerSettings, true);
  // A hosted API across the network: the network, not a server to start.
  const remote = onboardingFor({ ...down, backend: "groq", url: "https://api.groq.com/openai/v1" });
  assert.deepEqual(remote?.steps, ["Check the network, or correct the server's URL in `ollie.serverEnv`.", "Then press Check again."]);
  assert.equal(remote?.offerKey, false);
  // Reached, and the key refused or missing: the key, not the setting.
  const refused = onboardingFor({ ...down, reachable: true, error: "401", hint: "" });
  assert.equal(refused?.offerKey, true);
  assert.equal(refused?.offerSettings, false);
  assert.equal(onboardingFor({ ...down, keySet: false })?.offerKey, true);
  // Ollama not running keeps its own steps and the hosted-API way.
  assert.equal(onboardingFor(status({ reachable: false }))?.offerSettings, false);
});

test("a missing model, a backend that could not be built, a refused key", () => {
  assert.match(onboardingFor(status({ reachable: true, modelPresent: false }))?.steps[0] ?? "", /ollama pull qwen3/);
  const unbuilt = onboardingFor(status({ backend: "none", keySet: false, error: "openai: API key missing: set OLLIE_OPENAI_KEY" }));
  assert.equal(unbuilt?.title, "Choose a model backend");
  assert.equal(unbuilt?.offerKey, true);
  const refused = onboardingFor(status({ backend: "anthropic", reachable: true, keySet: true, error: "401" }));
  assert.equal(refused?.title, "anthropic needs an API key");
  assert.equal(refused?.offerKey, true);
  assert.equal(onboardingFor(status({ backend: "openai", reachable: false }))?.title, "openai cannot be reached");
  // An OpenAI-compatible backend shows as its provider: the key it takes is known from keySet.
  const groq = onboardingFor(status({ backend: "groq", reachable: true, keySet: true, error: "401" }));
  assert.equal(groq?.title, "groq needs an API key");
  assert.equal(groq?.offerKey, true);
});

test("a turn failing on the problem the onboarding shows points to it; any other error is said whole", () => {
  const down = status({ backend: "openai", url: "http://127.0.0.1:9/v1", reachable: false, keySet: true, error: "127.0.0.1:9: cannot connect" });
  const said = "127.0.0.1:9: cannot connect: start the server there, or set OLLIE_OPENAI_URL to the API's URL";
  assert.equal(turnError(down, said), "Ollie cannot take a turn yet (see above: what to do)");
  assert.equal(turnError(down, "the model refused"), "the model refused");
  assert.equal(turnError({ ...down, ok: true }, said), said, "no onboarding shown: said whole");
  assert.equal(turnError(undefined, said), said);
});
