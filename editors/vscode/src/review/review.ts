// Reviewing a turn's changes: each file in VS Code's diff editor (before ↔ after, from `ollie/changes`),
// keep or undo per hunk (CodeLens on the right side, the line-number menu) and per file (editor title).

import * as vscode from "vscode";
import { DIFF_SCHEME, DiffDocuments } from "./diffDocs";
import { FileChange, describeHunk, hunkAnchorLine, hunkAtLine, hunkKey, parseChanges, undoParams, undoFailureMessage } from "./hunks";
import { unlinked } from "../lib/notice";
import { shownLabel, shownPath } from "../lib/steps";

/** How the review reaches the daemon. */
export interface ReviewHost {
  request<T>(method: string, params: object): Promise<T>;
  /** The session the chat shows. */
  currentSession(): string | undefined;
  /** A session's title ("" when not known). */
  titleOf(session: string | undefined): string;
}

interface Review {
  session?: string;
  turn: number;
  path: string;
  left: vscode.Uri;
  right: vscode.Uri;
  /** The file's change as the daemon lists it now (undefined: nothing left to review). */
  change: FileChange | undefined;
  /** The file before the turn (shown on both sides once every change is undone). */
  before: string;
  /** Hunks the user kept, by content (indices shift as others are undone). */
  kept: Set<string>;
}

// The right side's query starts with this, so the editor title actions show on review diffs only.
const REVIEW_TAGS = ["review-old", "review-new"];

function errorParts(err: unknown): { code?: unknown; message?: unknown } {
  return typeof err === "object" && err !== null ? (err as { code?: unknown; message?: unknown }) : { message: String(err) };
}

function lineCount(text: string | null): number {
  return (text ?? "").split("\n").length;
}

