#!/bin/bash
# Interleaved speed comparison of two builds of the tensor harness (benches/tensor.rs).
# Usage: N=10 scripts/ab.sh OLD_BINARY NEW_BINARY FILE...  (SEP_WHOLE=1: the whole product)
#   (binaries: copies of the harness from two commits; `cargo bench --bench tensor --no-run` prints its path)
# Each round runs OLD then NEW on every file (best of REPS=5 runs each, SEP_ONLY=decode unless
# ONLY=encode, COL=8 for compress speeds); prints per file the best and median MB/s of each
# and the median of the per-round NEW/OLD ratios, which a slow or fast minute shifts for both.
A=$1; B=$2; shift 2
N=${N:-10}
for i in $(seq "$N"); do
  for b in "$A" "$B"; do
    SEP_ONLY=${ONLY:-decode} SEP_REPS=${REPS:-5} "$b" "$@" 2>/dev/null |
      awk -v b="$b" -v i="$i" -v col="${COL:-11}" '{print i, b, $1, $col}'
  done
done | python3 -c '
import sys, collections, statistics
d = collections.defaultdict(dict)
A, B = sys.argv[1], sys.argv[2]
for l in sys.stdin:
    i, b, f, v = l.split()
    d[f][(i, b)] = float(v)
for f in sorted(d):
    r = [d[f][(i, B)] / d[f][(i, A)] for (i, b) in d[f] if b == A and (i, B) in d[f]]
    a = [v for (i, b), v in d[f].items() if b == A]
    bb = [v for (i, b), v in d[f].items() if b == B]
    print(f.split("/")[-1][:32], "old best %.0f med %.0f | new best %.0f med %.0f | new/old median %.3f (%d rounds, new faster in %d)"
          % (max(a), statistics.median(a), max(bb), statistics.median(bb), statistics.median(r), len(r), sum(x > 1 for x in r)))
' "$A" "$B"
