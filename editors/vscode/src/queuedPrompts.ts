// Prompts queued for after the running turn, and text injected into it that it has not taken yet (at the turn's end
// the daemon queues what is left of it), kept as the daemon keeps them. A Stop holds them in the daemon
// (`queueHeld`): the chat says so, Enter on an empty prompt sends them on, and the next prompt is sent behind them
// (they run first, in order) instead of running past them. A window reload (or a crash) ends the daemon and its
// queue with it: each session's prompts are remembered in the window's state and queued again in the next daemon,
// held the same way, once that session is shown again (at once, or when switched to later). A Restart starts fresh:
// they go back in the chat's input, unsent.

import { contextParam, imagesParam, promptLabels } from "./lib/editorContext";
import { errorText } from "./lib/errors";
import { typedText } from "./lib/promptContext";
import { EditorContext } from "./lib/protocol";
import { ImageSource } from "./lib/webviewMessages";
import { SessionHost } from "./sessionHost";

/** A queued prompt (or injected text not taken yet) as remembered across a reload. */
export interface SavedPrompt {
  text: string;
  contexts: EditorContext[];
  /** A queued prompt's images: a workspace file's path, or the pasted bytes (the window's state keeps those in files: queueMemory). */
  images?: ImageSource[];
  injected?: boolean;
  /** The injects a prompt joins, each with its own context items (after a reload they go as injects again). */
  parts?: SavedPrompt[];
}

/** A session's queued prompts as remembered across a reload. */
export interface SavedQueue {
  session: string;
  prompts: SavedPrompt[];
}

/** Where a window keeps its sessions' queued prompts across a reload (VS Code's workspaceState), oldest first. */
export interface QueueMemory {
  get(): readonly SavedQueue[] | undefined;
  set(saved: readonly SavedQueue[] | undefined): void;
}

// The sessions whose queued prompts a window remembers: the oldest go first (a user rarely leaves prompts waiting
// in more than one or two, and the state is written on every queued prompt).
const SAVED_SESSIONS = 8;

/** The saved queues read back from the window's state (an earlier build saved a single `{session, prompts}`). */
export function savedQueues(value: unknown): SavedQueue[] {
  const entries = Array.isArray(value) ? value : value !== undefined ? [value] : [];
  return entries.flatMap((entry: unknown) => {
    const { session, prompts } = (entry ?? {}) as { session?: unknown; prompts?: unknown };
    if (typeof session !== "string" || !Array.isArray(prompts)) return [];
    const valid = prompts.filter(
      (p: unknown): p is SavedPrompt => typeof (p as SavedPrompt | null)?.text === "string" && Array.isArray((p as SavedPrompt).contexts),
    );
    return valid.length ? [{ session, prompts: valid }] : [];
  });
}

interface QueueState {
  running?: unknown;
  queuedPrompts?: unknown;
  queueHeld?: unknown;
}

function heldNotice(count: number, why: string): string {
  if (count === 1) return `${why}: 1 queued prompt waits. Enter on an empty prompt sends it; it runs before your next prompt; /queued clear drops it.`;
  return `${why}: ${count} queued prompts wait. Enter on an empty prompt sends them; they run before your next prompt; /queued clear drops them.`;
}

/** Asked of each prompt shown waiting, oldest first: whether it is not among the daemon's `waiting` ones. Each of
 * those (context blocks left out) stands for one prompt, or for several injects the daemon joined: a prompt found
 * takes its text out of the entry, so the next inject is looked for in what is left of it. */
function gone(waiting: readonly string[]): (text: string) => boolean {
  const left = waiting.map(typedText);
  return (text) => {
    const index = left.findIndex((queued) => queued.includes(text));
    if (index < 0) return true;
    left[index] = left[index].replace(text, "");
    if (left[index].trim() === "") left.splice(index, 1);
    return false;
  };
}

/** The prompts to queue again after a reload: the injects no tool result took are one, after the others, as the
 * daemon queues them at the turn's end (they came back as one held prompt each). */
export function joinedInjects(prompts: readonly SavedPrompt[]): SavedPrompt[] {
  const injects = prompts.filter((p) => p.injected);
  const rest = prompts.filter((p) => !p.injected);
  if (injects.length === 0) return rest;
  const parts = injects.map(({ text, contexts }) => ({ text, contexts }));
  return [...rest, { text: injects.map((p) => p.text).join("\n"), contexts: injects.flatMap((p) => p.contexts), parts }];
}

