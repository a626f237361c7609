// The sessions the editor shows: one chat model per session, the current one, and the requests that drive them.

import * as vscode from "vscode";
import { ApprovalModes } from "./approvalModes";
import { Daemon, DaemonNotStarted } from "./daemon";
import { BackendStatus, Onboarding, onboardingFor, parseBackendStatus, turnError } from "./lib/backend";
import { ChatItem, ChatModel, retryWait, unsavedTail } from "./lib/chatModel";
import { contextParam, describeEditorContext, imagesParam, promptLabels } from "./lib/editorContext";
import { errorText } from "./lib/errors";
import { parsePermissionRequest } from "./lib/permission";
import { DAEMON_LOST, DAEMON_RESTARTED, DAEMON_RESTARTED_SAVED, EditorContext, OllieEvent, SlashCommand, PlanStep, StateChanged, SubmitResult, isDaemonGone, parseCommandList, parsePlan } from "./lib/protocol";
import { ApprovalMode, Header, ImageSource, PermissionOutcome } from "./lib/webviewMessages";
import { cutsConversation, isSlashCommand } from "./lib/slash";
import { PermissionAnswer, PermissionQuestions } from "./permissionQuestions";
import { QueueMemory, QueuedPrompts, SavedPrompt, unsentNotice } from "./queuedPrompts";
import { ChangesLists, changesItem, stepDiff } from "./review/changesList";
import { SessionHistory } from "./sessionHistory";
import { SessionHost } from "./sessionHost";
import { placement } from "./workFolder";

export interface SessionStatus {
  state: string;
  running: boolean;
  cost: unknown;
  /** An approval question of the session waits for the user's answer. */
  asking?: boolean;
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
  /** A prompt that will not run (its daemon ended) goes back in the input, with its context. */
  unsent?(text: string, contexts: readonly EditorContext[], images: readonly ImageSource[]): void;
}

// Streaming deltas are coalesced for this long before the view is updated.
const FLUSH_MS = 30;
// PROTOCOL.md "Errors": the daemon holds no more of prompts not run yet (a submit's images refused before any is read).
const QUEUE_FULL = -32010;

/** Where a window keeps the id of the session it shows, and its queued prompts, across reloads (workspaceState). */
export interface SessionMemory {
  get(): string | undefined;
  set(session: string): void;
  queue?: QueueMemory;
}

/** Routes daemon events into per-session chat models and sends prompts for the current session. */
export class Conversation implements vscode.Disposable {
  private readonly models = new Map<string, ChatModel>();
  private readonly statuses = new Map<string, SessionStatus>();
  // The sessions whose `turn` start event came, and not its end yet.
  private readonly turning = new Set<string>();
  // A failed model request's wait before its retry (`limitretry`), by session: the status bar counts it down.
  private readonly retryWaits = new Map<string, { what: string; until: number }>();
  private retryTick: NodeJS.Timeout | undefined;
  private current: string | undefined;
  private readonly dirty = new Map<number, ChatItem>();
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly listeners = new Set<ConversationListener>();
  private readonly disposables: vscode.Disposable[] = [];
  /** The daemon's slash commands (`ollie/listCommands`), fetched each time it starts. */
  slashCommands: SlashCommand[] = [];
  private readonly titles = new Map<string, string>();
  // Each session's task plan as the daemon said it last (`ollie/state`, or `ollie/stateChanged` when it changed).
  private readonly plans = new Map<string, PlanStep[]>();
  // How many `ollie/stateChanged` had come when each session's last one came: an `ollie/state` asked before it
  // (answered after it) may hold an older title.
  private stateChanges = 0;
  private readonly titleToldAt = new Map<string, number>();
  private backend: BackendStatus | undefined;
  private readonly approvals: ApprovalModes;
  private readonly questions: PermissionQuestions;
  private readonly changesLists: ChangesLists;
  private readonly undoneEmitter = new vscode.EventEmitter<string>();
  /** Fires with the session a Changed files list undid files of: their open review tabs show it. */
  readonly onUndone = this.undoneEmitter.event;
  private readonly history: SessionHistory;
  private readonly queued: QueuedPrompts;
  // While a fresh daemon's session is being set up (and a mode picked meanwhile applied).
  private settling: Promise<void> | undefined;
  // The session to show again once the next daemon is up (the one the window showed before a reload).
  private restore: string | undefined;
  // Until that session's history has come (or it could not be loaded), the view says it loads: no empty new chat.
  private resuming = false;
  // The session a prompt was typed in while the daemon restarted: the next daemon resumes it (else a Restart starts
  // a fresh one), and the prompt goes there.
  private typedIn: string | undefined;
  // Each session's working directory (`ollie/state`'s cwd): relative file links resolve against it.
  private readonly cwds = new Map<string, string>();
  private readonly agentModels = new Map<string, { agent: string; model: string }>();
  // The daemon crashed: the chat its restart brings back says so.
  private crashNotice = false;
  // What the user watched of the turn a crash cut short, which the restored chat (read from the log) lacks.
  private cutShort: ChatItem[] = [];

