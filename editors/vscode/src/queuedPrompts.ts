// Prompts queued for after the running turn, kept as the daemon keeps them. A Stop holds them in the daemon
// (`queueHeld`): the chat says so, and the next prompt is sent behind them (they run first, in order) instead of
// running past them. A window reload ends the daemon and its queue with it: the prompts are remembered in the
// window's state and queued again in the next daemon, held the same way. A Restart starts fresh: it forgets them.

import { contextParam, describeEditorContext } from "./lib/editorContext";
import { errorText } from "./lib/errors";
import { EditorContext } from "./lib/protocol";
import { SessionHost } from "./sessionHost";

/** A queued prompt as remembered across a reload. */
export interface SavedPrompt {
  text: string;
  contexts: EditorContext[];
}

/** Where a window keeps its session's queued prompts across a reload (VS Code's workspaceState). */
export interface QueueMemory {
  get(): { session: string; prompts: SavedPrompt[] } | undefined;
  set(saved: { session: string; prompts: SavedPrompt[] } | undefined): void;
}

interface QueueState {
  running?: unknown;
  queuedPrompts?: unknown;
  queueHeld?: unknown;
}

function heldNotice(count: number, why: string): string {
  const prompts = count === 1 ? "1 queued prompt waits" : `${count} queued prompts wait`;
  return `${why}: ${prompts}. They run before your next prompt; /queued clear drops them.`;
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

  constructor(
    private readonly host: SessionHost,
    private readonly memory: QueueMemory | undefined,
    private readonly reset: (session: string) => void,
  ) {}

  /** Whether a prompt sent to `session` now must go behind held queued prompts. */
  holds(session: string): boolean {
    return this.held.has(session);
  }

  /** A prompt was queued (the daemon accepted it). */
  queued(session: string, text: string, contexts: readonly EditorContext[]): void {
    this.pending.set(session, [...(this.pending.get(session) ?? []), { text, contexts: [...contexts] }]);
    this.save(session);
  }

  /** Send `text` behind the held prompts: queued, then the queue runs (the held ones first). */
  async sendBehind(session: string, text: string, contexts: readonly EditorContext[]): Promise<void> {
    const model = this.host.modelFor(session);
    const params = { session, text, context: contextParam(contexts) };
    try {
      await this.host.daemon.request("ollie/queue", params);
    } catch (err) {
      this.host.changedIn(session, model.addNotice("error", errorText(err)));
      return;
    }
    this.held.delete(session);
    this.latestAsk.set(session, ++this.asks);
    this.host.changedIn(session, model.addUser(text, { note: "queued", contextLabels: contexts.map(describeEditorContext) }));
    this.queued(session, text, contexts);
    for (const item of model.renote(["held"], "queued")) this.host.changedIn(session, item);
    // Resolves once every queued prompt has run; each shows as it starts (its `user` event).
    this.host.daemon.request("ollie/queue/run", { session }).catch((err: unknown) => this.host.log.warn(`ollie/queue/run: ${errorText(err)}`));
  }

  /** A queued prompt's turn started: it is no longer waiting. */
  started(session: string, content: string): void {
    const prompts = this.pending.get(session) ?? [];
    const index = prompts.findIndex((p) => content.includes(p.text));
    if (index >= 0) {
      prompts.splice(index, 1);
      this.save(session);
    }
    // The prompt moved to the end of the chat (chatModel's `user` event): the view draws it anew.
    this.reset(session);
  }

  /** A turn ended (`stop`): what the daemon holds now is shown as such; after `/queued clear` what it dropped. */
  async turnEnded(session: string, stop: string): Promise<void> {
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
      for (const item of model.renote(["queued"], "held")) this.host.changedIn(session, item);
      this.host.changedIn(session, model.addNotice("info", heldNotice(waiting.length, "Stop held the queue")));
    } else if (waiting.length === 0 && state.running !== true) {
      // Nothing waits any more (`/queued clear`, `/queued pop`): what still shows as waiting was dropped.
      this.held.delete(session);
      for (const item of model.renote(["queued", "held"], "dropped")) this.host.changedIn(session, item);
      this.pending.delete(session);
      this.save(session);
    }
  }

  /** A fresh daemon shows `session`: the prompts it had queued before a reload are queued again, held; those of
   * another session are forgotten. */
  async restore(session: string): Promise<void> {
    const saved = this.memory?.get();
    if (saved && saved.session !== session) {
      // Their session is not shown again (a reload whose session could not be loaded): kept, they came back held
      // whenever it was resumed and a later daemon crashed, and ran before the user's next prompt.
      this.forget();
      return;
    }
    if (!saved || saved.prompts.length === 0) return;
    const model = this.host.modelFor(session);
    const prompts: SavedPrompt[] = [];
    for (const prompt of saved.prompts) {
      try {
        await this.host.daemon.request("ollie/queue", { session, text: prompt.text, context: contextParam(prompt.contexts) });
      } catch (err) {
        this.host.log.warn(`re-queueing after a reload: ${errorText(err)}`);
        continue;
      }
      prompts.push(prompt);
      this.host.changedIn(session, model.addUser(prompt.text, { note: "held", contextLabels: prompt.contexts.map(describeEditorContext) }));
    }
    this.pending.set(session, prompts);
    this.save(session);
    if (prompts.length === 0) return;
    this.held.add(session);
    this.host.changedIn(session, model.addNotice("info", heldNotice(prompts.length, "The window reloaded during a turn")));
  }

  /** Forget the prompts saved for a reload (a daemon that starts fresh: they ended with the one that held them). */
  forget(): void {
    this.memory?.set(undefined);
  }

  /** Forget every session's state (a fresh daemon; `restore` brings back what was saved). */
  clear(): void {
    this.held.clear();
    this.pending.clear();
    this.latestAsk.clear();
  }

  private save(session: string): void {
    const prompts = this.pending.get(session) ?? [];
    if (prompts.length) this.memory?.set({ session, prompts });
    else if (this.memory?.get()?.session === session) this.memory.set(undefined);
  }
}
