// Entry point: wires the daemon client, the conversation, the chat view, commands and the status bar.

import * as vscode from "vscode";
import { ChatViewProvider } from "./chatView";
import { registerCommands } from "./commands";
import { Conversation } from "./conversation";
import { Daemon } from "./daemon";
import { createStatusBar } from "./statusBar";

let daemon: Daemon | undefined;

/** Called by VS Code once at start-up (onStartupFinished). */
export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel("Ollie", { log: true });
  daemon = new Daemon(log);
  const conversation = new Conversation(daemon, log);
  const chat = new ChatViewProvider(context.extensionUri, conversation, log);
  context.subscriptions.push(
    log,
    daemon,
    conversation,
    chat,
    vscode.window.registerWebviewViewProvider(ChatViewProvider.viewId, chat, { webviewOptions: { retainContextWhenHidden: true } }),
    ...registerCommands({ daemon, conversation, chat }),
    ...createStatusBar(daemon, conversation),
    vscode.workspace.onDidChangeConfiguration((change) => {
      if (change.affectsConfiguration("ollie")) {
        log.info("settings changed: restarting the daemon");
        void daemon?.restart();
      }
    }),
  );
  void daemon.start();
}

/** Called by VS Code on shutdown: stop the daemon. */
export function deactivate(): Thenable<void> | undefined {
  return daemon?.stop();
}
