// The chat view's script (runs inside the webview; bundled with esbuild).

import type { Onboarding } from "../lib/backend";
import type { ChatItem } from "../lib/chatModel";
import { afterUpdate, followingAfterScroll, isAtBottom, keptScrollTop, needsEarlierToFill, redrawnScrollTop, wantsEarlier } from "../lib/scroll";
import { type FromWebview, type Header, type PermissionOutcome, type ToWebview, modelLabel } from "../lib/webviewMessages";
import { Composer, type SavedInput } from "./composerView";
import { button, el, icon } from "./dom";
import { create, decoratePaths, knownPaths, pendingPaths, update } from "./render";
import { linkedFile } from "../lib/links";
import { shownPath } from "../lib/steps";
import { planCounts } from "../lib/protocol";
import { keyboardAnswerAllowed, questionToFocus } from "../lib/question";

declare function acquireVsCodeApi(): { postMessage(message: FromWebview): void; getState(): unknown; setState(state: unknown): void };

const vscode = acquireVsCodeApi();
const log = document.getElementById("log") as HTMLElement;
const jump = document.getElementById("jump") as HTMLButtonElement;
const empty = document.getElementById("empty") as HTMLElement;
const loadingNote = document.getElementById("loading") as HTMLElement;
const onboardingBox = document.getElementById("onboarding") as HTMLElement;
const title = document.getElementById("title") as HTMLElement;
const approval = document.getElementById("approval") as HTMLSelectElement;
const modelButton = document.getElementById("model") as HTMLButtonElement;
const planBox = document.getElementById("plan") as HTMLDetailsElement;
const planSummary = document.getElementById("planSummary") as HTMLElement;
const planSteps = document.getElementById("planSteps") as HTMLOListElement;

const post = (message: FromWebview) => vscode.postMessage(message);
const rendered = new Map<number, HTMLElement>();
// Follow the stream while the user is at the bottom; a prompt they just sent always brings them there.
let following = true;
let userSent = false;
// The session the view shows: a reset of it again is a redraw, which keeps the reader's place.
let shownSession: string | undefined;
// A resumed session shows its last page; this button (or scrolling to the top) loads the one before.
const earlierButton = button("Load earlier messages", "loadEarlier", {}, "fold-up", "link-button earlier");
let earlier = 0;
let askedEarlier = false;
// A session the view shows again (after a window reload) is on its way: no empty new chat until it is here. Until the
// first reset says whether one is, nothing claims a new chat either.
let loading = true;

// The empty page (hidden until the first reset says which) is for a new chat only.
function showPlaceholder(): void {
  empty.hidden = loading || rendered.size > 0;
  loadingNote.hidden = !loading || rendered.size > 0;
}

function showEarlier(count: number): void {
  earlier = count;
  askedEarlier = false;
  earlierButton.hidden = count === 0;
  (earlierButton.lastChild as Text).textContent = ` Load earlier messages (${count} more)`;
}

function loadEarlier(): void {
  if (earlier === 0 || askedEarlier) return;
  askedEarlier = true;
  post({ type: "loadEarlier" });
}

// A page too short to scroll could never be scrolled up from: the one before it comes at once.
function fillView(): void {
  if (needsEarlierToFill(log, earlier)) loadEarlier();
}

// The prompt being typed, and those sent that the host has not said it took, are kept in the view's state, which VS
// Code keeps when the view is moved, the window reloaded or its extension host restarted (the page is made anew).
const savedInput = {
  get: (): SavedInput => {
    const state = vscode.getState() as { draft?: unknown; sent?: unknown } | undefined;
    const sent = Array.isArray(state?.sent) ? state.sent.filter((text): text is string => typeof text === "string") : [];
    return { draft: typeof state?.draft === "string" ? state.draft : "", sent };
  },
  set: (patch: Partial<SavedInput>): void => vscode.setState({ ...savedInput.get(), ...patch }),
};
const composer = new Composer(
  post,
  () => {
    userSent = true;
    scrollToBottom();
  },
  savedInput,
);

function scrollToBottom(): void {
  log.scrollTop = log.scrollHeight;
  following = true;
  jump.hidden = true;
}

log.addEventListener("scroll", () => {
  following = followingAfterScroll(isAtBottom(log));
  if (following) jump.hidden = true;
  if (wantsEarlier(log, earlier) && log.scrollHeight > log.clientHeight) loadEarlier();
});

