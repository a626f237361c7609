// The sessions' approval modes: what the daemon reports, and the mode the user picks (`ollie/setApproval`).

import { errorText } from "./lib/errors";
import { APPROVAL_MODES, ApprovalMode } from "./lib/webviewMessages";
import { SessionHost } from "./sessionHost";

/** Each session's approval mode, and the picked one sent so that no prompt runs before it. */
export class ApprovalModes {
  private readonly modes = new Map<string, ApprovalMode>();
  // An approval mode picked while no daemon runs: set once one is up.
  private pending: ApprovalMode | undefined;
  // The `ollie/setApproval` last sent: a prompt waits for it, so the mode picked before it is the one it runs under.
  private applying: Promise<void> = Promise.resolve();

  constructor(
    private readonly host: SessionHost,
    private readonly headerChanged: () => void,
  ) {}

  /** `session`'s approval mode ("" while unknown). */
  of(session: string): ApprovalMode | "" {
    return this.modes.get(session) ?? "";
  }

  /** Note the mode the daemon reports for `session` (`ollie/state`'s `approval`; anything but a mode is ignored). */
  reported(session: string, approval: unknown): void {
    if ((APPROVAL_MODES as readonly unknown[]).includes(approval)) this.modes.set(session, approval as ApprovalMode);
  }

  /** Whether a mode picked while no daemon ran (or before its session was known) still waits to be sent. */
  get waiting(): boolean {
    return this.pending !== undefined;
  }

  /** Set the current session's approval mode (`ollie/setApproval`). */
  async set(mode: ApprovalMode): Promise<void> {
    if (!this.host.daemon.running || this.host.current() === undefined) {
      // Picked while the daemon starts (or restarts), or before its session is known (it would be kept for none, and
      // the session's `ask` shown): applied once both are, not lost with an error.
      this.pending = mode;
      this.modes.set(this.host.current() ?? "", mode);
      this.headerChanged();
      return;
    }
    const applying = this.send(mode);
    this.applying = applying;
    await applying;
  }

  private async send(mode: ApprovalMode): Promise<void> {
    try {
      await this.host.request("ollie/setApproval", { approval: mode });
      this.modes.set(this.host.current() ?? "", mode);
    } catch (err) {
      const session = this.host.current();
      this.host.changedIn(session, this.host.modelFor(session ?? "").addNotice("error", `approval mode: ${errorText(err)}`));
    }
    this.headerChanged();
  }

  /** Send the mode picked while no daemon ran (or before its session was known) once both are; then (or else) the
   * `ollie/setApproval` in flight. Every prompt and the daemon's start-up go through here, so none runs before it. */
  applyPending(): Promise<void> {
    const mode = this.pending;
    if (mode !== undefined && this.host.daemon.running && this.host.current() !== undefined) {
      this.pending = undefined;
      void this.set(mode);
    }
    return this.applying;
  }
}