/** The review diffs, their CodeLenses and the keep/undo commands. */
export class ReviewController implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly reviews = new Map<string, Review>();
  private readonly lensEmitter = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensEmitter.event;

  constructor(private readonly host: ReviewHost, private readonly docs: DiffDocuments) {}

  /** `ollie.review.openFile {session, path, turn?}`: the diff of one file's change in a turn (default: the last). */
  async openFile(args: { session?: string; path: string; turn?: number }): Promise<void> {
    const session = args.session ?? this.host.currentSession();
    // The one file (a turn's listing stops at its first 100 files, 4 MiB of text).
    const found = parseChanges(await this.host.request("ollie/changes", { ...(session ? { session } : {}), ...(args.turn ? { turn: args.turn } : {}), path: args.path }));
    const change = found.files.find((f) => f.path === args.path);
    if (found.turn === null || !change) {
      void vscode.window.showInformationMessage(unlinked(`Ollie: ${shownPath(args.path)} has no changes to review in ${found.turn === null ? "this session" : `turn ${found.turn}`}.`));
      return;
    }
    if (change.binary) {
      void vscode.window.showInformationMessage(unlinked(`Ollie: ${shownPath(args.path)} is binary (${change.status}); undo it as a whole with "Undo All Changes to This File" (editor title).`));
    }
    const existing = [...this.reviews.values()].find((r) => r.session === session && r.turn === found.turn && r.path === args.path);
    const review: Review = existing ?? {
      session,
      turn: found.turn,
      path: args.path,
      left: this.docs.uriFor(args.path, REVIEW_TAGS[0]),
      right: this.docs.uriFor(args.path, REVIEW_TAGS[1]),
      change,
      before: change.oldText ?? "",
      kept: new Set(),
    };
    review.change = change;
    this.reviews.set(review.right.toString(), review);
    this.show(review);
    // Named with its session's title: a fork has its source's turns, and their tabs had one name.
    const title = this.host.titleOf(session);
    const of = title ? ` of ${shownPath(title)}` : "";
    await vscode.commands.executeCommand("vscode.diff", review.left, review.right, `${shownPath(args.path)} (Ollie, turn ${review.turn}${of}: before ↔ after)`, { preview: false });
    // The lenses asked for while the diff editor was still being built can stay unshown (seen in code-server,
    // about one open in two under load): asking VS Code once more after it settled shows them.
    for (const delay of [300, 1500]) setTimeout(() => this.lensEmitter.fire(), delay);
  }

  /** `Ollie: Review Changes`: pick one of the last turn's changed files (or open the only one). */
  async reviewLastTurn(): Promise<void> {
    const session = this.host.currentSession();
    // The last turn that changed files (a user asks what the agent changed: a last turn that only talked stopped at
    // "turn 5 changed no files"), as Neovim's :OllieChanges does: one request, however many turns only talked.
    const found = parseChanges(await this.host.request("ollie/changes", { ...(session ? { session } : {}), changed: true }));
    const last = found.last ?? found.turn;
    // "No changes", not "changed no files": a turn passed over may have had its changes undone.
    const none = (from: number, to: number) => (from === to ? `turn ${to} has` : `turns ${from} to ${to} have`) + " no changes";
    if (found.turn === null || last === null || found.files.length === 0) {
      void vscode.window.showInformationMessage(last === null ? "Ollie: no turn has run in this session yet." : `Ollie: ${none(1, last)}.`);
      return;
    }
    if (found.turn !== last) void vscode.window.showInformationMessage(`Ollie: ${none(found.turn + 1, last)}; showing turn ${found.turn}'s changes.`);
    const items = found.files.map((f) => ({ label: shownLabel(f.path), description: `${f.status} · ${f.hunks.length} change${f.hunks.length === 1 ? "" : "s"}`, file: f }));
    const title = `Ollie: Review Changes (turn ${found.turn}${found.more ? `: its first ${items.length} files, ${found.more} more not listed` : ""})`;
    const picked = items.length === 1 && !found.more ? items[0] : await vscode.window.showQuickPick(items, { title, matchOnDescription: true });
    if (picked) await this.openFile({ session, path: picked.file.path, turn: found.turn });
  }

  /** Undo a hunk (its index, or its key from a CodeLens) of the review shown in `uri` (undefined: the whole file). */
  async undo(uri: vscode.Uri | undefined, hunk?: number | string): Promise<void> {
    const review = this.reviewOf(uri);
    if (!review) return;
    const index = typeof hunk === "string" ? this.indexOf(review, hunk) : hunk;
    if (typeof hunk === "string" && index === undefined) return;
    try {
      await this.host.request("ollie/review/undo", undoParams({ session: review.session, turn: review.turn, path: review.path }, index));
    } catch (err) {
      const parts = errorParts(err);
      if (/\bno turn \d+/.test(String(parts.message))) {
        // The turn is gone (a `/rewind` typed in the chat cut it): its review goes too.
        await this.rewound(review.session, review.turn);
        void vscode.window.showInformationMessage(`Ollie: turn ${review.turn} was rewound; its review is closed.`);
        return;
      }
      void vscode.window.showErrorMessage(unlinked(undoFailureMessage(shownPath(review.path), parts)));
      return;
    }
    await this.refresh(review);
    if (!review.change) void vscode.window.showInformationMessage(unlinked(`Ollie: every change of turn ${review.turn} to ${shownPath(review.path)} is undone.`));
  }

  /** A rewind cut turns `turn` and later of `session`: their review tabs close (their undo would find no such turn). */
  async rewound(session: string | undefined, turn: number): Promise<void> {
    for (const [key, review] of [...this.reviews]) {
      if (review.session !== session || review.turn < turn) continue;
      this.reviews.delete(key);
      await this.closeDiff(review);
    }
    this.lensEmitter.fire();
  }

  /** Keep a hunk (by index or key; undefined: every hunk of the file, and close its diff). */
  async keep(uri: vscode.Uri | undefined, hunk?: number | string): Promise<void> {
    const review = this.reviewOf(uri);
    if (!review?.change) return;
    if (hunk === undefined) {
      for (const h of review.change.hunks) review.kept.add(hunkKey(h));
      await this.closeDiff(review);
    } else {
      const index = typeof hunk === "string" ? this.indexOf(review, hunk) : hunk;
      const found = index === undefined ? undefined : review.change.hunks[index];
      if (found) review.kept.add(hunkKey(found));
    }
    this.lensEmitter.fire();
  }

  // A hunk gone since the lens was drawn (undone already) is nothing to do.
  private indexOf(review: Review, key: string): number | undefined {
    const index = review.change?.hunks.findIndex((h) => hunkKey(h) === key) ?? -1;
    return index < 0 ? undefined : index;
  }

  /** The hunk under the cursor (or the clicked line number) of a review diff, undone. */
  async undoAt(target?: { lineNumber?: number; uri?: vscode.Uri }): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const uri = target?.uri ?? editor?.document.uri;
    const review = this.reviewOf(uri);
    if (!review?.change) return;
    const line = target?.lineNumber !== undefined ? target.lineNumber - 1 : editor?.selection.active.line ?? 0;
    const index = hunkAtLine(review.change.hunks, line, lineCount(review.change.newText));
    if (index === undefined) {
      void vscode.window.showInformationMessage(unlinked(`Ollie: no change of ${shownPath(review.path)} at line ${line + 1}.`));
      return;
    }
    await this.undo(review.right, index);
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const review = this.reviews.get(document.uri.toString());
    if (!review?.change) return [];
    const lenses: vscode.CodeLens[] = [];
    review.change.hunks.forEach((hunk) => {
      if (review.kept.has(hunkKey(hunk))) return;
      const range = new vscode.Range(hunkAnchorLine(hunk, document.lineCount), 0, hunkAnchorLine(hunk, document.lineCount), 0);
      // The hunk goes by its key: the lens may still show after an undo shifted the indices.
      const args = [document.uri, hunkKey(hunk)];
      lenses.push(
        new vscode.CodeLens(range, { title: `$(discard) Undo this change (${describeHunk(hunk)})`, command: "ollie.review.undoHunk", arguments: args }),
        new vscode.CodeLens(range, { title: "$(check) Keep", command: "ollie.review.keepHunk", arguments: args }),
      );
    });
    return lenses;
  }

  /** Show what the daemon lists now in `session`'s open reviews: the chat's Undo took back a change (the tab went on
   * showing it, its lens offering to undo it again). */
  async undoneElsewhere(session: string): Promise<void> {
    await Promise.allSettled([...this.reviews.values()].filter((r) => (r.session ?? session) === session).map((r) => this.refresh(r)));
  }

  // The texts the daemon lists now (net of undos) go into both sides; lenses follow.
  private async refresh(review: Review): Promise<void> {
    const found = parseChanges(await this.host.request("ollie/changes", { ...(review.session ? { session: review.session } : {}), turn: review.turn, path: review.path }));
    review.change = found.files.find((f) => f.path === review.path);
    this.show(review);
  }

  private show(review: Review): void {
    const change = review.change;
    if (change) {
      this.docs.set(review.left, change.oldText ?? "");
      this.docs.set(review.right, change.newText ?? "");
      review.before = change.oldText ?? "";
    } else {
      // Nothing left of the change: the file is as it was before the turn, on both sides.
      this.docs.set(review.left, review.before);
      this.docs.set(review.right, review.before);
    }
    this.lensEmitter.fire();
  }

  private reviewOf(uri: vscode.Uri | undefined): Review | undefined {
    const key = (uri ?? vscode.window.activeTextEditor?.document.uri)?.toString();
    const review = key ? this.reviews.get(key) : undefined;
    if (!review) void vscode.window.showInformationMessage("Ollie: open a change with \"Ollie: Review Changes\" first.");
    return review;
  }

  private async closeDiff(review: Review): Promise<void> {
    for (const tab of vscode.window.tabGroups.all.flatMap((g) => g.tabs)) {
      if (tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.toString() === review.right.toString()) {
        await vscode.window.tabGroups.close(tab);
      }
    }
  }

  dispose(): void {
    this.lensEmitter.dispose();
    this.reviews.clear();
  }
}

