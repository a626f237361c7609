// Slash commands the daemon understands, and completion of them in the chat input.

export interface SlashCommand {
  name: string;
  args?: string;
  description: string;
}

/** The daemon's slash commands (seed architecture, "Slash commands"). */
export const SLASH_COMMANDS: readonly SlashCommand[] = [
  { name: "/help", description: "Show command help" },
  { name: "/model", args: "[name]", description: "Show or switch model" },
  { name: "/models", description: "List available models" },
  { name: "/backend", args: "[name]", description: "Show or switch LLM backend" },
  { name: "/agent", args: "[name]", description: "Show or switch agent config" },
  { name: "/agents", description: "List available agents" },
  { name: "/compact", description: "Compact the conversation now" },
  { name: "/context", description: "Show context size and message breakdown" },
  { name: "/usage", description: "Show token usage and context percentage" },
  { name: "/cost", description: "Show last turn and session cost" },
  { name: "/clear", description: "Clear the session (reset context)" },
  { name: "/history", description: "Dump the bounded message history" },
  { name: "/sessions", description: "List saved sessions" },
  { name: "/rn", args: "<name>", description: "Rename the session" },
  { name: "/cwd", args: "[path]", description: "Show or change the working directory" },
  { name: "/maxsteps", args: "[n]", description: "Get or set max steps (0 = unlimited)" },
  { name: "/tools", description: "List available tools" },
  { name: "/skills", description: "List available skills" },
  { name: "/sp", description: "Show the rendered system prompt" },
  { name: "/i", args: "<prompt>", description: "Inject into the running turn" },
  { name: "/queued", args: "[pop|clear]", description: "Manage queued prompts" },
  { name: "/kill", description: "Kill the session" },
];

/** Commands that complete what is typed: only while the input is a single `/word` being typed. */
export function slashCompletions(input: string, commands: readonly SlashCommand[] = SLASH_COMMANDS): SlashCommand[] {
  if (!/^\/[\w-]*$/.test(input)) return [];
  const prefix = input.toLowerCase();
  const exact = commands.filter((c) => c.name.startsWith(prefix));
  return exact.sort((a, b) => a.name.length - b.name.length || a.name.localeCompare(b.name));
}

/** The input after choosing `command`: its name and a space when it takes arguments. */
export function applySlashCompletion(command: SlashCommand): string {
  return command.args ? `${command.name} ` : command.name;
}
