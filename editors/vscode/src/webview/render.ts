// Chat items → DOM: messages, steps (title, status, file links, diffs, input/output), questions, changed files.

import { type ChatItem, type ToolItem, networkTarget } from "../lib/chatModel";
import { looksLikePath, splitPathLine } from "../lib/links";
import { STOP_LABELS } from "../lib/history";
import { imageLabels } from "../lib/promptContext";
import { askingStep, questionA11y } from "../lib/question";
import { type ShownStatus, StepLocation, ToolStep, CLOSED_LINE, bufferOnlyLine, connectionLine, failureLine, outcomeLine, headLocations, isSessionClosed, kindIcon, legacyStatus, legacyTitle, locationLabel, rejectedLine, shownPath, unsavedLine, statusIcon, stepDiffs, stepDiffsMore, diffsMoreLine } from "../lib/steps";
import { type ToolImage } from "../lib/protocol";
import { renderDiff } from "./diffView";
import { button, el, elWithCode, fileLink, icon } from "./dom";
import { highlightCode, renderMarkdown } from "./markdown";

// Text in columns: more than one line, and a word with a run of spaces before the next.
const isColumns = (text: string) => text.includes("\n") && /\S {2,}\S/.test(text);
// Where a line's last column starts: after the first run of two or more spaces that follows a word, else after its
// indent (a continuation line's).
function columnStart(line: string): number {
  const gap = /\S( {2,})(?=\S)/.exec(line);
  return gap ? gap.index + 1 + gap[1].length : (/^ */.exec(line)?.[0].length ?? 0);
}

/** Text in columns, a row a line, in the editor's font: beside its first column where the chat is wide enough, its
 * last column lines up; in a narrow chat it goes on the next line, indented (chat.css). */
function columnRows(text: string): HTMLElement {
  const box = el("div", "notice-text columns");
  box.append(...text.split("\n").map((line) => {
    const row = el("div", "column-row");
    const start = columnStart(line);
    const head = el("span", "column-head", line.slice(0, start).trimEnd());
    head.style.flexBasis = `${start}ch`;
    row.append(head, el("span", "column-last", line.slice(start)));
    return row;
  }));
  return box;
}

const OUTCOME_LABELS: Record<string, string> = {
  allow_once: "Allowed once",
  allow_always: "Allowed for the rest of the session",
  reject: "Rejected",
  reject_with_feedback: "Rejected with feedback",
  cancelled: "No longer asked (its step or turn ended first)",
};

/** A network question's answers, where they differ. */
const NETWORK_OUTCOME_LABELS: Record<string, string> = {
  allow_session: "Allowed for this session",
  allow_always: "Allowed in this and later sessions",
  reject: "Denied",
  reject_with_feedback: "Denied with feedback",
};

/** A workspace MCP server's answers, where they differ: "always" is kept for the workspace. */
const MCP_OUTCOME_LABELS: Record<string, string> = {
  allow_always: "Allowed for this workspace from now on",
};

/** Paths seen in answers: true when the file exists in the workspace (asked of the extension host). */
export const knownPaths = new Map<string, boolean>();
/** Paths waiting to be asked about. */
export const pendingPaths = new Set<string>();

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** Create the element for an item the first time it is seen. */
export function create(item: ChatItem): HTMLElement {
  switch (item.kind) {
    case "reasoning": {
      const details = el("details", "item reasoning");
      details.append(el("summary", undefined, "Reasoning"), el("div", "body markdown"));
      return details;
    }
    case "tool": {
      const node = el("div", "item tool");
      node.setAttribute("role", "group");
      const io = el("details", "io");
      const args = el("pre", "tool-args");
      args.append(el("code", "hljs"));
      const result = el("pre", "tool-result");
      result.append(el("code"));
      io.append(el("summary", undefined, "Input and output"), el("div", "io-label", "Input"), args, el("div", "io-label", "Output"), result);
      node.append(el("div", "step-head"), el("div", "step-network"), el("div", "substeps"), el("div", "diffs"), el("div", "step-images"), io);
      return node;
    }
    case "permission":
    case "changes": {
      const node = el("div", `item ${item.kind}`);
      node.setAttribute("role", "group");
      return node;
    }
    default:
      return el("div", `item ${item.kind}`);
  }
}

