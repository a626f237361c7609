// The sessions the editor shows: one chat model per session, the current one, and the requests that drive them.

import * as vscode from "vscode";
import { Daemon } from "./daemon";
import { ChatItem, ChatModel } from "./lib/chatModel";
import { describeEditorContext } from "./lib/editorContext";
import { modelFromHistory } from "./lib/history";
import { EditorContext, OllieEvent, SlashCommand, StateChanged, SubmitResult, parseCommandList } from "./lib/protocol";

export interface SessionStatus {
  state: string;
  running: boolean;
  cost: unknown;
}

/** What the chat view needs to know: items changed, everything changed, or the status changed. */
export interface ConversationListener {
  itemsChanged(items: ChatItem[]): void;
  reset(): void;
  statusChanged(status: SessionStatus): void;
}

// Streaming deltas are coalesced for this long before the view is updated.
const FLUSH_MS = 30;

/** Routes daemon events into per-session chat models and sends prompts for the current session. */
export class Conversation implements vscode.Disposable {
  private readonly models = new Map<string, ChatModel>();
  private readonly statuses = new Map<string, SessionStatus>();
  private current: string | undefined;
  private readonly dirty = new Map<number, ChatItem>();
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly listeners = new Set<ConversationListener>();
  private readonly disposables: vscode.Disposable[] = [];
  /** The daemon's slash commands (`ollie/listCommands`), fetched each time it starts. */
  slashCommands: SlashCommand[] = [];

  constructor(private readonly daemon: Daemon, private readonly log: vscode.LogOutputChannel) {
    this.disposables.push(
      daemon.onEvent((event) => this.onEvent(event)),
      daemon.onStateChanged((state) => this.onState(state)),
      daemon.onRunning((running) => void this.onRunning(running)),
    );
  }

  get session(): string | undefined {
    return this.current;
  }

  /** The current session's chat model (created on first use). */
  get model(): ChatModel {
    return this.modelFor(this.current ?? "");
  }

  get status(): SessionStatus {
    return this.statuses.get(this.current ?? "") ?? { state: this.daemon.running ? "idle" : "stopped", running: false, cost: undefined };
  }

  /** Subscribe a view; returns its disposable. */
  listen(listener: ConversationListener): vscode.Disposable {
    this.listeners.add(listener);
    return new vscode.Disposable(() => this.listeners.delete(listener));
  }

  /** Send a prompt (or slash command) to the current session and show it; resolves when the turn ends. */
  async submit(text: string, context?: EditorContext): Promise<SubmitResult | undefined> {
    const model = this.model;
    this.changed(model.addUser(text, { contextLabel: context ? describeEditorContext(context) : undefined }));
    const mark = model.items.length;
    try {
      const result = await this.daemon.request<SubmitResult>("ollie/submit", this.withSession({ text, context }));
      // A command's output arrives as an `info` event; only a failure the events did not show is added.
      if (result.stop === "error" && result.error && !this.sawError(model, mark)) this.changed(model.addNotice("error", result.error));
      return result;
    } catch (err) {
      this.changed(model.addNotice("error", errorText(err)));
      return undefined;
    }
  }

  /** Queue a prompt to run after the current turn. */
  queue(text: string): Promise<void> {
    return this.sendAside("ollie/queue", text, "queued");
  }

  /** Inject text into the running turn (the model sees it at its next step). */
  inject(text: string): Promise<void> {
    return this.sendAside("ollie/inject", text, "injected");
  }

  // Queued and injected text is shown once the daemon has accepted it.
  private async sendAside(method: string, text: string, note: "queued" | "injected"): Promise<void> {
    const model = this.model;
    try {
      await this.daemon.request(method, this.withSession({ text }));
      this.changed(model.addUser(text, { note }));
    } catch (err) {
      this.changed(model.addNotice("error", errorText(err)));
    }
  }

