// The "Ollie: ..." commands of the command palette.

import * as vscode from "vscode";
import { ChatViewProvider } from "./chatView";
import { Conversation } from "./conversation";
import { Daemon } from "./daemon";
import { buildEditorContext, describeEditorContext } from "./lib/editorContext";
import { HistoryEntry, UNARCHIVE_AND_RESUME, contextToMarkdown, forkNotice, historyEntries, listSessions, readContext, sessionRefusal, unarchiveRefusal } from "./lib/history";
import { Choices, choicePlaceholder, parseAgentList, parseMcpList, parseModelList, turnNumber } from "./lib/protocol";
import { DiffDocuments, openDiff } from "./review/diffDocs";
import { ReviewController, ReviewHost, hunkArg, lineTargetArg, openFileArgs, uriArg } from "./review/review";
import { rewind, undoRewind } from "./review/rewind";
import { setApiKey } from "./secrets";
import { folderOf, folderPaths } from "./workFolder";
import { errorText } from "./lib/errors";
import { unlinked } from "./lib/notice";
import { shownLabel } from "./lib/steps";

interface Parts {
  daemon: Daemon;
  conversation: Conversation;
  chat: ChatViewProvider;
  secrets: vscode.SecretStorage;
  review: ReviewController;
  diffs: DiffDocuments;
}

function reportError(err: unknown): void {
  void vscode.window.showErrorMessage(unlinked(`Ollie: ${errorText(err)}`));
}

/** Ask for a name, offering the daemon's list with the current one highlighted; any typed name is accepted too. */
/** `note`: what a switch does to the chat, said in the title before the user picks (the placeholder cut it short). */
async function pickName(title: string, { current, choices }: Choices, note?: string): Promise<string | undefined> {
  // A server's model ids are its own text: each is shown escaped (a `$(check)` an icon, a U+202E reversing the row),
  // and the id itself, kept beside its label, is what goes back.
  const pick = vscode.window.createQuickPick<vscode.QuickPickItem & { name: string }>();
  pick.title = note ? `${title} — ${note}` : title;
  pick.placeholder = choicePlaceholder(current && shownLabel(current), choices.length);
  pick.items = choices.map(({ name, description }) => ({
    name,
    label: shownLabel(name),
    description: shownLabel([name === current ? "current" : "", description].filter(Boolean).join(" · ")) || undefined,
  }));
  // Enter at once keeps what is (it took the first listed: another agent, which starts a new conversation).
  pick.activeItems = pick.items.filter((item) => item.name === current);
  return new Promise((resolve) => {
    pick.onDidAccept(() => {
      resolve(pick.selectedItems[0]?.name ?? (pick.value.trim() || undefined));
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
  // The output also reaches the chat as an `info` event: a toast says it only while the chat is not on screen (one
  // over its input hid the composer's model, said twice).
  const output = await parts.conversation.command(line);
  if (output && !parts.chat.visible) void vscode.window.showInformationMessage(unlinked(output.split("\n")[0]));
}

async function switchNamed(parts: Parts, what: "model" | "agent"): Promise<void> {
  const method = what === "model" ? "ollie/listModels" : "ollie/listAgents";
  const listing = await parts.conversation.request<unknown>(method);
  const choices = what === "model" ? parseModelList(listing) : parseAgentList(listing);
  const note = what === "agent" ? "another starts a new chat; this one is kept in Switch Session" : undefined;
  const name = await pickName(`Ollie: Switch ${what === "model" ? "Model" : "Agent"}`, choices, note);
  // The current one picked again switches nothing (`/agent` to the same agent cleared the session all the same).
  if (name && name !== choices.current) await runSlash(parts, `/${what} ${name}`);
}

/** `Ollie: MCP Servers`: each server, its state (why it failed) and its tools; picking one runs `/mcp` into the chat. */
async function showMcpServers(parts: Parts): Promise<void> {
  const servers = parseMcpList(await parts.conversation.request<unknown>("ollie/mcp/list"));
  const items: vscode.QuickPickItem[] = servers.map((s) => ({
    label: shownLabel(s.name),
    description: shownLabel(s.state === "ready" ? `ready, ${s.tools.length} tools` : s.error ? `${s.state}: ${s.error}` : s.state),
    detail: shownLabel([...s.tools, ...s.prompts.map((p) => `/mcp:${s.name}:${p}`), ...s.resources.map((r) => r.uri)].join("  ")) || undefined,
  }));
  if (items.length === 0) {
    void vscode.window.showInformationMessage("No MCP servers: add them to mcp.json in ollie's config directory.");
    return;
  }
  const picked = await vscode.window.showQuickPick(items, { title: "Ollie: MCP Servers", matchOnDetail: true });
  if (picked) await runSlash(parts, "/mcp");
}

const RENAME: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("edit"), tooltip: "Rename" };
const ARCHIVE: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("archive"), tooltip: "Archive" };
const UNARCHIVE: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("history"), tooltip: UNARCHIVE_AND_RESUME };
// The toggle, as a title-bar button and as the list's last item (reachable from the keyboard): archived sessions are
// listed only on request (`includeArchived`).
const SHOW_ARCHIVED: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("archive"), tooltip: "Show archived sessions" };
const HIDE_ARCHIVED: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("eye-closed"), tooltip: "Hide archived sessions" };

