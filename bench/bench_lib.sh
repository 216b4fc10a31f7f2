# Shell functions the controller benchmarks share (sourced; needs $bin, the gpufleet binary).

# Waits up to 10 s for file $1 to exist and be non-empty.
wait_file() { for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }

# The median of the numbers on standard input, one a line.
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# submit_load on the server of data directory $1 with $2 clients for $3 s: prints jobs/s.
load() {
  { ./build/bench/submit_load "$(cat "$1/server")" "$(cat "$1/token")" "$2" "$3" || true; } |
    sed 's/.*, \([0-9]*\) jobs\/s/\1/'
}

# Median submit -> running (ms) of 30 one-at-a-time jobs on the server of data directory $1.
latency() {
  local lat=() id
  for _ in $(seq 30); do
    id=$(GPUFLEET_DATA_DIR=$1 "$bin" submit --json -- true | sed 's/[^0-9]//g')
    while ! GPUFLEET_DATA_DIR=$1 "$bin" show --json "$id" | grep -q '"state": "SUCCEEDED"'; do
      sleep 0.01
    done
    lat+=("$(GPUFLEET_DATA_DIR=$1 "$bin" show --json "$id" |
      awk -F': ' '/"start_ms"/ {gsub(",","",$2); s=$2} /"submit_ms"/ {gsub(",","",$2); u=$2} END {print s-u}')")
  done
  printf '%s\n' "${lat[@]}" | median
}
