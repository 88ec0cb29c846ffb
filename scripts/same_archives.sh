#!/usr/bin/env bash
# Usage: scripts/same_archives.sh OLD_SEP NEW_SEP LEVEL FILE...
# Compresses each FILE with both binaries at LEVEL (one thread) and reports whether the two
# archives are identical, byte for byte: the check that a change meant to alter no archive
# (a refactoring) altered none. Exit status 1 if any archive differs.
set -euo pipefail
if [ $# -lt 4 ] || [ "$1" = "--help" ]; then
  sed -n 2,5p "$0" | sed 's/^# \{0,1\}//'
  [ "${1:-}" = "--help" ] && exit 0 || exit 2
fi
old=$1 new=$2 level=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
differ=0
for f in "$@"; do
  "$old" -c -"$level" -T1 "$f" > "$tmp/old" &
  "$new" -c -"$level" -T1 "$f" > "$tmp/new"
  wait $!
  if cmp -s "$tmp/old" "$tmp/new"; then
    echo "same    $(stat -c %s "$tmp/new") $f"
  else
    echo "DIFFER  $(stat -c %s "$tmp/old") $(stat -c %s "$tmp/new") $f"
    differ=1
  fi
done
exit $differ
