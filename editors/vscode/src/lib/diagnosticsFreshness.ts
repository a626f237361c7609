// Whether VS Code's diagnostics of a file are of its content now: the `upToDate` of `ollie/editor/diagnostics`.
// VS Code cannot say whether a language server serves a file, nor which version a diagnostic is of; this tells it from
// what the window saw happen. Without it the daemon waited its whole wait (1.5 s) after every edit that changed no
// diagnostic, and after every edit of a file no server reads.

/** How long a file's diagnostics must have stayed unchanged since they last changed: a server publishes in parts. */
export const QUIET_MS = 250;

/** What a file is now, as far as its diagnostics go. */
export interface FileState {
  /** The editor holds it as a document (its language), or undefined when it is not open. */
  language: string | undefined;
}

/** The times text and diagnostics last changed, per URI (strings), and the languages a server has reported on. */
export class DiagnosticsFreshness {
  private readonly textAt = new Map<string, number>();
  private readonly diagnosedAt = new Map<string, number>();
  private readonly diagnosedLanguages = new Set<string>();

  /** A document was opened or its text changed (a server, if any, analyzes it again). */
  textChanged(uri: string, now: number): void {
    this.textAt.set(uri, now);
  }

  /** VS Code's diagnostics of `uri` changed; `language` is its document's, when it is open. */
  diagnosticsChanged(uri: string, language: string | undefined, now: number): void {
    this.diagnosedAt.set(uri, now);
    if (language !== undefined) this.diagnosedLanguages.add(language);
  }

  /** A document was closed: what its text was while open says nothing of its content on disk later. */
  closed(uri: string): void {
    this.textAt.delete(uri);
  }

  /**
   * Whether the diagnostics of `uri` are of its content now. Yes when no server can be expected to report on it: no
   * diagnostic of it was ever seen, and it is not open (servers read open documents) or no document of its language
   * was ever reported on. Yes for an open document whose diagnostics changed after its text did and stayed so for
   * QUIET_MS. Otherwise no (a file reported on before, changed on disk: when is not known).
   */
  upToDate(uri: string, file: FileState, now: number): boolean {
    const diagnosed = this.diagnosedAt.get(uri);
    if (diagnosed === undefined) return file.language === undefined || !this.diagnosedLanguages.has(file.language);
    if (file.language === undefined) return false;
    return diagnosed > (this.textAt.get(uri) ?? -Infinity) && now - diagnosed >= QUIET_MS;
  }
}