// Older items go in above the others; the view keeps showing what the user was reading.
function prepend(items: ChatItem[]): void {
  const before = { scrollTop: log.scrollTop, scrollHeight: log.scrollHeight };
  const nodes = items.map((item) => {
    const node = create(item);
    node.dataset.id = String(item.id);
    rendered.set(item.id, node);
    update(node, item);
    return node;
  });
  earlierButton.after(...nodes);
  askPaths();
  log.scrollTop = keptScrollTop(before, log.scrollHeight);
}
window.addEventListener("resize", fillView);
// The plan or the prompt growing shortens the chat from below: one that followed the stream still shows its end (the
// last reply went under them, and the next update, no longer at the bottom, stopped following).
let seenHeight = 0;
function keepEndOnResize(): void {
  if (log.clientHeight !== seenHeight && following) log.scrollTop = log.scrollHeight;
  seenHeight = log.clientHeight;
}
new ResizeObserver(keepEndOnResize).observe(log);
jump.addEventListener("click", () => {
  scrollToBottom();
  composer.focus();
});

function askPaths(): void {
  if (pendingPaths.size === 0) return;
  const paths = [...pendingPaths].filter((p) => !knownPaths.has(p)).slice(0, 200);
  for (const path of paths) knownPaths.set(path, false);
  pendingPaths.clear();
  if (paths.length) post({ type: "checkPaths", paths });
}

function upsert(items: ChatItem[]): void {
  const sentNow = userSent && items.some((item) => item.kind === "user");
  // A scroll the user just made may not have fired its event yet: the position before this update decides. A
  // resize not yet observed (the plan grew above) is no scroll of hers: a chat that followed still does.
  keepEndOnResize();
  if (log.clientHeight > 0 && !isAtBottom(log)) following = false;
  let focusLost = false;
  for (const item of items) {
    let node = rendered.get(item.id);
    if (!node) {
      node = create(item);
      node.dataset.id = String(item.id);
      rendered.set(item.id, node);
      log.append(node);
    }
    // A question answered elsewhere (or dropped when its turn ended) takes its buttons, and the focus, with it.
    if (item.kind === "permission" && item.outcome && node.contains(document.activeElement)) focusLost = true;
    update(node, item);
  }
  showPlaceholder();
  askPaths();
  const decision = afterUpdate({ following, userSent: sentNow });
  if (sentNow) userSent = false;
  if (decision.scroll) scrollToBottom();
  else if (items.length) jump.hidden = !decision.showJump;
  if (!focusQuestion(items) && focusLost) composer.focus();
}

// Questions that have had the focus once: a later update of one does not take it again.
const focusedQuestions = new Set<number>();
// When the focus came to a question, or last key typed at its buttons: keys meant for the prompt must not answer it.
let questionKeyAt = 0;
// When a key was last typed in the prompt: a Space at a question's button right after it is typing too.
let promptKeyAt = 0;

/** Move the keyboard focus to a new question's first button (Allow once); its role announces it. */
function focusQuestion(items: ChatItem[]): boolean {
  const id = questionToFocus(items, focusedQuestions);
  if (id === undefined) return false;
  focusedQuestions.add(id);
  const first = rendered.get(id)?.querySelector<HTMLElement>('.permission-buttons [data-action="permission"]');
  if (!first) return false;
  first.focus();
  questionKeyAt = Date.now();
  first.scrollIntoView({ block: "nearest" });
  return true;
}

function showHeader(header: Header): void {
  // A session on its way has a title still to come: not "New chat" meanwhile.
  // A shared session's title is its owner's: her U+202E or line break is drawn escaped, as the history shows it.
  title.textContent = shownPath(header.title) || (loading ? "" : "New chat");
  title.title = shownPath(header.title);
  if (header.approval) approval.value = header.approval;
  approval.dataset.mode = header.approval || "ask";
  modelButton.textContent = modelLabel(header);
  modelButton.hidden = modelButton.textContent === "";
  showPlan(header.plan);
}

const PLAN_ICONS = { completed: "pass-filled", in_progress: "arrow-right", pending: "circle-large-outline" };

// A plan longer than the list's height shows the step in progress (it showed its first steps, all done), unfolded too,
// amid the steps next to it: at the list's foot, every step left was below the fold. The list alone scrolls
// (scrollIntoView's "center" scrolled the page too, the header partly out of sight).
const showStepNow = (): void => {
  const row = planSteps.querySelector<HTMLElement>(".in_progress");
  if (row) planSteps.scrollTop += row.getBoundingClientRect().top - planSteps.getBoundingClientRect().top - (planSteps.clientHeight - row.offsetHeight) / 2;
};
planBox.addEventListener("toggle", showStepNow);

