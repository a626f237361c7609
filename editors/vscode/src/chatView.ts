// The chat webview view: its HTML (strict CSP), and the bridge between it and the conversation.

import * as crypto from "node:crypto";
import * as vscode from "vscode";
import { Conversation, ConversationListener } from "./conversation";
import { DaemonNotStarted } from "./daemon";
import { isInsideWorkspaceUri, runCodeAction, workspaceUri } from "./editorActions";
import { Onboarding } from "./lib/backend";
import { chatHtml } from "./lib/chatHtml";
import { ChatItem } from "./lib/chatModel";
import { buildEditorContext, describeEditorContext } from "./lib/editorContext";
import { EditorContext, parseMcpList } from "./lib/protocol";
import { Chip, FromWebview, Header, ImageSource, PromptImage, ToWebview, Unposted, isImageName, parseWebviewMessage, refusedPrompt } from "./lib/webviewMessages";
import { errorText } from "./lib/errors";
import { isSlashCommand } from "./lib/slash";
import { workspaceNote } from "./workFolder";
import { unlinked } from "./lib/notice";
import { shownLabel, shownPath } from "./lib/steps";

/** Provides the `ollie.chat` webview view. */
export class ChatViewProvider implements vscode.WebviewViewProvider, ConversationListener, vscode.Disposable {
  static readonly viewId = "ollie.chat";
  private view: vscode.WebviewView | undefined;
  private readonly subscription: vscode.Disposable;
  // What each chip on the input stands for: editor context, or an image file the daemon reads (the webview only knows
  // the chip: its id, kind and label).
  private readonly chips = new Map<string, Held>();
  // Prompts put back before the view's script is up (the chat not opened since the window started, or reloading):
  // posted once it says it is ready (posted before, they went nowhere while the chat said they were in the input).
  private readonly unposted = new Unposted<ToWebview>();

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
      this.unposted.disposed();
    });
  }

  /** Reveal the chat view (and put the cursor in its input). */
  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${ChatViewProvider.viewId}.focus`);
  }

  /** Reveal the chat view with the cursor in its prompt box, wherever the focus was in it (Ollie: Focus Chat). */
  async focusInput(): Promise<void> {
    await this.reveal();
    this.post({ type: "focusInput" });
  }

  /** Put a prompt that was not sent back in the chat's input, with the chips and pasted images it was sent with. */
  putBack(text: string, chips: readonly Held[] = [], images: readonly PromptImage[] = [], note?: string): void {
    for (const held of chips) this.chips.set(held.chip.id, held);
    const message: ToWebview = { type: "unsent", text, chips: chips.map((held) => held.chip), images: [...images], ...(note ? { note } : {}) };
    this.unposted.post(message, (m) => this.post(m));
  }

  /** The latest queued prompt, taken back into the input with its chips and images (nothing queued: the input stays). */
  private async takeBack(): Promise<void> {
    const back = await this.conversation.takeBack();
    if (back) this.unsent(back.text, back.contexts, back.images);
  }

  unsent(text: string, contexts: readonly EditorContext[], images: readonly ImageSource[] = []): void {
    const chips = contexts.map((context) => held(context.mcpServer ? "resource" : context.range ? "selection" : "file", context, describeEditorContext(context)));
    // An image file goes back as its chip, pasted bytes as a pasted image.
    for (const image of images) if ("path" in image) chips.push(held("image", { imagePath: image.path, name: image.name }, image.name));
    this.putBack(text, chips, images.filter((image): image is PromptImage => "data" in image));
  }

  itemsChanged(items: ChatItem[]): void {
    this.post({ type: "items", items });
  }

  reset(): void {
    this.post({
      type: "reset",
      session: this.conversation.session ?? "",
      items: this.conversation.model.items.map((item) => ({ ...item })),
      running: this.conversation.status.running,
      header: this.conversation.header,
      commands: [...this.conversation.slashCommands],
      earlier: this.conversation.earlier,
      loading: this.conversation.loading,
    });
  }

  earlierLoaded(items: ChatItem[], earlier: number): void {
    this.post({ type: "earlier", items, earlier });
  }

  statusChanged(status: { running: boolean }): void {
    this.post({ type: "status", running: status.running });
  }

  headerChanged(header: Header): void {
    this.post({ type: "header", header });
  }

  onboardingChanged(onboarding: Onboarding | null): void {
    this.post({ type: "onboarding", onboarding });
  }

  /** Whether the chat is on screen (what it says is seen there). */
  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  permissionAsked(): void {
    // Show the question without taking the cursor from where the user types.
    if (this.view) this.view.show(true);
    else void this.reveal();
  }

  private post(message: ToWebview): void {
    void this.view?.webview.postMessage(message);
  }

  private receive(raw: unknown): void {
    // Said at once, before any await: a prompt posted to a host that never took it (unresponsive, then restarted)
    // comes back in the input of the page made anew, not lost with the cleared input. One refused is taken too: it
    // came back after a reload, said to be one Ollie never took.
    const type = (raw as { type?: unknown } | null)?.type;
    if (type === "submit" || type === "queue" || type === "inject") this.post({ type: "taken" });
    const message = parseWebviewMessage(raw);
    if (!message) {
      this.log.warn(`ignored an invalid message from the chat view: ${safeJson(raw)}`);
      // A prompt refused goes back in the input, said (taken above, it was gone from the input and from the page's
      // state), with the chips it was sent with.
      const refused = refusedPrompt(raw);
      const ids = (raw as { chips?: unknown }).chips;
      const chips = Array.isArray(ids) ? this.takeChips(ids.filter((id): id is string => typeof id === "string")) : [];
      if (refused) this.putBack(refused.text, chips, [], `Ollie did not take the prompt: ${refused.why}. It is back in the input.`);
      return;
    }
    void this.handle(message).catch((err: unknown) => {
      const text = errorText(err);
      this.log.error(`chat view ${message.type}: ${text}`);
      void vscode.window.showErrorMessage(unlinked(`Ollie: ${text}`));
    });
  }

  private async handle(message: FromWebview): Promise<void> {
    // A command runs at once, a turn running or not, as the daemon runs it: queued, `/queued clear` typed during a
    // turn ran after the very prompts it was typed to drop.
    if ((message.type === "queue" || message.type === "inject") && isSlashCommand(message.text)) message = { ...message, type: "submit" };
    // Back in the input to edit, as ArrowUp on an empty input takes it, not only said.
    if (message.type === "submit" && /^\/queued\s+pop\s*$/.test(message.text.trim())) return this.takeBack();
    switch (message.type) {
      case "ready":
        this.reset();
        this.statusChanged(this.conversation.status);
        this.onboardingChanged(this.conversation.onboarding);
        for (const unsent of this.unposted.ready()) this.post(unsent);
        return;
      case "submit": {
        const chips = this.takeChips(message.chips);
        try {
          await this.conversation.submit(message.text, contextsOf(chips), [...imagesOf(chips), ...(message.images ?? [])]);
        } catch (err) {
          // It waited for a start that failed, or its daemon died before it ran: it goes back to be sent again.
          if (!(err instanceof DaemonNotStarted)) throw err;
          this.putBack(message.text, chips, message.images);
        }
        return;
      }
      case "queue":
      case "inject": {
        // The page may not know yet that the turn ended: queued now, the prompt would wait for the next turn's end.
        if (message.type === "queue" && !this.conversation.status.running) return this.handle({ ...message, type: "submit" });
        // Not taken (its daemon died, a context item or an image could not be read): it goes back to be sent again.
        const chips = this.takeChips(message.chips);
        const pasted = message.type === "queue" ? message.images ?? [] : [];
        const taken = message.type === "queue"
          ? await this.conversation.queue(message.text, contextsOf(chips), [...imagesOf(chips), ...pasted])
          : await this.conversation.inject(message.text, contextsOf(chips));
        if (!taken) this.putBack(message.text, chips, pasted);
        return;
      }
      case "interrupt":
        await this.conversation.interrupt();
        return;
      case "fork":
        await vscode.commands.executeCommand("ollie.forkChat", message.turn);
        return;
      case "switchModel":
        await vscode.commands.executeCommand("ollie.switchModel");
        return;
      case "newSession":
      case "setApiKey":
        await vscode.commands.executeCommand(message.type === "newSession" ? "ollie.newSession" : "ollie.setApiKey");
        return;
      case "checkBackend":
        return this.conversation.checkBackend();
      case "openServerEnv":
        await vscode.commands.executeCommand("workbench.action.openSettings", "ollie.serverEnv");
        return;
      case "loadEarlier":
        return this.conversation.loadEarlier();
      case "runHeld":
        return this.conversation.runHeld();
      case "takeBack":
        return this.takeBack();
      case "setApproval":
        return this.conversation.setApproval(message.mode);
      case "permission":
        this.conversation.answerPermission(message.item, message.outcome, message.feedback);
        return;
      case "undo":
        return this.conversation.undo(message.item, message.path);
      case "openChange": {
        const change = this.conversation.changesSession(message.item);
        if (change) await vscode.commands.executeCommand("ollie.review.openFile", { session: change.session, path: message.path, turn: change.turn });
        return;
      }
      case "openDiff": {
        const diff = this.conversation.stepDiff(message.item, message.path);
        if (diff) await vscode.commands.executeCommand("ollie.openDiff", { title: diff.title, path: message.path, oldText: diff.oldText, newText: diff.newText });
        return;
      }
      case "openFile":
        return this.openFile(message.path, message.line);
      case "code":
        return runCodeAction(message.action, message.code, message.file, this.conversation.cwd);
      case "pickFile":
        return this.pickFile();
      case "addSelection":
        return this.addSelection();
      case "checkPaths":
        return this.checkPaths(message.paths);
    }
  }

  private async openFile(path: string, line?: number): Promise<void> {
    const uri = workspaceUri(path, this.conversation.cwd);
    if (!uri) throw new Error(`${shownPath(path)} is not in the workspace`);
    // The link was written by the model: a file outside the workspace opens only when the user says so (its name
    // escaped: a newline or an override in it would write the question's words).
    if (!(await isInsideWorkspaceUri(uri))) {
      const open = "Open Anyway";
      const answer = await vscode.window.showWarningMessage(unlinked(`Ollie: ${shownPath(uri.fsPath)} is outside the workspace. Open it?`), { modal: true }, open);
      if (answer !== open) return;
    }
    const position = new vscode.Position(Math.max(0, (line ?? 1) - 1), 0);
    await vscode.window.showTextDocument(uri, { selection: new vscode.Range(position, position), preview: false });
  }

  // The chips a prompt was sent with, in the input's order; sent chips are done with (unless it is put back).
  private takeChips(ids: string[] | undefined): Held[] {
    const taken = (ids ?? []).flatMap((id) => this.chips.get(id) ?? []);
    for (const id of ids ?? []) this.chips.delete(id);
    return taken;
  }

  private addChip(kind: Chip["kind"], context: Held["context"], label: string): void {
    const chip = held(kind, context, label);
    this.chips.set(chip.chip.id, chip);
    this.post({ type: "chip", chip: chip.chip });
  }

  // `@`: a workspace file, or a resource of the session's MCP servers (the daemon reads it through its server).
  private async pickFile(): Promise<void> {
    const [files, servers] = await Promise.all([
      vscode.workspace.findFiles("**/*", "**/{node_modules,.git,.venv,__pycache__}/**", 5000),
      this.conversation.request<unknown>("ollie/mcp/list").then(parseMcpList, () => []),
    ]);
    // `name` as the chip says it; the label as the list draws it (a file's or a server's `$(check)` is no icon).
    type Item = vscode.QuickPickItem & { name?: string; uri?: vscode.Uri; context?: EditorContext };
    const named = (name: string): Item => ({ name: shownPath(name), label: shownLabel(name) });
    const fileItems: Item[] = files
      .map((uri) => ({ ...named(vscode.workspace.asRelativePath(uri)), uri }))
      .sort((a, b) => a.label.localeCompare(b.label));
    const resources: Item[] = servers.flatMap((s) => s.resources.map((r) => ({
      ...named(`${s.name}: ${r.uri}`), description: shownLabel(r.name), context: { uri: r.uri, mcpServer: s.name } })));
    const separator: Item[] = resources.length > 0 ? [{ label: "MCP resources", kind: vscode.QuickPickItemKind.Separator }] : [];
    const picked = await vscode.window.showQuickPick<Item>([...fileItems, ...separator, ...resources], {
      title: "Ollie: Add a file or an MCP resource to the prompt", placeHolder: "a file (or a resource) the prompt is about" });
    if (!picked) return;
    const name = picked.name ?? "";
    if (picked.context) this.addChip("resource", picked.context, name);
    // An image file goes as an image (the daemon reads it beneath the workspace), not as text.
    else if (picked.uri && isImageName(name)) this.addChip("image", { imagePath: picked.uri.fsPath, name }, name);
    else if (picked.uri) this.addChip("file", { uri: picked.uri.toString() }, name);
  }

  private addSelection(): void {
    const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
    if (!editor) {
      void vscode.window.showInformationMessage("Ollie: open a file and select some text first.");
      return;
    }
    const { start, end } = editor.selection;
    const context = buildEditorContext({
      uri: editor.document.uri.toString(),
      languageId: editor.document.languageId,
      selectionStart: { line: start.line, character: start.character },
      selectionEnd: { line: end.line, character: end.character },
      selectedText: editor.document.getText(editor.selection),
    });
    this.addChip("selection", context, describeEditorContext(context));
  }

  // Which of the paths the answer mentions exist in the workspace (those become links).
  private async checkPaths(paths: string[]): Promise<void> {
    const existing: string[] = [];
    const missing: string[] = [];
    await Promise.all(
      paths.map(async (path) => {
        const uri = workspaceUri(path.replace(/:\d+$/, ""), this.conversation.cwd);
        // Only workspace files become links; others stay plain text.
        const inside = uri !== undefined && (await isInsideWorkspaceUri(uri));
        const stat = uri && inside ? await Promise.resolve(vscode.workspace.fs.stat(uri)).catch(() => undefined) : undefined;
        (stat && stat.type & vscode.FileType.File ? existing : missing).push(path);
      }),
    );
    this.post({ type: "paths", existing, missing });
  }

  private html(webview: vscode.Webview): string {
    const media = (name: string) => webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "media", name)).toString();
    return chatHtml({
      cspSource: webview.cspSource,
      nonce: crypto.randomBytes(18).toString("base64"),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "dist", "webview.js")).toString(),
      styleUri: media("chat.css"),
      iconsUri: media("vendor/codicons/codicon.css"),
      note: workspaceNote(),
    });
  }

  dispose(): void {
    this.subscription.dispose();
  }
}

// A chip on the input, and what it stands for.
interface Held {
  chip: Chip;
  context: EditorContext | { imagePath: string; name: string };
}

// A new chip for `context`.
function held(kind: Chip["kind"], context: Held["context"], label: string): Held {
  return { chip: { id: crypto.randomBytes(8).toString("hex"), kind, label }, context };
}

function contextsOf(chips: readonly Held[]): EditorContext[] {
  return chips.flatMap(({ context }) => ("imagePath" in context ? [] : [context]));
}

// The image files among a prompt's chips.
function imagesOf(chips: readonly Held[]): ImageSource[] {
  return chips.flatMap(({ context }) => ("imagePath" in context ? [{ name: context.name, path: context.imagePath }] : []));
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 200) ?? String(value);
  } catch {
    return String(value);
  }
}
