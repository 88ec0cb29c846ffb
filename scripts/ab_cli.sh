#!/bin/bash
# Interleaved timings of the sep command line, two builds, on a noisy machine.
# Usage: N=10 scripts/ab_cli.sh OLD_SEP OLD_ARCHIVE NEW_SEP NEW_ARCHIVE RAW_F32
#   (each build decodes its own archive of RAW_F32, which both compress with --dtype f32)
# Per round and build: decompress -T1 (task-clock, perf stat), decompress -T2 (wall),
# compress -T1 (task-clock), compress -T2 (wall), output to /dev/null. Prints min and median
# ms and the MB/s they give, per build and measurement.
A=$1; AA=$2; B=$3; BA=$4; RAW=$5
N=${N:-10}
MB=$(stat -c %s "$RAW")
cpu() { perf stat -x, -e task-clock "$@" 2>&1 >/dev/null | awk -F, '$3=="task-clock"{print $1}'; }
wall() { local s e; s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
for i in $(seq "$N"); do
  for pair in "$A $AA" "$B $BA"; do
    set -- $pair
    echo "decompress-T1-cpu $1 $(cpu "$1" decompress -q -T 1 -c "$2")"
    echo "decompress-T2-wall $1 $(wall "$1" decompress -q -T 2 -c "$2")"
    echo "compress-T1-cpu $1 $(cpu "$1" compress -q -T 1 --dtype f32 -c "$RAW")"
    echo "compress-T2-wall $1 $(wall "$1" compress -q -T 2 --dtype f32 -c "$RAW")"
  done
done | python3 -c '
import sys, collections, statistics
mb = float(sys.argv[1]) / 1e6
d = collections.defaultdict(list)
for l in sys.stdin:
    k, b, v = l.split()
    d[(k, b)].append(float(v))
for (k, b), v in sorted(d.items()):
    lo, med = min(v), statistics.median(v)
    print("%s %s: min %.0f med %.0f ms = %.0f / %.0f MB/s (%d runs)" % (k, b, lo, med, mb / lo * 1e3, mb / med * 1e3, len(v)))
' "$MB"