  constructor(
    private readonly daemon: Daemon,
    private readonly log: vscode.LogOutputChannel,
    private readonly memory?: SessionMemory,
  ) {
    this.restore = memory?.get();
    this.resuming = this.restore !== undefined;
    const host: SessionHost = {
      daemon,
      log,
      current: () => this.current,
      cwdOf: (session) => this.cwds.get(session),
      modelFor: (session) => this.modelFor(session),
      setModel: (session, model) => void this.models.set(session, model),
      running: (session) => this.statuses.get(session)?.running === true,
      changedIn: (session, item) => this.changedIn(session, item),
      request: (method, params) => this.request(method, params),
    };
    this.approvals = new ApprovalModes(host, () => this.emitHeader());
    this.questions = new PermissionQuestions(host, () => {
      for (const listener of this.listeners) listener.permissionAsked?.();
    }, (session) => {
      if (session === (this.current ?? "")) this.emitStatus();
    });
    this.changesLists = new ChangesLists(host);
    this.history = new SessionHistory(host, (items, earlier) => {
      for (const listener of this.listeners) listener.earlierLoaded?.(items, earlier);
    }, (items) => this.changesLists.fill(items));
    this.queued = new QueuedPrompts(host, memory?.queue, (session) => {
      if (session !== this.current) return;
      // The view draws the chat anew: an item changed just before and gone since (injects joined) is not drawn again.
      this.dirty.clear();
      for (const listener of this.listeners) listener.reset();
    });
    this.disposables.push(
      daemon.onEvent((event) => this.onEvent(event)),
      daemon.onStateChanged((state) => this.onState(state)),
      daemon.onRunning((running) => void this.onRunning(running)),
      // Not installed, or failed at start: the chat says what to do (it was blank, and prompts went nowhere).
      daemon.onStartFailed((message) => {
        this.resumed();
        this.changed(this.model.addNotice("error", message));
      }),
      // Approval questions come as `ollie/permission` and are answered in the chat.
      daemon.serve("ollie/permission", (params, token) => this.askPermission(params, token), { permissionRequest: true }),
      // `Ollie: Ask about this...` (a code action on a selection) asks for its question here.
      daemon.serve("ollie/prompt", (params, token) => askLine(params, token), { promptRequest: true }),
    );
  }

  /** Once a starting daemon is up and the chat shows the session it brings back (a window reload, a restart): a
   * command acts on that session then, not on the fresh one the daemon starts with. */
  async settled(): Promise<void> {
    await this.daemon.started();
    await this.settling;
  }

  /** Whether the view waits for a session it shows again (a window reload, a restart), rather than a new chat. */
  get loading(): boolean {
    return this.resuming;
  }

  // The session to show again is shown, or will not be: the view shows what there is.
  private resumed(): void {
    if (!this.resuming) return;
    this.resuming = false;
    for (const listener of this.listeners) listener.reset();
  }

  /** A session's title as the daemon last said it ("" when not known). */
  titleOf(session: string | undefined): string {
    return (session && this.titles.get(session)) || "";
  }

  /** The view header: the current session's title and approval mode. */
  get header(): Header {
    const session = this.current ?? "";
    const { agent, model } = this.agentModels.get(session) ?? { agent: "", model: "" };
    return { title: this.titles.get(session) ?? "", approval: this.approvals.of(session), agent, model, plan: this.plans.get(session) ?? [] };
  }

