// The conversation as the chat view shows it, built from `ollie/event` notifications.

import { imageLabels, splitEditorContext, typedText } from "./promptContext";
import type { OllieEvent, ToolImage } from "./protocol";
import { type StepDiff, type StepLocation, type ToolStep, isUserRejection } from "./steps";

export type NoticeLevel = "info" | "error" | "exec" | "retry";

/** The step an `ollie/permission` request asks about. */
export interface PermissionStep {
  id: string;
  kind: string;
  title: string;
  locations: StepLocation[];
  diff?: StepDiff;
  /** A batch question's previews of its edits, and how many of its edits have none (PROTOCOL.md "Approval"). */
  diffs?: StepDiff[];
  diffsMore?: number;
  prefix?: string;
  /** A network question's connection (PROTOCOL.md "Network questions"). */
  network?: NetworkAsk;
  /** What the step runs outside the sandbox, exactly: the question covers leaving it (asked each time). */
  outside?: string[];
  /** A program step's code, whole (its title shows the first line). */
  code?: string;
}

/** The host a step's connection asks to reach: `scheme` "http" (a plain request) or "connect" (a tunnel). */
export interface NetworkAsk {
  host: string;
  port: number;
  scheme: string;
}

/** `host:port` as a user reads it (an IPv6 literal in brackets). */
export function networkTarget(net: NetworkAsk): string {
  return `${net.host.includes(":") ? `[${net.host}]` : net.host}:${net.port}`;
}

/** One file of a turn's changes (`ollie/changes`), as the "Changed files" list shows it. */
export interface ChangedFile {
  path: string;
  status: string;
  added: number;
  removed: number;
  /** An edit of a document open in the editor (it went to the buffer, not the disk). */
  inEditor?: boolean;
  /** That document still has unsaved edits (as the editor said when the list was made). */
  unsaved?: boolean;
  /** Undone since the list was made (it is no longer in the turn's changes). */
  undone?: boolean;
}

/** A prompt that is not (yet) a turn of its own: queued for after the running turn, injected into it, held by a
 * Stop (or a window reload) until the next prompt, dropped (`/queued clear`), waiting for the daemon that restarts,
 * or unsent (that start failed: the prompt is back in the input). */
export type PromptNote = "queued" | "injected" | "held" | "dropped" | "waiting" | "unsent";

export type ChatItem =
  | { kind: "user"; id: number; text: string; note?: PromptNote; contextLabels?: string[]; turn?: number }
  | { kind: "assistant"; id: number; text: string }
  | { kind: "reasoning"; id: number; text: string }
  | { kind: "tool"; id: number; name: string; args: string; result?: string; isError: boolean; step?: ToolStep; steps?: ToolStep[]; images?: ToolImage[];
      /** The user did not allow it (its result says so): drawn as rejected, not as a failure. */
      rejected?: boolean;
      /** Not drawn: the user rejected it in its question's card, which says so with the step's diff. */
      rejectedInCard?: boolean }
  /** `failed`: a `!cmd`'s output (`exec`) that exited non-zero, drawn as a failed step. */
  | { kind: "notice"; id: number; level: NoticeLevel; text: string; failed?: boolean }
  | { kind: "turnEnd"; id: number; stop: string }
  | {
      kind: "permission";
      id: number;
      step: PermissionStep;
      always: string;
      /** The answers the daemon offers (its `options` ids); absent: every one that fits the step. */
      offered?: string[];
      /** Set once answered (or `cancelled` when the daemon withdrew the question). */
      outcome?: string;
      /** The files the step edits (a batch's, each it previews), open in the editor with the user's unsaved changes as
       * it was asked. */
      unsaved?: string[];
      feedback?: string;
    }
  | {
      kind: "changes";
      id: number;
      session: string;
      turn: number;
      files: ChangedFile[];
      /** Drawn from the history's mark: how many files the turn changed, until `files` are read (`ollie/changes`). */
      pending?: number;
      /** How many files the turn changed past `files` (its end event lists the first), until they are read whole. */
      more?: number;
      /** Drawn from the history's mark: the user undid some of its files since (the list holds those left). */
      undone?: boolean;
      /** What it changed is not known (its end's diff failed): why ("" when not said); no list then. */
      unknown?: string;
      message?: string;
      busy?: boolean;
    };