function locationLinks(locations: readonly StepLocation[]): HTMLElement {
  const box = el("span", "step-locations");
  for (const location of locations.slice(0, 5)) box.append(fileLink(locationLabel(location), location.path, location.line));
  if (locations.length > 5) box.append(el("span", "more", `+${locations.length - 5}`));
  return box;
}

function stepRow(step: ToolStep, className: string, locations = step.locations, shown: ShownStatus = step.status): HTMLElement {
  const row = el("div", className);
  row.dataset.status = shown;
  row.dataset.stepId = step.id;
  const status = statusIcon(shown);
  const statusNode = icon(status.icon, status.label);
  statusNode.classList.add("status-icon");
  if (shown === "in_progress") statusNode.classList.add("codicon-modifier-spin");
  row.append(statusNode, icon(kindIcon(step.kind)), elWithCode("span", "step-title", step.title));
  if (locations.length) row.append(locationLinks(locations));
  return row;
}

function updateTool(node: HTMLElement, item: ToolItem): void {
  const step = item.step ?? {
    id: String(item.id),
    kind: "other",
    title: legacyTitle(item.name, item.args),
    status: legacyStatus(item.result, item.isError),
    locations: [],
  };
  // One the user rejected reads as her No, not as a failure (red, in the words the model gets); an edit the editor kept
  // in its buffer as done with a warning.
  const inBuffer = item.isError && !item.rejected ? bufferOnlyLine(item.result ?? "") : "";
  // One the window's reload cut short (while it ran or asked) is nobody's failure: said so, not red.
  const closed = isSessionClosed(item.result ?? "");
  const shown: ShownStatus = item.rejected ? "rejected" : inBuffer ? "in_buffer" : closed ? "closed" : step.status;
  node.dataset.toolName = item.name;
  node.hidden = item.rejectedInCard === true;
  node.dataset.state = item.result === undefined ? "running" : item.rejected ? "rejected" : inBuffer ? "warning" : closed ? "closed" : item.isError ? "error" : "done";
  node.dataset.status = shown;
  node.dataset.kind = step.kind;
  node.setAttribute("aria-label", `${step.title}: ${statusIcon(shown).label}`);
  (node.querySelector(".step-head") as HTMLElement).replaceChildren(stepRow(step, "step-row", headLocations(step, item.steps), shown));
  // Which hosts the step reached (or was denied), under its title: not only inside "Input and output".
  (node.querySelector(".step-network") as HTMLElement).replaceChildren(...(step.network ?? []).map((c) => {
    const row = el("div", `connection ${c.verdict === "allowed" ? "allowed" : "denied"}`);
    row.append(icon("globe"), el("span", undefined, connectionLine(c)));
    return row;
  }));
  // Each image under the step of the batch that read it; one naming none (an MCP tool's, a session saved before steps
  // were kept) under the call, as before.
  const substeps = node.querySelector(".substeps") as HTMLElement;
  const steps = item.steps ?? [];
  const images = item.images ?? [];
  substeps.replaceChildren(...steps.flatMap((s, k) => {
    const box = substeps.querySelector<HTMLElement>(`:scope > .step-images[data-step="${k}"]`) ?? el("div", "step-images");
    box.dataset.step = String(k);
    stepImages(box, images.filter((i) => i.step === k));
    return [stepRow(s, "step-row substep"), box];
  }));
  const diffs = node.querySelector(".diffs") as HTMLElement;
  const changed = stepDiffs(item.step, item.steps);
  // The files past the daemon's bound (its first 100 files, 4 MiB) are counted, not sent: a line says how many.
  const more = stepDiffsMore(item.step, item.steps);
  // A diff is drawn once per file and kept (redrawing would reset what the user scrolled or selected).
  const key = JSON.stringify([more, changed.map((d) => [d.path, d.oldText?.length, d.newText?.length])]);
  if (diffs.dataset.key !== key) {
    diffs.dataset.key = key;
    diffs.replaceChildren(...changed.map((diff) => renderDiff(diff, item.id)), ...(more ? [el("div", "step-diffs-more", diffsMoreLine(more))] : []));
  }
  stepImages(node.querySelector(":scope > .step-images") as HTMLElement,
    images.filter((i) => i.step === undefined || i.step >= steps.length));
  (node.querySelector(".tool-args code") as HTMLElement).innerHTML = highlightCode(prettyJson(item.args), "json");
  (node.querySelector(".tool-result code") as HTMLElement).textContent = item.result ?? "";
  // A failure says why in one line under the title, a command that ran what it ended with (the tests' summary: it
  // showed only a check mark, the output a click away); the whole output stays one click away.
  const why = item.isError && !item.rejected && !inBuffer && !closed ? failureLine(item.result ?? "") : "";
  const ended = !item.isError && step.kind === "execute" && step.status === "completed" ? outcomeLine(item.result ?? "") : "";
  headLine(node, "step-error", why);
  headLine(node, "step-outcome", ended);
  headLine(node, "step-rejected", item.rejected ? rejectedLine(item.result ?? "") : closed ? CLOSED_LINE : "");
  headLine(node, "step-warning", inBuffer);
}