  /** What the empty chat shows while the backend cannot take a turn (null: it can). */
  get onboarding(): Onboarding | null {
    return onboardingFor(this.backend);
  }

  get session(): string | undefined {
    return this.current;
  }

  /** What `session` does now, for a list of sessions: it waits for her answer, runs a turn, or neither (''). */
  activity(session: string): string {
    return this.questions.asks(session) ? "waiting for your answer" : this.turning.has(session) ? "running" : "";
  }

  /** The directory the current session works in, once the daemon said. */
  get cwd(): string | undefined {
    return this.cwds.get(this.current ?? "");
  }

  /** How many older messages of the current session are not loaded yet. */
  get earlier(): number {
    return this.history.earlier(this.current ?? "");
  }

  /** The current session's chat model (created on first use). */
  get model(): ChatModel {
    return this.modelFor(this.current ?? "");
  }

  get status(): SessionStatus {
    const session = this.current ?? "";
    const status = this.statuses.get(session) ?? { state: this.daemon.running ? "idle" : "stopped", running: false, cost: undefined };
    // Between a turn's end and the queued prompt's start the daemon is not idle: the status bar does not say so.
    const next = !status.running && this.queued.runsNext(session);
    const wait = this.retryWaits.get(session);
    const left = wait ? Math.ceil((wait.until - Date.now()) / 1000) : 0;
    // It said "thinking" while it waited to retry (a 429's Retry-After: a minute, maybe).
    const state = left > 0 ? `${wait?.what} in ${left}s` : next ? "running the queued prompt" : status.state;
    return { ...status, state, asking: this.questions.asks(session) };
  }

  /** Subscribe a view; returns its disposable. */
  listen(listener: ConversationListener): vscode.Disposable {
    this.listeners.add(listener);
    return new vscode.Disposable(() => this.listeners.delete(listener));
  }

  /**
   * Send a prompt (or slash command) to the current session and show it; resolves when the turn ends. Rejects with
   * `DaemonNotStarted` when it waited for a start that failed, its daemon died before its turn began, or the daemon
   * refused it (-32010): it did not run.
   */
  async submit(text: string, contexts: readonly EditorContext[] = [], images: readonly ImageSource[] = []): Promise<SubmitResult | undefined> {
    const contextLabels = promptLabels(contexts, images);
    if (this.daemon.startUnderWay) await this.afterStart(text, contextLabels);
    // After a Stop (or a reload) queued prompts wait: this one goes behind them, not past them (its images too).
    if (this.current !== undefined && this.queued.holds(this.current) && !isSlashCommand(text)) {
      await this.queued.sendBehind(this.current, text, contexts, images);
      return undefined;
    }
    const model = this.model;
    const fresh = model.items.length === 0;
    const sent = model.addUser(text, { contextLabels });
    this.changed(sent);
    const mark = model.items.length;
    const seq = model.lastSeq;
    try {
      // A mode picked while the daemon started (Read-only, say) is applied before this prompt runs, not after it.
      if (this.approvals.waiting) await this.settling;
      await this.approvals.applyPending();
      await this.place(model, contexts, fresh);
      const result = await this.daemon.request<SubmitResult>("ollie/submit", this.withSession({ text, context: contextParam(contexts), ...imagesParam(images) }));
      // A command's output arrives as an `info` event; only a failure the events did not show is added.
      if (result.stop === "error" && result.error && !this.sawError(model, mark)) this.changedIn(this.sessionOf(model), model.addNotice("error", turnError(this.backend, result.error)));
      if (result.failed) this.shellFailed(model, mark);
      // A command ends with no `turn` event: the queue it may have emptied (`/queued clear`, `pop`) is asked here.
      // And the model or agent it may have switched (`/model NAME` typed here), which the composer names.
      if (result.stop === "command") {
        void this.queued.turnEnded(result.session, "command");
        void this.refreshHeader();
        if (cutsConversation(text)) await this.redrawAfter(model, mark, text, result.reply);
      }
      return result;
    } catch (err) {
      // Refused before it ran (-32010: the images the daemon's sessions hold): shown unsent, it goes back in the input.
      if ((err as { code?: unknown } | null)?.code === QUEUE_FULL && sent.kind === "user") {
        sent.note = "unsent";
        this.changedIn(this.sessionOf(model), sent);
        this.changedIn(this.sessionOf(model), model.addNotice("error", `${errorText(err).replace(/[^.!?]$/, "$&.")} The prompt was not sent: it is back in the input.`));
        throw new DaemonNotStarted("refused by the daemon", true);
      }
      // The view may show another session by now: the notice goes to the prompt's own.
      this.changedIn(this.sessionOf(model), model.addNotice("error", isDaemonGone(err) ? DAEMON_LOST : errorText(err)));
      // The daemon died before the turn began (no event of its session came): nothing of it ran or was saved, and the
      // chat the next daemon shows will not have it. It goes back in the input (it vanished with that chat).
      if (isDaemonGone(err) && model.lastSeq === seq) throw new DaemonNotStarted("The daemon stopped before the prompt's turn began.", true);
      return undefined;
    }
  }

