// A saved session's messages a page at a time: its last page when it is resumed, the one before when the view scrolls up.

import * as vscode from "vscode";
import { ChatItem, ChatModel } from "./lib/chatModel";
import { errorText } from "./lib/errors";
import { historyItems, modelFromHistory, pageBefore, parseContextPage, readContext, startsWithResult } from "./lib/history";
import { SessionHost } from "./sessionHost";

// A resumed session shows its last this many messages (`ollie.historyPageSize`); scrolling to the top loads the page before.
const HISTORY_PAGE = 200;

function historyPage(): number {
  const size = vscode.workspace.getConfiguration("ollie").get<number>("historyPageSize", HISTORY_PAGE);
  return Number.isInteger(size) && size > 0 ? size : HISTORY_PAGE;
}

/** Reads sessions' saved messages into their chat models, and knows how many older ones each has not loaded. */
export class SessionHistory {
  // Per session: how many of its oldest messages are not loaded (the offset of the first page shown).
  private readonly earlierCounts = new Map<string, number>();
  private loadingEarlier = false;

  constructor(
    private readonly host: SessionHost,
    /** Older items of the session in view go before the others; `earlier` messages are still not loaded. */
    private readonly earlierLoaded: (items: ChatItem[], earlier: number) => void,
    /** Read the files of the "Changed files" lists drawn from the history's marks, not holding the page (ChangesLists.fill). */
    private readonly fillChanges: (items: readonly ChatItem[]) => void,
  ) {}

  /** How many older messages of `session` are not loaded yet. */
  earlier(session: string): number {
    return this.earlierCounts.get(session) ?? 0;
  }

  /** Forget every session's count (a fresh daemon: its chats start over). */
  clear(): void {
    this.earlierCounts.clear();
  }

  /** Load the page of the current session's messages before the first one shown. */
  async loadEarlier(): Promise<void> {
    const session = this.host.current();
    const end = this.earlier(session ?? "");
    if (session === undefined || end <= 0) return;
    if (this.loadingEarlier) {
      // Another session's page is still coming (the user switched meanwhile): this view may ask again, not wait forever.
      this.earlierLoaded([], end);
      return;
    }
    this.loadingEarlier = true;
    try {
      const { messages, offset } = await this.fetchPage(session, pageBefore(end, historyPage()));
      if (session !== this.host.current() || this.earlier(session) !== end) return;
      const model = this.host.modelFor(session);
      const below = model.items.find((item) => item.kind === "changes" && !!item.unknown);
      const items = model.prepend(historyItems(messages, session, below?.kind === "changes" ? below.unknown : undefined));
      this.earlierCounts.set(session, offset);
      this.earlierLoaded(items.map((item) => ({ ...item })), offset);
      this.fillChanges(items);
    } catch (err) {
      this.host.log.warn(`ollie/context: ${errorText(err)}`);
      // Nothing came: the view may ask again.
      if (session === this.host.current()) this.earlierLoaded([], end);
    } finally {
      this.loadingEarlier = false;
    }
  }

  /** The session's last page of messages as its chat model (an unreadable context: an empty chat); `withEnding`: with
   * how its last turn ended. */
  async load(session: string, withEnding = true): Promise<void> {
    try {
      const [{ total }, lastTurnResult] = await Promise.all([
        this.host.daemon.request<unknown>("ollie/context", { session, limit: 0 }).then(parseContextPage),
        withEnding ? this.lastTurnResult(session) : undefined,
      ]);
      const page = await this.fetchPage(session, pageBefore(total, historyPage()));
      // A turn running when the page was read has not ended: the last one's result is not this one's. Said with the
      // page: the chat's own status may be from before or after it.
      const ended = (page.running ?? this.host.running(session)) ? undefined : lastTurnResult;
      const model = modelFromHistory(page.messages, ended, page.seq, session);
      this.host.setModel(session, model);
      this.earlierCounts.set(session, page.offset);
      this.fillChanges(model.items);
    } catch (err) {
      this.host.log.warn(`ollie/context: ${errorText(err)}`);
      this.host.setModel(session, new ChatModel());
      this.earlierCounts.delete(session);
    }
  }

  // A page of the session's messages from `offset`; it starts earlier when it would start with a tool result, so that
  // each call and its result are on one page (split, they would show as two steps).
  private async fetchPage(session: string, { offset, limit }: { offset: number; limit: number }): Promise<{ messages: unknown[]; offset: number; running?: boolean; seq?: number }> {
    const { messages, running, seq } = await readContext((params) => this.host.daemon.request<unknown>("ollie/context", { session, ...params }), offset, limit);
    while (offset > 0 && startsWithResult(messages)) {
      offset -= 1;
      messages.unshift(...parseContextPage(await this.host.daemon.request<unknown>("ollie/context", { session, offset, limit: 1 })).messages);
    }
    return { messages, offset, running, seq };
  }

  // How the session's last turn ended (`info.lastTurnResult`): `session/load` of a session this daemon runs answers its info.
  private async lastTurnResult(session: string): Promise<unknown> {
    try {
      const loaded = await this.host.daemon.request<{ info?: { lastTurnResult?: unknown } }>("ollie/session/load", { session });
      return loaded?.info?.lastTurnResult;
    } catch (err) {
      this.host.log.info(`ollie/session/load ${session}: ${errorText(err)}`);
      return undefined;
    }
  }
}
