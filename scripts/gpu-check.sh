#!/usr/bin/env bash
# Runs the device checks with an `islands` binary built with `--features cuda,vulkan`, on a
# machine with an NVIDIA GPU, CUDA 13 (NVRTC) and NVIDIA's Vulkan driver: the float-semantics
# probe, conformance of every arm the GPU selects plus the examples, the tensor-core model over
# the adversarial tile set, and the gate, on both drivers (the records of both in
# log-dir/ledger/, one file per crate); then the examples at full size and the benches on
# CUDA, once with the ledger ignored and once with the gate's records in use.
#
#   scripts/gpu-check.sh path/to/islands [log-dir] [full|quick|perf]
#   quick: probe, conform, gate; perf: examples and benches; full: both
set -uo pipefail
bin="$1"
logs="${2:-gpu-logs}"
mode="${3:-full}"
mkdir -p "$logs"
export CUDA_PATH="${CUDA_PATH:-/usr/local/cuda}"
# Device evidence at depth 16 with a fresh seed, recorded in every log and ledger record.
export ISLANDS_DEPTH="${ISLANDS_DEPTH:-16}"
export ISLANDS_SEED="${ISLANDS_SEED:-0x$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')}"
echo "islands device checks: ISLANDS_SEED=$ISLANDS_SEED ISLANDS_DEPTH=$ISLANDS_DEPTH"
status=0
run() {
  local name="$1"; shift
  echo "== islands $*" | tee "$logs/$name.txt"
  timeout 400 "$bin" "$@" 2>&1 | tee -a "$logs/$name.txt"
  local rc=${PIPESTATUS[0]}
  echo "(exit $rc)" | tee -a "$logs/$name.txt"
  [ "$rc" = 0 ] || status=1
}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; date -u; } | tee "$logs/gpu.txt"
if [ "$mode" != perf ]; then
  run probe-vulkan probe --runtime vulkan
  run probe-cuda probe --runtime cuda
  run conform-cuda conform --runtime cuda
  run tensor-core tensor-core --runtime cuda --sample "$logs/tensor-core-data"
  run conform-vulkan conform --runtime vulkan
  run gate-cuda gate --runtime cuda --write "$logs/ledger"
  run gate-vulkan gate --runtime vulkan --write "$logs/ledger"
fi
if [ "$mode" != quick ]; then
  run example-q8-vulkan example q8-matvec --runtime vulkan --rows 4096 --cols 14336 --cpu-rows 16
  run example-rmsnorm-vulkan example rmsnorm --runtime vulkan --rows 256 --cols 4096 --cpu-rows 8
  run example-q8 example q8-matvec --runtime cuda --rows 4096 --cols 14336 --cpu-rows 32
  run example-rmsnorm example rmsnorm --runtime cuda --rows 4096 --cols 4096 --cpu-rows 8
  ISLANDS_POLICY=off run bench-policy-off bench --runtime cuda --rounds 11
  ledgers="$(ls "$logs"/ledger/*.json 2>/dev/null | tr '\n' ':')"
  ISLANDS_LEDGER="$ledgers" run bench bench --runtime cuda --rounds 11
fi
exit $status
