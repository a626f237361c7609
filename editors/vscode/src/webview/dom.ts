// Small DOM helpers for the chat view's script.

/** A new element with an optional class and text. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A new element showing `text` with its backtick-quoted spans as code (a step's title quotes its command so). */
export function elWithCode<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text: string): HTMLElementTagNameMap[K] {
  const node = el(tag, className);
  const parts = text.split("`");
  // An unmatched last backtick is text.
  if (parts.length % 2 === 0) parts.splice(-2, 2, `${parts[parts.length - 2]}\`${parts[parts.length - 1]}`);
  parts.forEach((part, i) => part && node.append(i % 2 ? el("code", undefined, part) : document.createTextNode(part)));
  return node;
}

/** A codicon; decorative unless `label` is given (then it is announced). */
export function icon(name: string, label?: string): HTMLElement {
  const node = el("span", `codicon codicon-${name}`);
  if (label) {
    node.setAttribute("role", "img");
    node.setAttribute("aria-label", label);
    node.title = label;
  } else {
    node.setAttribute("aria-hidden", "true");
  }
  return node;
}

/** A button with an optional codicon; `action` and `data` become data-* attributes for the delegated click handler. */
export function button(label: string, action: string, data: Record<string, string | number> = {}, codicon?: string, className = ""): HTMLButtonElement {
  const node = el("button", `action ${className}`.trim());
  node.type = "button";
  node.dataset.action = action;
  for (const [key, value] of Object.entries(data)) node.dataset[key] = String(value);
  if (codicon) node.append(icon(codicon));
  node.append(document.createTextNode(codicon && label ? ` ${label}` : label));
  return node;
}

/** A link that opens `path` (at `line`) in the editor. */
export function fileLink(label: string, path: string, line?: number): HTMLAnchorElement {
  const link = el("a", "file-link", label);
  link.href = "#";
  link.dataset.action = "openFile";
  link.dataset.path = path;
  if (line) link.dataset.line = String(line);
  link.title = `Open ${line ? `${label} at line ${line}` : label}`;
  return link;
}
