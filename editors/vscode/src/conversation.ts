// The sessions the editor shows: one chat model per session, the current one, and the requests that drive them.

import * as vscode from "vscode";
import { ResponseError } from "vscode-languageclient/node";
import { Daemon } from "./daemon";
import { workspaceUri } from "./editorActions";
import { BackendStatus, Onboarding, onboardingFor, parseBackendStatus } from "./lib/backend";
import { ChangedFile, ChatItem, ChatModel } from "./lib/chatModel";
import { contextParam, describeEditorContext } from "./lib/editorContext";
import { historyItems, modelFromHistory, pageBefore, parseContextPage, startsWithResult } from "./lib/history";
import { changedFilesOf, mergeChanges, parsePermissionRequest } from "./lib/permission";
import { DAEMON_LOST, DAEMON_RESTARTED, EditorContext, OllieEvent, SlashCommand, StateChanged, SubmitResult, isDaemonGone, parseCommandList } from "./lib/protocol";
import { APPROVAL_MODES, ApprovalMode, Header, PermissionOutcome } from "./lib/webviewMessages";
import { staleReason } from "./review/hunks";

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
  /** The session's title or approval mode changed. */
  headerChanged?(header: Header): void;
  /** The backend became usable (null) or not (what to do). */
  onboardingChanged?(onboarding: Onboarding | null): void;
  /** A step waits for the user's approval in the current session. */
  permissionAsked?(): void;
  /** Older items of the current session go before the others; `earlier` messages are still not loaded. */
  earlierLoaded?(items: ChatItem[], earlier: number): void;
}

type PermissionItem = Extract<ChatItem, { kind: "permission" }>;
type ChangesItem = Extract<ChatItem, { kind: "changes" }>;
interface PendingQuestion {
  item: PermissionItem;
  session: string;
  resolve(answer: { outcome: PermissionOutcome; feedback?: string }): void;
}

// Streaming deltas are coalesced for this long before the view is updated.
const FLUSH_MS = 30;
// A resumed session shows its last this many messages (`ollie.historyPageSize`); scrolling to the top loads the page before.
const HISTORY_PAGE = 200;

function historyPage(): number {
  const size = vscode.workspace.getConfiguration("ollie").get<number>("historyPageSize", HISTORY_PAGE);
  return Number.isInteger(size) && size > 0 ? size : HISTORY_PAGE;
}