  // Typed while the daemon (re)starts (a settings change, Ollie: Restart): the prompt waits for it and for its session
  // to be resumed there, then goes as any other (it was answered "not running", and lost). Meanwhile it shows noted
  // `waiting` in the chat it was typed in (the new daemon's chat of that session shows it again as it goes).
  private async afterStart(text: string, contextLabels: string[]): Promise<void> {
    this.typedIn ??= this.current;
    const model = this.model;
    this.changed(model.addUser(text, { note: "waiting", contextLabels }));
    try {
      await this.daemon.started();
    } catch (err) {
      if (err instanceof DaemonNotStarted) {
        for (const item of model.renote(["waiting"], "unsent")) this.changedIn(this.sessionOf(model), item);
        const why = err.announced ? "" : `${err.message} `;
        this.changedIn(this.sessionOf(model), model.addNotice("error", `${why}Your prompt was not sent: it is back in the input.`));
      }
      throw err;
    }
    await this.settling;
  }

  /** Run the prompts held in the current session (Enter on an empty prompt); nothing when none is held. */
  async runHeld(): Promise<void> {
    if (this.current !== undefined && this.queued.holds(this.current)) await this.queued.release(this.current);
  }

  /** Take back the chat's latest queued prompt (undefined: none), out of the queue, to put in the input. */
  takeBack(): Promise<SavedPrompt | undefined> {
    return this.current === undefined ? Promise.resolve(undefined) : this.queued.takeBack(this.current);
  }

  /** Queue a prompt (with its context items and images) to run after the current turn; false when the daemon did not
   * take it. */
  queue(text: string, contexts: readonly EditorContext[] = [], images: readonly ImageSource[] = []): Promise<boolean> {
    // `seen`: the last event the chat had, so the daemon knows whether the user saw the turn running or its end.
    return this.sendAside("ollie/queue", text, "queued", contexts, images);
  }

  /** Inject text (with its context items) into the running turn (the model sees it at its next step); false when the
   * daemon did not take it. */
  inject(text: string, contexts: readonly EditorContext[] = []): Promise<boolean> {
    return this.sendAside("ollie/inject", text, "injected", contexts, []);
  }