export type ToolItem = Extract<ChatItem, { kind: "tool" }>;
type UserItem = Extract<ChatItem, { kind: "user" }>;

const NOTICE_ROLES: Record<string, NoticeLevel> = { info: "info", error: "error", exec: "exec", limitretry: "retry" };

/** A failed model request's wait to retry, from its `limitretry` event: what failed, which retry ("1/3"), how long. */
export function retryWait(event: OllieEvent): { what: string; retry: string; seconds: number } | undefined {
  const wait = event.role === "limitretry" ? /; retry (\d+\/\d+) in ([\d.]+)s$/.exec(event.content) : null;
  return wait ? { what: event.name === "rate_limit" ? "rate limited" : "the request failed", retry: wait[1], seconds: Number(wait[2]) } : undefined;
}

// A 429's notice in a line: the vendor's paragraph (limits, tokens used, a link to its docs) said nothing a user acts
// on while ollie retries; if the retries run out, the turn's error gives it whole.
function retryNotice(event: OllieEvent): string {
  const wait = retryWait(event);
  if (event.name !== "rate_limit" || !wait) return event.content;
  return `The model's server is limiting requests: retry ${wait.retry} in ${Math.ceil(wait.seconds)}s. Stop to give up.`;
}

// The engine reports tool failures as text: a leading `error: ...`, or a section header like
// `[call 2 file_read] exit 1` / `error: ...` / `timed out ...` / `killed by signal 9`.
const FAILURE = String.raw`(error\b|exit (code |status )?[1-9]\d*\b|timed out\b|killed by signal\b|traceback\b|permission denied\b)`;
const FIRST_LINE_ERROR = new RegExp(String.raw`^\s*` + FAILURE, "i");
const SECTION_ERROR = new RegExp(String.raw`^\[[^\]\n]*\]\s*` + FAILURE, "im");

/** Whether a tool result's text reports a failure. */
export function isToolError(content: string): boolean {
  return FIRST_LINE_ERROR.test(content) || SECTION_ERROR.test(content);
}

// A tool item with the event's readable step(s) when it carries them (protocol v2), and its result's images.
function withSteps(item: ToolItem, event: OllieEvent): ToolItem {
  if (event.tool) item.step = event.tool;
  if (event.steps) item.steps = event.steps;
  if (event.images) item.images = event.images;
  return item;
}

// Items that do not end the reply streaming before them: a prompt queued or injected meanwhile, and a question
// still open (the daemon may ask it before the last text deltas of the same reply have arrived).
function isSideNote(item: ChatItem): boolean {
  return (item.kind === "user" && item.note !== undefined) || (item.kind === "permission" && item.outcome === undefined);
}

/** What a running turn showed that its session's log does not keep (the log saves finished rounds only): its last
 * round's text, and its prompt when that was the turn's first. A crash of the daemon loses them from the chat read
 * back from the log. */
export function unsavedTail(model: ChatModel): ChatItem[] {
  if (!model.running) return [];
  const tail: ChatItem[] = [];
  let index = model.items.length - 1;
  for (; index >= 0; index--) {
    const item = model.items[index];
    if (item.kind === "assistant" || item.kind === "reasoning") tail.unshift(item);
    else if (item.kind !== "notice" && !isSideNote(item)) break;
  }
  const prompt = model.items[index];
  return tail.length === 0 ? [] : [...(prompt?.kind === "user" ? [prompt] : []), ...tail];
}

/** The conversation of one session: a list of items and the reducer that folds events into it. */
export class ChatModel {
  readonly items: ChatItem[] = [];
  running = false;
  lastSeq = 0;
  /** The `seq` of the `ollie/context` answer this chat was drawn from: the user saw the events it tells of. */
  historySeq = 0;
  /** How many events were skipped in `seq` (a client that missed notifications can say so). */
  missed = 0;
  private nextId = 1;