  /** Interrupt the current session's turn. */
  async interrupt(): Promise<boolean> {
    try {
      const result = await this.daemon.request<{ interrupted?: boolean }>("ollie/interrupt", this.withSession({ reason: "user" }));
      return result?.interrupted === true;
    } catch (err) {
      this.log.warn(`interrupt: ${errorText(err)}`);
      return false;
    }
  }

  /** Run one slash command on the current session and return its output. */
  async command(line: string): Promise<string> {
    const result = await this.daemon.request<{ output?: string }>("ollie/command", this.withSession({ line }));
    return result?.output ?? "";
  }

  /** Any `ollie/*` request with this session's id added. */
  request<T>(method: string, params: object = {}): Promise<T> {
    return this.daemon.request<T>(method, this.withSession(params));
  }

  /** Make `session` the one the view shows; `history` (context messages) fills a model not seen before. */
  switchTo(session: string, history?: unknown): void {
    if (!this.models.has(session) && history !== undefined) this.models.set(session, modelFromHistory(history));
    this.current = session;
    this.dirty.clear();
    for (const listener of this.listeners) listener.reset();
    this.emitStatus();
  }

  private withSession<T extends object>(params: T): T & { session?: string } {
    return this.current ? { ...params, session: this.current } : params;
  }

  // The daemon usually reports a failed turn with an `error` event too: show it once.
  private sawError(model: ChatModel, since: number): boolean {
    return model.items.slice(since).some((item) => item.kind === "notice" && item.level === "error");
  }

  private modelFor(session: string): ChatModel {
    let model = this.models.get(session);
    if (!model) {
      model = new ChatModel();
      this.models.set(session, model);
    }
    return model;
  }

  private onEvent(event: OllieEvent): void {
    if (this.current === undefined) this.adopt(event.session);
    const model = this.modelFor(event.session);
    const changed = model.apply(event);
    if (event.role === "turn") this.updateStatus(event.session, { running: event.content === "start" });
    if (event.session === this.current) for (const item of changed) this.changed(item);
  }

  private onState(state: StateChanged): void {
    if (this.current === undefined) this.adopt(state.session);
    this.updateStatus(state.session, { state: state.state, running: state.running, cost: state.cost });
  }

  private updateStatus(session: string, patch: Partial<SessionStatus>): void {
    const before = this.statuses.get(session) ?? { state: "idle", running: false, cost: undefined };
    this.statuses.set(session, { ...before, ...patch, cost: patch.cost !== undefined ? patch.cost : before.cost });
    if (session === this.current) this.emitStatus();
  }

  // The first session id seen is the default session; prompts sent before it was known live under "".
  private adopt(session: string): void {
    const pending = this.models.get("");
    if (pending && !this.models.has(session)) {
      this.models.set(session, pending);
      this.models.delete("");
    }
    this.current = session;
  }

  private async onRunning(running: boolean): Promise<void> {
    if (!running) {
      this.emitStatus();
      return;
    }
    try {
      const state = await this.daemon.request<{ session?: string; state?: string; running?: boolean; cost?: unknown }>("ollie/state", {});
      this.slashCommands = parseCommandList(await this.daemon.request<unknown>("ollie/listCommands", {}));
      if (typeof state?.session === "string") {
        this.models.clear();
        this.statuses.clear();
        this.current = undefined;
        this.adopt(state.session);
        this.updateStatus(state.session, { state: state.state ?? "idle", running: state.running === true, cost: state.cost });
        for (const listener of this.listeners) listener.reset();
      }
    } catch (err) {
      this.log.warn(`ollie/state: ${errorText(err)}`);
    }
    this.emitStatus();
  }

  private emitStatus(): void {
    const status = this.status;
    for (const listener of this.listeners) listener.statusChanged(status);
  }

  private changed(item: ChatItem): void {
    this.dirty.set(item.id, item);
    this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  private flush(): void {
    this.flushTimer = undefined;
    if (this.dirty.size === 0) return;
    const items = [...this.dirty.values()].map((item) => ({ ...item }));
    this.dirty.clear();
    for (const listener of this.listeners) listener.itemsChanged(items);
  }

  dispose(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    for (const d of this.disposables) d.dispose();
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
