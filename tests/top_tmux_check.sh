#!/usr/bin/env bash
# Usage: top_tmux_check.sh GPUFLEET_BINARY FAKE_NVML_DIR SCENARIO
# Drives the live `gpufleet top` in a real terminal (tmux) on the fake NVML library: the screen
# shows the GPUs and processes, 's' re-sorts, a resize redraws to the new width, 'q' quits.
# Exits 77 (skipped) when tmux is not installed.
set -euo pipefail
bin=$1
fake_dir=$2
scenario=$3
command -v tmux >/dev/null || { echo "SKIPPED: tmux is not installed"; exit 77; }
socket="gpufleet-top-test-$$"
tmux_() { tmux -L "$socket" -f /dev/null "$@"; }
trap 'tmux_ kill-server 2>/dev/null || true' EXIT
fail() {
  echo "FAIL: $*"
  echo "--- screen:"
  tmux_ capture-pane -p -t top 2>/dev/null || true
  exit 1
}
# Waits until the screen contains $1.
wait_for() {
  for _ in $(seq 100); do
    if tmux_ capture-pane -p -t top 2>/dev/null | grep -qF -- "$1"; then return 0; fi
    sleep 0.1
  done
  fail "the screen never showed '$1'"
}

tmux_ new-session -d -s top -x 110 -y 30 \
  "env LD_LIBRARY_PATH='$fake_dir' FAKE_NVML_SCENARIO='$scenario' '$bin' top --interval 0.2"
wait_for "NVML driver 550.54.15"
wait_for "4242"
screen=$(tmux_ capture-pane -p -t top)
echo "$screen" | grep -qF "NVIDIA H100 80GB HBM3" || fail "no GPU name"
echo "$screen" | grep -qF "sorted by GPU memory" || fail "not sorted by memory at start"
# The scenario raises XID 79 on GPU 0 at second 2: the event thread marks it at once.
wait_for "UNHEALTHY: XID 79"

tmux_ send-keys -t top s
wait_for "sorted by SM%"

tmux_ resize-window -t top -x 60 -y 20
sleep 0.6
screen=$(tmux_ capture-pane -p -t top)
# At 60 columns every GPU's second line must still start the row: nothing wrapped.
echo "$screen" | grep -A1 "^ 0  NVIDIA" | tail -1 | grep -q "^    UTIL \[" ||
  fail "after resizing to 60 columns the GPU block wrapped"
width=$(echo "$screen" | wc -L)
[ "$width" -le 60 ] || fail "a line is $width columns wide in a 60-column terminal"

tmux_ send-keys -t top q
for _ in $(seq 50); do
  tmux_ has-session -t top 2>/dev/null || { echo "PASS: top drew, sorted, resized and quit"; exit 0; }
  sleep 0.1
done
fail "'q' did not quit"
