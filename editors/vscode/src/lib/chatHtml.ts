// The chat view's HTML page: a strict Content-Security-Policy that runs only the extension's own script.

export interface ChatHtmlOptions {
  /** The webview's `cspSource` (origin of the extension's resources). */
  cspSource: string;
  /** A fresh random nonce for this page's script tag. */
  nonce: string;
  scriptUri: string;
  styleUri: string;
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
<link rel="stylesheet" href="${attr(options.styleUri)}">
<title>Ollie</title>
</head>
<body>
<header id="status"><span id="state">idle</span><span id="cost"></span></header>
<main id="log" role="log" aria-live="polite"></main>
<form id="composer">
<ul id="slash" role="listbox" hidden></ul>
<textarea id="input" rows="3" aria-label="Prompt" placeholder="Ask Ollie… (Enter sends, Shift+Enter new line, / for commands)"></textarea>
<div id="buttons">
<button type="submit" id="send">Send</button>
<button type="button" id="inject" hidden title="Send into the running turn (Ctrl+Enter)">Inject</button>
<button type="button" id="stop" hidden>Stop</button>
</div>
</form>
<script nonce="${attr(options.nonce)}" src="${attr(options.scriptUri)}"></script>
</body>
</html>`;
}
