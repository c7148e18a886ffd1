#!/usr/bin/env bash
# Fails, listing the files, if any C++ file tracked by git is not clang-formatted
# (.clang-format: Google style, 100 columns). Fix with: git ls-files '*.cc' '*.h' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format not installed" >&2; exit 1; }
bad=()
while IFS= read -r f; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.cc' '*.h')
if [ ${#bad[@]} -gt 0 ]; then
  printf 'check-format: not clang-formatted:\n'; printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "check-format: all files formatted"
