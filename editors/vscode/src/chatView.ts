// The chat webview view: its HTML (strict CSP), and the bridge between it and the conversation.

import * as crypto from "node:crypto";
import * as vscode from "vscode";
import { Conversation, ConversationListener, SessionStatus } from "./conversation";
import { chatHtml } from "./lib/chatHtml";
import { ChatItem } from "./lib/chatModel";
import { describeState, formatCost } from "./lib/status";
import { ToWebview, parseWebviewMessage } from "./lib/webviewMessages";

/** Provides the `ollie.chat` webview view. */
export class ChatViewProvider implements vscode.WebviewViewProvider, ConversationListener, vscode.Disposable {
  static readonly viewId = "ollie.chat";
  private view: vscode.WebviewView | undefined;
  private readonly subscription: vscode.Disposable;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly conversation: Conversation,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.subscription = conversation.listen(this);
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
    view.webview.html = this.html(view.webview);
    view.webview.onDidReceiveMessage((raw) => this.receive(raw));
    view.onDidDispose(() => {
      this.view = undefined;
    });
  }

  /** Reveal the chat view (and put the cursor in its input). */
  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${ChatViewProvider.viewId}.focus`);
  }

  itemsChanged(items: ChatItem[]): void {
    this.post({ type: "items", items });
  }

  reset(): void {
    const session = this.conversation.session;
    this.post({
      type: "reset",
      items: this.conversation.model.items.map((item) => ({ ...item })),
      running: this.conversation.status.running,
      title: session ? `session ${session}` : "",
      commands: [...this.conversation.slashCommands],
    });
  }

  statusChanged(status: SessionStatus): void {
    this.post({ type: "status", running: status.running, state: describeState(status.state), cost: formatCost(status.cost) });
  }

  private post(message: ToWebview): void {
    void this.view?.webview.postMessage(message);
  }

  private receive(raw: unknown): void {
    const message = parseWebviewMessage(raw);
    if (!message) {
      this.log.warn(`ignored an invalid message from the chat view: ${safeJson(raw)}`);
      return;
    }
    switch (message.type) {
      case "ready":
        this.reset();
        this.statusChanged(this.conversation.status);
        break;
      case "submit":
        void this.conversation.submit(message.text);
        break;
      case "queue":
        void this.conversation.queue(message.text);
        break;
      case "inject":
        void this.conversation.inject(message.text);
        break;
      case "interrupt":
        void this.conversation.interrupt();
        break;
      case "newSession":
        void vscode.commands.executeCommand("ollie.newSession");
        break;
    }
  }

  private html(webview: vscode.Webview): string {
    return chatHtml({
      cspSource: webview.cspSource,
      nonce: crypto.randomBytes(18).toString("base64"),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "dist", "webview.js")).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "media", "chat.css")).toString(),
    });
  }

  dispose(): void {
    this.subscription.dispose();
  }
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 200) ?? String(value);
  } catch {
    return String(value);
  }
}
