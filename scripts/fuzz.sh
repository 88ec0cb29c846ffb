#!/usr/bin/env bash
# Usage: scripts/fuzz.sh SECONDS [TARGET...]
# Runs the fuzz targets of fuzz/ (every one, or those named) for SECONDS each, seeded from the
# golden archives, and keeps what they find: the growing corpus in target/fuzz-corpus, each
# crash, hang or memory blow-up copied to fuzz/regressions/TARGET/ (which `cargo test` replays
# on stable). Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
if [ $# -eq 0 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,/^set /s/^# \{0,1\}//p' "$0" | grep -v '^set '
  [ $# -eq 0 ] && exit 2 || exit 0
fi
set -euo pipefail
cd "$(dirname "$0")/.."
secs=$1
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
# Seeds per run, so that runs side by side do not share them.
seeds=target/fuzz-seeds/$$
rm -rf "$seeds"
python3 scripts/fuzz_seeds.py "$seeds"
trap 'rm -rf "$seeds"' EXIT
status=0
for t in "${targets[@]}"; do
  corpus=target/fuzz-corpus/$t
  mkdir -p "$corpus" "$seeds/$t" "fuzz/regressions/$t"
  echo "== $t: ${secs} s"
  # Earlier findings first: each must now pass.
  if ls "fuzz/regressions/$t"/* >/dev/null 2>&1; then
    cargo +nightly fuzz run "$t" "fuzz/regressions/$t"/* -- -runs=0 || status=1
  fi
  if ! cargo +nightly fuzz run "$t" "$corpus" "$seeds/$t" -- \
      -max_total_time="$secs" -timeout=10 -rss_limit_mb=768 -max_len=131072 -print_final_stats=1; then
    status=1
  fi
  for f in fuzz/artifacts/"$t"/*; do
    [ -e "$f" ] && cp "$f" "fuzz/regressions/$t/" && echo "kept $f in fuzz/regressions/$t/"
  done
done
exit $status