  /** The last event the user has seen the news of, live or in the history drawn (`ollie/queue`'s `seen`). */
  get seen(): number {
    return Math.max(this.lastSeq, this.historySeq);
  }

  /** Fold one event into the conversation; returns the items it added or changed. */
  apply(event: OllieEvent): ChatItem[] {
    if (event.seq <= this.lastSeq) return [];
    if (this.lastSeq > 0 && event.seq > this.lastSeq + 1) this.missed += event.seq - this.lastSeq - 1;
    this.lastSeq = event.seq;
    switch (event.role) {
      case "assistant":
      case "reasoning":
        return [this.appendText(event.role, event.content)];
      case "call":
        return [this.push(withSteps({ kind: "tool", id: 0, name: event.name ?? "", args: event.content, isError: false }, event))];
      case "step":
        return this.stepMoved(event);
      case "tool":
        return [this.toolResult(event)];
      case "turn":
        return this.turnEdge(event.content, event.turn);
      case "user":
        return this.promptStarted(event.content, event.images);
      default: {
        const level = NOTICE_ROLES[event.role];
        if (!level || event.content === "" || (level === "info" && this.answeredInChat(event.content))) return [];
        // A request's next retry says the latest of them in its notice: each said its whole error again, a wall.
        const last = this.items[this.items.length - 1];
        const text = level === "retry" ? retryNotice(event) : event.content;
        if (level === "retry" && last?.kind === "notice" && last.level === "retry") return [Object.assign(last, { text })];
        return [this.push({ kind: "notice", id: 0, level, text })];
      }
    }
  }

  // The daemon's "allowed: Edit app.py" / "rejected: ..." line after a question answered here: the
  // question's card already says so ("Allowed once"), the line would say it twice.
  private answeredInChat(text: string): boolean {
    const verdict = /^(allowed|rejected): (.+)$/.exec(text);
    return verdict !== null && this.answeredHere(verdict[1] === "allowed" ? "allow" : "reject", verdict[2]);
  }

  // Whether a recent question's card about the step titled `title` was answered here with an `answer` (allow, reject).
  private answeredHere(answer: "allow" | "reject", title: string): boolean {
    for (let i = this.items.length - 1; i >= Math.max(0, this.items.length - 20); i--) {
      const item = this.items[i];
      if (item.kind === "permission" && item.step.title === title && item.outcome?.startsWith(answer)) return true;
    }
    return false;
  }

  // A turn the client did not start just now began (the daemon's `user` event): a queued (or held) prompt's. It
  // leaves its place among the side notes and becomes the prompt of the running turn, after everything before;
  // a prompt this chat does not show (queued in another window) is added.
  private promptStarted(content: string, images?: readonly ToolImage[]): ChatItem[] {
    const typed = typedText(content);
    const waited = (notes: readonly PromptNote[]) => this.items.findIndex((i) => i.kind === "user" && i.note !== undefined && notes.includes(i.note) && typed.includes(i.text));
    // Dropped: the queue was read as its turn began (a command's during the turn before).
    const index = [waited(["queued", "held"]), waited(["dropped"])].find((i) => i >= 0) ?? -1;
    if (index < 0) {
      // A code action's, or one queued in another window: shown as sent, with a label per context block and image.
      const { prompt, contextLabels } = splitEditorContext(content);
      return [this.addUser(prompt, { contextLabels: [...(contextLabels ?? []), ...imageLabels(images)] })];
    }
    const [item] = this.items.splice(index, 1);
    if (item.kind === "user") delete item.note;
    this.items.push(item);
    return [item];
  }

  /** Give every prompt noted `from` (and passing `which`, asked oldest first) the note `to` (a Stop held the queued
   * ones, `/queued clear` or `pop` dropped them). */
  renote(from: readonly PromptNote[], to: PromptNote, which: (text: string) => boolean = () => true): ChatItem[] {
    const changed: ChatItem[] = [];
    for (const item of this.items) {
      if (item.kind === "user" && item.note !== undefined && from.includes(item.note) && which(item.text)) {
        item.note = to;
        changed.push(item);
      }
    }
    return changed;
  }

