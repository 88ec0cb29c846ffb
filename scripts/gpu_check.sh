#!/usr/bin/env bash
# The `cuda` feature's GPU checks, for a GPU machine that has no Rust toolchain.
#   scripts/gpu_check.sh prepare   (here: builds the kernel tests and the harness into .gpu/)
#   scripts/gpu_check.sh           (there: runs them; logs and the PTX go to $OUT or /tmp/gpu-check)
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = prepare ]; then
  set -e
  tests=$(cargo test --release --features cuda --lib --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["lib"]:
        print(m["executable"])')
  cargo build --release --features cuda --example cuda_step
  mkdir -p .gpu
  strip -o .gpu/sep-tests "$tests"
  strip -o .gpu/cuda_step target/release/examples/cuda_step
  ls -l .gpu
  exit 0
fi
out=${OUT:-/tmp/gpu-check}
mkdir -p "$out"
nvrtc=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)
[ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc"):${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
echo "nvrtc: ${nvrtc:-none found}; CPU cores: $(nproc)"
.gpu/sep-tests --ignored --test-threads 1 engine::cuda 2>&1 | tee "$out/tests.log"
PTX_OUT=$out/engine.ptx timeout 240 .gpu/cuda_step "${STEPS:-2000}" 2>&1 | tee "$out/step.log"
