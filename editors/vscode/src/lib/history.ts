// Turning a saved conversation (`ollie/context` messages) into chat items and a readable document.

import { ChatModel } from "./chatModel";

interface ToolCallLike {
  id?: string;
  name?: string;
  arguments?: string;
  function?: { name?: string; arguments?: string };
}

interface MessageLike {
  role?: string;
  content?: unknown;
  reasoning?: unknown;
  tool_calls?: ToolCallLike[] | null;
  name?: string;
}

function text(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined || value === null) return "";
  return JSON.stringify(value);
}

function messagesOf(raw: unknown): MessageLike[] {
  return Array.isArray(raw) ? raw.filter((m): m is MessageLike => typeof m === "object" && m !== null) : [];
}

// The daemon prefixes a prompt's editor context as `<editor-context>\nFile: a.py (python)\n...</editor-context>`.
const EDITOR_CONTEXT = /^<editor-context>\n([\s\S]*?)\n<\/editor-context>\n*/;

/** A saved user message split into the prompt the user typed and a label for its editor context. */
export function splitEditorContext(content: string): { prompt: string; contextLabel?: string } {
  const match = EDITOR_CONTEXT.exec(content);
  if (!match) return { prompt: content };
  const file = /^File:\s*(.+?)(?:\s+\([^)]*\))?$/m.exec(match[1]);
  return { prompt: content.slice(match[0].length), contextLabel: file ? file[1] : "editor context" };
}

/** A chat model holding a resumed session's conversation (user, assistant, reasoning and tool messages). */
export function modelFromHistory(messages: unknown): ChatModel {
  const model = new ChatModel();
  let seq = 0;
  const feed = (role: string, content: string, name?: string) => model.apply({ session: "", seq: ++seq, role, name, content });
  for (const message of messagesOf(messages)) {
    switch (message.role) {
      case "user": {
        const { prompt, contextLabel } = splitEditorContext(text(message.content));
        model.addUser(prompt, contextLabel ? { contextLabel } : {});
        break;
      }
      case "assistant":
        if (text(message.reasoning)) feed("reasoning", text(message.reasoning));
        if (text(message.content)) feed("assistant", text(message.content));
        for (const call of message.tool_calls ?? []) {
          feed("call", call.arguments ?? call.function?.arguments ?? "", call.name ?? call.function?.name ?? "");
        }
        break;
      case "tool":
        feed("tool", text(message.content), message.name ?? "");
        break;
      default:
        break;
    }
  }
  model.lastSeq = 0;
  return model;
}

/** The model's context as a Markdown document for "Ollie: Show Context". */
export function contextToMarkdown(context: { systemPrompt?: unknown; messages?: unknown }): string {
  const parts = ["# Ollie context", "", "## System prompt", "", "```text", text(context.systemPrompt), "```"];
  for (const message of messagesOf(context.messages)) {
    parts.push("", `## ${message.role ?? "?"}${message.name ? ` (${message.name})` : ""}`, "");
    if (text(message.reasoning)) parts.push("> " + text(message.reasoning).replace(/\n/g, "\n> "), "");
    if (text(message.content)) parts.push(message.role === "tool" ? "```text\n" + text(message.content) + "\n```" : text(message.content));
    for (const call of message.tool_calls ?? []) {
      parts.push("", `Tool call \`${call.name ?? call.function?.name ?? "?"}\`:`, "```json", call.arguments ?? call.function?.arguments ?? "", "```");
    }
  }
  return parts.join("\n") + "\n";
}
