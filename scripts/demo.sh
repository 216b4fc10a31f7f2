#!/usr/bin/env bash
# The main job on one machine: `gpufleet up` (controller, local agent, embedded SQLite store) in
# a fresh data directory, a few jobs submitted to it, shown running and finished, then stopped.
# Without an NVIDIA driver the GPUs are simulated, and `up` says so; the jobs still run for real.
# Usage: bash scripts/demo.sh   (after bash scripts/setup.sh)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=./build/gpufleet
export GPUFLEET_DATA_DIR
GPUFLEET_DATA_DIR=$(mktemp -d)
# As root, jobs run as root only with the admin's explicit consent (--allow-root-jobs); as any
# other user they run as that user.
as_root=()
if [ "$(id -u)" -eq 0 ]; then as_root=(--allow-root-jobs); fi
"$bin" up --listen 127.0.0.1:0 "${as_root[@]}" >"$GPUFLEET_DATA_DIR/up.log" 2>&1 &
up=$!
trap 'kill $up 2>/dev/null; wait $up 2>/dev/null; rm -rf "$GPUFLEET_DATA_DIR"' EXIT
for _ in $(seq 100); do [ -s "$GPUFLEET_DATA_DIR/server" ] && break; sleep 0.1; done
cat "$GPUFLEET_DATA_DIR/up.log"

echo "== submitting four jobs"
"$bin" submit --name train-a --gpus 2 -- sh -c 'echo "training on GPUs $CUDA_VISIBLE_DEVICES"; sleep 2; echo "epoch 1 done"'
"$bin" submit --name train-b --gpus 1 --priority 5 -- sh -c 'echo "GPU $CUDA_VISIBLE_DEVICES"; sleep 1'
"$bin" submit --name eval --gpu-share 0.5 -- sh -c 'echo "a half GPU: $CUDA_VISIBLE_DEVICES"'
"$bin" submit --name broken -- sh -c 'echo "about to fail" >&2; exit 3'
sleep 0.5
echo "== gpufleet nodes"
"$bin" nodes
echo "== gpufleet jobs (while they run)"
"$bin" jobs
echo "== gpufleet logs -f 1"
"$bin" logs -f 1
echo "== gpufleet jobs (done)"
"$bin" jobs
