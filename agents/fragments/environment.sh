#!/bin/sh
# The session's environment, printed into the system prompt (runs in the session's working directory).
echo "# Environment"
echo
echo "- Working directory: $(pwd)"
echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- System: $(uname -sm)"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # symbolic-ref also names the branch of a repository with no commits yet; else detached.
  branch=$(git symbolic-ref --short -q HEAD 2>/dev/null || echo "detached at $(git rev-parse --short HEAD 2>/dev/null)")
  echo "- Git branch: $branch"
  changes=$(git --no-optional-locks status --short 2>/dev/null | head -n 20)
  if [ -n "$changes" ]; then
    echo "- Uncommitted changes (git status --short, first 20):"
    echo "$changes" | sed 's/^/    /'
  else
    echo "- Git working tree clean"
  fi
else
  echo "- Not a git repository"
fi
