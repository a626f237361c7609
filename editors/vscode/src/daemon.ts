// The ollie-lsp daemon as a language client: start, stop, restart, requests and notifications.

import * as fs from "node:fs";
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions, State, StaticFeature, TransportKind } from "vscode-languageclient/node";
import { OllieEvent, StateChanged, parseEvent, parseStateChanged } from "./lib/protocol";
import { resolveServerCommand } from "./lib/serverCommand";
import { daemonSettings, settingValue } from "./lib/settings";
import { startFolder } from "./workFolder";

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** A request made while the daemon (re)started, answered when that start failed or took too long: it was not sent. */
export class DaemonNotStarted extends Error {
  /** `announced`: the start failed and said so itself (`onStartFailed`, a message); else it took too long or was stopped. */
  constructor(message: string, readonly announced: boolean) {
    super(message);
  }
}

// How long a request made while the daemon (re)starts waits for it (a start takes a second or two; a loaded machine more).
const START_WAIT_MS = 30_000;

/** Answers one server→client request; throw a `ResponseError` to answer an error. */
export type RequestHandler = (params: unknown, token: vscode.CancellationToken) => Promise<unknown>;

// The turn's state is shown once, in Ollie's status bar item: without this, the client would announce
// window.workDoneProgress and every turn would also show as a progress item on the left.
const noWindowProgress: StaticFeature = {
  fillClientCapabilities: (capabilities) => {
    capabilities.window = { ...capabilities.window, workDoneProgress: false };
  },
  initialize: () => undefined,
  getState: () => ({ kind: "static" }),
  clear: () => undefined,
};

/** Owns the LanguageClient that runs `ollie-lsp`; fires typed events for its notifications. */
export class Daemon implements vscode.Disposable {
  private client: LanguageClient | undefined;
  // A client cannot be stopped while it starts: stop() waits for this first.
  private starting: Promise<void> | undefined;
  // Bumped by every start and stop: a start still reading the stored keys when another began gives up.
  private generation = 0;
  // The start under way (a restart's stop included): a request made meanwhile waits for it, and why it failed.
  private startup: Promise<boolean> | undefined;
  private startError: string | undefined;
  private readonly eventEmitter = new vscode.EventEmitter<OllieEvent>();
  private readonly stateEmitter = new vscode.EventEmitter<StateChanged>();
  private readonly runningEmitter = new vscode.EventEmitter<boolean>();
  private readonly failedEmitter = new vscode.EventEmitter<string>();
  /** Every `ollie/event`, in order. */
  readonly onEvent = this.eventEmitter.event;
  /** Every `ollie/stateChanged`. */
  readonly onStateChanged = this.stateEmitter.event;
  /** Fires true once the daemon answered `initialize`, false when it stopped. */
  readonly onRunning = this.runningEmitter.event;
  /** Fires with what to do when the daemon could not be started (not installed, failed at start). */
  readonly onStartFailed = this.failedEmitter.event;

  private readonly handlers = new Map<string, RequestHandler>();
  private readonly extraOptions: Record<string, unknown> = {};
  private envSource: (() => Promise<Record<string, string>>) | undefined;
  /** Whether the current daemon exited by itself (not by stop() or a restart): what it ran was lost. */
  crashed = false;

  constructor(private readonly log: vscode.LogOutputChannel) {}

  /** Answer server→client `method` on every daemon started from now on; `options` join its initializationOptions. */
  serve(method: string, handler: RequestHandler, options: Record<string, unknown> = {}): vscode.Disposable {
    this.handlers.set(method, handler);
    Object.assign(this.extraOptions, options);
    return new vscode.Disposable(() => this.handlers.delete(method));
  }

