#!/usr/bin/env bash
# Usage: [SEP=target/release/sep] scripts/fields_bench.sh FILE...
# Sizes and times of sep (default level, 2 threads) against zpaq -m5, xz -9e and bzip3 on the
# files given, one run each, with a round-trip check and the codecs sep chose (RESULTS.md,
# Smooth fields). The files there: the sample_data of the iris-sample-data 2.5.2 wheel
# (`pip download iris-sample-data==2.5.2`, then unzip).
if [ $# -eq 0 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,/^set /s/^# \{0,1\}//p' "$0" | grep -v '^set '
  [ $# -eq 0 ] && exit 2 || exit 0
fi
set -euo pipefail
sep=${SEP:-$(dirname "$0")/../target/release/sep}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
for f in "$@"; do
  t0=$(now); "$sep" compress -c -q -T 2 "$f" >"$tmp/a.sep"; t1=$(now)
  "$sep" decompress -c -q -T 2 "$tmp/a.sep" >"$tmp/out"; t2=$(now)
  cmp -s "$tmp/out" "$f" || echo "MISMATCH $f"
  rm -rf "$tmp/z.zpaq" "$tmp/zx"
  t3=$(now); zpaq a "$tmp/z.zpaq" "$f" -m5 >/dev/null 2>&1; t4=$(now)
  zpaq x "$tmp/z.zpaq" -to "$tmp/zx" >/dev/null 2>&1; t5=$(now)
  codecs=$("$sep" info "$tmp/a.sep" | awk '/^ +[0-9]+ +[0-9]+ /{print $3}' | sort | uniq -c | tr -s ' \n' ' ')
  printf "%s %d sep=%d zpaq=%d xz=%d bzip3=%d sep_c=%.2f sep_d=%.2f zpaq_c=%.2f zpaq_d=%.2f codecs:%s\n" \
    "$f" "$(stat -c %s "$f")" "$(stat -c %s "$tmp/a.sep")" "$(stat -c %s "$tmp/z.zpaq")" \
    "$(xz -9e -T1 -c "$f" | wc -c)" "$(bzip3 -c <"$f" | wc -c)" \
    "$(echo "$t1-$t0" | bc)" "$(echo "$t2-$t1" | bc)" "$(echo "$t4-$t3" | bc)" "$(echo "$t5-$t4" | bc)" "$codecs"
done