/** What the chat says of the prompts a restarted daemon ended (queued, held or injected), put back in the input. */
export function unsentNotice(count: number): string {
  if (count === 1) return "The daemon restarted: the prompt waiting in it did not run. It is back in the input: send it again or edit it.";
  return `The daemon restarted: the ${count} prompts waiting in it did not run. They are back in the input: send them again or edit them.`;
}

/** The queued prompts of the conversation's sessions. */
export class QueuedPrompts {
  // The sessions whose queued prompts wait for the next prompt (a Stop, a reload).
  private readonly held = new Set<string>();
  // The prompts this window queued and that have not run yet, per session (what a reload would lose).
  private readonly pending = new Map<string, SavedPrompt[]>();
  // Each ask of a session's queue state is numbered; its answer counts only while it is the session's latest. The
  // user's word (`sendBehind`) and a fresh daemon (`clear`) end the asks before them: an answer that comes after
  // either describes a queue already released or a daemon gone, and marked it held again.
  private asks = 0;
  private readonly latestAsk = new Map<string, number>();
  // The sessions whose saved prompts the daemon that ended held and this one has not queued again yet (they are
  // when the session is shown), and each re-queueing under way (the first show starts it; a later one waits on it).
  private readonly carried = new Set<string>();
  private readonly restoring = new Map<string, Promise<void>>();
  // The sessions whose turn ended with prompts this window queued behind it: the daemon runs the next at once.
  private readonly next = new Set<string>();

  constructor(
    private readonly host: SessionHost,
    private readonly memory: QueueMemory | undefined,
    private readonly reset: (session: string) => void,
  ) {}

  /** Whether the daemon is about to run a prompt this window queued in `session`: its turn ended, the next to come. */
  runsNext(session: string): boolean {
    return this.next.has(session) && !this.held.has(session);
  }

  /** A `turn` event of `session`: after an end (not a Stop's, nor a command's) the daemon runs what this window queued
   * behind it at once; `settled` is told when it turns out to run nothing (a turn it refused would wait for ever). */
  turnEvent(session: string, content: string, settled: () => void): void {
    if (content === "start" || content === "interrupted" || content === "command" || !this.pending.get(session)?.length) {
      this.next.delete(session);
      return;
    }
    this.next.add(session);
    const done = () => this.next.delete(session) && settled();
    this.host.daemon.request<QueueState>("ollie/state", { session }).then((state) => {
      const waiting = Array.isArray(state.queuedPrompts) && state.queuedPrompts.length > 0 && state.queueHeld !== true;
      if (state.running !== true && !waiting) done();
    }, done);
  }

  /** Whether a prompt sent to `session` now must go behind held queued prompts. */
  holds(session: string): boolean {
    return this.held.has(session);
  }

  /** A prompt was queued (with its images), or text injected into the running turn (the daemon accepted it). */
  queued(session: string, text: string, contexts: readonly EditorContext[], injected = false, images: readonly ImageSource[] = []): void {
    const prompt: SavedPrompt = injected ? { text, contexts: [...contexts], injected } : { text, contexts: [...contexts] };
    if (images.length > 0) prompt.images = [...images];
    this.pending.set(session, [...(this.pending.get(session) ?? []), prompt]);
    this.save(session);
  }

  /** A tool result of the session's turn came (its `tool` event): it took the text injected before it. */
  taken(session: string): void {
    const prompts = this.pending.get(session) ?? [];
    if (!prompts.some((p) => p.injected)) return;
    this.pending.set(session, prompts.filter((p) => !p.injected));
    this.save(session);
  }

  /** Send `text` behind the held prompts: queued, then the queue runs (the held ones first). */
  async sendBehind(session: string, text: string, contexts: readonly EditorContext[], images: readonly ImageSource[] = []): Promise<void> {
    const model = this.host.modelFor(session);
    const params = { session, text, context: contextParam(contexts), ...imagesParam(images) };
    try {
      await this.host.daemon.request("ollie/queue", params);
    } catch (err) {
      this.host.changedIn(session, model.addNotice("error", errorText(err)));
      return;
    }
    this.host.changedIn(session, model.addUser(text, { note: "queued", contextLabels: promptLabels(contexts, images) }));
    this.queued(session, text, contexts, false, images);
    await this.release(session);
  }