let shownPlan = "[]";
let planDone = false;
/** The agent's task plan above the prompt, as a checklist (folded to its summary: how far it is, the step now). */
function showPlan(plan: Header["plan"]): void {
  // Drawn when it changed: a list she scrolled stays where she put it as the header's other fields change.
  if (JSON.stringify(plan) === shownPlan) return;
  shownPlan = JSON.stringify(plan);
  planBox.hidden = plan.length === 0;
  const now = plan.find((step) => step.status === "in_progress");
  const [done, all] = planCounts(plan);
  // All done, it folds to its one line (it kept the room above the prompt); a step added opens it again.
  const finished = plan.length > 0 && done === all;
  if (finished !== planDone) planBox.open = !finished;
  planDone = finished;
  // The steps are the model's text: drawn as text, a U+202E or line break escaped.
  planSummary.textContent = finished ? `Plan done · ${all} step${all === 1 ? "" : "s"}` : `Plan ${done}/${all}${now ? ` · ${shownPath(now.content)}` : ""}`;
  planSteps.replaceChildren(...plan.map((step) => {
    const row = el("li", `plan-step ${step.status}`);
    row.append(icon(PLAN_ICONS[step.status], step.status.replace("_", " ")), document.createTextNode(` ${shownPath(step.content)}`));
    return row;
  }));
  showStepNow();
}

const sendApproval = (): void => post({ type: "setApproval", mode: approval.value as Header["approval"] & string } as FromWebview);
approval.addEventListener("change", sendApproval);
modelButton.addEventListener("click", () => vscode.postMessage({ type: "switchModel" }));
// The picker is in the view's HTML before this script runs: a mode picked in between met no listener (it was lost).
if (approval.selectedIndex > 0) sendApproval();

function showOnboarding(onboarding: Onboarding | null): void {
  onboardingBox.hidden = onboarding === null;
  document.body.classList.toggle("onboarding", onboarding !== null);
  if (!onboarding) {
    onboardingBox.replaceChildren();
    return;
  }
  const heading = el("h2", undefined);
  heading.id = "onboarding-title";
  heading.append(icon("warning"), document.createTextNode(` ${onboarding.title}`));
  const steps = el("ol", "onboarding-steps");
  for (const step of onboarding.steps) {
    const row = el("li");
    // `code` spans in the steps are commands to copy: shown as code.
    for (const [index, part] of step.split("`").entries()) row.append(index % 2 ? el("code", undefined, part) : document.createTextNode(part));
    steps.append(row);
  }
  const actions = el("div", "onboarding-actions");
  actions.append(button("Check again", "checkBackend", {}, "refresh", "primary"));
  if (onboarding.offerKey) actions.append(button("Set API key", "setApiKey", {}, "key", "secondary"));
  if (onboarding.offerSettings) actions.append(button("Open ollie.serverEnv", "openServerEnv", {}, "settings-gear", "secondary"));
  onboardingBox.replaceChildren(heading);
  if (onboarding.error) onboardingBox.append(el("p", "onboarding-error", onboarding.error));
  onboardingBox.append(steps, actions);
}

// Every button and link in the view is handled here, by its data-action.
document.addEventListener("click", (event) => {
  const target = (event.target as HTMLElement).closest<HTMLElement>("[data-action]");
  if (!target) {
    const link = (event.target as HTMLElement).closest("a");
    const href = link?.getAttribute("href") ?? "";
    // Links the model wrote to something that is not a web page would navigate the view away; VS Code's webview host
    // (listening on the window, after us) would open them too: in VS Code for the Web, a browser tab on a dead URL.
    if (link && !/^https?:/.test(href)) {
      event.preventDefault();
      event.stopPropagation();
    }
    // A markdown link to a file (`[app.py](src/app.py#L3)`) opens it in the editor, as an inline path does.
    const file = link ? linkedFile(href) : undefined;
    if (file) post(file.line ? { type: "openFile", path: file.path, line: file.line } : { type: "openFile", path: file.path });
    return;
  }
  event.preventDefault();
  const data = target.dataset;
  const item = Number(data.item);
  switch (data.action) {
    case "openFile":
      post(data.line ? { type: "openFile", path: data.path ?? "", line: Number(data.line) } : { type: "openFile", path: data.path ?? "" });
      break;
    case "openDiff":
    case "openChange":
      post({ type: data.action, item, path: data.path ?? "" });
      break;
    case "undo":
      post(data.path ? { type: "undo", item, path: data.path } : { type: "undo", item });
      break;
    case "fork":
      post({ type: "fork", turn: Number(data.turn) });
      break;
    case "loadEarlier":
      loadEarlier();
      break;
    case "checkBackend":
    case "setApiKey":
    case "openServerEnv":
      target.setAttribute("disabled", "");
      setTimeout(() => target.removeAttribute("disabled"), 1500);
      post({ type: data.action });
      break;
    case "copy":
    case "insert":
    case "apply": {
      const block = target.closest(".code-block") as HTMLElement;
      const code = block.querySelector("pre code")?.textContent ?? "";
      post(block.dataset.file ? { type: "code", action: data.action, code, file: block.dataset.file } : { type: "code", action: data.action, code });
      if (data.action === "copy") flash(target, "Copied");
      break;
    }
    case "feedback": {
      const box = target.closest(".permission")?.querySelector<HTMLElement>(".permission-feedback");
      if (box) {
        box.hidden = false;
        // The field grows the chat: brought into view, the chat still follows what comes after the answer.
        box.scrollIntoView({ block: "nearest" });
        box.querySelector("textarea")?.focus();
      }
      break;
    }
    case "permission":
      // A click from the keyboard has no `detail`: it answers only after a pause in the user's typing.
      if (event.detail === 0 && !keyboardAnswerAllowed(Date.now(), questionKeyAt)) {
        questionKeyAt = Date.now();
        break;
      }
      answer(target, item, data.outcome as PermissionOutcome);
      break;
  }
});

