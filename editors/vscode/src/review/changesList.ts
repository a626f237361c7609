// The chat's "Changed files" list of a turn: added when the turn ends, its files undone from it.

import { ResponseError } from "vscode-languageclient/node";
import { unsavedInEditor } from "../editorActions";
import { ChangedFile, ChatItem } from "../lib/chatModel";
import { errorText } from "../lib/errors";
import { giveTurnDiffs, parseOwnDiffs } from "../lib/history";
import type { StepDiff } from "../lib/steps";
import { changedFilesOf, mergeChanges } from "../lib/permission";
import type { OllieEvent } from "../lib/protocol";
import { SessionHost } from "../sessionHost";
import { FileChange, parseChanges, staleReason } from "./hunks";

export type ChangesItem = Extract<ChatItem, { kind: "changes" }>;

/** The "Changed files" item `itemId` among `items`. */
export function changesItem(items: readonly ChatItem[], itemId: number): ChangesItem | undefined {
  return items.find((i): i is ChangesItem => i.kind === "changes" && i.id === itemId);
}

/** The diff of `path` in tool (or permission) item `itemId`'s step(s), for "Open diff". */
export function stepDiff(items: readonly ChatItem[], itemId: number, path: string): { oldText: string | null; newText: string | null; title: string } | undefined {
  const item = items.find((i) => i.id === itemId);
  if (!item) return undefined;
  if (item.kind === "permission") {
    const diff = [...(item.step.diff ? [item.step.diff] : []), ...(item.step.diffs ?? [])].find((d) => d.path === path);
    return diff ? { ...diff, title: item.step.title } : undefined;
  }
  if (item.kind !== "tool") return undefined;
  for (const step of [...(item.steps ?? []), ...(item.step ? [item.step] : [])]) {
    const diff = step.diffs?.find((d) => d.path === path);
    if (diff) return { oldText: diff.oldText, newText: diff.newText, title: step.title };
  }
  return undefined;
}

/** Adds each turn's "Changed files" list to its session's chat and undoes files from it. */
export class ChangesLists {
  constructor(private readonly host: SessionHost) {}

  /** At the end of a turn that changed files: its "Changed files" list, from what its end event says it changed (the
   * daemon diffed it once as it ended: asking `ollie/changes` would diff it again). */
  showEnded(event: OllieEvent): void {
    const changes = event.turnChanges;
    if (!changes || (changes.files.length === 0 && changes.unknown === undefined)) return;
    const { session } = event;
    const model = this.host.modelFor(session);
    if (model.items.some((i) => i.kind === "changes" && i.session === session && i.turn === changes.turn)) return;
    const files = markUnsaved(changes.files, this.host.cwdOf(session));
    const item: ChangesItem = { kind: "changes", id: 0, session, turn: changes.turn, files };
    if (changes.more) item.more = changes.more;
    if (changes.unknown !== undefined) item.unknown = changes.unknown;
    this.host.changedIn(session, model.add<ChangesItem>(item));
  }

  /** Read the files of the lists a history page drew from its turns' marks (`pending`), each on its own: the page is
   * shown meanwhile. Their texts give the turn's edit steps back their diffs (the history keeps none). */
  fill(items: readonly ChatItem[]): void {
    for (const item of items) {
      if (item.kind !== "changes" || item.pending === undefined) continue;
      void this.refresh(item).then(({ files, own }) => {
        for (const tool of giveTurnDiffs(items, item, files, this.host.cwdOf(item.session), own)) this.host.changedIn(item.session, tool);
        this.host.changedIn(item.session, item);
      });
    }
  }

  /** Undo a file (or every file: `path` undefined) of the turn listed in `item`. */
  async undo(item: ChangesItem, path?: string): Promise<void> {
    const paths = path ? [path] : item.files.filter((f) => !f.undone).map((f) => f.path);
    item.busy = true;
    item.message = undefined;
    this.host.changedIn(item.session, item);
    const refused: string[] = [];
    for (const file of paths) {
      try {
        await this.host.daemon.request("ollie/review/undo", { session: item.session, path: file, turn: item.turn });
      } catch (err) {
        // -32003 stale: the file changed since the turn; the user's edit is kept.
        refused.push(err instanceof ResponseError && err.code === -32003 ? `Undo refused: ${staleReason(err.message)}` : `Undo of ${file} failed: ${errorText(err)}`);
      }
    }
    await this.refresh(item, paths);
    item.busy = false;
    item.message = refused.length ? refused.join("\n") : undefined;
    this.host.changedIn(item.session, item);
  }

  // The list read again: the turn's first files (`ollie/changes` lists as many as its bound), or after an undo the
  // `undone` files alone, each asked by path (those past the bound are not in a listing: not undone for that).
  // Returns the files listed, with their texts, and each step's own diffs (none after an undo).
  private async refresh(item: ChangesItem, undone?: string[]): Promise<{ files: FileChange[]; own: Record<string, StepDiff[]> }> {
    const listed: { files: FileChange[]; own: Record<string, StepDiff[]> } = { files: [], own: {} };
    const ask = (path?: string) =>
      this.host.daemon.request<unknown>("ollie/changes", { session: item.session, turn: item.turn, ...(path === undefined ? {} : { path }) }).then((raw) => {
        if (path === undefined) Object.assign(listed, { files: parseChanges(raw).files, own: parseOwnDiffs(raw) });
        return changedFilesOf(raw);
      });
    try {
      if (undone) {
        const now = (await Promise.all(undone.map((path) => ask(path)))).flatMap((r) => r.files);
        const merged = mergeChanges(item.files.filter((f) => undone.includes(f.path)), markUnsaved(now, this.host.cwdOf(item.session)));
        item.files = item.files.map((f) => merged.find((m) => m.path === f.path) ?? f);
      } else {
        const { files, more } = await ask();
        item.files = mergeChanges(item.files, markUnsaved(files, this.host.cwdOf(item.session)));
        item.more = more || undefined;
      }
    } catch (err) {
      this.host.log.warn(`ollie/changes ${item.turn}: ${errorText(err)}`);
      // A CWD without checkpoints (-32602): the list says its files cannot be read.
      if (item.pending !== undefined) item.message = `This turn's files could not be read: ${errorText(err)}`;
    }
    item.pending = undefined;
    return listed;
  }
}

// Which of the turn's buffer edits the editor still holds unsaved (a web editor may have auto-saved them).
function markUnsaved(files: ChangedFile[], cwd: string | undefined): ChangedFile[] {
  for (const file of files) {
    if (!file.inEditor) continue;
    file.unsaved = unsavedInEditor(file.path, cwd);
  }
  return files;
}