  // Queued and injected text is shown once the daemon has accepted it (refused, it is nowhere in the chat).
  private async sendAside(method: string, text: string, note: "queued" | "injected", contexts: readonly EditorContext[], images: readonly ImageSource[]): Promise<boolean> {
    const session = this.current ?? "";
    const model = this.model;
    const extra = note === "queued" ? { seen: model.seen, ...imagesParam(images) } : {};
    try {
      await this.daemon.request(method, this.withSession({ text, context: contextParam(contexts), ...extra }));
      this.changedIn(session, model.addUser(text, { note, contextLabels: promptLabels(contexts, images) }));
      this.queued.queued(session, text, contexts, note === "injected", images);
      return true;
    } catch (err) {
      const why = isDaemonGone(err) ? "The Ollie daemon stopped." : errorText(err).replace(/[^.!?]$/, "$&.");
      this.changedIn(session, model.addNotice("error", `${why} The prompt was not ${note}: it is back in the input.`));
      return false;
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
    const model = this.model;
    const mark = model.items.length;
    const result = await this.daemon.request<{ output?: string; failed?: boolean }>("ollie/command", this.withSession({ line }));
    if (result?.failed) this.shellFailed(model, mark);
    void this.refreshHeader();  // `/model`, `/agent`: the composer names them
    if (cutsConversation(line)) await this.redrawAfter(model, mark, undefined, result?.output ?? "");
    return result?.output ?? "";
  }

  // `/rewind`, `/clear` and `/agent NAME` cut the conversation (`/rewind undo` puts it back): the chat is drawn again
  // as the daemon has it now (the cut turns stayed in sight, as if the model still had them), then the command (when
  // typed) and what it said. One that failed (its `error` event came first) cut nothing.
  private async redrawAfter(model: ChatModel, mark: number, line: string | undefined, output: string): Promise<void> {
    if (this.sawError(model, mark) || model !== this.model) return;
    await this.reload();
    if (line !== undefined) this.changed(this.model.addUser(line));
    if (output) this.changed(this.model.addNotice("info", output));
  }

  /** Any `ollie/*` request with this session's id added. */
  request<T>(method: string, params: object = {}): Promise<T> {
    return this.daemon.request<T>(method, this.withSession(params));
  }

  /** Set the current session's approval mode (`ollie/setApproval`). */
  setApproval(mode: ApprovalMode): Promise<void> {
    return this.approvals.set(mode);
  }

  /** The user's Restart: a fresh chat, the queued prompts back in the input, even while the start after a window
   * reload (which shows the last chat again, its prompts held) is still under way: that start, cut short, kept it. */
  async restart(): Promise<void> {
    this.restore = undefined;
    await this.daemon.restart();
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
    this.questions.answer(itemId, outcome, feedback);
  }

  /** Undo a file (or every file: `path` undefined) of the turn listed in changes item `itemId`. */
  async undo(itemId: number, path?: string): Promise<void> {
    const item = changesItem(this.model.items, itemId);
    if (!item) return;
    await this.changesLists.undo(item, path);
    this.undoneEmitter.fire(item.session);
  }

  /** The diff of `path` in a tool item's step(s), for "Open diff". */
  stepDiff(itemId: number, path: string): { oldText: string | null; newText: string | null; title: string } | undefined {
    return stepDiff(this.model.items, itemId, path);
  }

  /** The session of changes item `itemId` (for opening its review). */
  changesSession(itemId: number): { session: string; turn: number } | undefined {
    const item = changesItem(this.model.items, itemId);
    return item ? { session: item.session, turn: item.turn } : undefined;
  }

  private async askPermission(params: unknown, token: vscode.CancellationToken): Promise<PermissionAnswer> {
    const request = parsePermissionRequest(params);
    if (!request) {
      this.log.warn(`ignored a malformed ollie/permission request: ${JSON.stringify(params)?.slice(0, 200)}`);
      return { outcome: "reject" };
    }
    if (this.current === undefined) this.adopt(request.session);
    return this.questions.ask(request, token);
  }

  // The daemon says a session's title in `ollie/state` and, as it gives one (the first prompt, a rename), in
  // `ollie/stateChanged`: the header follows with no request of its own.
  private setTitle(session: string, title: unknown): void {
    if (typeof title !== "string" || title === (this.titles.get(session) ?? "")) return;
    this.titles.set(session, title);
    if (session === this.current) this.emitHeader();
  }

  private setPlan(session: string, plan: PlanStep[] | undefined): void {
    if (plan === undefined || JSON.stringify(plan) === JSON.stringify(this.plans.get(session) ?? [])) return;
    this.plans.set(session, plan);
    if (session === this.current) this.emitHeader();
  }

  // `ollie/state` of the current session: title, approval mode and backend health.
  private async refreshState(): Promise<{ session?: string; state?: string; running?: boolean; cost?: unknown } | undefined> {
    try {
      const asked = this.stateChanges;
      const state = await this.daemon.request<{ session?: string; state?: string; running?: boolean; cost?: unknown; approval?: unknown; cwd?: unknown; title?: unknown; agent?: unknown; model?: unknown; plan?: unknown }>(
        "ollie/state",
        this.withSession({}),
      );
      const session = typeof state?.session === "string" ? state.session : this.current ?? "";
      if (typeof state?.cwd === "string") this.cwds.set(session, state.cwd);
      this.agentModels.set(session, { agent: typeof state?.agent === "string" ? state.agent : "", model: typeof state?.model === "string" ? state.model : "" });
      if ((this.titleToldAt.get(session) ?? 0) <= asked) {
        this.setTitle(session, state?.title);
        this.setPlan(session, parsePlan(state?.plan));
      }
      this.approvals.reported(session, state?.approval);
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
    if (fresh) await this.history.load(session, false);
    else if (!this.models.has(session)) await this.history.load(session);
    this.switchTo(session);
  }

  /** Read the current session's state again (a command may have switched its agent or model) and show its header. */
  async refreshHeader(): Promise<void> {
    await this.refreshState();
    this.emitHeader();
  }

  /** Say `text` (information, not sent to the model) at the end of the current chat. */
  note(text: string): void {
    this.changed(this.model.addNotice("info", text));
  }

  /** Read the current session's conversation again (after a rewind cut it, or its undo put it back). */
  reload(): Promise<void> {
    return this.current === undefined ? Promise.resolve() : this.resume(this.current, true);
  }

  /** Load the page of the current session's messages before the first one shown. */
  loadEarlier(): Promise<void> {
    return this.history.loadEarlier();
  }

  /** Make `session` the one the view shows (a session not seen before starts empty). */
  switchTo(session: string): void {
    this.current = session;
    this.memory?.set(session);
    this.dirty.clear();
    for (const listener of this.listeners) listener.reset();
    // Shown again after a reload or a crash: the prompts it had queued then are queued again, held.
    void this.queued.restore(session);
    this.emitStatus();
    void this.refreshState().then(() => this.emitHeader());
  }

  private withSession<T extends object>(params: T): T & { session?: string } {
    return this.current ? { ...params, session: this.current } : params;
  }

  // Multi-root: the first prompt moves the session to its file's folder; a later one about another folder's file
  // is told plainly that the session cannot change it (its edits there would fail in the sandbox).
  private async place(model: ChatModel, contexts: readonly EditorContext[], fresh: boolean): Promise<void> {
    const session = this.current;
    const cwd = this.cwd;
    const where = session && cwd ? placement(contexts.filter((c) => !c.mcpServer).map((c) => c.uri), cwd, fresh) : undefined;
    if (!session || !where) return;
    if ("move" in where) {
      try {
        await this.daemon.request("ollie/setCwd", { session, cwd: where.move });
      } catch (err) {
        // The prompt still runs, in the folder the session works in now.
        this.log.warn(`ollie/setCwd ${where.move}: ${errorText(err)}`);
        return;
      }
      this.cwds.set(session, where.move);
      this.log.info(`session ${session} works in ${where.move} (the folder of the file its first prompt is about)`);
      return;
    }
    const { file, folder } = where.outside;
    this.changedIn(session, model.addNotice("info", `This session works in ${cwd}: it cannot change ${file}, which is in another ` +
      `folder (${folder}). Ollie: New Session, with that file active, starts a session there.`));
  }

  // The daemon usually reports a failed turn with an `error` event too: show it once.
  /** The `!cmd` whose output came as an `exec` event since item `since` failed: shown so, as a failed step. */
  private shellFailed(model: ChatModel, since: number): void {
    const output = model.items.slice(since).reverse().find((item) => item.kind === "notice" && item.level === "exec");
    if (output?.kind !== "notice") return;
    output.failed = true;
    this.changedIn(this.sessionOf(model), output);
  }

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
    // A model request that failed leaves no answer: retried (`limitretry`), or given up (the `error` ending the turn,
    // which names its kind), the words it streamed go; given up, they stayed above the error, though the session
    // never kept them (a resumed chat had none, the model did not see them).
    const failed = event.role === "limitretry" || (event.role === "error" && event.name !== undefined);
    if (failed && event.seq > model.lastSeq && model.dropAttempt() && event.session === this.current) {
      this.dirty.clear(); // the view draws the chat anew, without the failed attempt's text
      for (const listener of this.listeners) listener.reset();
    }
    const changed = model.apply(event.role === "error" ? { ...event, content: turnError(this.backend, event.content) } : event);
    const wait = retryWait(event);
    if (wait) {
      this.retryWaits.set(event.session, { what: `${wait.what}, retry ${wait.retry}`, until: Date.now() + wait.seconds * 1000 });
      this.retryTick ??= setInterval(() => this.countDown(), 1000);
    }
    if ((wait || this.retryWaits.delete(event.session)) && event.session === this.current) this.emitStatus();
    if (event.role === "turn") {
      const start = event.content === "start";
      if (start) this.turning.add(event.session);
      else this.turning.delete(event.session);
      this.queued.turnEvent(event.session, event.content, () => event.session === this.current && this.emitStatus());
      // Idle at the end (a state that said so before it was held back, below), not at the next start.
      const idle = this.statuses.get(event.session)?.state === "idle";
      this.updateStatus(event.session, start ? { running: true, ...(idle ? { state: "thinking" } : {}) } : { running: false, state: "idle" });
    }
    if (event.session === this.current) for (const item of changed) this.changed(item);
    if (event.role === "user") this.queued.started(event.session, event.content);
    if (event.role === "tool") this.queued.taken(event.session);
    if (event.role === "turn" && event.content !== "start") {
      void this.queued.turnEnded(event.session, event.content);
      this.questions.turnEnded(event.session);
      this.changesLists.showEnded(event);
      // The turn may have reached the model (a Stop after its first words too, a token limit): the onboarding's
      // "cannot be reached" (from a check before it came up) is asked again (it stayed, pointing at the setting).
      if (this.backend && !this.backend.ok) void this.refreshState();
    }
  }

  private onState(state: StateChanged): void {
    if (this.current === undefined) this.adopt(state.session);
    // The daemon may say idle before the turn's end event comes (it saves, runs hooks): the chat has not drawn that
    // end yet, nor has a prompt queued behind it started; the end event says idle then.
    const ending = !state.running && this.turning.has(state.session);
    this.updateStatus(state.session, ending ? { cost: state.cost } : { state: state.state, running: state.running, cost: state.cost });
    this.titleToldAt.set(state.session, ++this.stateChanges);
    this.setTitle(state.session, state.title);
    this.setPlan(state.session, state.plan);
  }

  // Each second of a retry's wait: the status bar's count, and the waits over dropped (none left: no more ticks).
  private countDown(): void {
    for (const [session, wait] of this.retryWaits) if (wait.until <= Date.now()) this.retryWaits.delete(session);
    if (this.retryWaits.size === 0) {
      clearInterval(this.retryTick);
      this.retryTick = undefined;
    }
    this.emitStatus();
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
      this.questions.cancelAll();
      // Its queues ended with it; what was saved of them comes back once the next daemon is up (or is forgotten).
      this.queued.clear();
      this.turning.clear();
      if (this.daemon.crashed) {
        // Its turns died with it: no session runs now, and the daemon the client restarts shows this chat again.
        this.restore ??= this.current;
        this.crashNotice = true;
        this.cutShort = unsavedTail(this.model);
        for (const [session, status] of this.statuses) this.statuses.set(session, { ...status, state: "stopped", running: false });
      }
      this.emitStatus();
      return;
    }
    // A fresh daemon: the chats of the last one go now, before the awaits below. A prompt sent meanwhile waits
    // under "" and moves to the default session once it is known (clearing after the awaits lost it).
    this.current = undefined;
    this.models.clear();
    this.cwds.clear();
    this.statuses.clear();
    this.history.clear();
    this.queued.clear();
    // Only a start that shows the last daemon's session again (a reload, a crash, Check again) brings back the
    // prompts queued in it; Restart and a settings change start fresh: those prompts (held ones too) ended with that
    // daemon, and go back in the input, said, rather than vanish. Decided now: a session switched to while this one
    // starts came back with them held. Each session's come back when it is shown (`switchTo`), the one shown first below.
    const continuing = this.restore !== undefined;
    this.resuming = continuing;
    const unsent = continuing ? [] : this.queued.forget();
    if (continuing) this.queued.carry();
    this.dirty.clear();
    for (const listener of this.listeners) listener.reset();
    // At once (the input is the webview's own: no reset clears it), one prompt per line, before what is typed there.
    const text = unsent.map((prompt) => prompt.text).join("\n");
    if (unsent.length) for (const listener of this.listeners) listener.unsent?.(text, unsent.flatMap((prompt) => prompt.contexts), unsent.flatMap((prompt) => prompt.images ?? []));
    let settled = (): void => undefined;
    this.settling = new Promise<void>((resolve) => (settled = resolve));
    try {
      const state = await this.refreshState();
      this.slashCommands = parseCommandList(await this.daemon.request<unknown>("ollie/listCommands", {}));
      if (typeof state?.session === "string") {
        if (this.current === undefined) this.adopt(state.session);
        // Not over what the session's events said meanwhile (a prompt sent while this started: its turn runs).
        if (!this.statuses.has(state.session)) this.updateStatus(state.session, { state: state.state ?? "idle", running: state.running === true, cost: state.cost });
        for (const listener of this.listeners) listener.reset();
        await this.restoreSession(state.session);
        if (continuing && this.current !== undefined) await this.queued.restore(this.current);
        // The restored chat is read from disk, where the lost turn's prompt may be missing: it says what happened.
        if (this.crashNotice) {
          const drawn = this.model.items.length;
          const shown = this.model.addCutShort(this.cutShort);
          // One line it drew went (a "no answer" under steps the streamed reply followed): drawn again whole.
          if (this.model.items.length < drawn + shown.length) for (const listener of this.listeners) listener.reset();
          else for (const item of shown) this.changed(item);
          // Nothing shown again of a streamed tail: the history read back holds its answer (told to send it again, a
          // user would run the turn twice).
          const saved = this.cutShort.length > 0 && shown.length === 0;
          this.changed(this.model.addNotice("error", saved ? DAEMON_RESTARTED_SAVED : DAEMON_RESTARTED));
        }
        this.crashNotice = false;
        this.cutShort = [];
        // Said once the fresh chat is settled: a notice before would count as typed in it (`restoreSession`).
        if (unsent.length) this.changed(this.model.addNotice("info", unsentNotice(unsent.length)));
        await this.approvals.applyPending();
      }
    } catch (err) {
      this.log.warn(`ollie/listCommands: ${errorText(err)}`);
    } finally {
      settled();
      this.settling = undefined;
      this.resumed();
    }
    this.emitStatus();
    this.emitOnboarding();
  }

