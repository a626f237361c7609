// A step's edit as an inline diff: a header (file, +/- counts, "Open diff") and the changed lines with context.

import { lineDiff } from "../lib/lineDiff";
import { type StepDiff, shownPath } from "../lib/steps";
import { button, el, fileLink, icon } from "./dom";

// Longer diffs are cut here; "Open diff" shows the whole file.
const MAX_LINES = 120;

/** The header and lines of one file's change; `item` is the chat item it belongs to (for "Open diff"). */
export function renderDiff(diff: StepDiff, item: number): HTMLElement {
  const box = el("div", "diff");
  box.dataset.path = diff.path;
  const { hunks, added, removed } = lineDiff(diff.oldText, diff.newText);
  const head = el("div", "diff-head");
  const what = diff.oldText === null && diff.newText === null ? "binary" : diff.oldText === null ? "added" : diff.newText === null ? "deleted" : "";
  head.append(icon("diff"), fileLink(shownPath(diff.path), diff.path));
  if (what) head.append(el("span", "badge", what));
  const stat = el("span", "stat");
  stat.append(el("span", "added", `+${added}`), el("span", "removed", `−${removed}`));
  stat.setAttribute("aria-label", `${added} lines added, ${removed} removed`);
  head.append(stat, button("Open diff", "openDiff", { item, path: diff.path }, "go-to-file", "link-button"));
  box.append(head);
  if (what === "binary") return box;
  const table = el("table", "diff-lines");
  table.setAttribute("aria-label", `Changes to ${diff.path}`);
  let shown = 0;
  let total = 0;
  for (const hunk of hunks) total += hunk.lines.length;
  for (const [index, hunk] of hunks.entries()) {
    if (shown >= MAX_LINES) break;
    if (index > 0 || hunk.oldStart > 1) {
      const sep = el("tr", "hunk");
      const cell = el("td", undefined, `@@ line ${hunk.newStart} @@`);
      cell.colSpan = 3;
      sep.append(cell);
      table.append(sep);
    }
    for (const line of hunk.lines) {
      if (shown++ >= MAX_LINES) break;
      const row = el("tr", line.kind);
      const number = el("td", "ln", String(line.newLine ?? line.oldLine ?? ""));
      const sign = el("td", "sign", line.kind === "added" ? "+" : line.kind === "removed" ? "−" : " ");
      row.append(number, sign, el("td", "code", line.text));
      table.append(row);
    }
  }
  box.append(table);
  if (total > MAX_LINES) box.append(el("div", "diff-more", `… ${total - MAX_LINES} more lines: Open diff shows them all`));
  return box;
}