type HistoryItem = vscode.QuickPickItem & { entry?: HistoryEntry };
type SessionChoice = { item: HistoryItem & { entry: HistoryEntry }; button?: vscode.QuickInputButton };
type HistoryChoice = SessionChoice | "toggle" | undefined;

function hasEntry(item: HistoryItem | undefined): item is SessionChoice["item"] {
  return item?.entry !== undefined;
}

/** One showing of the history pick: resolves with the accepted item, an item whose button was pressed, or the toggle. */
function pickHistory(title: string, sessions: HistoryItem[], archived: boolean): Promise<HistoryChoice> {
  const pick = vscode.window.createQuickPick<HistoryItem>();
  pick.title = archived ? `${title} (archived shown)` : title;
  pick.placeholder = "Search sessions by title";
  pick.matchOnDescription = false;
  const toggle = archived ? HIDE_ARCHIVED : SHOW_ARCHIVED;
  pick.items = [
    ...sessions,
    { label: "", kind: vscode.QuickPickItemKind.Separator },
    { label: `$(${archived ? "eye-closed" : "archive"}) ${toggle.tooltip}`, alwaysShow: true },
  ];
  pick.buttons = [toggle];
  return new Promise((resolve) => {
    let choice: HistoryChoice;
    pick.onDidAccept(() => {
      const item = pick.selectedItems[0];
      choice = hasEntry(item) ? { item } : item ? "toggle" : undefined;
      pick.hide();
    });
    pick.onDidTriggerItemButton(({ item, button }) => {
      choice = hasEntry(item) ? { item, button } : undefined;
      pick.hide();
    });
    pick.onDidTriggerButton(() => {
      choice = "toggle";
      pick.hide();
    });
    pick.onDidHide(() => {
      pick.dispose();
      resolve(choice);
    });
    pick.show();
  });
}

async function resumeSession(parts: Parts, id: string): Promise<void> {
  if (id !== parts.conversation.session) await parts.daemon.request("ollie/session/load", { session: id });
  await parts.conversation.resume(id);
  await parts.chat.reveal();
}

/**
 * The session history (titles, "2 h ago", search on titles): resume one, or rename / archive it with its buttons;
 * its toggle (title-bar button, last item) lists archived sessions too.
 */
async function showHistory(parts: Parts, title: string): Promise<void> {
  let archived = false;
  for (;;) {
    const sessions = await listSessions((page) => parts.daemon.request("ollie/session/list", { ...page, includeArchived: archived }));
    const items = historyEntries(sessions, parts.conversation.session, Date.now()).map((entry) => ({
      label: shownLabel(entry.label),
      // A session she left with a question open (its turn stopped until she answers) says so: it read as any other.
      description: shownLabel([parts.conversation.activity(entry.id), entry.description].filter(Boolean).join(" · ")),
      // An archived session refuses renames (PROTOCOL.md: writes are -32002) until it is unarchived.
      iconPath: entry.archived ? new vscode.ThemeIcon("archive") : undefined,
      detail: entry.archived ? `Pick to ${UNARCHIVE_AND_RESUME.toLowerCase()}` : undefined,
      buttons: entry.archived ? [UNARCHIVE] : [RENAME, ARCHIVE],
      entry,
    }));
    const choice = await pickHistory(title, items, archived);
    if (!choice) return;
    if (choice === "toggle") {
      archived = !archived;
      continue;
    }
    try {
      if (await historyAction(parts, choice)) return;
    } catch (err) {
      // A session live on another machine, or a teammate's: the daemon's reason, then the list again.
      const refusal = sessionRefusal(err);
      if (!refusal) throw err;
      void vscode.window.showWarningMessage(unlinked(refusal));
    }
  }
}

