#!/usr/bin/env bash
# Sizes and times of sep with a pack against without (`--pack none`), file by file, as a
# markdown table. Usage: scripts/pack_bench.sh PACK FILE...  (release build of sep; one
# thread; time = best of RUNS runs, default 1, alternating the two).
set -euo pipefail
pack=$1; shift
sep=${SEP:-target/release/sep}
runs=${RUNS:-1}
t() { /usr/bin/time -f %e "$@" 2>&1 >/dev/null | tail -1; }
echo "| file | size | --pack none | --pack $(basename "$pack") | smaller by | time none / pack (s) |"
echo "|---|---:|---:|---:|---:|---:|"
for f in "$@"; do
  a=$("$sep" -c -T1 -q --pack none "$f" | wc -c)
  b=$("$sep" -c -T1 -q --pack "$pack" "$f" | wc -c)
  ta=99999; tb=99999
  for _ in $(seq "$runs"); do
    x=$(t "$sep" -c -T1 -q --pack none "$f"); ta=$(python3 -c "print(min($ta,$x))")
    y=$(t "$sep" -c -T1 -q --pack "$pack" "$f"); tb=$(python3 -c "print(min($tb,$y))")
  done
  echo "| $f | $(stat -c %s "$f") | $a | $b | $(python3 -c "print(f'{100*(1-$b/$a):.1f}%')") | $ta / $tb |"
done
