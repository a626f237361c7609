// Completion of slash commands in the chat input; the commands come from the daemon (`ollie/listCommands`).

import type { SlashCommand } from "./protocol";

export type { SlashCommand };

/** Commands that complete what is typed: only while the input is a single `/word` being typed. */
export function slashCompletions(input: string, commands: readonly SlashCommand[]): SlashCommand[] {
  if (!/^\/[\w-]*$/.test(input)) return [];
  const prefix = input.toLowerCase();
  const exact = commands.filter((c) => c.name.startsWith(prefix));
  return exact.sort((a, b) => a.name.length - b.name.length || a.name.localeCompare(b.name));
}

/** The input after choosing `command`: its name and a space when it takes arguments. */
export function applySlashCompletion(command: Pick<SlashCommand, "name" | "args">): string {
  return command.args ? `${command.name} ` : command.name;
}