  /** Take the latest queued prompt of `session` back out of the daemon's queue and the chat, to edit and send again:
   * with the context items and images this window queued it with, else (another window's, one queued before a reload)
   * those the daemon gives back. Undefined when nothing was queued. */
  async takeBack(session: string): Promise<SavedPrompt | undefined> {
    type Popped = { text: string | null; images?: { data: string; mimeType: string }[]; context?: EditorContext[] };
    const popped = await this.host.daemon.request<Popped>("ollie/popQueue", { session });
    if (typeof popped.text !== "string") return undefined;
    const text = typedText(popped.text);
    const prompts = this.pending.get(session) ?? [];
    const index = prompts.map((p) => !p.injected && p.text === text).lastIndexOf(true);
    const [mine] = index >= 0 ? prompts.splice(index, 1) : [];
    this.save(session);
    if (this.host.modelFor(session).takeBack(text)) this.reset(session);
    const images = (popped.images ?? []).map((image, n) => ({ name: `image ${n + 1}`, data: `data:${image.mimeType};base64,${image.data}` }));
    return mine ?? { text, contexts: popped.context ?? [], images };
  }

  /** Run the held prompts of `session` now (the user's word), in order. */
  async release(session: string): Promise<void> {
    this.held.delete(session);
    this.latestAsk.set(session, ++this.asks);
    for (const item of this.host.modelFor(session).renote(["held"], "queued")) this.host.changedIn(session, item);
    // Resolves once every queued prompt has run; each shows as it starts (its `user` event).
    this.host.daemon.request("ollie/queue/run", { session }).catch((err: unknown) => this.host.log.warn(`ollie/queue/run: ${errorText(err)}`));
  }

  /** A queued prompt's turn started: it is no longer waiting (nor the injected text the daemon queued as one). */
  started(session: string, content: string): void {
    const prompts = this.pending.get(session) ?? [];
    const typed = typedText(content);
    const ran = prompts.filter((p) => p.injected && typed.includes(p.text));
    const index = prompts.findIndex((p) => !p.injected && typed.includes(p.text));
    if (!ran.length && index >= 0) ran.push(prompts[index]);
    // Injects no tool result took run as one prompt (the daemon joins them): one prompt shows them all.
    if (ran.length > 1) this.host.modelFor(session).join(ran.map((p) => p.text));
    if (ran.length) {
      this.pending.set(session, prompts.filter((p) => !ran.includes(p)));
      this.save(session);
    }
    // The prompt moved to the end of the chat (chatModel's `user` event): the view draws it anew.
    this.reset(session);
  }

  /** A turn ended (`stop`): what the daemon holds now is shown as such; after `/queued clear` what it dropped. */
  async turnEnded(session: string, stop: string): Promise<void> {
    // Not at a command's end: typed while a turn runs, the turn (and its injects) go on.
    if (stop !== "command") this.untaken(session);
    if (stop !== "interrupted" && stop !== "command" && !this.held.has(session)) return;
    const ask = ++this.asks;
    this.latestAsk.set(session, ask);
    let state: QueueState;
    try {
      state = await this.host.daemon.request<QueueState>("ollie/state", { session });
    } catch (err) {
      this.host.log.info(`ollie/state: ${errorText(err)}`);
      return;
    }
    if (this.latestAsk.get(session) !== ask) return;
    const waiting = Array.isArray(state.queuedPrompts) ? state.queuedPrompts.filter((p): p is string => typeof p === "string") : [];
    const model = this.host.modelFor(session);
    // After an interrupted turn the daemon holds what is queued (it may not have marked it yet when asked).
    if ((state.queueHeld === true || stop === "interrupted") && waiting.length > 0 && !this.held.has(session)) {
      this.held.add(session);
      // Held at the turn's end, they are drawn after its "Turn interrupted" (they showed above it, where queued).
      model.toEnd(model.renote(["queued"], "held"));
      this.reset(session);
      this.host.changedIn(session, model.addNotice("info", heldNotice(waiting.length, "Stop held the queue")));
    } else {
      // What no longer waits (`/queued clear`, `/queued pop`) was dropped: shown so, and not queued again after a
      // reload (a popped prompt stayed marked held, and came back). One whose turn began meanwhile moves on as its
      // `user` event comes (chatModel's `promptStarted` takes a dropped prompt too).
      if (waiting.length === 0) this.held.delete(session);
      for (const item of model.renote(["queued", "held"], "dropped", gone(waiting))) this.host.changedIn(session, item);
      const left = gone(waiting);
      this.pending.set(session, (this.pending.get(session) ?? []).filter((p) => !left(p.text)));
      this.save(session);
    }
  }

