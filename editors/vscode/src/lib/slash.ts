// Completion of slash commands in the chat input; the commands come from the daemon (`ollie/listCommands`).

import type { SlashCommand } from "./protocol";

export type { SlashCommand };

/**
 * Commands that complete what is typed (only while the input is a single `/word`): the name typed whole first
 * (Enter on `/agent` completed `/agents`), then names that start with it, then names that contain it; safe ones
 * before destructive ones, then alphabetical.
 */
export function slashCompletions(input: string, commands: readonly SlashCommand[]): SlashCommand[] {
  if (!/^\/[\w-]*$/.test(input)) return [];
  const typed = input.toLowerCase();
  const word = typed.slice(1);
  const rank = (c: SlashCommand) => {
    const name = c.name.toLowerCase();
    return name === typed ? 0 : name.startsWith(typed) ? 1 : 2;
  };
  return commands
    .filter((c) => c.name.toLowerCase().startsWith(typed) || (word.length > 0 && c.name.toLowerCase().includes(word)))
    .sort((a, b) => rank(a) - rank(b) || Number(a.destructive) - Number(b.destructive) || a.name.localeCompare(b.name));
}

/** The input after choosing `command`: its name and a space when it takes arguments. */
export function applySlashCompletion(command: Pick<SlashCommand, "name" | "args">): string {
  return command.args ? `${command.name} ` : command.name;
}

/** Whether Enter runs `input` as it is, the selected completion `command` typed whole (one that needs an argument,
 * `<prompt>`, is completed with its space instead). */
export function typedWhole(input: string, command: Pick<SlashCommand, "name" | "args">): boolean {
  return command.name.startsWith("/") && input === command.name && !command.args.startsWith("<");
}

/** Whether `text` is a command that cuts the session's conversation or puts it back (`/rewind`, `/clear`, `/agent
 * NAME`): the chat is drawn again from the daemon's history after it. */
export function cutsConversation(text: string): boolean {
  return /^\/(rewind|clear)(\s|$)|^\/agent\s+\S/.test(text.trim());
}

/** Whether `text` is a slash command (`/word ...`), as the daemon decides: a path such as `/usr/bin/env x` is a
 * prompt (core/ollie/agent/editorcontext.py `is_command`). */
export function isSlashCommand(text: string): boolean {
  return /^\/[A-Za-z][\w:-]*(\s|$)/.test(text.trim());
}