  /** Take the latest prompt shown waiting (queued or held) whose text is `text` out of the chat: taken back to edit. */
  takeBack(text: string): boolean {
    const index = this.items.map((i) => i.kind === "user" && (i.note === "queued" || i.note === "held") && i.text === text).lastIndexOf(true);
    if (index >= 0) this.items.splice(index, 1);
    return index >= 0;
  }

  /** Move `moved` after every other item, in order (prompts a Stop held go after its "Turn interrupted"). */
  toEnd(moved: readonly ChatItem[]): void {
    const rest = this.items.filter((item) => !moved.includes(item));
    this.items.splice(0, this.items.length, ...rest, ...moved);
  }

  /** The prompt just started (the last item, showing `texts[0]`) ran the others too: it shows them all, they go. */
  join(texts: readonly string[]): void {
    const started = this.items[this.items.length - 1];
    if (started?.kind !== "user" || started.text !== texts[0]) return;
    const others = this.items.filter((item) => item.kind === "user" && item.note === "queued" && texts.slice(1).includes(item.text));
    started.text = texts.join("\n");
    const labels = [started, ...others].flatMap((item) => (item.kind === "user" ? item.contextLabels ?? [] : []));
    if (labels.length) started.contextLabels = labels;
    this.items.splice(0, this.items.length, ...this.items.filter((item) => !others.includes(item)));
  }

  /** Record a prompt the user sent (the daemon does not echo prompts as events). */
  addUser(text: string, options: { note?: PromptNote; contextLabels?: string[]; turn?: number } = {}): ChatItem {
    // One label per context item (`a.py:3-7`); none is no key at all, as a prompt without context.
    const { contextLabels, ...rest } = options;
    return this.push({ kind: "user", id: 0, text, ...rest, ...(contextLabels && contextLabels.length > 0 ? { contextLabels: [...contextLabels] } : {}) });
  }

  /** Record a message from the extension itself (a command's output, a failed request). */
  addNotice(level: NoticeLevel, text: string): ChatItem {
    return this.push({ kind: "notice", id: 0, level, text });
  }

  private push<T extends ChatItem>(item: T): T {
    item.id = this.nextId++;
    this.items.push(item);
    return item;
  }

  private appendText(kind: "assistant" | "reasoning", delta: string): ChatItem {
    // Prompts queued or injected while the reply streams, or a question asked, do not split it in two.
    let index = this.items.length - 1;
    while (index >= 0 && isSideNote(this.items[index])) index--;
    const target = this.items[index];
    if (target && target.kind === kind) {
      target.text += delta;
      return target;
    }
    return this.push({ kind, id: 0, text: delta });
  }

  /** Take out the text a model request streamed before it failed, to be retried (the retry's comes whole); whether
   * there was any. The chat showed both, the failed attempt's words above the retry's note. */
  dropAttempt(): boolean {
    const attempt: ChatItem[] = [];
    for (let i = this.items.length - 1; i >= 0; i--) {
      const item = this.items[i];
      if (item.kind === "assistant" || item.kind === "reasoning") attempt.push(item);
      else if (!isSideNote(item)) break;
    }
    if (attempt.length) this.items.splice(0, this.items.length, ...this.items.filter((item) => !attempt.includes(item)));
    return attempt.length > 0;
  }

  /** Add an item made outside the event stream (a permission question, a turn's changes). */
  add<T extends ChatItem>(item: T): T {
    return this.push(item);
  }

  /** Show again what a crash cut short (`unsavedTail`), marked so, after the history read back; its prompt only
   * when that is not the history's last. Nothing when the history's last reply is it: the daemon saved the answer,
   * then died before the turn's end (a postTurn hook ran), and it showed twice. */
  addCutShort(tail: readonly ChatItem[]): ChatItem[] {
    const text = (items: readonly ChatItem[]) => items.map((item) => (item.kind === "assistant" ? item.text : "")).join("").trim();
    const reply = [...this.items].reverse().find((item) => item.kind === "assistant" || item.kind === "tool" || (item.kind === "user" && item.note === undefined));
    if (tail.length === 0 || (reply?.kind === "assistant" && text([reply]) === text(tail))) return [];
    const last = this.items.filter((item): item is UserItem => item.kind === "user" && item.note === undefined).pop();
    const saved = tail[0].kind === "user" && last?.text === tail[0].text;
    // Steps the history ends at said no answer came after them (modelFromHistory): one did, cut short.
    const end = this.items.at(-1);
    if (end?.kind === "turnEnd" && end.stop === "no_answer") this.items.pop();
    return [...(saved ? tail.slice(1) : tail).map((item) => this.push({ ...item, id: 0 })), this.push({ kind: "turnEnd", id: 0, stop: "cut_short" })];
  }

