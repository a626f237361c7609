// The ollie-lsp daemon as a language client: start, stop, restart, requests and notifications.

import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as vscode from "vscode";
import {
  CloseAction, LanguageClient, LanguageClientOptions, MessageType, ServerOptions, ShowMessageNotification, ShowMessageRequest, State,
  StaticFeature,
} from "vscode-languageclient/node";
import { unlinked } from "./lib/notice";
import { OllieEvent, StateChanged, parseEvent, parseStateChanged } from "./lib/protocol";
import { resolveServerCommand } from "./lib/serverCommand";
import { DaemonSettings, daemonSettings, settingValue } from "./lib/settings";
import { startFolder } from "./workFolder";

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

// How much of a daemon's last stderr a failed start quotes (its traceback's last lines; the output has it whole).
const STDERR_TAIL = 600;

/** One spawned daemon process: how it ended, and the end of what it wrote to stderr. */
class DaemonProcess {
  private tail = "";
  private readonly ended: Promise<string>;

  constructor(readonly commandLine: string, readonly process: cp.ChildProcess) {
    process.stderr?.on("data", (data: Buffer) => (this.tail = (this.tail + data.toString()).slice(-STDERR_TAIL)));
    this.ended = new Promise((resolve) => {
      process.on("error", (err) => resolve(`could not be run (${err.message})`));
      process.on("exit", (code, signal) => resolve(signal ? `was killed by ${signal}` : `exited with code ${code}`));
    });
  }

  /** End it if it still runs in 2 s (the client does so only for processes it spawned itself). */
  endSoon(): void {
    setTimeout(() => {
      if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill();
    }, 2000).unref();
  }

