// `Ollie: Rewind`: pick one of the session's turns, confirm, and put the files and the conversation
// back to before it (`ollie/rewind`); the notification offers to undo it, as `Ollie: Undo Rewind` does.

import * as vscode from "vscode";
import { ResponseError } from "vscode-languageclient/node";
import { ReviewHost } from "./review";
import { parseChanges } from "./hunks";
import { readContext } from "../lib/history";
import { unlinked } from "../lib/notice";
import { shownPath } from "../lib/steps";
import { changedCounts, namedBuildOutput, planTurns, turnItems, turnPrompts, turnsPlaceholder } from "./turns";

interface Rewound {
  turn?: number;
  files?: string[];
  buildOutput?: string[];
  messages?: number;
  buffers?: { path: string; status: string; reason?: string }[];
}

/** Ask which turn to rewind to and do it; `reload` shows the session's conversation afterwards, `cut` is told which
 * turns went (their review tabs close). */
export async function rewind(
  host: ReviewHost,
  reload: (session: string | undefined) => Promise<void>,
  cut: (session: string | undefined, turn: number) => Promise<void>,
): Promise<void> {
  const session = host.currentSession();
  const withSession = (params: object): object => (session ? { ...params, session } : params);
  const last = parseChanges(await host.request("ollie/changes", withSession({})));
  if (last.turn === null) {
    void vscode.window.showInformationMessage("Ollie: this session has no turns to rewind.");
    return;
  }
  const count = last.turn;
  const context = await readContext((params) => host.request("ollie/context", withSession(params))).catch(() => undefined);
  // Counted from the history's marks: no diff of each turn (and its files' texts sent) to draw the pick.
  const files = context ? changedCounts(context.messages, count) : new Map<number, number>();
  // Every turn, newest first: typing filters them ("Turn 3", a word of its prompt). Cut to 30, a long session's
  // early turns were out of reach.
  const items = turnItems(count, turnPrompts(context?.messages), files, planTurns(context?.messages));
  const picked = await vscode.window.showQuickPick(items, {
    title: "Ollie: Rewind to before which turn?", placeHolder: turnsPlaceholder(count),
    matchOnDescription: true });
  if (!picked) return;
  const answer = await vscode.window.showWarningMessage(
    `Rewind to before turn ${picked.turn}? The files go back to how they were before it and the conversation from it on is dropped.`,
    { modal: true, detail: "You can undo the rewind until the next turn starts." },
    "Rewind",
  );
  if (answer !== "Rewind") return;
  const done = await host.request<Rewound>("ollie/rewind", withSession({ turn: picked.turn }));
  await cut(session, done.turn ?? picked.turn);
  await reload(session);
  const restored = done.files?.length ?? 0;
  // Build output (a test run's __pycache__) is put back too, but counted apart: the change list never showed it.
  const built = namedBuildOutput(done.buildOutput ?? []);
  const alsoBuilt = built ? `, and build output (${built})` : "";
  // An open buffer she typed in since the turn's edit keeps that edit (the daemon leaves it as it is): said, or her next
  // save wrote it back, the rewind having said the file was restored.
  const kept = notInEditor(done);
  const left = kept ? ` Not in the editor: ${kept}; saving writes the rewound edits back.` : "";
  const choice = await (kept ? vscode.window.showWarningMessage : vscode.window.showInformationMessage)(
    `Ollie: rewound to before turn ${done.turn ?? picked.turn} (${restored} file${restored === 1 ? "" : "s"} restored${alsoBuilt}).${left}`,
    "Undo Rewind",
  );
  if (choice === "Undo Rewind") await undoRewind(host, reload, session);
}

/** Undo the last rewind of `session` (`Ollie: Undo Rewind`, the rewind's notification): said when there is none to
 * undo. The palette's command reaches it after a window reload, when that notification is gone. */
export async function undoRewind(
  host: ReviewHost,
  reload: (session: string | undefined) => Promise<void>,
  session = host.currentSession(),
): Promise<void> {
  let done: Rewound;
  try {
    // The undo puts the turns' edits back in the buffers the rewind reverted; one she typed in since keeps her text.
    done = await host.request<Rewound>("ollie/rewind", { ...(session ? { session } : {}), undo: true });
  } catch (err) {
    // The daemon's refusal says why (`undo: no rewind to undo (a turn has run since, or none was made)`).
    const why = err instanceof ResponseError && err.code === -32602 ? /\bundo: (.+)$/s.exec(err.message)?.[1] : undefined;
    if (why === undefined) throw err;
    void vscode.window.showInformationMessage(`Ollie: ${unlinked(why)}.`);
    return;
  }
  const undone = notInEditor(done);
  await reload(session);
  void (undone ? vscode.window.showWarningMessage : vscode.window.showInformationMessage)(
    `Ollie: the rewind is undone.${undone ? ` Not in the editor: ${undone}.` : ""}`);
}

/** The open buffers a rewind (or its undo) left as they were, each with why; "" for none. */
function notInEditor(done: Rewound): string {
  // The names are the workspace's and the reasons the editor's: escaped, and no link (`unlinked`) made of them.
  const kept = (done.buffers ?? []).filter((b) => b.status !== "reverted").map((b) => `${shownPath(b.path)} (${shownPath(b.reason ?? b.status)})`);
  return unlinked(kept.join(", "));
}
