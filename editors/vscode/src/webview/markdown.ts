// Markdown rendering for the chat: markdown-it without raw HTML or linkify, code highlighted by highlight.js,
// each code block with Copy / Insert / Apply buttons.

import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import lua from "highlight.js/lib/languages/lua";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import MarkdownIt from "markdown-it";
import { parseFenceInfo } from "../lib/links";

const languages = { bash, c, cpp, css, diff, go, java, javascript, json, lua, markdown, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, language] of Object.entries(languages)) hljs.registerLanguage(name, language);
const ALIASES: Record<string, string> = { py: "python", js: "javascript", ts: "typescript", sh: "bash", yml: "yaml", rs: "rust", html: "xml" };

function highlight(code: string, lang: string): string {
  const language = ALIASES[lang] ?? lang;
  try {
    if (language && hljs.getLanguage(language)) return hljs.highlight(code, { language, ignoreIllegals: true }).value;
    return hljs.highlightAuto(code).value;
  } catch {
    return "";
  }
}

// html: false — the model's output must never inject markup into the view. linkify: false — a bare
// `hello.py` must not become a link to http://hello.py (paths are linked to workspace files instead).
const md = new MarkdownIt({ html: false, linkify: false, breaks: false });
const escape = md.utils.escapeHtml;

function toolbarButton(action: string, codicon: string, label: string, title: string): string {
  return `<button type="button" class="action code-action" data-action="${action}" title="${escape(title)}" aria-label="${escape(title)}"><span class="codicon codicon-${codicon}" aria-hidden="true"></span> ${label}</button>`;
}

md.renderer.rules.fence = (tokens, index) => {
  const token = tokens[index];
  const { lang, file } = parseFenceInfo(md.utils.unescapeAll(token.info));
  const code = highlight(token.content, lang) || escape(token.content);
  const label = file ?? lang;
  const applyTitle = file ? `Apply to ${file}` : "Apply to the file in the editor";
  return (
    `<div class="code-block"${file ? ` data-file="${escape(file)}"` : ""}>` +
    `<div class="code-toolbar"><span class="code-label">${escape(label)}</span><span class="spacer"></span>` +
    toolbarButton("copy", "copy", "Copy", "Copy the code") +
    toolbarButton("insert", "insert", "Insert", "Insert at the cursor") +
    toolbarButton("apply", "check", "Apply", applyTitle) +
    `</div><pre><code class="hljs${lang ? ` language-${escape(lang)}` : ""}">${code}</code></pre></div>\n`
  );
};

/** Markdown → safe HTML with highlighted code blocks. */
export function renderMarkdown(text: string): string {
  return md.render(text);
}

/** Highlighted HTML for a piece of code (tool arguments, results). */
export function highlightCode(code: string, lang: string): string {
  return highlight(code, lang) || escape(code);
}
