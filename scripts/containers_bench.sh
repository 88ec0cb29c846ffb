#!/usr/bin/env bash
# Usage: [RUNS=3] [SEP=target/release/sep] scripts/containers_bench.sh FILE...
# sep against zstd -19 and xz -9e on model container files (ONNX, CTranslate2, GGUF, ...), one
# thread each, whole command lines from files in the page cache; times are the best of RUNS
# (default 3) runs, sep and zstd alternating. pcodec: scripts/containers_pco12.py.
if [ $# -eq 0 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,/^set /s/^# \{0,1\}//p' "$0" | grep -v '^set '
  [ $# -eq 0 ] && exit 2 || exit 0
fi
set -euo pipefail
sep=${SEP:-$(dirname "$0")/../target/release/sep}
runs=${RUNS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
best() { sort -n | head -1; }
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
echo "| file | size | sep | zstd -19 | xz -9e | sep comp s | zstd -19 comp s | sep dec s | zstd -d s | tensor blocks |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for f in "$@"; do
  "$sep" compress -q -c -T 1 "$f" >"$tmp/a.sep"
  "$sep" decompress -q -c -T 1 "$tmp/a.sep" | cmp -s - "$f" || { echo "$f: round trip failed" >&2; exit 1; }
  zstd -q -19 -c "$f" >"$tmp/a.zst"
  blocks=$("$sep" info "$tmp/a.sep" | grep -cE ' (planes|copies|scaled|recent|repeated) ' || true)
  sc=() zc=() sd=() zd=()
  for _ in $(seq "$runs"); do
    sc+=("$(secs "$sep" compress -q -c -T 1 "$f")")
    zc+=("$(secs zstd -q -19 -c "$f")")
    sd+=("$(secs "$sep" decompress -q -c -T 1 "$tmp/a.sep")")
    zd+=("$(secs zstd -q -d -c "$tmp/a.zst")")
  done
  printf '| %s | %d | %d | %d | %d | %.3f | %.3f | %.3f | %.3f | %s |\n' "$(basename "$f")" \
    "$(stat -c %s "$f")" "$(stat -c %s "$tmp/a.sep")" "$(stat -c %s "$tmp/a.zst")" \
    "$(xz -9e -T1 -c "$f" | wc -c)" \
    "$(printf '%s\n' "${sc[@]}" | best)" "$(printf '%s\n' "${zc[@]}" | best)" \
    "$(printf '%s\n' "${sd[@]}" | best)" "$(printf '%s\n' "${zd[@]}" | best)" "$blocks"
done
