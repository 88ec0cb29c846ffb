#!/usr/bin/env bash
# Usage: scripts/net_gain.sh [FILE...]
# What the pre-trained network earns (issue 55): each file at level 9 on one thread, with the
# network (`sep -9 -T1`) and without it (`sep -9 -T1 --net none`, the same built-in pack),
# with the default level beside; prints a markdown table and the mean and total changes.
# Default files: the eight English texts of the corpora (target/corpora, from
# ../shared/corpora/unpack). SEP=path picks the binary (default target/release/sep);
# PACK=path adds `--pack PATH` (a user pack instead of the built-in one).
set -euo pipefail
cd "$(dirname "$0")/.."
sep=${SEP:-target/release/sep}
pack=()
[ -n "${PACK:-}" ] && pack=(--pack "$PACK")
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  for f in paper1 paper2 alice29.txt asyoulik.txt lcet10.txt plrabn12.txt book2 book1; do
    files+=("target/corpora/text/$f")
  done
fi
echo "| file | bytes | default level | -9 --net none | -9 | -9 vs --net none | -9 vs default |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for f in "${files[@]}"; do
  d=$("$sep" -T1 -c "$f" | wc -c)
  n=$("$sep" -9 -T1 -c "${pack[@]}" --net none "$f" | wc -c)
  w=$("$sep" -9 -T1 -c "${pack[@]}" "$f" | wc -c)
  echo "$(basename "$f") $(stat -c %s "$f") $d $n $w"
done | python3 -c '
import sys
rows = [l.split() for l in sys.stdin]
for name, size, d, n, w in rows:
    d, n, w = int(d), int(n), int(w)
    print(f"| {name} | {int(size):,} | {d:,} | {n:,} | {w:,} | {100*(w-n)/n:+.2f}% | {100*(w-d)/d:+.2f}% |")
ch = [100 * (int(w) - int(n)) / int(n) for _, _, _, n, w in rows]
tn, tw = sum(int(r[3]) for r in rows), sum(int(r[4]) for r in rows)
print(f"\nmean of files {sum(ch)/len(ch):+.2f}%, total {100*(tw-tn)/tn:+.2f}% ({tn:,} -> {tw:,}); smallest gain {max(ch):+.2f}%")
'