  /** Extra environment read at each start (API keys from SecretStorage); it wins over `ollie.serverEnv`. */
  setEnvSource(source: () => Promise<Record<string, string>>): void {
    this.envSource = source;
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** Start the daemon from the current settings; shows an error and stays stopped when it cannot. */
  start(): Promise<boolean> {
    return this.underWay(this.launch());
  }

  /** Whether a start (or restart) is under way: a request made now waits for it. */
  get startUnderWay(): boolean {
    return this.startup !== undefined;
  }

  private underWay(startup: Promise<boolean>): Promise<boolean> {
    this.startup = startup;
    const done = (): void => {
      if (this.startup === startup) this.startup = undefined;
    };
    startup.then(done, done);
    return startup;
  }

  private async launch(): Promise<boolean> {
    this.startError = undefined;
    const config = vscode.workspace.getConfiguration("ollie");
    const ignored: string[] = [];
    const { settings, warnings } = daemonSettings((name) => {
      const { value, ignored: fromWorkspace } = settingValue(name, config.inspect(name), config.get<unknown>(name));
      if (fromWorkspace) ignored.push(`"ollie.${name}"`);
      return value;
    });
    if (ignored.length) {
      warnings.push(`this workspace's settings set ${ignored.join(", ")}: ignored. A repository must not choose the ` +
        "command Ollie runs, its agent, its model or where your API key is sent; set them in your user settings.");
    }
    for (const warning of warnings) {
      this.log.warn(warning);
      void vscode.window.showWarningMessage(`Ollie: ${warning}`, "Open Settings").then((choice) => {
        if (choice) void vscode.commands.executeCommand("workbench.action.openSettingsJson");
      });
    }
    const resolved = resolveServerCommand({
      configured: settings.serverCommand,
      args: settings.serverArgs,
      pathEnv: process.env.PATH ?? "",
      isExecutable,
    });
    if ("error" in resolved) {
      this.startError = resolved.error;
      this.log.error(resolved.error);
      this.failedEmitter.fire(resolved.error);
      void vscode.window.showErrorMessage(resolved.error, "Open Settings").then((choice) => {
        if (choice) void vscode.commands.executeCommand("workbench.action.openSettings", "ollie.serverCommand");
      });
      return false;
    }
    const generation = ++this.generation;
    const secretEnv = (await this.envSource?.().catch((err: unknown) => {
      this.log.warn(`reading stored API keys: ${String(err)}`);
      return undefined;
    })) ?? {};
    if (generation !== this.generation) return false;
    // With no folder open, the editor's own working directory (`/`, the app's dir) would be the sessions': home is.
    const cwd = startFolder();
    const serverOptions: ServerOptions = {
      command: resolved.command,
      args: resolved.args,
      transport: TransportKind.stdio,
      options: { cwd, env: { ...process.env, ...settings.serverEnv, ...secretEnv } },
    };
    const clientOptions: LanguageClientOptions = {
      // Every file document is synced: the model's file tools read unsaved buffers and edit them
      // through workspace/applyEdit (ollie serves no language features for them).
      documentSelector: [{ scheme: "file" }],
      outputChannel: this.log,
      initializationOptions: {
        ...this.extraOptions,
        agent: settings.agent,
        backend: settings.backend,
        model: settings.model,
      },
    };
    this.log.info(`starting ${resolved.command} ${resolved.args.join(" ")}`.trim());
    const client = new LanguageClient("ollie", "Ollie", serverOptions, clientOptions);
    client.registerFeature(noWindowProgress);
    // LSP 3.18 inline completions are a proposed feature in vscode-languageclient 9: registered, the client declares
    // them and provides the daemon's ghost text in every file editor (ollie's code actions need nothing: standard).
    client.registerProposedFeatures();
    // A client replaced by a restart may still speak: its stop timed out (client.stop(2000) then leaves its
    // connection open). What it says once another one runs is about a daemon gone: only its last words while
    // stopping (a turn it interrupted) still count.
    const replaced = (): boolean => this.client !== undefined && this.client !== client;
    client.onNotification("ollie/event", (params: unknown) => {
      if (replaced()) return;
      const event = parseEvent(params);
      if (event) this.eventEmitter.fire(event);
      else this.log.warn(`ignored malformed ollie/event: ${JSON.stringify(params)}`);
    });
    client.onNotification("ollie/stateChanged", (params: unknown) => {
      if (replaced()) return;
      const state = parseStateChanged(params);
      if (state) this.stateEmitter.fire(state);
    });
    for (const [method, handler] of this.handlers) client.onRequest(method, (params: unknown, token) => handler(params, token));
    client.onDidChangeState((change) => {
      // A client replaced by a restart reports its stop late: only the current one's stop is news.
      if (this.client !== client) return;
      if (change.newState === State.Stopped) {
        // Not stop(): it forgets the client first. The daemon exited by itself; the client may start it again.
        this.crashed = true;
        this.log.error("ollie-lsp stopped unexpectedly");
        this.runningEmitter.fire(false);
      } else if (change.newState === State.Running && this.crashed) {
        // The language client restarted the crashed daemon by itself: the chat reconnects to it.
        this.log.info("ollie-lsp restarted after a crash");
        this.runningEmitter.fire(true);
      }
    });
    this.client = client;
    this.crashed = false;
    try {
      this.starting = client.start();
      await this.starting;
    } catch (err) {
      this.log.error(`ollie-lsp failed to start: ${String(err)}`);
      this.startError = `The daemon failed to start (${String(err)}): see the "Ollie" output, then run "Ollie: Restart".`;
      this.failedEmitter.fire(this.startError);
      void vscode.window.showErrorMessage(`Ollie: the daemon failed to start (${String(err)}). See the "Ollie" output.`);
      return false;
    }
    this.runningEmitter.fire(true);
    return true;
  }

  /** Stop the daemon (its sessions are saved by the daemon itself). */
  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.generation++;
    await this.starting?.catch(() => undefined);
    if (client && client.state !== State.Stopped) {
      try {
        await client.stop(2000);
      } catch (err) {
        this.log.warn(`stopping ollie-lsp: ${String(err)}`);
      }
    }
    this.runningEmitter.fire(false);
  }

  /** Stop, then start again with the current settings. */
  restart(): Promise<boolean> {
    return this.underWay(this.stop().then(() => this.launch()));
  }

  /** Wait for the start under way, if any (at most START_WAIT_MS); rejects with `DaemonNotStarted` when it failed. */
  async started(): Promise<void> {
    if (!this.startup) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), START_WAIT_MS)));
    try {
      // A start that gave way to a later one (a second settings change) ends false: that later one is waited for.
      for (let startup = this.startup; startup; startup = this.startup) {
        const outcome = await Promise.race([startup, late]);
        if (outcome === "late") throw new DaemonNotStarted(`The daemon did not start in ${START_WAIT_MS / 1000} s: see the "Ollie" output.`, false);
        if (outcome) return;
        if (this.startup === startup || !this.startup) throw new DaemonNotStarted(this.startError ?? "The daemon was stopped before it started.", this.startError !== undefined);
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** Send an `ollie/*` request (made while the daemon restarts, once it is up); rejects when it is not running or answers an error. */
  async request<T>(method: string, params: object, token?: vscode.CancellationToken): Promise<T> {
    // A settings change or Ollie: Restart restarts it: what the user does meanwhile waits instead of failing.
    if (!this.running) await this.started();
    if (!this.client || !this.running) throw new Error("the ollie daemon is not running (Ollie: Restart)");
    return token ? this.client.sendRequest<T>(method, params, token) : this.client.sendRequest<T>(method, params);
  }

  dispose(): void {
    void this.stop();
    this.eventEmitter.dispose();
    this.stateEmitter.dispose();
    this.runningEmitter.dispose();
    this.failedEmitter.dispose();
  }
}