/** The images a step's tool returned (what the model was shown), drawn once; one the daemon sent without its data
 * (past the 1 MiB it sends a step, or resumed after the model read it) is named with its size. */
function stepImages(box: HTMLElement, images: readonly ToolImage[]): void {
  const labels = imageLabels(images);
  const key = labels.join("|") + images.map((i) => (i.data ? "+" : "-")).join("");
  if (box.dataset.key === key) return;
  box.dataset.key = key;
  box.replaceChildren(...images.map((image, k) => {
    if (!image.data) return el("div", "step-image-label", `${labels[k]} (not drawn: ${image.why ?? "a step shows 1 MiB of images"})`);
    const img = el("img", "step-image");
    img.src = `data:${image.mime};base64,${image.data}`;
    img.alt = img.title = labels[k];
    return img;
  }));
}

/** The one line of class `className` under a step's title, made when there is `text` to say. */
function headLine(node: HTMLElement, className: string, text: string): void {
  let line = node.querySelector<HTMLElement>(`.${className}`);
  if (text && !line) {
    line = el("div", className);
    (node.querySelector(".step-head") as HTMLElement).after(line);
  }
  if (line) line.textContent = text;
}

function updatePermission(node: HTMLElement, item: Extract<ChatItem, { kind: "permission" }>): void {
  const key = item.outcome ?? "open";
  if (node.dataset.rendered === key) return;
  node.dataset.rendered = key;
  node.dataset.outcome = item.outcome ?? "";
  const { role, label } = questionA11y(item);
  node.setAttribute("role", role);
  node.setAttribute("aria-label", label);
  const head = el("div", "permission-head");
  const net = item.step.network;
  if (net) {
    // A step's connection out (the egress proxy holds it meanwhile): the host first, the step that asked below.
    head.append(icon("globe"), el("span", undefined, item.outcome ? "Network access to " : "Allow network access to "),
      el("strong", "step-title", networkTarget(net) + (item.outcome ? "" : "?")));
    node.replaceChildren(head, el("div", "permission-note", `Asked by the step: ${askingStep(item.step.title)}`));
  } else {
    head.append(icon("shield"), el("span", undefined, item.outcome ? "Ollie asked to " : "Ollie asks to "), elWithCode("strong", "step-title", item.step.title));
    node.replaceChildren(head);
  }
  if (item.step.locations.length) node.append(locationLinks(item.step.locations));
  // Once allowed, the step below shows the change as made: the question's copy would show the same diff again
  // (twice, three times for a batch asked step by step).
  if (item.step.diff && !item.outcome?.startsWith("allow")) node.append(renderDiff(item.step.diff, item.id));
  // A batch's edits, each a row to open: twelve diffs drawn open would push its buttons far down the chat.
  if (item.step.diffs && !item.outcome?.startsWith("allow")) {
    node.append(...item.step.diffs.map((diff) => {
      const row = el("details", "permission-diff");
      row.append(el("summary", undefined, shownPath(diff.path)), renderDiff(diff, item.id));
      return row;
    }));
    const more = item.step.diffsMore;
    if (more) node.append(el("div", "permission-note", `… and ${more} more edit${more === 1 ? "" : "s"} not previewed (their calls are listed below)`));
  }
  // Exactly what runs outside the sandbox: this one question covers leaving it.
  for (const what of item.step.outside ?? []) {
    const code = el("pre", "permission-outside");
    code.append(el("code", undefined, what));
    node.append(el("div", "permission-note", "Runs outside the sandbox:"), code);
  }
  // A program's code, whole (the title shows its first line alone; once allowed, the step shows it as its input).
  if (item.step.code && !item.outcome?.startsWith("allow")) {
    node.append(el("pre", "permission-code", item.step.code));
  }
  // A workspace's MCP server (step id `mcp/<name>`): its "always" says how long itself (the workspace, from now on).
  const lasting = item.step.id.startsWith("mcp/");
  if (item.outcome) {
    const special = net ? NETWORK_OUTCOME_LABELS : lasting ? MCP_OUTCOME_LABELS : {};
    const label = special[item.outcome] || OUTCOME_LABELS[item.outcome];
    const answer = el("div", `permission-answer ${item.outcome}`, label ?? item.outcome);
    if (item.feedback) answer.append(el("q", "feedback", item.feedback));
    node.append(answer);
    return;
  }
  if (item.unsaved?.length) {
    node.append(el("div", "permission-note unsaved", unsavedLine(item.unsaved)));
  }
  if (item.always) node.append(elWithCode("div", "permission-note", net ? `"Always allow" covers ${item.always}.`
    : `"Allow always" covers ${item.always}${lasting ? "" : " in this session"}.`));
  const offered = (outcome: string): boolean => !item.offered || item.offered.includes(outcome);
  const buttons = el("div", "permission-buttons");
  buttons.append(
    button("Allow once", "permission", { item: item.id, outcome: "allow_once" }, "check", "primary"),
    // A connection's host:port for the rest of this session: saved nowhere, a resumed session asks again.
    ...(net ? [button("Allow for this session", "permission", { item: item.id, outcome: "allow_session" }, "history", "secondary")] : []),
    // Leaving the sandbox is asked each time: no "always" for a step that does.
    ...(item.step.outside?.length || !offered("allow_always") ? [] : [button(net ? "Always allow" : "Allow always", "permission", { item: item.id, outcome: "allow_always" }, "check-all", "secondary")]),
    button(net ? "Deny" : "Reject", "permission", { item: item.id, outcome: "reject" }, "close", "secondary"),
  );
  // The daemon offers feedback where it reaches the model (a network question's on the step's connection line; not an
  // MCP server's, which reaches only its start).
  if (lasting || !offered("reject_with_feedback")) {
    node.append(buttons);
    return;
  }
  buttons.append(button(net ? "Deny with feedback…" : "Reject with feedback…", "feedback", { item: item.id }, "comment", "secondary"));
  const feedback = el("div", "permission-feedback");
  feedback.hidden = true;
  const text = el("textarea", "feedback-input");
  text.rows = 2;
  text.placeholder = "What should Ollie do instead?";
  text.setAttribute("aria-label", "Feedback for the model (Enter sends)");
  feedback.append(text, button("Send feedback", "permission", { item: item.id, outcome: "reject_with_feedback" }, "send", "primary"));
  node.append(buttons, feedback);
}

