// An `ollie/permission` question in the chat: which one takes the keyboard focus, and how screen readers hear it.

import { type ChatItem, networkTarget } from "./chatModel";

type PermissionItem = Extract<ChatItem, { kind: "permission" }>;

/** The first question in `items` still waiting for an answer that has not taken the focus yet (ids in `focused`). */
export function questionToFocus(items: readonly ChatItem[], focused: ReadonlySet<number>): number | undefined {
  return items.find((item) => item.kind === "permission" && !item.outcome && !focused.has(item.id))?.id;
}

/** The step that asked a network question: its title is `connect to <host>:<port> (network; step: <the step>)`,
 * whose host the question already names. */
export function askingStep(title: string): string {
  return /^connect to .*? \(network; step: (.*)\)$/s.exec(title)?.[1] ?? title;
}

/** How a question is announced: an alert dialog while it waits (read out when its button takes the focus), then a plain group. */
export function questionA11y(item: PermissionItem): { role: string; label: string } {
  if (item.outcome) return { role: "group", label: `Approval: ${item.step.title}` };
  if (item.step.network) {
    const covers = item.always ? ` "Always allow" covers ${item.always}.` : "";
    return { role: "alertdialog", label: `Allow network access to ${networkTarget(item.step.network)}? Asked by the step: ${askingStep(item.step.title)}. Allow once, allow for this session, always allow, or deny.${covers}` };
  }
  const covers = item.always ? ` "Allow always" covers ${item.always}.` : "";
  return { role: "alertdialog", label: `Ollie asks to ${item.step.title}: allow once, allow always, or reject.${covers}` };
}

/** How long the keyboard must be quiet before an Enter or Space on a question's button answers it. */
export const KEYBOARD_QUIET_MS = 600;

/** Whether a key press at `now` may answer a question: not while the user is still typing what was meant for the prompt. */
export function keyboardAnswerAllowed(now: number, lastKeyAt: number): boolean {
  return now - lastKeyAt >= KEYBOARD_QUIET_MS;
}
