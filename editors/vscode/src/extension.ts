// Entry point: wires the daemon client, the conversation, the chat view, commands and the status bar.

import * as vscode from "vscode";
import { ChatViewProvider } from "./chatView";
import { registerCommands } from "./commands";
import { Conversation } from "./conversation";
import { Daemon } from "./daemon";
import { serveEditorTools } from "./editorToolsServe";
import { labelPathsBy } from "./lib/editorContext";
import { DiffDocuments, registerDiffDocuments } from "./review/diffDocs";
import { queueMemory } from "./queueMemory";
import { ReviewController, registerReviewLenses } from "./review/review";
import { serveSaveDocuments } from "./saveDocuments";
import { storedKeyEnvironment } from "./secrets";
import { createStatusBar } from "./statusBar";

let daemon: Daemon | undefined;

/** Called by VS Code once at start-up (onStartupFinished). */
export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel("Ollie", { log: true });
  // `about calc/__init__.py:9-11` live as after a reload (the daemon's label); outside every folder, the whole path.
  labelPathsBy((uri) => vscode.workspace.asRelativePath(vscode.Uri.parse(uri), false));
  daemon = new Daemon(log);
  // The shown session survives a window reload: the chat comes back instead of an empty view.
  const conversation = new Conversation(daemon, log, {
    get: () => context.workspaceState.get<string>("ollie.session"),
    set: (session) => void context.workspaceState.update("ollie.session", session),
    // A reload ends the daemon with its queue: the prompts queued in this window come back in the next one.
    queue: queueMemory(context.workspaceState, context.storageUri && vscode.Uri.joinPath(context.storageUri, "queued-images").fsPath),
  });
  const chat = new ChatViewProvider(context.extensionUri, conversation, log);
  // Before the daemon starts: its environment and initializationOptions come from these.
  daemon.setEnvSource(() => storedKeyEnvironment(context.secrets));
  const diffs = new DiffDocuments();
  const client = daemon;
  const review = new ReviewController({ request: (method, params) => client.request(method, params), currentSession: () => conversation.session, titleOf: (session) => conversation.titleOf(session) }, diffs);
  context.subscriptions.push(
    log,
    daemon,
    conversation,
    chat,
    vscode.window.registerWebviewViewProvider(ChatViewProvider.viewId, chat, { webviewOptions: { retainContextWhenHidden: true } }),
    ...registerCommands({ daemon, conversation, chat, secrets: context.secrets, review, diffs }),
    ...serveEditorTools(daemon),
    serveSaveDocuments(daemon),
    diffs,
    review,
    ...registerDiffDocuments(diffs),
    registerReviewLenses(review),
    ...createStatusBar(daemon, conversation),
    conversation.onUndone((session) => void review.undoneElsewhere(session)),
    // A change of the settings the daemon is started with restarts it (the others are read when used); not one of a
    // repository's own values, which VS Code tells too but are ignored: a restart starts a fresh chat.
    vscode.workspace.onDidChangeConfiguration(() => {
      if (daemon?.settingsChanged()) {
        log.info("settings changed: restarting the daemon");
        void daemon.restart();
      }
    }),
  );
  void daemon.start();
}

/** Called by VS Code on shutdown: stop the daemon. */
export function deactivate(): Thenable<void> | undefined {
  return daemon?.stop();
}
