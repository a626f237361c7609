// `ollie/permission` questions: asked in the session's chat, answered there, withdrawn when the turn or daemon ends.

import * as vscode from "vscode";
import { unsavedInEditor } from "./editorActions";
import { ChatItem } from "./lib/chatModel";
import { PermissionRequest } from "./lib/permission";
import { PermissionOutcome } from "./lib/webviewMessages";
import { SessionHost } from "./sessionHost";
import { unlinked } from "./lib/notice";

type PermissionItem = Extract<ChatItem, { kind: "permission" }>;

/** The user's answer to an `ollie/permission` request. */
export interface PermissionAnswer {
  outcome: PermissionOutcome;
  feedback?: string;
}

interface PendingQuestion {
  item: PermissionItem;
  session: string;
  resolve(answer: PermissionAnswer): void;
}

/** The approval questions still open, by the id of the chat item that shows each. */
export class PermissionQuestions {
  private readonly pending = new Map<number, PendingQuestion>();

  constructor(
    private readonly host: SessionHost,
    /** A question was asked in the session in view. */
    private readonly askedInView: () => void,
    /** A question of `session` was asked, or waits no more. */
    private readonly waitingChanged: (session: string) => void,
  ) {}

  /** Whether a question of `session` waits for the user's answer. */
  asks(session: string): boolean {
    for (const question of this.pending.values()) if (question.session === session) return true;
    return false;
  }

  /** Show `request` in its session's chat; resolves with the user's answer (a reject when it is cancelled). */
  ask(request: PermissionRequest, token: vscode.CancellationToken): Promise<PermissionAnswer> {
    const model = this.host.modelFor(request.session);
    const item = model.add<PermissionItem>({ kind: "permission", id: 0, step: request.step, always: request.always, offered: request.offered });
    // An edit of a buffer holding the user's unsaved text is saved with that text (for the steps after it to see):
    // said before she answers (only after, it was too late to finish or undo her lines first); a batch's edits too.
    const edited = new Set([request.step.diff, ...(request.step.diffs ?? [])].flatMap((d) => (d ? [d.path] : [])));
    const unsaved = [...edited].filter((path) => unsavedInEditor(path, this.host.cwdOf(request.session)));
    if (unsaved.length) item.unsaved = unsaved;
    this.host.changedIn(request.session, item);
    if (request.session === this.host.current()) this.askedInView();
    else void vscode.window.showInformationMessage(unlinked(`Ollie: a session in the background asks to ${request.step.title}.`));
    return new Promise((resolve) => {
      this.pending.set(item.id, { item, session: request.session, resolve });
      this.waitingChanged(request.session);
      token.onCancellationRequested(() => {
        if (!this.pending.delete(item.id)) return;
        item.outcome = "cancelled";
        this.host.changedIn(request.session, item);
        this.waitingChanged(request.session);
        resolve({ outcome: "reject" });
      });
    });
  }

  /** Answer the pending question shown as chat item `itemId`. */
  answer(itemId: number, outcome: PermissionOutcome, feedback?: string): void {
    const question = this.pending.get(itemId);
    if (!question) return;
    this.pending.delete(itemId);
    question.item.outcome = outcome;
    if (feedback) question.item.feedback = feedback;
    this.host.changedIn(question.session, question.item);
    this.waitingChanged(question.session);
    question.resolve(feedback ? { outcome, feedback } : { outcome });
  }

  /** A turn of `session` ended: the questions it withdrew are answered no more. */
  turnEnded(session: string): void {
    for (const [id, question] of this.pending) if (question.session === session && question.item.outcome === undefined) this.pending.delete(id);
    this.waitingChanged(session);
  }

  /** The daemon stopped: every open question is cancelled (answered with a reject). */
  cancelAll(): void {
    for (const [id, question] of this.pending) {
      question.item.outcome = "cancelled";
      question.resolve({ outcome: "reject" });
      this.pending.delete(id);
      this.waitingChanged(question.session);
    }
  }
}
