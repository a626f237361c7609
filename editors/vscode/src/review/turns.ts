// The pure half of `Ollie: Rewind`: the session's turns as pick items, newest first.

import { isObject } from "../lib/json";
import { turnNumber } from "../lib/protocol";
import { splitEditorContext } from "../lib/promptContext";
import { unlinked } from "../lib/notice";
import { shownLabel, shownPath } from "../lib/steps";

/** One turn to offer: its number, the prompt that started it (when known) and what it changed. */
export interface TurnItem {
  turn: number;
  label: string;
  description: string;
}

function promptOf(message: unknown): string | undefined {
  if (typeof message !== "object" || message === null) return undefined;
  const { role, content } = message as { role?: unknown; content?: unknown };
  if (role !== "user" || typeof content !== "string") return undefined;
  return splitEditorContext(content).prompt.trim();
}

/** How many files each of turns 1..`count` changed now, from the history's `turnChanges` marks (`ollie/context`
 * messages; the chat's Changed files come from them too): a turn without one changed none; -1 for one whose count is
 * not known (`unknown`: it may have changed files). */
export function changedCounts(messages: unknown, count: number): Map<number, number> {
  const files = new Map(Array.from({ length: count }, (_, i) => [i + 1, 0]));
  for (const message of Array.isArray(messages) ? messages : []) {
    const mark = isObject(message) ? message.turnChanges : undefined;
    if (!isObject(mark) || typeof mark.turn !== "number" || !files.has(mark.turn)) continue;
    if (mark.unknown === true) files.set(mark.turn, -1);
    else if (Number.isInteger(mark.files)) files.set(mark.turn, mark.files as number);
  }
  return files;
}

/** The turns the history's marks say changed the plan (`plan: true`), which a rewind to before them puts back. */
export function planTurns(messages: unknown): Set<number> {
  const marks = (Array.isArray(messages) ? messages : []).map((m) => (isObject(m) ? m.turnChanges : undefined));
  return new Set(marks.filter((m) => isObject(m) && m.plan === true && Number.isInteger(m.turn)).map((m) => (m as { turn: number }).turn));
}

/** What a rewind to before a turn that changed `files` files (-1: not known) and maybe the plan takes back. */
function rewound(files: number | undefined, plan: boolean): string {
  if (files === undefined) return "";
  // Not "changed no files" of one that changed the plan: the rewind puts the plan back, which is not nothing.
  if (files === 0) return plan ? "changed the plan, no files" : "changed no files";
  const changed = files < 0 ? "changes unknown" : `changed ${files} file${files === 1 ? "" : "s"}`;
  return plan ? `${changed}, and the plan` : changed;
}

/** The prompt that started each turn of a conversation (`ollie/context` messages), by the turn number its message
 * carries (PROTOCOL.md "History"): an injected text or a note is a user message too, but starts no turn. */
export function turnPrompts(messages: unknown): Map<number, string> {
  const prompts = new Map<number, string>();
  for (const message of Array.isArray(messages) ? messages : []) {
    const prompt = promptOf(message);
    if (prompt !== undefined && isObject(message) && turnNumber(message.turn)) prompts.set(message.turn, prompt);
  }
  return prompts;
}

function firstLine(text: string, max = 80): string {
  const line = text.split("\n").find((l) => l.trim()) ?? "";
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * Turns 1..`count`, newest first, each described by the prompt that started it where the history has it (not one
 * compaction or `/clear` rewrote). Described by position, one injected text or note left every turn without its prompt.
 */
export function turnItems(count: number, prompts: ReadonlyMap<number, string>, filesChanged: ReadonlyMap<number, number>,
  plans: ReadonlySet<number> = new Set()): TurnItem[] {
  const items: TurnItem[] = [];
  for (let turn = count; turn >= 1; turn--) {
    const prompt = firstLine(prompts.get(turn) ?? "");
    const changed = rewound(filesChanged.get(turn), plans.has(turn));
    items.push({
      turn,
      // The label is the number alone: the pick ranks the labels that start with what she typed shortest first, so
      // "Turn 3" comes before turns 30-39 (labelled "Turn 3: <prompt>", the longer prompt's came last). The prompt,
      // in the description, is still matched.
      label: `Turn ${turn}`,
      description: [prompt && shownLabel(prompt), changed].filter(Boolean).join(" · "),
    });
  }
  return items;
}

/** The Rewind pick's placeholder: how many turns, and an example of what to type that names one of them (a 2-turn
 * session's said "e.g. Turn 3", which found nothing; one turn was "1 turns"). */
export function turnsPlaceholder(count: number): string {
  const turns = count === 1 ? "1 turn" : `${count} turns, newest first`;
  return `${turns}: type to filter (e.g. "Turn ${Math.min(count, 3)}", or a word of its prompt)`;
}

/** The build output a rewind put back, as the engine's `/rewind` names it: its first `shown` paths, then how many
 * more (a test run's bytecode can be many files); "" for none. Escaped and unlinked, for its notice: a step named them. */
export function namedBuildOutput(paths: readonly string[], shown = 3): string {
  const more = paths.length > shown ? ` and ${paths.length - shown} more` : "";
  return unlinked(paths.slice(0, shown).map(shownPath).join(", ")) + more;
}