/** Do what the user picked in the history: true when the pick is done (a session was resumed). */
async function historyAction(parts: Parts, choice: SessionChoice): Promise<boolean> {
  const { entry } = choice.item;
  if (entry.archived) {
    // Picked or its button pressed: back to the active sessions, then resumed (the daemon resumes no archived one).
    try {
      await parts.daemon.request("ollie/session/unarchive", { session: entry.id });
    } catch (err) {
      const refusal = unarchiveRefusal(err, entry.label);
      if (!refusal) throw err;
      void vscode.window.showWarningMessage(unlinked(refusal));
      return false;
    }
    void vscode.window.showInformationMessage(unlinked(`Ollie: unarchived "${entry.label}".`));
    await resumeSession(parts, entry.id);
    return true;
  }
  if (choice.button === RENAME) {
    const name = await vscode.window.showInputBox({ title: "Ollie: Rename Session", value: entry.title, prompt: "New title" });
    if (name?.trim()) await parts.daemon.request("ollie/session/rename", { session: entry.id, title: name.trim() });
    return false;
  }
  if (choice.button === ARCHIVE) {
    await parts.daemon.request("ollie/session/archive", { session: entry.id });
    // An archived session takes no more prompts: the chat moves on to a new one.
    if (entry.current) await newSession(parts);
    void vscode.window.showInformationMessage(unlinked(`Ollie: archived "${entry.label}".`));
    return false;
  }
  await resumeSession(parts, entry.id);
  return true;
}

async function newSession(parts: Parts): Promise<void> {
  // Multi-root: the new session works in the folder of the active file (the daemon's default is the first folder).
  const folder = folderPaths().length > 1 ? folderOf(vscode.window.activeTextEditor?.document.uri) : undefined;
  const { session } = await parts.daemon.request<{ session: string }>("ollie/session/new", folder ? { cwd: folder } : {});
  parts.conversation.switchTo(session);
  await parts.chat.reveal();
}

/**
 * Fork the chat: a new session going on from a copy of its conversation up to the end of turn `turn` (a prompt's
 * "Fork from here"; none: all of it); the chat switches to it, the history lists both. Files stay as they are.
 */
async function forkChat(parts: Parts, turn?: unknown): Promise<void> {
  const session = parts.conversation.session;
  if (!session) {
    void vscode.window.showInformationMessage("Ollie: there is no chat to fork yet.");
    return;
  }
  const at = turnNumber(turn) ? turn : undefined;
  const { session: fork, info } = await parts.daemon.request<{ session: string; info?: { title?: unknown } }>(
    "ollie/session/fork", at === undefined ? { session } : { session, turn: at });
  await parts.conversation.resume(fork);
  parts.conversation.note(forkNotice(info?.title, at));
  await parts.chat.reveal();
}

async function ask(parts: Parts, withSelection: boolean): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (withSelection && !editor) {
    void vscode.window.showWarningMessage("Ollie: open a file and select some text first.");
    return;
  }
  // Read before the input box takes the focus; the box then says what the question is about.
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
  const text = await vscode.window.showInputBox({
    title: withSelection ? "Ollie: Ask About Selection" : "Ollie: Ask",
    prompt: context ? `Ask about ${describeEditorContext(context)} (Enter sends)` : "Ask Ollie (Enter sends)",
    placeHolder: "What would you like to know or change?",
  });
  if (!text?.trim()) return;
  await parts.chat.reveal();
  await parts.conversation.submit(text, context ? [context] : []);
}

/** Run a command's work, showing what it throws as an error message. */
export async function reporting(work: () => Promise<unknown>): Promise<void> {
  try {
    await work();
  } catch (err) {
    reportError(err);
  }
}

function reviewHost(parts: Parts): ReviewHost {
  return { request: (method, params) => parts.conversation.request(method, params), currentSession: () => parts.conversation.session,
    titleOf: (session) => parts.conversation.titleOf(session) };
}