function updateChanges(node: HTMLElement, item: Extract<ChatItem, { kind: "changes" }>): void {
  node.setAttribute("aria-label", `Changed files of turn ${item.turn}`);
  node.classList.toggle("busy", item.busy === true);
  // Its diff failed: it may have changed files that no review, undo or rewind reaches; said, never "no changes".
  node.classList.toggle("unknown", item.unknown !== undefined);
  if (item.unknown !== undefined) return node.replaceChildren(`Changed files: not known${item.unknown ? ` (${item.unknown})` : ""}`);
  const head = el("div", "changes-head");
  const open = item.files.filter((f) => !f.undone);
  // From the history's mark, its files still being read: their count, and no list yet.
  const more = item.more ?? 0;
  const left = item.pending ? `${item.pending}` : open.length + more ? `${open.length + more}` : "";
  // Resumed, the files undone are not listed: said, as the live list's struck-through rows said it.
  const count = !left ? "all undone" : item.undone ? `${left}, some undone since` : left;
  head.append(icon("diff"), el("span", "changes-title", `Changed files (${count})`), el("span", "spacer"));
  // Not with files left unlisted: it would undo only those shown (an undo of one lists them all).
  if (open.length > 1 && !more) head.append(button("Undo all", "undo", { item: item.id }, "discard", "link-button"));
  const list = el("ul", "changes-list");
  if (item.pending !== undefined) list.append(el("li", "loading", "Listing the files…"));
  for (const file of item.files) {
    const row = el("li", file.undone ? "undone" : undefined);
    const link = el("a", "file-link", shownPath(file.path));
    link.href = "#";
    link.dataset.action = "openChange";
    link.dataset.item = String(item.id);
    link.dataset.path = file.path;
    link.title = `Review the changes to ${shownPath(file.path)}`;
    const stat = el("span", "stat");
    stat.append(el("span", "added", `+${file.added}`), el("span", "removed", `−${file.removed}`));
    row.append(icon(file.status === "added" ? "diff-added" : file.status === "deleted" ? "diff-removed" : "diff-modified"), link, stat);
    // An edit of an open document went to its buffer, which the daemon has the editor save (unsaved: it could not).
    if (file.inEditor && !file.undone) {
      const badge = el("span", `badge in-editor${file.unsaved ? " unsaved" : ""}`, file.unsaved ? "unsaved" : "in editor");
      badge.title = file.unsaved ? "Edited in the open editor, not saved yet" : "Edited in the open editor (saved since)";
      row.append(badge);
    }
    if (file.undone) row.append(el("span", "badge", "undone"));
    else row.append(button("Undo", "undo", { item: item.id, path: file.path }, "discard", "link-button"));
    list.append(row);
  }
  if (more) list.append(el("li", "more", `… and ${more} more file${more === 1 ? "" : "s"}, not listed here`));
  node.replaceChildren(head, list);
  if (item.message) {
    const message = el("div", "changes-message", item.message);
    message.setAttribute("role", "alert");
    node.append(message);
  }
}

