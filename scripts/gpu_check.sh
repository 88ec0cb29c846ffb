#!/usr/bin/env bash
# Usage: scripts/gpu_check.sh [prepare]
# The `cuda` feature's GPU checks, for a GPU machine that has no Rust toolchain.
#   scripts/gpu_check.sh prepare   (here: builds the kernel tests and benches/cuda_step.rs into .gpu/)
#   scripts/gpu_check.sh           (there: runs them; logs and the PTX go to $OUT or /tmp/gpu-check)
#   STEPS=N: steps of cuda_step (default 2000).
set -uo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h|--help) sed -n 2,6p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  ""|prepare) ;;
  *) echo "usage: scripts/gpu_check.sh [prepare]" >&2; exit 2 ;;
esac
# The executables a cargo build of the cuda feature makes, as `KIND NAME PATH` lines.
executables() {
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["kind"][0], m["target"]["name"], m["executable"])'
}
if [ "${1:-}" = prepare ]; then
  set -e
  tests=$(cargo test --release --features cuda --lib --no-run --message-format=json 2>/dev/null |
    executables | awk '$1 == "lib" {print $3}')
  step=$(cargo bench --features cuda --bench cuda_step --no-run --message-format=json 2>/dev/null |
    executables | awk '$2 == "cuda_step" {print $3}')
  mkdir -p .gpu
  strip -o .gpu/sep-tests "$tests"
  strip -o .gpu/cuda_step "$step"
  ls -l .gpu
  exit 0
fi
[ -x .gpu/sep-tests ] && [ -x .gpu/cuda_step ] || { echo "no .gpu/: run scripts/gpu_check.sh prepare first" >&2; exit 2; }
out=${OUT:-/tmp/gpu-check}
mkdir -p "$out"
nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
[ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc"):${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
echo "nvrtc: ${nvrtc:-none found}; CPU cores: $(nproc)"
.gpu/sep-tests --ignored --test-threads 1 engine::cuda 2>&1 | tee "$out/tests.log"
PTX_OUT=$out/engine.ptx timeout 240 .gpu/cuda_step "${STEPS:-2000}" 2>&1 | tee "$out/step.log"
