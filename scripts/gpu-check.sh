#!/usr/bin/env bash
# Runs the device checks with an `islands` binary built with `--features cuda`, on a machine
# with an NVIDIA GPU and CUDA 13 (NVRTC): conformance of every arm the GPU selects, the proofs
# run on the GPU, the examples byte-compared with the CPU, and the benches.
#
#   scripts/gpu-check.sh path/to/islands [log-dir]
set -uo pipefail
bin="$1"
logs="${2:-gpu-logs}"
mkdir -p "$logs"
export CUDA_PATH="${CUDA_PATH:-/usr/local/cuda}"
status=0
run() {
  local name="$1"; shift
  echo "== islands $*" | tee "$logs/$name.txt"
  "$bin" "$@" 2>&1 | tee -a "$logs/$name.txt"
  local rc=${PIPESTATUS[0]}
  echo "(exit $rc)" | tee -a "$logs/$name.txt"
  [ "$rc" = 0 ] || status=1
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$logs/gpu.txt"
run conform conform --runtime cuda
run prove-cuda prove --runtime cuda
run example-q8 example q8-matvec --runtime cuda --rows 4096 --cols 14336 --cpu-rows 32
run example-rmsnorm example rmsnorm --runtime cuda --rows 4096 --cols 4096 --cpu-rows 8
run example-gemm example gemm-i8 --runtime cuda --rows 1024 --cols 1024 --cpu-rows 16
run bench bench --runtime cuda --rounds 11
exit $status
