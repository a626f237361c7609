#!/bin/sh
# The session's environment, printed into the system prompt (runs in the session's working directory,
# sandboxed read-only). The repository may be hostile: git must run none of its hooks, fsmonitor or
# pager, and read no system or global config (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL).
GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_OPTIONAL_LOCKS=0 GIT_TERMINAL_PROMPT=0 GIT_PAGER=cat
export GIT_CONFIG_NOSYSTEM GIT_CONFIG_GLOBAL GIT_OPTIONAL_LOCKS GIT_TERMINAL_PROMPT GIT_PAGER
safe_git() {
  git -c core.fsmonitor=false -c core.hooksPath=/dev/null -c core.untrackedCache=false \
    --no-optional-locks "$@"
}
echo "# Environment"
echo
echo "- Working directory: $(pwd)"
echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- System: $(uname -sm)"
if safe_git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # symbolic-ref also names the branch of a repository with no commits yet; else detached.
  branch=$(safe_git symbolic-ref --short -q HEAD 2>/dev/null || echo "detached at $(safe_git rev-parse --short HEAD 2>/dev/null)")
  echo "- Git branch: $branch"
  changes=$(safe_git status --short 2>/dev/null | head -n 20)
  if [ -n "$changes" ]; then
    echo "- Uncommitted changes (git status --short, first 20):"
    echo "$changes" | sed 's/^/    /'
  else
    echo "- Git working tree clean"
  fi
else
  echo "- Not a git repository"
fi
