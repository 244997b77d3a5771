#!/bin/sh
# Raises every module's requirement of a shared dependency to the highest version any module
# of the workspace requires, so `make deps-check` passes. Run `make tidy` after it.
set -eu
cd "$(dirname "$0")/.."
git ls-files '*go.mod' | while read -r f; do
  awk -v d="$(dirname "$f")" '
    /^require \($/ { inblock = 1; next }
    inblock && /^\)/ { inblock = 0; next }
    inblock && NF >= 2 { print $1, $2, d; next }
    /^require [^(]/ { print $2, $3, d }
  ' "$f"
done | grep -v '^boxoffice\.dev/' >/tmp/deps.$$ || true
cut -d' ' -f1 /tmp/deps.$$ | sort -u | while read -r mod; do
  max=$(awk -v m="$mod" '$1 == m { print $2 }' /tmp/deps.$$ | sort -V | tail -n 1)
  awk -v m="$mod" -v max="$max" '$1 == m && $2 != max { print $3 }' /tmp/deps.$$ | while read -r dir; do
    echo "$dir: $mod -> $max"
    (cd "$dir" && go get "$mod@$max" >/dev/null)
  done
done
rm -f /tmp/deps.$$