/** A command's URI argument (a Uri, or its string from a webview). */
export function uriArg(value: unknown): vscode.Uri | undefined {
  if (value instanceof vscode.Uri) return value;
  return typeof value === "string" ? vscode.Uri.parse(value) : undefined;
}

/** A command's hunk argument: a 0-based index, or a hunk key (CodeLenses pass keys). */
export function hunkArg(value: unknown): number | string | undefined {
  if (typeof value === "string" && value) return value;
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** `ollie.review.openFile` args: `{session?, path, turn?}`. */
export function openFileArgs(raw: unknown): { session?: string; path: string; turn?: number } {
  const args = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
  if (typeof args.path !== "string" || !args.path) throw new Error("ollie.review.openFile: path must be a non-empty string");
  return {
    path: args.path,
    session: typeof args.session === "string" ? args.session : undefined,
    turn: typeof args.turn === "number" ? args.turn : undefined,
  };
}

/** The target of `ollie.review.undoHunkAt`: the line-number menu passes `{lineNumber, uri}`, other menus a URI. */
export function lineTargetArg(value: unknown): { lineNumber?: number; uri?: vscode.Uri } | undefined {
  return typeof value === "object" && value !== null && !(value instanceof vscode.Uri) ? (value as { lineNumber?: number; uri?: vscode.Uri }) : undefined;
}

/** Show the review's CodeLenses on the right side of its diffs. */
export function registerReviewLenses(review: ReviewController): vscode.Disposable {
  return vscode.languages.registerCodeLensProvider({ scheme: DIFF_SCHEME }, review);
}