function answer(target: HTMLElement, item: number, outcome: PermissionOutcome): void {
  if (outcome === "reject_with_feedback") {
    const text = target.closest(".permission")?.querySelector("textarea")?.value.trim() ?? "";
    post(text ? { type: "permission", item, outcome, feedback: text } : { type: "permission", item, outcome: "reject" });
  } else {
    post({ type: "permission", item, outcome });
  }
  composer.focus();
}

// Enter in a feedback field sends it (Shift+Enter: a new line); Escape closes it, back to the question's buttons.
document.addEventListener("keydown", (event) => {
  const target = event.target as HTMLElement;
  if (target.id === "input") promptKeyAt = Date.now();
  // Someone still typing their prompt when a question took the focus: their keys go on into the prompt (they were
  // lost on the buttons). A Space answers (on its keyup) unless it goes on typing; else the buttons' guard holds it.
  const typed = event.key.length === 1 && !event.ctrlKey && !event.metaKey && !event.altKey;
  if (target.closest(".permission-buttons") && typed && (event.key !== " " || !keyboardAnswerAllowed(Date.now(), promptKeyAt))) {
    promptKeyAt = Date.now();
    composer.focus(); // before the key's default action: its character lands in the prompt
    return;
  }
  if (!target.classList.contains("feedback-input")) return;
  const question = target.closest(".permission");
  if (event.key === "Escape") {
    event.preventDefault();
    (target.parentElement as HTMLElement).hidden = true;
    question?.querySelector<HTMLElement>('[data-action="feedback"]')?.focus();
    return;
  }
  if (event.key !== "Enter" || event.shiftKey) return;
  event.preventDefault();
  const send = question?.querySelector<HTMLElement>('[data-outcome="reject_with_feedback"]');
  if (send) answer(send, Number(send.dataset.item), "reject_with_feedback");
});

function flash(target: HTMLElement, text: string): void {
  const label = target.lastChild;
  if (!label) return;
  const before = label.textContent;
  label.textContent = ` ${text}`;
  setTimeout(() => (label.textContent = before), 1200);
}

window.addEventListener("message", (event: MessageEvent<ToWebview>) => {
  const message = event.data;
  switch (message?.type) {
    case "reset": {
      const kept = redrawnScrollTop(log, following, message.session === shownSession);
      shownSession = message.session;
      rendered.clear();
      focusedQuestions.clear();
      log.replaceChildren(earlierButton);
      showEarlier(message.earlier);
      following = kept === undefined;
      loading = message.loading;
      upsert(message.items);
      if (kept !== undefined) log.scrollTop = kept;
      composer.setRunning(message.running);
      composer.commands = message.commands;
      showHeader(message.header);
      fillView();
      break;
    }
    case "items":
      upsert(message.items);
      break;
    case "earlier":
      prepend(message.items);
      showEarlier(message.earlier);
      // Not after a failed load (no items): that would ask again and again.
      if (message.items.length) fillView();
      break;
    case "status":
      composer.setRunning(message.running);
      break;
    case "header":
      showHeader(message.header);
      break;
    case "onboarding":
      showOnboarding(message.onboarding);
      break;
    case "chip":
      composer.addChip(message.chip);
      break;
    case "unsent":
      composer.putBack(message.text, message.chips, message.images, message.note);
      break;
    case "focusInput":
      composer.focus();
      break;
    case "taken":
      composer.taken();
      break;
    case "paths":
      for (const path of message.existing) knownPaths.set(path, true);
      for (const node of rendered.values()) if (node.dataset.kind === "assistant") decoratePaths(node);
      pendingPaths.clear();
      break;
  }
});

post({ type: "ready" });
composer.focus();
