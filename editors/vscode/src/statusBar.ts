// The status bar item: daemon state (idle / thinking / calling tool) and the session's cost.

import * as vscode from "vscode";
import { Conversation, SessionStatus } from "./conversation";
import { ChatItem } from "./lib/chatModel";
import { statusBarText, statusBarTooltip } from "./lib/status";
import { Daemon } from "./daemon";

/** Create the status bar item and keep it in step with the current session. */
export function createStatusBar(daemon: Daemon, conversation: Conversation): vscode.Disposable[] {
  const item = vscode.window.createStatusBarItem("ollie.status", vscode.StatusBarAlignment.Right, 100);
  item.name = "Ollie";
  item.command = "ollie.chat.focus";
  const show = (status: SessionStatus) => {
    const text = statusBarText(status.state, status.cost, daemon.running, daemon.startUnderWay, status.asking);
    // Reduced motion asked for: the busy icon stands still (VS Code's reduced motion leaves an item's ~spin turning).
    const still = vscode.workspace.getConfiguration("workbench").get("reduceMotion") === "on";
    item.text = still ? text.replace("$(sync~spin)", "$(sync)") : text;
    item.tooltip = statusBarTooltip(text);
  };
  show(conversation.status);
  item.show();
  const subscription = conversation.listen({
    itemsChanged: (_items: ChatItem[]) => undefined,
    reset: () => show(conversation.status),
    statusChanged: show,
  });
  return [item, subscription, daemon.onStartUnderWay(() => show(conversation.status))];
}
