// Reading a list of names (models, agents) out of a slash command's human output.

/** Candidate names from lines like `- name`, `* name (current)`, `name  description`; the current one first when marked. */
export function parseNameList(output: string): string[] {
  const names: string[] = [];
  for (const raw of output.split(/\r?\n/)) {
    const line = raw.replace(/^\s*(?:[-*•>]|\d+[.)])?\s*/, "").trim();
    if (!line || /:$/.test(line)) continue;
    const name = line.split(/\s+/)[0].replace(/[,;]$/, "");
    if (/^[\w./:@+-]+$/.test(name) && !names.includes(name)) names.push(name);
  }
  return names;
}
