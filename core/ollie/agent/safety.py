"""Safety checks after each tool round: error streaks, missing plans, stalls, task-state re-injection."""

from __future__ import annotations

from dataclasses import dataclass, field

from ollie.agent.limits import LoopLimits
from ollie.agent.taskstate import has_plan_block

ERROR_NUDGE = (
    "The last {n} tool rounds all failed. Stop repeating what fails: try a different approach, "
    "check your assumptions, or ask the user."
)
REPLAN_NUDGE = (
    "You have worked for {n} tool rounds without stating a plan. Write a `PLAN:` block with "
    "checklist steps (- [ ] ...) before continuing."
)
STALL_NUDGE = (
    "You have repeated the same action for {n} rounds with the same result. You are stalled: "
    "change approach instead of repeating it."
)
MAX_STEPS_NUDGE = (
    "You have reached the step limit for this turn. Do not call any more tools: summarise what "
    "you did, what is left, and what the user should do next."
)


@dataclass(eq=False, repr=False)
class Verdict:
    """What the loop must do after a round: nudges to append, an abort reason, a task-state re-inject."""

    nudges: list[str] = field(default_factory=list)
    abort: str = ""
    reinject: bool = False


@dataclass(eq=False, repr=False)
class SafetyMonitor:
    """Counts rounds of one turn and says when to nudge or abort."""

    limits: LoopLimits
    rounds: int = 0
    error_streak: int = 0
    rounds_without_plan: int = 0
    same_action: int = 0
    last_action: str = ""

    def after_round(self, *, all_errors: bool, assistant_text: str, last_action: str) -> Verdict:
        """Account one tool round and return what to do about it."""
        lim = self.limits
        verdict = Verdict()
        self.rounds += 1

        self.error_streak = self.error_streak + 1 if all_errors else 0
        if self.error_streak >= lim.error_abort_rounds:
            verdict.abort = f"aborted after {self.error_streak} consecutive failing tool rounds"
            return verdict
        if self.error_streak and self.error_streak % lim.error_nudge_rounds == 0:
            verdict.nudges.append(ERROR_NUDGE.format(n=self.error_streak))

        if has_plan_block(assistant_text):
            self.rounds_without_plan = 0
        else:
            self.rounds_without_plan += 1
            if self.rounds_without_plan >= lim.replan_rounds:
                verdict.nudges.append(REPLAN_NUDGE.format(n=self.rounds_without_plan))
                self.rounds_without_plan = 0

        self.same_action = self.same_action + 1 if last_action and last_action == self.last_action else 1
        self.last_action = last_action
        if self.same_action >= lim.stall_rounds:
            verdict.nudges.append(STALL_NUDGE.format(n=self.same_action))
            self.same_action = 0

        verdict.reinject = lim.reinject_rounds > 0 and self.rounds % lim.reinject_rounds == 0
        return verdict