/** Where a window keeps the id of the session it shows, across reloads (VS Code's workspaceState). */
export interface SessionMemory {
  get(): string | undefined;
  set(session: string): void;
}

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
  private readonly questions = new Map<number, PendingQuestion>();
  private readonly titles = new Map<string, string>();
  private readonly approvals = new Map<string, ApprovalMode>();
  private backend: BackendStatus | undefined;
  // Per session: how many of its oldest messages are not loaded (the offset of the first page shown).
  private readonly earlierCounts = new Map<string, number>();
  private loadingEarlier = false;
  // An approval mode picked while no daemon runs: set once one is up.
  private pendingApproval: ApprovalMode | undefined;
  // The `ollie/setApproval` last sent: a prompt waits for it, so the mode picked before it is the one it runs under.
  private applying: Promise<void> = Promise.resolve();
  // While a fresh daemon's session is being set up (and a mode picked meanwhile applied).
  private settling: Promise<void> | undefined;
  // The session to show again once the next daemon is up (the one the window showed before a reload).
  private restore: string | undefined;
  // The daemon crashed: the chat its restart brings back says so.
  private crashNotice = false;

  constructor(
    private readonly daemon: Daemon,
    private readonly log: vscode.LogOutputChannel,
    private readonly memory?: SessionMemory,
  ) {
    this.restore = memory?.get();
    this.disposables.push(
      daemon.onEvent((event) => this.onEvent(event)),
      daemon.onStateChanged((state) => this.onState(state)),
      daemon.onRunning((running) => void this.onRunning(running)),
      // Approval questions come as `ollie/permission` and are answered in the chat.
      daemon.serve("ollie/permission", (params, token) => this.askPermission(params, token), { permissionRequest: true }),
    );
  }

  /** The view header: the current session's title and approval mode. */
  get header(): Header {
    const session = this.current ?? "";
    return { title: this.titles.get(session) ?? "", approval: this.approvals.get(session) ?? "" };
  }

  /** What the empty chat shows while the backend cannot take a turn (null: it can). */
  get onboarding(): Onboarding | null {
    return onboardingFor(this.backend);
  }

  get session(): string | undefined {
    return this.current;
  }

  /** How many older messages of the current session are not loaded yet. */
  get earlier(): number {
    return this.earlierCounts.get(this.current ?? "") ?? 0;
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
  async submit(text: string, contexts: readonly EditorContext[] = []): Promise<SubmitResult | undefined> {
    const model = this.model;
    this.changed(model.addUser(text, { contextLabels: contexts.map(describeEditorContext) }));
    const mark = model.items.length;
    try {
      // A mode picked while the daemon started (Read-only, say) is applied before this prompt runs, not after it.
      if (this.pendingApproval !== undefined) await this.settling;
      await this.applyPendingApproval();
      const result = await this.daemon.request<SubmitResult>("ollie/submit", this.withSession({ text, context: contextParam(contexts) }));
      // A command's output arrives as an `info` event; only a failure the events did not show is added.
      if (result.stop === "error" && result.error && !this.sawError(model, mark)) this.changedIn(this.sessionOf(model), model.addNotice("error", result.error));
      return result;
    } catch (err) {
      // The view may show another session by now: the notice goes to the prompt's own.
      this.changedIn(this.sessionOf(model), model.addNotice("error", isDaemonGone(err) ? DAEMON_LOST : errorText(err)));
      return undefined;
    }
  }

  /** Queue a prompt (with its context items) to run after the current turn. */
  queue(text: string, contexts: readonly EditorContext[] = []): Promise<void> {
    return this.sendAside("ollie/queue", text, "queued", contexts);
  }

  /** Inject text (with its context items) into the running turn (the model sees it at its next step). */
  inject(text: string, contexts: readonly EditorContext[] = []): Promise<void> {
    return this.sendAside("ollie/inject", text, "injected", contexts);
  }

  // Queued and injected text is shown once the daemon has accepted it.
  private async sendAside(method: string, text: string, note: "queued" | "injected", contexts: readonly EditorContext[]): Promise<void> {
    const session = this.current ?? "";
    const model = this.model;
    try {
      await this.daemon.request(method, this.withSession({ text, context: contextParam(contexts) }));
      this.changedIn(session, model.addUser(text, { note, contextLabels: contexts.map(describeEditorContext) }));
    } catch (err) {
      this.changedIn(session, model.addNotice("error", errorText(err)));
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

  /** Set the current session's approval mode (`ollie/setApproval`). */
  async setApproval(mode: ApprovalMode): Promise<void> {
    if (!this.daemon.running || this.current === undefined) {
      // Picked while the daemon starts (or restarts), or before its session is known (it would be kept for none, and
      // the session's `ask` shown): applied once both are, not lost with an error.
      this.pendingApproval = mode;
      this.approvals.set(this.current ?? "", mode);
      this.emitHeader();
      return;
    }
    const applying = this.sendApproval(mode);
    this.applying = applying;
    await applying;
  }

  private async sendApproval(mode: ApprovalMode): Promise<void> {
    try {
      await this.request("ollie/setApproval", { approval: mode });
      this.approvals.set(this.current ?? "", mode);
    } catch (err) {
      this.changed(this.model.addNotice("error", `approval mode: ${errorText(err)}`));
    }
    this.emitHeader();
  }

  /** Send the mode picked while no daemon ran (or before its session was known) once both are; then (or else) the
   * `ollie/setApproval` in flight. Every prompt and the daemon's start-up go through here, so none runs before it. */
  private applyPendingApproval(): Promise<void> {
    const mode = this.pendingApproval;
    if (mode !== undefined && this.daemon.running && this.current !== undefined) {
      this.pendingApproval = undefined;
      void this.setApproval(mode);
    }
    return this.applying;
  }

  /** Ask the daemon again whether the backend can take a turn; when it still cannot (a daemon may cache a failed check), restart it. */
  async checkBackend(): Promise<void> {
    await this.refreshState();
    if (this.backend && !this.backend.ok) {
      this.log.info("backend still unusable: restarting the daemon for a fresh check");
      // The restarted daemon shows this chat again: a failed prompt must not vanish because the user checked.
      this.restore = this.current;
      await this.daemon.restart();
    }
  }

  /** Answer the pending approval question shown as chat item `itemId`. */
  answerPermission(itemId: number, outcome: PermissionOutcome, feedback?: string): void {
    const question = this.questions.get(itemId);
    if (!question) return;
    this.questions.delete(itemId);
    question.item.outcome = outcome;
    if (feedback) question.item.feedback = feedback;
    this.changedIn(question.session, question.item);
    question.resolve(feedback ? { outcome, feedback } : { outcome });
  }

  /** Undo a file (or every file: `path` undefined) of the turn listed in changes item `itemId`. */
  async undo(itemId: number, path?: string): Promise<void> {
    const item = this.model.items.find((i): i is ChangesItem => i.kind === "changes" && i.id === itemId);
    if (!item) return;
    const paths = path ? [path] : item.files.filter((f) => !f.undone).map((f) => f.path);
    item.busy = true;
    item.message = undefined;
    this.changedIn(item.session, item);
    const refused: string[] = [];
    for (const file of paths) {
      try {
        await this.daemon.request("ollie/review/undo", { session: item.session, path: file, turn: item.turn });
      } catch (err) {
        // -32003 stale: the file changed since the turn; the user's edit is kept.
        refused.push(err instanceof ResponseError && err.code === -32003 ? `Undo refused: ${staleReason(err.message)}` : `Undo of ${file} failed: ${errorText(err)}`);
      }
    }
    await this.refreshChanges(item);
    item.busy = false;
    item.message = refused.length ? refused.join("\n") : undefined;
    this.changedIn(item.session, item);
  }

  /** The diff of `path` in a tool item's step(s), for "Open diff". */
  stepDiff(itemId: number, path: string): { oldText: string | null; newText: string | null; title: string } | undefined {
    const item = this.model.items.find((i) => i.id === itemId);
    if (!item) return undefined;
    if (item.kind === "permission") return item.step.diff?.path === path ? { ...item.step.diff, title: item.step.title } : undefined;
    if (item.kind !== "tool") return undefined;
    for (const step of [...(item.steps ?? []), ...(item.step ? [item.step] : [])]) {
      const diff = step.diffs?.find((d) => d.path === path);
      if (diff) return { oldText: diff.oldText, newText: diff.newText, title: step.title };
    }
    return undefined;
  }

  /** The session of changes item `itemId` (for opening its review). */
  changesSession(itemId: number): { session: string; turn: number } | undefined {
    const item = this.model.items.find((i): i is ChangesItem => i.kind === "changes" && i.id === itemId);
    return item ? { session: item.session, turn: item.turn } : undefined;
  }

  private async askPermission(params: unknown, token: vscode.CancellationToken): Promise<{ outcome: PermissionOutcome; feedback?: string }> {
    const request = parsePermissionRequest(params);
    if (!request) {
      this.log.warn(`ignored a malformed ollie/permission request: ${JSON.stringify(params)?.slice(0, 200)}`);
      return { outcome: "reject" };
    }
    if (this.current === undefined) this.adopt(request.session);
    const model = this.modelFor(request.session);
    const item = model.add<PermissionItem>({ kind: "permission", id: 0, step: request.step, always: request.always });
    this.changedIn(request.session, item);
    if (request.session === this.current) for (const listener of this.listeners) listener.permissionAsked?.();
    else void vscode.window.showInformationMessage(`Ollie: a session in the background asks to ${request.step.title}.`);
    return new Promise((resolve) => {
      this.questions.set(item.id, { item, session: request.session, resolve });
      token.onCancellationRequested(() => {
        if (!this.questions.delete(item.id)) return;
        item.outcome = "cancelled";
        this.changedIn(request.session, item);
        resolve({ outcome: "reject" });
      });
    });
  }

  // After a turn that changed files: a "Changed files" list for it.
  private async showChanges(session: string): Promise<void> {
    try {
      const { turn, files } = changedFilesOf(await this.daemon.request<unknown>("ollie/changes", { session }));
      markUnsaved(files);
      if (turn === null || files.length === 0) return;
      const model = this.modelFor(session);
      if (model.items.some((i) => i.kind === "changes" && i.session === session && i.turn === turn)) return;
      this.changedIn(session, model.add<ChangesItem>({ kind: "changes", id: 0, session, turn, files }));
    } catch (err) {
      // A CWD without checkpoints answers -32602: there is nothing to review.
      this.log.info(`ollie/changes: ${errorText(err)}`);
    }
  }

  private async refreshChanges(item: ChangesItem): Promise<void> {
    try {
      const { files } = changedFilesOf(await this.daemon.request<unknown>("ollie/changes", { session: item.session, turn: item.turn }));
      item.files = mergeChanges(item.files, markUnsaved(files));
    } catch (err) {
      this.log.warn(`ollie/changes: ${errorText(err)}`);
    }
  }

  private async refreshTitle(session: string): Promise<void> {
    try {
      // The current session is among the most recently active ones.
      const listed = await this.daemon.request<{ sessions?: { id?: string; title?: string }[] }>("ollie/session/list", { limit: 20 });
      const info = listed?.sessions?.find((s) => s.id === session);
      const title = typeof info?.title === "string" ? info.title : "";
      if (title === (this.titles.get(session) ?? "")) return;
      this.titles.set(session, title);
      if (session === this.current) this.emitHeader();
    } catch (err) {
      this.log.info(`ollie/session/list: ${errorText(err)}`);
    }
  }

  // `ollie/state` of the current session: approval mode and backend health.
  private async refreshState(): Promise<{ session?: string; state?: string; running?: boolean; cost?: unknown } | undefined> {
    try {
      const state = await this.daemon.request<{ session?: string; state?: string; running?: boolean; cost?: unknown; approval?: unknown }>(
        "ollie/state",
        this.withSession({}),
      );
      const session = typeof state?.session === "string" ? state.session : this.current ?? "";
      if ((APPROVAL_MODES as readonly unknown[]).includes(state?.approval)) this.approvals.set(session, state.approval as ApprovalMode);
      this.backend = parseBackendStatus(state);
      this.emitOnboarding();
      return state;
    } catch (err) {
      this.log.warn(`ollie/state: ${errorText(err)}`);
      return undefined;
    }
  }

  /** Show saved session `session` (its last page of messages); `fresh`: read again even when this window has its chat. */
  async resume(session: string, fresh = false): Promise<void> {
    // Read again after a rewind: the saved last turn's result may be that of a turn the rewind cut.
    if (fresh || !this.models.has(session)) await this.loadHistory(session, !fresh);
    this.switchTo(session);
  }

  /** Read the current session's conversation again (after a rewind cut it, or its undo put it back). */
  reload(): Promise<void> {
    return this.current === undefined ? Promise.resolve() : this.resume(this.current, true);
  }

  /** Load the page of the current session's messages before the first one shown. */
  async loadEarlier(): Promise<void> {
    const session = this.current;
    const end = this.earlier;
    if (session === undefined || end <= 0) return;
    if (this.loadingEarlier) {
      // Another session's page is still coming (the user switched meanwhile): this view may ask again, not wait forever.
      for (const listener of this.listeners) listener.earlierLoaded?.([], end);
      return;
    }
    this.loadingEarlier = true;
    try {
      const { messages, offset } = await this.fetchPage(session, pageBefore(end, historyPage()));
      if (session !== this.current || this.earlier !== end) return;
      const items = this.modelFor(session).prepend(historyItems(messages));
      this.earlierCounts.set(session, offset);
      for (const listener of this.listeners) listener.earlierLoaded?.(items.map((item) => ({ ...item })), offset);
    } catch (err) {
      this.log.warn(`ollie/context: ${errorText(err)}`);
      // Nothing came: the view may ask again.
      if (session === this.current) for (const listener of this.listeners) listener.earlierLoaded?.([], end);
    } finally {
      this.loadingEarlier = false;
    }
  }

  // The session's last page of messages as its chat model (an unreadable context: an empty chat); `withEnding`: with how
  // its last turn ended.
  private async loadHistory(session: string, withEnding = true): Promise<void> {
    try {
      const [{ total }, lastTurnResult] = await Promise.all([
        this.daemon.request<unknown>("ollie/context", { session, limit: 0 }).then(parseContextPage),
        withEnding ? this.lastTurnResult(session) : undefined,
      ]);
      const page = await this.fetchPage(session, pageBefore(total, historyPage()));
      // A turn running now has not ended: the last one's result is not this one's.
      const ended = this.statuses.get(session)?.running === true ? undefined : lastTurnResult;
      this.models.set(session, modelFromHistory(page.messages, ended));
      this.earlierCounts.set(session, page.offset);
    } catch (err) {
      this.log.warn(`ollie/context: ${errorText(err)}`);
      this.models.set(session, new ChatModel());
      this.earlierCounts.delete(session);
    }
  }

  // A page of the session's messages from `offset`; it starts earlier when it would start with a tool result, so that
  // each call and its result are on one page (split, they would show as two steps).
  private async fetchPage(session: string, { offset, limit }: { offset: number; limit: number }): Promise<{ messages: unknown[]; offset: number }> {
    const { messages } = parseContextPage(await this.daemon.request<unknown>("ollie/context", { session, offset, limit }));
    while (offset > 0 && startsWithResult(messages)) {
      offset -= 1;
      messages.unshift(...parseContextPage(await this.daemon.request<unknown>("ollie/context", { session, offset, limit: 1 })).messages);
    }
    return { messages, offset };
  }

  // How the session's last turn ended (`info.lastTurnResult`): `session/load` of a session this daemon runs answers its info.
  private async lastTurnResult(session: string): Promise<unknown> {
    try {
      const loaded = await this.daemon.request<{ info?: { lastTurnResult?: unknown } }>("ollie/session/load", { session });
      return loaded?.info?.lastTurnResult;
    } catch (err) {
      this.log.info(`ollie/session/load ${session}: ${errorText(err)}`);
      return undefined;
    }
  }

  /** Make `session` the one the view shows (a session not seen before starts empty). */
  switchTo(session: string): void {
    this.current = session;
    this.memory?.set(session);
    this.dirty.clear();
    for (const listener of this.listeners) listener.reset();
    this.emitStatus();
    void this.refreshTitle(session);
    void this.refreshState().then(() => this.emitHeader());
  }

  private withSession<T extends object>(params: T): T & { session?: string } {
    return this.current ? { ...params, session: this.current } : params;
  }

  // The daemon usually reports a failed turn with an `error` event too: show it once.
  private sawError(model: ChatModel, since: number): boolean {
    return model.items.slice(since).some((item) => item.kind === "notice" && item.level === "error");
  }

  // The session a model belongs to now (a prompt sent before the first session was known moves to it).
  private sessionOf(model: ChatModel): string | undefined {
    for (const [session, held] of this.models) if (held === model) return session;
    return undefined;
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
    if (event.role === "turn" && event.content !== "start") {
      // The withdrawn questions of a turn that ended are answered no more.
      for (const [id, question] of this.questions) if (question.session === event.session && question.item.outcome === undefined) this.questions.delete(id);
      if (event.content !== "command") void this.showChanges(event.session);
      void this.refreshTitle(event.session);
    }
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
    this.memory?.set(session);
  }

  private async onRunning(running: boolean): Promise<void> {
    if (!running) {
      for (const [id, question] of this.questions) {
        question.item.outcome = "cancelled";
        question.resolve({ outcome: "reject" });
        this.questions.delete(id);
      }
      if (this.daemon.crashed) {
        // Its turns died with it: no session runs now, and the daemon the client restarts shows this chat again.
        this.restore ??= this.current;
        this.crashNotice = true;
        for (const [session, status] of this.statuses) this.statuses.set(session, { ...status, state: "stopped", running: false });
      }
      this.emitStatus();
      return;
    }
    // A fresh daemon: the chats of the last one go now, before the awaits below. A prompt sent meanwhile waits
    // under "" and moves to the default session once it is known (clearing after the awaits lost it).
    this.current = undefined;
    this.models.clear();
    this.statuses.clear();
    this.earlierCounts.clear();
    this.dirty.clear();
    for (const listener of this.listeners) listener.reset();
    let settled = (): void => undefined;
    this.settling = new Promise<void>((resolve) => (settled = resolve));
    try {
      const state = await this.refreshState();
      this.slashCommands = parseCommandList(await this.daemon.request<unknown>("ollie/listCommands", {}));
      if (typeof state?.session === "string") {
        if (this.current === undefined) this.adopt(state.session);
        this.updateStatus(state.session, { state: state.state ?? "idle", running: state.running === true, cost: state.cost });
        for (const listener of this.listeners) listener.reset();
        void this.refreshTitle(state.session);
        await this.restoreSession(state.session);
        // The restored chat is read from disk, where the lost turn's prompt may be missing: it says what happened.
        if (this.crashNotice) this.changed(this.model.addNotice("error", DAEMON_RESTARTED));
        this.crashNotice = false;
        await this.applyPendingApproval();
      }
    } catch (err) {
      this.log.warn(`ollie/listCommands: ${errorText(err)}`);
    } finally {
      settled();
      this.settling = undefined;
    }
    this.emitStatus();
    this.emitOnboarding();
  }

  // After a window reload (or Check again's restart) the chat shows the session it showed before; Restart and
  // settings changes start fresh.
  private async restoreSession(fresh: string): Promise<void> {
    const session = this.restore;
    this.restore = undefined;
    // Not when the user already typed into the new session, or moved to another one: checked again after every
    // await, since a prompt sent while the old chat loads runs in the fresh session and must stay in view.
    const untouched = (): boolean => this.current === fresh && (this.models.get(fresh)?.items.length ?? 0) === 0;
    if (!session || session === fresh || !untouched()) return;
    try {
      await this.daemon.request("ollie/session/load", { session });
    } catch (err) {
      // A session never saved (no prompt sent) or deleted since: the fresh one stays.
      this.log.info(`ollie/session/load ${session}: ${errorText(err)}`);
      return;
    }
    if (!untouched()) return;
    if (!this.models.has(session)) await this.loadHistory(session);
    if (untouched()) this.switchTo(session);
  }

  private emitHeader(): void {
    const header = this.header;
    for (const listener of this.listeners) listener.headerChanged?.(header);
  }

  private emitOnboarding(): void {
    const onboarding = this.onboarding;
    for (const listener of this.listeners) listener.onboardingChanged?.(onboarding);
  }

  private changedIn(session: string | undefined, item: ChatItem): void {
    if (session === this.current) this.changed(item);
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

// Which of the turn's buffer edits the editor still holds unsaved (a web editor may have auto-saved them).
function markUnsaved(files: ChangedFile[]): ChangedFile[] {
  for (const file of files) {
    if (!file.inEditor) continue;
    const uri = workspaceUri(file.path)?.toString();
    file.unsaved = vscode.workspace.textDocuments.some((doc) => doc.uri.toString() === uri && doc.isDirty);
  }
  return files;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
