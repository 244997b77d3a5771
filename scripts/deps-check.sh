#!/bin/sh
# Fails when two modules of the workspace require different versions of the same dependency.
# Versions kept in step mean every deployable is built and tested against the same code.
set -eu
cd "$(dirname "$0")/.."
git ls-files '*go.mod' | while read -r f; do
  awk -v f="$f" '
    /^require \($/ { inblock = 1; next }
    inblock && /^\)/ { inblock = 0; next }
    inblock && NF >= 2 { print $1, $2, f; next }
    /^require [^(]/ { print $2, $3, f }
  ' "$f"
done | sort | awk '
  $1 ~ /^boxoffice\.dev\// { next }
  $1 == prev && $2 != prevv { printf "%s: %s in %s but %s in %s\n", $1, $2, $3, prevv, prevf; bad = 1 }
  { prev = $1; prevv = $2; prevf = $3 }
  END { if (bad) { print "dependency versions are not in step: align them (go get module@version in each module)"; exit 1 } }
'
echo "dependency versions are in step across $(git ls-files '*go.mod' | wc -l) modules"
