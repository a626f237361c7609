// Markdown rendering for the chat: markdown-it without raw HTML, code highlighted by highlight.js.

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

const languages = { bash, c, cpp, css, diff, go, java, javascript, json, lua, markdown, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, language] of Object.entries(languages)) hljs.registerLanguage(name, language);

function highlight(code: string, lang: string): string {
  try {
    if (lang && hljs.getLanguage(lang)) return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
    return hljs.highlightAuto(code).value;
  } catch {
    return "";
  }
}

// html: false — the model's output must never inject markup into the view.
const md = new MarkdownIt({ html: false, linkify: true, breaks: false, highlight });

/** Markdown → safe HTML with highlighted code blocks. */
export function renderMarkdown(text: string): string {
  return md.render(text);
}

/** Highlighted HTML for a piece of code (tool arguments, results). */
export function highlightCode(code: string, lang: string): string {
  return highlight(code, lang) || md.utils.escapeHtml(code);
}
