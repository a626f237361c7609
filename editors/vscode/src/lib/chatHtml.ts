// The chat view's HTML page: a strict Content-Security-Policy that runs only the extension's own script.

export interface ChatHtmlOptions {
  /** The webview's `cspSource` (origin of the extension's resources). */
  cspSource: string;
  /** A fresh random nonce for this page's script tag. */
  nonce: string;
  scriptUri: string;
  styleUri: string;
  /** The codicon font's stylesheet (media/vendor/codicons). */
  iconsUri?: string;
  /** Where Ollie works, when the window does not make it plain (no folder open): shown in the empty chat. */
  note?: string;
}

/** The Content-Security-Policy: nothing by default; styles/fonts/images from the extension; scripts by nonce only. */
export function chatCsp(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `img-src ${cspSource} data:`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
}

function attr(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}

/** The whole page. */
export function chatHtml(options: ChatHtmlOptions): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${attr(chatCsp(options.cspSource, options.nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
${options.iconsUri ? `<link rel="stylesheet" href="${attr(options.iconsUri)}">\n` : ""}<link rel="stylesheet" href="${attr(options.styleUri)}">
<title>Ollie</title>
</head>
<body>
<header id="header">
<span id="title" class="title"></span>
<label class="approval" title="Approval mode: when Ollie asks before a step runs">
<span class="codicon codicon-shield" aria-hidden="true"></span>
<select id="approval" aria-label="Approval mode">
<option value="ask" title="Ask before edits and commands">Ask first</option>
<option value="auto-edit" title="Edit files without asking; ask before commands">Auto-edit</option>
<option value="auto" title="Run everything without asking (the sandbox still applies)">Auto</option>
<option value="read-only" title="Read and plan only: no edits, no commands that write">Read-only</option>
</select>
</label>
</header>
<div id="body">
<section id="onboarding" role="region" aria-labelledby="onboarding-title" hidden></section>
<p id="loading" class="empty" role="status" hidden><span class="codicon codicon-loading codicon-modifier-spin" aria-hidden="true"></span> Loading the session…</p>
<div id="empty" class="empty" hidden>
<p class="empty-title">Ask Ollie about your code</p>
<p>It reads, edits and runs things in your workspace; every change can be reviewed and undone.</p>
${options.note ? `<p class="note">${attr(options.note)}</p>\n` : ""}<p><kbd>/</kbd> commands · <kbd>@</kbd> add a file · <kbd>#</kbd> add the selection</p>
</div>
<main id="log" role="log" aria-live="polite" aria-label="Conversation" tabindex="0"></main>
<button type="button" id="jump" class="jump" hidden aria-label="Jump to the latest message"><span class="codicon codicon-arrow-down" aria-hidden="true"></span> Jump to latest</button>
</div>
<form id="composer">
<details id="plan" class="plan" open hidden><summary id="planSummary"></summary><ol id="planSteps" aria-label="The agent's plan"></ol></details>
<ul id="slash" role="listbox" aria-label="Slash commands" hidden></ul>
<div id="chips" aria-label="Context of the prompt"></div>
<p id="imageNote" class="image-note" role="status" hidden></p>
<textarea id="input" rows="3" aria-label="Prompt" placeholder="Ask Ollie… (/ commands, @ file, # selection, paste an image)"></textarea>
<div id="buttons">
<button type="button" id="addFile" class="icon-button" title="Add a file to the prompt (@)" aria-label="Add a file to the prompt"><span class="codicon codicon-mention" aria-hidden="true"></span></button>
<button type="button" id="addSelection" class="icon-button" title="Add the editor's selection to the prompt (#)" aria-label="Add the editor's selection to the prompt"><span class="codicon codicon-selection" aria-hidden="true"></span></button>
<button type="button" id="model" class="link-button" title="Switch Model" hidden></button>
<span id="actions">
<button type="submit" id="send">Send</button>
<button type="button" id="inject" hidden title="Send into the running turn (Ctrl+Enter)">Inject</button>
<button type="button" id="stop" hidden>Stop</button>
</span>
</div>
</form>
<script nonce="${attr(options.nonce)}" src="${attr(options.scriptUri)}"></script>
</body>
</html>`;
}
