// The "Ollie: ..." commands of the command palette.

import * as vscode from "vscode";
import { ChatViewProvider } from "./chatView";
import { Conversation } from "./conversation";
import { Daemon } from "./daemon";
import { buildEditorContext } from "./lib/editorContext";
import { contextToMarkdown } from "./lib/history";
import { Choices, SessionInfo, parseAgentList, parseModelList, sessionIdOf } from "./lib/protocol";

interface Parts {
  daemon: Daemon;
  conversation: Conversation;
  chat: ChatViewProvider;
}

function reportError(err: unknown): void {
  void vscode.window.showErrorMessage(`Ollie: ${err instanceof Error ? err.message : String(err)}`);
}

/** Ask for a name, offering the daemon's list; any typed name is accepted too. */
async function pickName(title: string, { current, choices }: Choices): Promise<string | undefined> {
  const pick = vscode.window.createQuickPick();
  pick.title = title;
  pick.placeholder = current ? `current: ${current} — pick or type a name` : "pick or type a name";
  pick.items = choices.map(({ name, description }) => ({
    label: name,
    description: [name === current ? "current" : "", description].filter(Boolean).join(" · ") || undefined,
  }));
  return new Promise((resolve) => {
    pick.onDidAccept(() => {
      resolve(pick.selectedItems[0]?.label ?? (pick.value.trim() || undefined));
      pick.hide();
    });
    pick.onDidHide(() => {
      resolve(undefined);
      pick.dispose();
    });
    pick.show();
  });
}

async function runSlash(parts: Parts, line: string): Promise<void> {
  // The output also reaches the chat as an `info` event.
  const output = await parts.conversation.command(line);
  if (output) void vscode.window.showInformationMessage(output.split("\n")[0]);
}

async function switchNamed(parts: Parts, what: "model" | "agent"): Promise<void> {
  const method = what === "model" ? "ollie/listModels" : "ollie/listAgents";
  const listing = await parts.conversation.request<unknown>(method);
  const choices = what === "model" ? parseModelList(listing) : parseAgentList(listing);
  const name = await pickName(`Ollie: Switch ${what === "model" ? "Model" : "Agent"}`, choices);
  if (name) await runSlash(parts, `/${what} ${name}`);
}

function when(value: unknown): string {
  const date = typeof value === "string" || typeof value === "number" ? new Date(value) : undefined;
  return date && !Number.isNaN(date.getTime()) ? date.toLocaleString() : "";
}

async function switchSession(parts: Parts): Promise<void> {
  const { sessions } = await parts.daemon.request<{ sessions: SessionInfo[] }>("ollie/session/list", { limit: 50 });
  const items = (sessions ?? [])
    .map((info) => ({ info, id: sessionIdOf(info) }))
    .filter((entry): entry is { info: SessionInfo; id: string } => entry.id !== undefined)
    .map(({ info, id }) => ({
      label: (typeof info.title === "string" && info.title) || id,
      description: [id === parts.conversation.session ? "current" : "", info.agent, when(info.lastActive)].filter(Boolean).join(" · "),
      detail: id,
      id,
    }));
  const choice = await vscode.window.showQuickPick(items, { title: "Ollie: Switch Session", matchOnDetail: true });
  if (!choice) return;
  if (choice.id !== parts.conversation.session) {
    await parts.daemon.request("ollie/session/load", { session: choice.id });
  }
  const context = await parts.daemon.request<{ messages?: unknown }>("ollie/context", { session: choice.id }).catch(() => undefined);
  parts.conversation.switchTo(choice.id, context?.messages ?? []);
  await parts.chat.reveal();
}

async function ask(parts: Parts, withSelection: boolean): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (withSelection && !editor) {
    void vscode.window.showWarningMessage("Ollie: open a file and select some text first.");
    return;
  }
  const text = await vscode.window.showInputBox({ title: withSelection ? "Ollie: Ask About Selection" : "Ollie: Ask", prompt: "Prompt" });
  if (!text?.trim()) return;
  const context =
    withSelection && editor
      ? buildEditorContext({
          uri: editor.document.uri.toString(),
          languageId: editor.document.languageId,
          selectionStart: editor.selection.start,
          selectionEnd: editor.selection.end,
          selectedText: editor.document.getText(editor.selection),
        })
      : undefined;
  await parts.chat.reveal();
  await parts.conversation.submit(text, context);
}

/** Register every Ollie command; the returned disposables go into the extension's subscriptions. */
export function registerCommands(parts: Parts): vscode.Disposable[] {
  const handlers: Record<string, () => Promise<unknown>> = {
    "ollie.ask": () => ask(parts, false),
    "ollie.askSelection": () => ask(parts, true),
    "ollie.stop": () => parts.conversation.interrupt(),
    "ollie.injectPrompt": async () => {
      const text = await vscode.window.showInputBox({ title: "Ollie: Inject", prompt: "Text for the running turn" });
      if (text?.trim()) await parts.conversation.inject(text);
    },
    "ollie.newSession": async () => {
      const { session } = await parts.daemon.request<{ session: string }>("ollie/session/new", {});
      parts.conversation.switchTo(session, []);
      await parts.chat.reveal();
    },
    "ollie.switchSession": () => switchSession(parts),
    "ollie.switchModel": () => switchNamed(parts, "model"),
    "ollie.switchAgent": () => switchNamed(parts, "agent"),
    "ollie.compact": () => runSlash(parts, "/compact"),
    "ollie.showContext": async () => {
      const context = await parts.conversation.request<{ systemPrompt?: unknown; messages?: unknown }>("ollie/context");
      const doc = await vscode.workspace.openTextDocument({ language: "markdown", content: contextToMarkdown(context) });
      await vscode.window.showTextDocument(doc, { preview: true });
    },
    "ollie.restart": () => parts.daemon.restart(),
  };
  return Object.entries(handlers).map(([id, handler]) =>
    vscode.commands.registerCommand(id, async () => {
      try {
        await handler();
      } catch (err) {
        reportError(err);
      }
    }),
  );
}
