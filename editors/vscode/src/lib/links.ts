// Code blocks and file links in the chat's markdown: a fence's file name, and text that may be a workspace path.

/** A fence's language and the file it names: ```python app.py, ```python title=app.py, ```python:app.py, ```app.py. */
export function parseFenceInfo(info: string): { lang: string; file?: string } {
  const words = info.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) return { lang: "" };
  let [lang, ...rest] = words;
  const colon = /^([\w+#-]+):(.+)$/.exec(lang);
  if (colon) {
    lang = colon[1];
    rest = [colon[2], ...rest];
  }
  let file = rest.map((w) => w.replace(/^(?:title|file|path|filename)=/, "").replace(/^["']|["']$/g, "")).find(looksLikePath);
  if (!file && rest.length === 0 && looksLikePath(lang) && /[./]/.test(lang)) {
    file = lang;
    lang = lang.includes(".") ? lang.slice(lang.lastIndexOf(".") + 1) : "";
  }
  return file ? { lang, file } : { lang };
}

// A relative or absolute file path with an extension (or a directory part), optionally `:line`; no URLs.
const PATH_LIKE = /^(?:\.{0,2}\/)?(?:[\w@+-][\w.@+-]*\/)*[\w@+-][\w.@+-]*\.[A-Za-z0-9]{1,10}(?::\d+)?$/;

/** Whether `text` reads like a file path (`src/app.py`, `hello.py:3`), not a URL, a version or a sentence. */
export function looksLikePath(text: string): boolean {
  if (text.length > 300 || text.includes("://")) return false;
  if (/^\d+(\.\d+)+$/.test(text)) return false;
  return PATH_LIKE.test(text);
}

/** `path:line` split into the path and the 1-based line. */
export function splitPathLine(text: string): { path: string; line?: number } {
  const match = /^(.*):(\d+)$/.exec(text);
  return match ? { path: match[1], line: Number(match[2]) } : { path: text };
}

/**
 * The workspace file a markdown link's href points at (`app.py`, `./src/a.ts#L12`, `a.ts#L3-L5`, `a.ts:3`), or
 * undefined for a web address, any other scheme (`command:`, `javascript:`), an anchor or a protocol-relative URL
 * (`name:digits` is a file and its line, not a scheme).
 */
export function linkedFile(href: string): { path: string; line?: number } | undefined {
  if (!href || href.startsWith("#") || href.startsWith("//") || /^[a-z][a-z0-9+.-]*:(?!\d+(?:[#?]|$))/i.test(href)) return undefined;
  const hash = href.indexOf("#");
  const line = hash >= 0 ? /^L(\d+)/i.exec(href.slice(hash + 1))?.[1] : undefined;
  let path: string;
  try {
    path = decodeURIComponent(hash >= 0 ? href.slice(0, hash) : href).replace(/\?.*$/, "");
  } catch {
    return undefined;
  }
  if (!path) return undefined;
  const split = splitPathLine(path);
  const at = line !== undefined ? Number(line) : split.line;
  return at ? { path: split.path, line: at } : { path: split.path };
}