  // After a window reload (or Check again's restart) the chat shows the session it showed before; Restart and
  // settings changes start fresh, unless a prompt typed in the chat meanwhile waits for them.
  private async restoreSession(fresh: string): Promise<void> {
    const session = this.restore ?? this.typedIn;
    this.restore = undefined;
    this.typedIn = undefined;
    // Not when the user already typed into the new session, or moved to another one: checked again after every
    // await, since a prompt sent while the old chat loads runs in the fresh session and must stay in view.
    const untouched = (): boolean => this.current === fresh && (this.models.get(fresh)?.items.length ?? 0) === 0;
    if (!session || session === fresh || !untouched()) return;
    try {
      const loaded = await this.daemon.request<{ info?: { title?: unknown } } | null>("ollie/session/load", { session });
      // Its title shows with its history (it said "New chat" until `ollie/state` answered).
      this.setTitle(session, loaded?.info?.title);
    } catch (err) {
      // A session never saved (no prompt sent) or deleted since: the fresh one stays.
      this.log.info(`ollie/session/load ${session}: ${errorText(err)}`);
      return;
    }
    if (!untouched()) return;
    if (!this.models.has(session)) await this.history.load(session);
    if (!untouched()) return;
    this.resuming = false;
    this.switchTo(session);
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
    // Before the first session is known the chat in view is the one kept under "" (a prompt sent with no daemon:
    // its error went nowhere).
    if ((session ?? "") === (this.current ?? "")) this.changed(item);
  }

  private emitStatus(): void {
    // The chat first: the turn's end drawn before the status bar says idle (it said so up to FLUSH_MS before).
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
      this.flush();
    }
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
    clearInterval(this.retryTick);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    for (const d of this.disposables) d.dispose();
    this.undoneEmitter.dispose();
  }
}

/** `ollie/prompt`: one line from the user (an input box); null when dismissed. */
async function askLine(params: unknown, token: vscode.CancellationToken): Promise<{ text: string } | null> {
  const p = (params ?? {}) as { title?: unknown; placeholder?: unknown };
  const text = await vscode.window.showInputBox({
    prompt: typeof p.title === "string" ? p.title : "Ask ollie",
    placeHolder: typeof p.placeholder === "string" ? p.placeholder : undefined,
    ignoreFocusOut: true,
  }, token);
  return text ? { text } : null;
}
