#!/usr/bin/env bash
# Usage: scripts/formats_bench.sh FILE...
# Already-compressed files (issue 56: .gz, .zip, .jar, .whl, .docx, .odt, .pdf, .png, .jpg):
# each through `sep -T1` (time to compress and to decompress, checked byte for byte against
# the input) and the anchors in the same run (zpaq -m5, xz -9e, zstd -19, bzip3); prints a
# row per file (TSV: type, file, bytes, sep, sep's codecs, zpaq, xz, zstd, bzip3, compress and
# decompress seconds) and then a markdown table per type, with sep's MB/s both ways.
# SEP=path picks the binary (default target/release/sep).
set -euo pipefail
sep=${SEP:-$(cd "$(dirname "$0")/.." && pwd)/target/release/sep}
for tool in zpaq xz zstd bzip3 bc; do
  command -v "$tool" > /dev/null || { echo "formats_bench.sh: $tool not found (Debian: apt-get install $tool)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "$@"; do
  n=$(stat -c %s "$f")
  ext=${f##*.}
  s=$(date +%s.%N)
  "$sep" -T1 -c "$f" > "$work/a.sep"
  m=$(date +%s.%N)
  "$sep" -T1 -d -c "$work/a.sep" > "$work/back"
  e=$(date +%s.%N)
  cmp -s "$work/back" "$f" || { echo "MISMATCH $f" >&2; exit 1; }
  codecs=$("$sep" -l -v "$work/a.sep" | awk '$1 ~ /^[0-9]+$/ && NF == 6 {print $3}' | sort | uniq -c |
    awk '{printf "%s%s:%s", (NR > 1 ? "," : ""), $2, $1}')
  rm -f "$work/z.zpaq"
  zpaq a "$work/z.zpaq" "$f" -m5 > /dev/null 2>&1
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$ext" "$(basename "$f")" "$n" \
    "$(stat -c %s "$work/a.sep")" "$codecs" "$(stat -c %s "$work/z.zpaq")" \
    "$(xz -9e -c "$f" | wc -c)" "$(zstd -19 -q -c "$f" | wc -c)" "$(bzip3 -c "$f" | wc -c)" \
    "$(echo "$m - $s" | bc)" "$(echo "$e - $m" | bc)"
done | tee "$work/rows.tsv"
python3 - "$work/rows.tsv" <<'PY'
import sys, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
by = collections.defaultdict(list)
for r in rows:
    by[r[0]].append(r)
print("\n| type | files | bytes | sep | zpaq -m5 | xz -9e | zstd -19 | bzip3 | sep / input | files sep smallest | MB/s in | MB/s out |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for t, rs in sorted(by.items()):
    tot = [sum(int(r[i]) for r in rs) for i in (2, 3, 5, 6, 7, 8)]
    best = sum(int(r[3]) < min(int(r[i]) for i in (5, 6, 7, 8)) for r in rs)
    ce, cd = sum(float(r[9]) for r in rs), sum(float(r[10]) for r in rs)
    print(f"| {t} | {len(rs)} | {tot[0]:,} | {tot[1]:,} | {tot[2]:,} | {tot[3]:,} | {tot[4]:,} | {tot[5]:,} "
          f"| {tot[1] / tot[0]:.3f} | {best} of {len(rs)} | {tot[0] / ce / 1e6:.2f} | {tot[0] / cd / 1e6:.2f} |")
PY
