// What the parts of a conversation (approval modes, permission questions, changes lists, history) reach through.

import * as vscode from "vscode";
import { Daemon } from "./daemon";
import { ChatItem, ChatModel } from "./lib/chatModel";

/** The conversation as its parts see it: the daemon, the log, the session in view and the chat models. */
export interface SessionHost {
  readonly daemon: Daemon;
  readonly log: vscode.LogOutputChannel;
  /** The session the view shows (undefined until the daemon's first session is known). */
  current(): string | undefined;
  /** The directory `session` works in, once the daemon said (its paths are relative to it). */
  cwdOf(session: string): string | undefined;
  /** `session`'s chat model (created on first use). */
  modelFor(session: string): ChatModel;
  /** Replace `session`'s chat model (with one read from its saved history). */
  setModel(session: string, model: ChatModel): void;
  /** Whether a turn of `session` runs now. */
  running(session: string): boolean;
  /** Show `item` of `session`'s chat again, when that session is the one in view. */
  changedIn(session: string | undefined, item: ChatItem): void;
  /** Any `ollie/*` request with the id of the session in view added. */
  request<T>(method: string, params?: object): Promise<T>;
}
