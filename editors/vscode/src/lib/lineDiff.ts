// A line diff for showing a step's edit in the chat: hunks with a little context, and +/- counts.

export type DiffLineKind = "context" | "added" | "removed";

export interface DiffLine {
  kind: DiffLineKind;
  text: string;
  /** 1-based line in the old text (context, removed). */
  oldLine?: number;
  /** 1-based line in the new text (context, added). */
  newLine?: number;
}

export interface DiffHunk {
  oldStart: number;
  newStart: number;
  lines: DiffLine[];
}

export interface LineDiff {
  hunks: DiffHunk[];
  added: number;
  removed: number;
}

// Above this many cells the middle of a change is shown as all removed, then all added (no LCS).
const MAX_CELLS = 4_000_000;

/** Split text into lines without their endings; a final newline adds no empty line. */
export function splitLines(text: string | null): string[] {
  if (!text) return [];
  const lines = text.split(/\r?\n/);
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

type Op = { kind: DiffLineKind; oldIndex: number; newIndex: number };

// The edit script of the middle part (after common prefix/suffix were cut) by LCS.
function middleOps(a: string[], b: string[], aOffset: number, bOffset: number): Op[] {
  const n = a.length;
  const m = b.length;
  if (n * m > MAX_CELLS) {
    return [
      ...a.map((_, i) => ({ kind: "removed" as const, oldIndex: aOffset + i, newIndex: -1 })),
      ...b.map((_, j) => ({ kind: "added" as const, oldIndex: -1, newIndex: bOffset + j })),
    ];
  }
  // lcs[i][j]: the LCS length of a[i..] and b[j..], in one flat array.
  const width = m + 1;
  const lcs = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i * width + j] = a[i] === b[j] ? lcs[(i + 1) * width + j + 1] + 1 : Math.max(lcs[(i + 1) * width + j], lcs[i * width + j + 1]);
    }
  }
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      ops.push({ kind: "context", oldIndex: aOffset + i++, newIndex: bOffset + j++ });
    } else if (i < n && (j >= m || lcs[(i + 1) * width + j] >= lcs[i * width + j + 1])) {
      // Removals before additions, as unified diffs show a replaced line.
      ops.push({ kind: "removed", oldIndex: aOffset + i++, newIndex: -1 });
    } else {
      ops.push({ kind: "added", oldIndex: -1, newIndex: bOffset + j++ });
    }
  }
  return ops;
}

function allOps(a: string[], b: string[]): Op[] {
  let prefix = 0;
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  let suffix = 0;
  while (suffix < a.length - prefix && suffix < b.length - prefix && a[a.length - 1 - suffix] === b[b.length - 1 - suffix]) suffix++;
  const ops: Op[] = [];
  for (let k = 0; k < prefix; k++) ops.push({ kind: "context", oldIndex: k, newIndex: k });
  ops.push(...middleOps(a.slice(prefix, a.length - suffix), b.slice(prefix, b.length - suffix), prefix, prefix));
  for (let k = suffix; k > 0; k--) ops.push({ kind: "context", oldIndex: a.length - k, newIndex: b.length - k });
  return ops;
}

/** The diff of `oldText` → `newText` as hunks with `context` unchanged lines around each change. */
export function lineDiff(oldText: string | null, newText: string | null, context = 3): LineDiff {
  const a = splitLines(oldText);
  const b = splitLines(newText);
  const ops = allOps(a, b);
  const added = ops.filter((o) => o.kind === "added").length;
  const removed = ops.filter((o) => o.kind === "removed").length;
  const changed = ops.map((o, index) => (o.kind === "context" ? -1 : index)).filter((index) => index >= 0);
  const hunks: DiffHunk[] = [];
  let current: { from: number; to: number } | undefined;
  const ranges: { from: number; to: number }[] = [];
  for (const index of changed) {
    const from = Math.max(0, index - context);
    const to = Math.min(ops.length - 1, index + context);
    if (current && from <= current.to + 1) current.to = Math.max(current.to, to);
    else ranges.push((current = { from, to }));
  }
  // Line numbers advance over every op, so count them up to each hunk's start.
  let oldLine = 1;
  let newLine = 1;
  let at = 0;
  for (const { from, to } of ranges) {
    for (; at < from; at++) {
      if (ops[at].kind !== "added") oldLine++;
      if (ops[at].kind !== "removed") newLine++;
    }
    const hunk: DiffHunk = { oldStart: oldLine, newStart: newLine, lines: [] };
    for (; at <= to; at++) {
      const op = ops[at];
      const line: DiffLine = { kind: op.kind, text: op.kind === "added" ? b[op.newIndex] : a[op.oldIndex] };
      if (op.kind !== "added") line.oldLine = oldLine++;
      if (op.kind !== "removed") line.newLine = newLine++;
      hunk.lines.push(line);
    }
    hunks.push(hunk);
  }
  return { hunks, added, removed };
}
