#!/usr/bin/env bash
# Peak resident memory of decoding each archive with two builds, at one and two threads, under
# each --memory limit given: a markdown table row per archive, limit and thread count, with
# the exit status (1: refused). An argument OLD.sep:NEW.sep gives each build its own archive
# of the same input (where their encoders differ). Usage:
#   scripts/memory_peaks.sh OLD_SEP NEW_SEP "LIMITS" ARCHIVE[:ARCHIVE]...   (LIMITS like "8M 1G")
# Needs GNU time (/usr/bin/time).
set -uo pipefail
old=$1 new=$2 limits=$3
shift 3
log=$(mktemp)
peak() { # sep limit threads archive -> "N MB" or "refused" (exit 1), with the status otherwise
  /usr/bin/time -f "%M %x" -o "$log" "$1" -d -c -q -T"$3" --memory "$2" "$4" >/dev/null 2>&1
  tail -n 1 "$log" | awk '{printf "%.1f MB%s", $1 / 1024, ($2 == 0 ? "" : ($2 == 1 ? ", refused" : ", exit " $2))}'
}
echo "| archive | bytes | --memory | threads | old | new |"
echo "|---|---|---|---|---|---|"
for pair in "$@"; do
  a=${pair%%:*} b=${pair#*:}
  for m in $limits; do
    for t in 1 2; do
      echo "| $(basename "$b") | $(stat -c %s "$b") | $m | $t | $(peak "$old" "$m" "$t" "$a") | $(peak "$new" "$m" "$t" "$b") |"
    done
  done
done
rm -f "$log"
