// The chat view's script (runs inside the webview; bundled with esbuild).

import type { ChatItem } from "../lib/chatModel";
import { composerAction } from "../lib/composer";
import { SlashCommand, applySlashCompletion, slashCompletions } from "../lib/slash";
import type { FromWebview, ToWebview } from "../lib/webviewMessages";
import { highlightCode, renderMarkdown } from "./markdown";

declare function acquireVsCodeApi(): { postMessage(message: FromWebview): void };

const vscode = acquireVsCodeApi();
const log = document.getElementById("log") as HTMLElement;
const input = document.getElementById("input") as HTMLTextAreaElement;
const form = document.getElementById("composer") as HTMLFormElement;
const sendButton = document.getElementById("send") as HTMLButtonElement;
const injectButton = document.getElementById("inject") as HTMLButtonElement;
const stopButton = document.getElementById("stop") as HTMLButtonElement;
const slashList = document.getElementById("slash") as HTMLUListElement;
const stateLabel = document.getElementById("state") as HTMLElement;
const costLabel = document.getElementById("cost") as HTMLElement;

const rendered = new Map<number, HTMLElement>();
let running = false;
let completions: SlashCommand[] = [];
// The daemon's slash commands, sent with every reset.
let commands: SlashCommand[] = [];
let selected = 0;

const STOP_LABELS: Record<string, string> = {
  interrupted: "Turn interrupted",
  max_steps: "Stopped: step limit reached",
  error: "Turn ended with an error",
};

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function argsPreview(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 80 ? `${flat.slice(0, 77)}…` : flat;
}

/** Create the element for an item the first time it is seen. */
function create(item: ChatItem): HTMLElement {
  switch (item.kind) {
    case "reasoning": {
      const details = el("details", "item reasoning");
      details.append(el("summary", undefined, "Reasoning"), el("div", "body markdown"));
      return details;
    }
    case "tool": {
      const details = el("details", "item tool");
      const summary = el("summary");
      summary.append(el("span", "tool-name"), el("span", "tool-args-preview"), el("span", "tool-status"));
      const args = el("pre", "tool-args");
      args.append(el("code", "hljs"));
      const result = el("pre", "tool-result");
      result.append(el("code"));
      details.append(summary, args, result);
      return details;
    }
    default:
      return el("div", `item ${item.kind}`);
  }
}

/** Bring an item's element up to date with the item. */
function update(node: HTMLElement, item: ChatItem): void {
  node.dataset.kind = item.kind;
  switch (item.kind) {
    case "user": {
      node.replaceChildren();
      if (item.note || item.contextLabel) {
        const meta = el("div", "meta", [item.note, item.contextLabel ? `about ${item.contextLabel}` : ""].filter(Boolean).join(" · "));
        node.append(meta);
      }
      node.append(el("div", "text", item.text));
      break;
    }
    case "assistant":
      node.innerHTML = renderMarkdown(item.text);
      break;
    case "reasoning":
      (node.querySelector(".body") as HTMLElement).innerHTML = renderMarkdown(item.text);
      break;
    case "tool": {
      const state = item.result === undefined ? "running" : item.isError ? "error" : "done";
      node.dataset.toolName = item.name;
      node.dataset.state = state;
      (node.querySelector(".tool-name") as HTMLElement).textContent = item.name;
      (node.querySelector(".tool-args-preview") as HTMLElement).textContent = argsPreview(item.args);
      (node.querySelector(".tool-status") as HTMLElement).textContent = state === "running" ? "running…" : state;
      (node.querySelector(".tool-args code") as HTMLElement).innerHTML = highlightCode(prettyJson(item.args), "json");
      (node.querySelector(".tool-result code") as HTMLElement).textContent = item.result ?? "";
      if (item.isError) (node as HTMLDetailsElement).open = true;
      break;
    }
    case "notice":
      node.dataset.level = item.level;
      node.className = `item notice ${item.level}`;
      node.textContent = item.text;
      break;
    case "turnEnd":
      node.dataset.stop = item.stop;
      node.textContent = STOP_LABELS[item.stop] ?? "";
      node.hidden = !(item.stop in STOP_LABELS);
      break;
  }
}

function nearBottom(): boolean {
  return log.scrollHeight - log.scrollTop - log.clientHeight < 40;
}

function upsert(items: ChatItem[]): void {
  const follow = nearBottom();
  for (const item of items) {
    let node = rendered.get(item.id);
    if (!node) {
      node = create(item);
      node.dataset.id = String(item.id);
      rendered.set(item.id, node);
      log.append(node);
    }
    update(node, item);
  }
  if (follow) log.scrollTop = log.scrollHeight;
}

function setRunning(value: boolean): void {
  running = value;
  document.body.classList.toggle("running", value);
  stopButton.hidden = !value;
  injectButton.hidden = !value;
  sendButton.textContent = value ? "Queue" : "Send";
}

function showCompletions(): void {
  completions = slashCompletions(input.value, commands);
  selected = Math.min(selected, Math.max(completions.length - 1, 0));
  slashList.replaceChildren(
    ...completions.map((command, index) => {
      const row = el("li", index === selected ? "selected" : undefined);
      row.setAttribute("role", "option");
      row.append(el("span", "slash-name", command.name + (command.args ? ` ${command.args}` : "")), el("span", "slash-description", command.description));
      row.addEventListener("mousedown", (event) => {
        event.preventDefault();
        accept(index);
      });
      return row;
    }),
  );
  slashList.hidden = completions.length === 0;
}

function accept(index: number): void {
  const command = completions[index];
  if (!command) return;
  input.value = applySlashCompletion(command);
  completions = [];
  slashList.hidden = true;
  input.focus();
}

function send(kind: "submit" | "queue" | "inject"): void {
  const text = input.value;
  if (!text.trim()) return;
  vscode.postMessage({ type: kind, text });
  input.value = "";
  showCompletions();
}

input.addEventListener("keydown", (event) => {
  const action = composerAction(event, { running, completing: completions.length > 0 && !slashList.hidden });
  if (action === "none" || action === "newline") return;
  event.preventDefault();
  switch (action) {
    case "nextCompletion":
      selected = (selected + 1) % completions.length;
      showCompletions();
      break;
    case "previousCompletion":
      selected = (selected + completions.length - 1) % completions.length;
      showCompletions();
      break;
    case "closeCompletion":
      slashList.hidden = true;
      break;
    case "complete":
      accept(selected);
      break;
    default:
      send(action);
  }
});
input.addEventListener("input", () => {
  selected = 0;
  showCompletions();
});
form.addEventListener("submit", (event) => {
  event.preventDefault();
  send(running ? "queue" : "submit");
});
injectButton.addEventListener("click", () => send("inject"));
stopButton.addEventListener("click", () => vscode.postMessage({ type: "interrupt" }));

window.addEventListener("message", (event: MessageEvent<ToWebview>) => {
  const message = event.data;
  switch (message?.type) {
    case "reset":
      rendered.clear();
      log.replaceChildren();
      upsert(message.items);
      setRunning(message.running);
      commands = message.commands;
      break;
    case "items":
      upsert(message.items);
      break;
    case "status":
      setRunning(message.running);
      stateLabel.textContent = message.state;
      costLabel.textContent = message.cost;
      break;
  }
});

vscode.postMessage({ type: "ready" });
input.focus();