  /** Why a start failed, in the user's words: the command, how it ended, its last stderr, and what to do. */
  async failure(err: unknown): Promise<string> {
    // The client gives up when the daemon's output closes: its exit follows at once (the timer: one that lingers).
    let timer: NodeJS.Timeout | undefined;
    const lingering = new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`did not answer (${String(err)})`), 2000)));
    const how = await Promise.race([this.ended, lingering]);
    clearTimeout(timer);
    const said = this.tail.trim() ? `: "…${this.tail.trim().split("\n").slice(-3).join(" ")}"` : "";
    return `Ollie's daemon did not start: \`${this.commandLine}\` ${how}${said}. Check the "ollie.serverCommand" ` +
      `setting (and that the ollie it runs works), see the "Ollie" output for all it said, then run "Ollie: Restart".`;
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
  // The process the client runs now (each start, and the client's own restart after a crash, spawns another).
  private process: DaemonProcess | undefined;
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
  private readonly startingEmitter = new vscode.EventEmitter<boolean>();
  /** Every `ollie/event`, in order. */
  readonly onEvent = this.eventEmitter.event;
  /** Every `ollie/stateChanged`. */
  readonly onStateChanged = this.stateEmitter.event;
  /** Fires true once the daemon answered `initialize`, false when it stopped. */
  readonly onRunning = this.runningEmitter.event;
  /** Fires with what to do when the daemon could not be started (not installed, failed at start). */
  readonly onStartFailed = this.failedEmitter.event;
  /** Fires true when a start (a restart's, the client's own after a crash) begins, false when it is over. */
  readonly onStartUnderWay = this.startingEmitter.event;

  private readonly handlers = new Map<string, RequestHandler>();
  private readonly extraOptions: Record<string, unknown> = {};
  private envSource: (() => Promise<Record<string, string>>) | undefined;
  /** Whether the current daemon exited by itself (not by stop() or a restart): what it ran was lost. */
  crashed = false;
  // The settings of the last start, as read then.
  private startedWith: string | undefined;

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
    this.startingEmitter.fire(true);
    const done = (): void => {
      if (this.startup !== startup) return;
      this.startup = undefined;
      this.startingEmitter.fire(false);
    };
    startup.then(done, done);
    return startup;
  }

  /** Whether the daemon's settings differ from those it was last started with (a change of a repository's own
   * values, which are ignored, changes nothing: restarting for it started a fresh chat, the user's gone). */
  settingsChanged(): boolean {
    return JSON.stringify(this.readSettings().settings) !== this.startedWith;
  }

  // The user's daemon settings; `ignored`: the USER_ONLY ones this workspace sets too.
  private readSettings(): { settings: DaemonSettings; warnings: string[]; ignored: string[] } {
    const config = vscode.workspace.getConfiguration("ollie");
    const ignored: string[] = [];
    const { settings, warnings } = daemonSettings((name) => {
      const { value, ignored: fromWorkspace } = settingValue(name, config.inspect(name), config.get<unknown>(name));
      if (fromWorkspace) ignored.push(`"ollie.${name}"`);
      return value;
    });
    return { settings, warnings, ignored };
  }

  private async launch(): Promise<boolean> {
    this.startError = undefined;
    const { settings, warnings, ignored } = this.readSettings();
    this.startedWith = JSON.stringify(settings);
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
      home: os.homedir(),
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
    const env = { ...process.env, ...settings.serverEnv, ...secretEnv };
    const commandLine = [resolved.command, ...resolved.args].join(" ");
    // Spawned here, not by the client: a failed start can then say how the process ended and what it said.
    const serverOptions: ServerOptions = async () => {
      this.process = new DaemonProcess(commandLine, cp.spawn(resolved.command, resolved.args, { cwd, env }));
      return this.process.process;
    };
    const clientOptions: LanguageClientOptions = {
      // Every file document is synced: the model's file tools read unsaved buffers and edit them
      // through workspace/applyEdit (ollie serves no language features for them).
      documentSelector: [{ scheme: "file" }],
      outputChannel: this.log,
      // A daemon that ends while it starts is not started again (it would fail the same way, four more times, each
      // time as a crash); one that crashed once running is, as by the client's default.
      errorHandler: {
        error: (error, message, count) => restarts.error(error, message, count),
        closed: () => (client.state === State.Starting ? { action: CloseAction.DoNotRestart, handled: true } : restarts.closed()),
      },
      initializationOptions: {
        ...this.extraOptions,
        agent: settings.agent,
        backend: settings.backend,
        model: settings.model,
      },
    };
    this.log.info(`starting ${resolved.command} ${resolved.args.join(" ")}`.trim());
    const client = new LanguageClient("ollie", "Ollie", serverOptions, clientOptions);
    const restarts = client.createDefaultErrorHandler();
    client.registerFeature(noWindowProgress);
    // LSP 3.18 inline completions are a proposed feature in vscode-languageclient 9: registered, the client declares
    // them and provides the daemon's ghost text in every file editor (ollie's code actions need nothing: standard).
    client.registerProposedFeatures();
    // A client replaced by a restart may still speak: its stop timed out (client.stop(2000) then leaves its
    // connection open). What it says once another one runs is about a daemon gone: only its last words while
    // stopping (a turn it interrupted) still count.
    const replaced = (): boolean => this.client !== undefined && this.client !== client;
    // The daemon's messages carry the model's text (a code action's answer): shown unlinked (lib/notice.ts), not as the
    // client's own handlers show them.
    const show = (type: MessageType) =>
      type === MessageType.Error ? vscode.window.showErrorMessage : type === MessageType.Warning ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    client.onNotification(ShowMessageNotification.type, ({ type, message }) => void show(type)(unlinked(message)));
    client.onRequest(ShowMessageRequest.type, ({ type, message, actions }) => show(type)(unlinked(message), ...(actions ?? [])));
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
      if (change.newState === State.Starting && this.crashed) {
        // The client restarts the crashed daemon by itself: a request made meanwhile waits for it, as for ours.
        void this.underWay(this.clientRestart(client));
      } else if (change.newState === State.Stopped) {
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
      // A daemon that ends while it starts (not to be restarted) resolves the client's start as if it had started.
      if (client.state !== State.Running) throw new Error("its connection closed");
    } catch (err) {
      await this.failed(err);
      return false;
    }
    this.runningEmitter.fire(true);
    return true;
  }

  /** The client's own restart of a crashed daemon, to its end: whether the daemon runs again. */
  private async clientRestart(client: LanguageClient): Promise<boolean> {
    const state = await new Promise<State>((resolve) => {
      const watch = client.onDidChangeState((change) => {
        if (change.newState === State.Starting) return;
        watch.dispose();
        resolve(change.newState);
      });
    });
    if (state === State.Running) return true;
    if (this.client === client) await this.failed(new Error("the restart after a crash failed"));
    return false;
  }

  /** Say why the start failed: in the chat (a prompt waiting for it gets this too), a message and the output. */
  private async failed(err: unknown): Promise<void> {
    this.startError = (await this.process?.failure(err)) ?? `Ollie's daemon did not start (${String(err)}).`;
    this.log.error(`ollie-lsp failed to start: ${String(err)}`);
    this.failedEmitter.fire(this.startError);
    void vscode.window.showErrorMessage(this.startError, "Open Settings", "Show Output").then((choice) => {
      if (choice === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "ollie.serverCommand");
      if (choice === "Show Output") this.log.show();
    });
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
    this.process?.endSoon();
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
    this.startingEmitter.dispose();
  }
}