/** Mark inline code that reads like a path: a link when the file exists, else asked about once. */
export function decoratePaths(root: HTMLElement): void {
  for (const code of Array.from(root.querySelectorAll<HTMLElement>(":not(pre) > code"))) {
    const text = code.textContent ?? "";
    if (code.parentElement?.classList.contains("file-link") || !looksLikePath(text)) continue;
    const known = knownPaths.get(text);
    if (known === undefined) {
      pendingPaths.add(text);
      continue;
    }
    if (!known) continue;
    const { path, line } = splitPathLine(text);
    const link = fileLink("", path, line);
    code.replaceWith(link);
    link.append(code);
  }
}

/** Bring an item's element up to date with the item. */
export function update(node: HTMLElement, item: ChatItem): void {
  node.dataset.kind = item.kind;
  switch (item.kind) {
    case "user": {
      node.replaceChildren();
      if (item.note || item.contextLabels) {
        const about = item.contextLabels ? `about ${item.contextLabels.join(", ")}` : "";
        const meta = el("div", "meta", [item.note, about].filter(Boolean).join(" · "));
        node.append(meta);
      }
      node.append(el("div", "text", item.text));
      // A prompt whose turn has a number (ended, or from the history): a new session goes on from the end of it.
      if (item.turn !== undefined) {
        const fork = button("Fork from here", "fork", { turn: item.turn }, "repo-forked", "link-button fork");
        fork.title = `Fork the chat: a new session with the conversation up to the end of turn ${item.turn} (files stay as they are)`;
        const actions = el("div", "prompt-actions");
        actions.append(fork);
        node.append(actions);
      }
      break;
    }
    case "assistant":
      node.innerHTML = renderMarkdown(item.text);
      decoratePaths(node);
      break;
    case "reasoning":
      (node.querySelector(".body") as HTMLElement).innerHTML = renderMarkdown(item.text);
      break;
    case "tool":
      updateTool(node, item);
      break;
    case "notice":
      node.dataset.level = item.level;
      node.className = `item notice ${item.level}${item.failed ? " failed" : ""}`;
      node.replaceChildren();
      if (item.level === "error") {
        node.setAttribute("role", "alert");
        node.append(icon("error"));
      }
      if (item.failed) node.append(icon("error", "failed"));  // a `!cmd` that exited non-zero: as a failed step
      // A table the daemon lines up with spaces (/help's commands, an unknown command's list) keeps its columns (a
      // `!cmd`'s output is shown as it came).
      if (item.level !== "exec" && isColumns(item.text)) node.append(columnRows(item.text));
      else node.append(el("span", "notice-text", item.text));
      break;
    case "turnEnd":
      node.dataset.stop = item.stop;
      node.textContent = STOP_LABELS[item.stop] ?? "";
      node.hidden = !(item.stop in STOP_LABELS);
      break;
    case "permission":
      updatePermission(node, item);
      break;
    case "changes":
      updateChanges(node, item);
      break;
  }
}