  // Text injected that no tool result took is a queued prompt of the daemon's now: shown so (held after a Stop, moved
  // on as it runs), not as injected into a turn that never saw it (its own turn then showed it a second time).
  private untaken(session: string): void {
    const left = (this.pending.get(session) ?? []).filter((p) => p.injected).map((p) => p.text);
    if (left.length === 0) return;
    for (const item of this.host.modelFor(session).renote(["injected"], "queued", (text) => left.includes(text))) this.host.changedIn(session, item);
  }

  /** A daemon that shows the last one's sessions again (a reload, a crash) started: their saved prompts come back
   * as each is shown (`restore`). */
  carry(): void {
    for (const saved of this.memory?.get() ?? []) this.carried.add(saved.session);
  }

  /** `session` is shown: the prompts it had queued in the daemon before a reload or a crash are queued again, held. */
  restore(session: string): Promise<void> {
    let restoring = this.restoring.get(session);
    if (!restoring) {
      restoring = this.carried.delete(session) ? this.requeue(session) : Promise.resolve();
      this.restoring.set(session, restoring);
    }
    return restoring;
  }

  private async requeue(session: string): Promise<void> {
    const saved = joinedInjects(this.memory?.get()?.find((s) => s.session === session)?.prompts ?? []);
    const model = this.host.modelFor(session);
    const prompts: SavedPrompt[] = [];
    for (const prompt of saved) {
      try {
        // Injects go as injects (into no turn: the daemon queues them, joined as it joined them before, each one's
        // context blocks before its text; queued as one prompt, all the blocks came first).
        for (const part of prompt.parts ?? [prompt]) {
          const pictures = prompt.parts ? {} : imagesParam(prompt.images ?? []);
          await this.host.daemon.request(prompt.parts ? "ollie/inject" : "ollie/queue", { session, text: part.text, context: contextParam(part.contexts), ...pictures });
        }
      } catch (err) {
        this.host.log.warn(`re-queueing after a reload: ${errorText(err)}`);
        continue;
      }
      // Queued again it is a queued prompt, whatever it was (no tool result takes it now).
      prompts.push({ text: prompt.text, contexts: prompt.contexts, ...(prompt.parts ? { parts: prompt.parts } : {}), ...(prompt.images ? { images: prompt.images } : {}) });
      this.host.changedIn(session, model.addUser(prompt.text, { note: "held", contextLabels: promptLabels(prompt.contexts, prompt.images) }));
    }
    // Those queued meanwhile (a prompt sent while these were re-queued) go behind them, as in the daemon.
    this.pending.set(session, [...prompts, ...(this.pending.get(session) ?? [])]);
    this.save(session);
    if (prompts.length === 0) return;
    this.held.add(session);
    this.host.changedIn(session, model.addNotice("info", heldNotice(prompts.length, "The window reloaded during a turn")));
  }

  /** Forget every saved prompt (a daemon that starts fresh: they ended with the one that held them); returns them. */
  forget(): SavedPrompt[] {
    const saved = this.memory?.get() ?? [];
    this.carried.clear();
    this.memory?.set(undefined);
    return saved.flatMap((queue) => queue.prompts);
  }

  /** Forget every session's state (a daemon ended or a fresh one started; `carry` brings back what was saved). */
  clear(): void {
    this.held.clear();
    this.next.clear();
    this.pending.clear();
    this.latestAsk.clear();
    this.carried.clear();
    this.restoring.clear();
  }

  // The window's state keeps each session's prompts that have not run yet; those of the sessions still carried
  // from the daemon before (not shown since) stay as they are.
  private save(session: string): void {
    if (!this.memory || this.carried.has(session)) return;
    const prompts = this.pending.get(session) ?? [];
    const others = (this.memory.get() ?? []).filter((s) => s.session !== session);
    const saved = prompts.length ? [...others, { session, prompts: [...prompts] }] : others;
    this.memory.set(saved.length ? saved.slice(-SAVED_SESSIONS) : undefined);
  }
}
