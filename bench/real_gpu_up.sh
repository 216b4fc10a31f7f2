# Sourced by the bench/real_gpu_*.sh checks: starts `gpufleet up` on a fresh data directory
# (its log in $1/up.log, listening on 127.0.0.1:$2), waits for it, and defines `g COMMAND ARGS`
# (a gpufleet client command against it) and `stop_up`. Sets $u (the data directory) and $up.
start_up() {
  u=$(mktemp -d)
  ./build/gpufleet up --data-dir "$u" --listen "127.0.0.1:$2" --allow-root-jobs >"$1/up.log" 2>&1 &
  up=$!
  for _ in $(seq 100); do [ -s "$u/server" ] && break; sleep 0.2; done
}
g() { local command=$1; shift; ./build/gpufleet "$command" --data-dir "$u" "$@"; }
stop_up() { kill "$up"; sleep 1; }