  /** Put older items (an earlier page of a resumed session) before the others; their ids count down from the first. */
  prepend(items: readonly ChatItem[]): ChatItem[] {
    const first = this.items.length ? Math.min(...this.items.map((i) => i.id)) : this.nextId;
    const older = items.map((item, index) => ({ ...item, id: first - items.length + index }));
    this.items.unshift(...older);
    return older;
  }

  // A call's tool item: by the step id when the events carry one, else the newest open call of that name.
  private findCall(event: OllieEvent, open: boolean): ToolItem | undefined {
    for (let i = this.items.length - 1; i >= 0; i--) {
      const item = this.items[i];
      if (item.kind !== "tool" || (open && item.result !== undefined)) continue;
      if (event.tool && item.step) {
        if (item.step.id === event.tool.id) return item;
        continue;
      }
      if (item.name === event.name || !event.name) return item;
    }
    return undefined;
  }

  private stepMoved(event: OllieEvent): ChatItem[] {
    const moved = event.tool;
    if (!moved) return [];
    for (let i = this.items.length - 1; i >= 0; i--) {
      const item = this.items[i];
      if (item.kind !== "tool" || !item.step) continue;
      if (item.step.id === moved.id) {
        Object.assign(item, withSteps({ ...item }, event));
        return [item];
      }
      const index = item.steps?.findIndex((s) => s.id === moved.id) ?? -1;
      if (item.steps && index >= 0) {
        item.steps = item.steps.map((s, k) => (k === index ? moved : s));
        if (item.step.status === "pending") item.step = { ...item.step, status: "in_progress" };
        return [item];
      }
    }
    return [];
  }

  private toolResult(event: OllieEvent): ChatItem {
    const item = this.findCall(event, true);
    const failed = event.tool ? event.tool.status === "failed" : isToolError(event.content);
    if (item) {
      item.result = event.content;
      item.isError = failed;
      // A step the user rejected is no failure: a resumed chat, whose cards are gone, says it was her No. One rejected
      // in its card here is not drawn at all: its failure, in red under the card's "Rejected", said it twice.
      if (failed && isUserRejection(event.content)) {
        item.rejected = true;
        const title = event.tool?.title ?? item.step?.title;
        if (title && this.answeredHere("reject", title)) item.rejectedInCard = true;
      }
      Object.assign(item, withSteps({ ...item }, event));
      return item;
    }
    return this.push(withSteps({ kind: "tool", id: 0, name: event.name ?? "", args: "", result: event.content, isError: failed }, event));
  }

  private turnEdge(content: string, turn?: number): ChatItem[] {
    if (content === "start") {
      this.running = true;
      return [];
    }
    this.running = false;
    // Its prompt learns its number now (the chat's "Fork from here" names it).
    const prompt = turn === undefined ? undefined : this.promptOfTurn();
    if (prompt) prompt.turn = turn;
    return [...(prompt ? [prompt] : []), this.push({ kind: "turnEnd", id: 0, stop: content })];
  }

  // The prompt of the turn now ending: the last one shown as sent (no note) since the last turn's end that is no
  // slash command or `!shell` line (those run as no turn; an injected or queued prompt has its note).
  private promptOfTurn(): Extract<ChatItem, { kind: "user" }> | undefined {
    for (let i = this.items.length - 1; i >= 0 && this.items[i].kind !== "turnEnd"; i--) {
      const item = this.items[i];
      if (item.kind === "user" && item.note === undefined && !/^\s*[/!]/.test(item.text)) return item;
    }
    return undefined;
  }
}
