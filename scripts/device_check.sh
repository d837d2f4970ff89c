#!/usr/bin/env bash
# The GPU check, in one go (about 8 minutes on one H200): build tensorsmith with CUDA, run the acceptance gate
# for every CUDA kernel (differential against numpy, compute-sanitizer when installed), run the CUDA tests,
# then benchmark each family against PyTorch on the same GPU. Everything printed is also written to OUT_DIR.
#
#   scripts/device_check.sh [OUT_DIR]        (default build/device-check)
#
# Needs nvcc, a CUDA device, and the build requirements (requirements-build.txt) importable by python3;
# PyTorch is optional (the benchmark then times tensorsmith alone). On a machine without network, carry
# missing wheels and install them first (README: "CUDA").
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-build/device-check}"
mkdir -p "$out"
python="${PYTHON:-python3}"
status=0

step() {  # step NAME COMMAND...: runs it, logs to OUT_DIR/NAME.log and the terminal, remembers a failure
  local name="$1"
  shift
  echo "=== $name: $*" | tee -a "$out/summary.log"
  local started=$SECONDS
  "$@" 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "=== $name: exit $rc in $((SECONDS - started)) s" | tee -a "$out/summary.log"
  [ "$rc" -eq 0 ] || status=1
  return "$rc"
}

nvidia-smi -L 2>&1 | tee "$out/gpu.txt" || true
# Only the architecture of the GPU at hand: the check builds in half the time of the release's 80;90.
arch="$("$python" - <<'PY' 2>/dev/null || true
import ctypes
cuda = ctypes.CDLL("libcuda.so.1")
major, minor = ctypes.c_int(), ctypes.c_int()
cuda.cuInit(0)
cuda.cuDeviceComputeCapability(ctypes.byref(major), ctypes.byref(minor), 0)
print(f"{major.value}{minor.value}")
PY
)"
export TS_CUDA=1 TS_CUDA_ARCHITECTURES="${TS_CUDA_ARCHITECTURES:-${arch:-90}}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"

step build "$python" -m pip install --no-build-isolation --no-deps -e . || { echo "build failed: see $out/build.log"; exit 1; }
step cuda-available "$python" -c "import tensorsmith as ts; assert ts.cuda.is_available(), 'no CUDA device visible'; print(ts.cuda.device_count(), 'device(s)')" \
  || { echo "no CUDA device: nothing more to check"; exit 1; }
step gate "$python" -m tensorsmith_forge.generator validate --device cuda --jobs "$(nproc)" --json "$out/gate-cuda.json"
step tests "$python" -m pytest -q -p no:cacheprovider -n 0 -rs tests/runtime/test_cuda_runtime.py tests/runtime/test_cuda_ops.py
step bench "$python" benchmarks/bench_cuda.py --json "$out/bench-cuda.json"
echo "device check: $([ $status -eq 0 ] && echo passed || echo FAILED); logs and JSON in $out" | tee -a "$out/summary.log"
exit $status
