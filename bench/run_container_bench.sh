#!/usr/bin/env bash
# Container job overhead (issue 17), written to bench/results/containers.md: on one idle
# `gpufleet up` (simulated GPUs, SQLite), N one-at-a-time jobs of each kind, alternating host and
# container so both see the same machine:
#  - submit -> running (start_ms - submit_ms: the controller saw the job's process started; for a
#    container, `podman run` started);
#  - submit -> ended for a job that prints one line (end_ms - submit_ms: the whole life of a job
#    that does nothing, which for a container includes creating, starting, stopping and removing
#    it).
#  - submit -> the job's command runs (it prints /proc/uptime, the kernel's clock in both).
# Host: `sh -c 'cat /proc/uptime'`; container: the same in an image imported from busybox-static. Needs
# build/ (bash scripts/setup.sh --tests), podman, runc and busybox-static; runs as root.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
n=${N:-20}
bin=$PWD/build/gpufleet
out=bench/results/containers.md
cmake --build build --target gpufleet gpufleet-full gpufleet-shim -j2 >/dev/null
command -v podman >/dev/null || { echo "run_container_bench: podman is not installed" >&2; exit 1; }
work=$(mktemp -d /tmp/gfcb.XXXX)
image=localhost/gpufleet-bench:1
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  podman rmi -f "$image" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=bench/bench_lib.sh
source bench/bench_lib.sh
cat >"$work/containers.conf" <<'EOF'
[containers]
default_ulimits = []
log_driver = "k8s-file"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
export CONTAINERS_CONF=$work/containers.conf
mkdir -p "$work/rootfs/bin" "$work/rootfs/tmp"
cp /bin/busybox "$work/rootfs/bin/busybox"
(cd "$work/rootfs/bin" && for c in sh echo true; do ln -sf busybox $c; done)
tar -C "$work/rootfs" -cf "$work/rootfs.tar" .
podman import "$work/rootfs.tar" "$image" >/dev/null
"$bin" up --data-dir "$work/up" --listen 127.0.0.1:0 --simulated-gpus 8 --allow-root-jobs \
  --container-allow-image localhost/gpufleet-bench >"$work/up.log" 2>&1 &
pid=$!
wait_file "$work/up/server"
export GPUFLEET_DATA_DIR=$work/up
# Prints "<running ms> <ended ms> <command ran ms>" of one job submitted with the arguments
# given. The job prints the host's /proc/uptime (the kernel's, the same inside a container), so
# "command ran" is when the job's own command read it, from just before the submit (10 ms steps).
one() {
  local id u0 u1
  u0=$(cut -d' ' -f1 /proc/uptime)
  id=$("$bin" submit --json "$@" -- sh -c 'cat /proc/uptime' | sed 's/[^0-9]//g')
  while ! "$bin" show --json "$id" | grep -q '"state": "SUCCEEDED"'; do sleep 0.01; done
  u1=$("$bin" logs "$id" | grep -Eo '^[0-9]+\.[0-9]+' | head -1)
  "$bin" show --json "$id" | awk -F': ' -v u0="$u0" -v u1="$u1" '/"start_ms"/ {gsub(",","",$2); s=$2}
    /"submit_ms"/ {gsub(",","",$2); u=$2} /"end_ms"/ {gsub(",","",$2); e=$2}
    END {printf "%d %d %d\n", s-u, e-u, (u1-u0)*1000}'
}
one >/dev/null
one --image "$image" >/dev/null  # warm: the image's layers read once
: >"$work/host"
: >"$work/container"
for _ in $(seq "$n"); do
  one >>"$work/host"
  one --image "$image" >>"$work/container"
done
col() { awk -v c="$1" '{print $c}' "$2" | median; }
hr=$(col 1 "$work/host"); he=$(col 2 "$work/host"); hc=$(col 3 "$work/host")
cr=$(col 1 "$work/container"); ce=$(col 2 "$work/container"); cc=$(col 3 "$work/container")
{
  echo "# Container jobs: start overhead against host jobs"
  echo
  echo "\`bash bench/run_container_bench.sh\` (N=$n), $(date -u +%Y-%m-%d), $(nproc) cores,"
  echo "podman $(podman --version | awk '{print $3}') with runc, rootful, cgroup $(stat -fc %T /sys/fs/cgroup | sed 's/tmpfs/v1/;s/cgroup2fs/v2/');"
  echo "one idle \`gpufleet up\` on SQLite, simulated GPUs; host and container jobs alternate."
  echo
  echo "| median of $n (ms) | host job | container job | container - host |"
  echo "|---|---|---|---|"
  echo "| submit -> running | $hr | $cr | $((cr - hr)) |"
  echo "| submit -> the job's command runs | $hc | $cc | $((cc - hc)) |"
  echo "| submit -> ended, a job that prints one line | $he | $ce | $((ce - he)) |"
  echo
  echo "Running is when the agent reported the job's process started: for a container, the"
  echo "runtime's \`run\` (the container itself starts after). Ended includes, for a container,"
  echo "creating, starting and stopping it and the shim's \`podman rm\` before the exit is recorded."
  echo "\"The job's command runs\" counts from just before the \`gpufleet submit\` process starts"
  echo "(its own start-up included), the other two from the controller's submit time: compare rows"
  echo "across the two kinds of job, not down a column. Of a container's extra time before its"
  echo "command runs, most is podman's (image mount, runc create and start, conmon)."

  echo
  echo "Samples (running ended command), host: $(tr '\n' ';' <"$work/host")"
  echo
  echo "Samples (running ended command), container: $(tr '\n' ';' <"$work/container")"
} >"$out"
cat "$out"