function chatReload(parts: Parts): (session: string | undefined) => Promise<void> {
  return (session) => (session ? parts.conversation.resume(session, true) : parts.conversation.reload());
}

/** Whether the chat's session is idle, for a rewind (or its undo), which the daemon refuses while a turn runs: said
 * before the pick (the refusal came as an error, "Invalid params: session: ...", once she had picked and confirmed). */
function idleTo(parts: Parts, what: string): boolean {
  if (!parts.conversation.status.running) return true;
  void vscode.window.showInformationMessage(`Ollie: a turn is running: stop it (Ollie: Stop), then ${what}.`);
  return false;
}

/** Register every Ollie command; the returned disposables go into the extension's subscriptions. */
export function registerCommands(parts: Parts): vscode.Disposable[] {
  const handlers: Record<string, (...args: unknown[]) => Promise<unknown>> = {
    "ollie.ask": () => ask(parts, false),
    "ollie.askSelection": () => ask(parts, true),
    "ollie.focusChat": () => parts.chat.focusInput(),
    "ollie.stop": () => parts.conversation.interrupt(),
    "ollie.injectPrompt": async () => {
      const text = await vscode.window.showInputBox({ title: "Ollie: Inject", prompt: "Text for the running turn" });
      if (text?.trim() && !(await parts.conversation.inject(text))) parts.chat.putBack(text);
    },
    "ollie.newSession": () => newSession(parts),
    "ollie.forkChat": (turn) => forkChat(parts, turn),
    "ollie.switchSession": () => showHistory(parts, "Ollie: Switch Session"),
    "ollie.showHistory": () => showHistory(parts, "Ollie: Session History"),
    // The chat is read again after the rewind (and after its undo): the turns it cut go from the view.
    "ollie.rewindToTurn": async () => {
      if (!idleTo(parts, "rewind")) return;
      await rewind(reviewHost(parts), chatReload(parts), (session, turn) => parts.review.rewound(session ?? parts.conversation.session, turn));
    },
    // Run as the window opens (after a reload, the way to it): the session the chat brings back, once it is back.
    "ollie.undoRewind": async () => {
      await parts.conversation.settled();
      if (idleTo(parts, "undo the rewind")) await undoRewind(reviewHost(parts), chatReload(parts));
    },
    "ollie.setApiKey": () => setApiKey(parts.secrets, parts.daemon, () => parts.conversation.status.running),
    "ollie.switchModel": () => switchNamed(parts, "model"),
    "ollie.switchAgent": () => switchNamed(parts, "agent"),
    "ollie.compact": () => runSlash(parts, "/compact"),
    "ollie.mcpServers": () => showMcpServers(parts),
    "ollie.showContext": async () => {
      const context = await readContext((params) => parts.conversation.request("ollie/context", params));
      const doc = await vscode.workspace.openTextDocument({ language: "markdown", content: contextToMarkdown(context) });
      await vscode.window.showTextDocument(doc, { preview: true });
    },
    "ollie.restart": () => parts.conversation.restart(),
    // Called by the chat with a diff to show, and by the review (its CodeLenses and title actions).
    "ollie.openDiff": (raw) => openDiff(parts.diffs, raw),
    "ollie.reviewChanges": () => parts.review.reviewLastTurn(),
    "ollie.review.openFile": (raw) => parts.review.openFile(openFileArgs(raw)),
    // Without a hunk these act on the one at the cursor, never on the whole file.
    "ollie.review.undoHunk": async (uri, hunk) => {
      const which = hunkArg(hunk);
      return which === undefined ? parts.review.undoAt() : parts.review.undo(uriArg(uri), which);
    },
    "ollie.review.keepHunk": async (uri, hunk) => {
      const which = hunkArg(hunk);
      if (which !== undefined) await parts.review.keep(uriArg(uri), which);
    },
    "ollie.review.undoFile": (uri) => parts.review.undo(uriArg(uri)),
    "ollie.review.keepFile": (uri) => parts.review.keep(uriArg(uri)),
    "ollie.review.undoHunkAt": (target) => parts.review.undoAt(lineTargetArg(target)),
  };
  return Object.entries(handlers).map(([id, handler]) =>
    vscode.commands.registerCommand(id, (...args: unknown[]) => reporting(() => handler(...args))),
  );
}
