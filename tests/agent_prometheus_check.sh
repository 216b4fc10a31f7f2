#!/usr/bin/env bash
# Usage: agent_prometheus_check.sh GPUFLEET_BINARY FAKE_NVML_DIR SCENARIO
# End to end: `gpufleet agent` on the fake NVML library serves /metrics; `promtool check metrics`
# accepts it (lint findings are allowed only where they come from dcgm-exporter's own naming,
# which we keep on purpose); a real Prometheus on loopback scrapes the agent and answers PromQL.
# Exits 77 (skipped) when prometheus, promtool or curl is not installed.
set -euo pipefail
bin=$1
fake_dir=$2
scenario=$3
for tool in prometheus promtool curl; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIPPED: $tool is not installed (scripts/setup.sh --tests installs it)"
    exit 77
  fi
done
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do echo "--- $f"; tail -20 "$f"; done
  exit 1
}

LD_LIBRARY_PATH="$fake_dir" FAKE_NVML_SCENARIO="$scenario" \
  "$bin" agent --listen 127.0.0.1:0 --interval 0.2 --hostname ci-node >"$work/agent.log" 2>&1 &
pids+=($!)
port=""
for _ in $(seq 100); do
  port=$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$work/agent.log")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || fail "the agent did not start"
grep -q "3 NVML GPUs (driver 550.54.15)" "$work/agent.log" || fail "the agent is not on the fake NVML"
sleep 1.5  # past scenario second 1, where the load starts

curl -sf "http://127.0.0.1:$port/metrics" >"$work/metrics.txt" || fail "GET /metrics"
set +e
promtool check metrics <"$work/metrics.txt" >"$work/promtool.log" 2>&1
rc=$?
set -e
# 0: clean; 3: lint findings only. Anything else (1) is a format error.
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "promtool rejected the exposition (rc $rc)"
# dcgm-exporter's label names are camelCase and its counters lack _total; both are kept for
# dashboard compatibility. Any other finding, or any finding on our own gpufleet_ names other than
# the inherited labels, fails.
unexpected=$(grep -v -e "label names should be written in 'snake_case' not 'camelCase'" \
  -e '^DCGM_FI_[A-Z_]* counter metrics should have "_total" suffix' \
  -e "^DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'" \
  -e '^$' "$work/promtool.log" || true)
[ -z "$unexpected" ] || fail "promtool findings: $unexpected"
echo "promtool: exposition accepted ($(wc -l <"$work/metrics.txt") lines)"

# A real Prometheus, on a loopback port of its own (retried if taken).
prom_port=""
for attempt in 1 2 3 4 5; do
  candidate=$((20000 + (RANDOM % 20000)))
  cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: gpufleet-agent
    static_configs:
      - targets: ['127.0.0.1:$port']
YAML
  prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb-$attempt" \
    --web.listen-address="127.0.0.1:$candidate" >"$work/prometheus.log" 2>&1 &
  prom_pid=$!
  for _ in $(seq 50); do
    if curl -sf "http://127.0.0.1:$candidate/-/ready" >/dev/null 2>&1; then
      prom_port=$candidate
      break
    fi
    kill -0 "$prom_pid" 2>/dev/null || break
    sleep 0.2
  done
  if [ -n "$prom_port" ]; then
    pids+=("$prom_pid")
    break
  fi
  kill "$prom_pid" 2>/dev/null || true
done
[ -n "$prom_port" ] || fail "prometheus did not start"

query() {
  curl -sf --get "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1"
}
answer=""
for _ in $(seq 60); do
  answer=$(query 'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="ci-node"}' || true)
  case "$answer" in *'"result":[{'*) break ;; esac
  sleep 0.5
done
echo "PromQL DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"}: $answer"
case "$answer" in *'"95"]'*) ;; *) fail "Prometheus did not return GPU 0's utilization of 95" ;; esac
answer=$(query 'gpufleet_process_gpu_memory_bytes{pid="4242"} / 2^20')
echo "PromQL process 4242 GPU memory (MiB): $answer"
case "$answer" in *'"38000"]'*) ;; *) fail "process 4242's GPU memory is not 38000 MiB" ;; esac
answer=$(query 'count(up{job="gpufleet-agent"} == 1)')
case "$answer" in *'"1"]'*) ;; *) fail "the scrape target is not up: $answer" ;; esac

# dcgm-exporter's published Grafana dashboard, "NVIDIA DCGM Exporter Dashboard" (grafana.com
# dashboard 12239; grafana/dcgm-exporter-dashboard.json in github.com/NVIDIA/dcgm-exporter): the
# expression of each of its 8 panels and of its 2 variable queries, written out here by hand,
# with Grafana's variables as the dashboard's "All" renders them ($Hostname: this node, $gpu: every
# GPU). Each must return data: GPUs 0 and 1 of the sample scenario are Hopper (GPM), so the
# profiling panels have data too. Older revisions of the dashboard drew "GPU Utilization" from
# DCGM_FI_DEV_GPU_UTIL; that expression is checked as well.
sel='Hostname=~"ci-node", gpu=~"0|1|2"'
panels=(
  "GPU Temperature|max(DCGM_FI_DEV_GPU_TEMP{$sel}) by (Hostname, gpu, uuid)"
  "GPU Avg. Temp|avg(DCGM_FI_DEV_GPU_TEMP{$sel})"
  "GPU Power Usage|max(DCGM_FI_DEV_POWER_USAGE{$sel}) by (Hostname, gpu, uuid)"
  "GPU Power Total|sum(max(DCGM_FI_DEV_POWER_USAGE{$sel}) by (gpu))"
  "GPU SM Clocks|max(DCGM_FI_DEV_SM_CLOCK{$sel} * 1000000) by (Hostname, UUID, gpu)"
  "GPU Utilization|max(DCGM_FI_PROF_GR_ENGINE_ACTIVE{$sel}) by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE)"
  "GPU Utilization (older revisions)|max(DCGM_FI_DEV_GPU_UTIL{$sel}) by (Hostname, gpu)"
  "Tensor Core Utilization|max(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{$sel}) by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE)"
  "GPU Framebuffer Mem Used|max(DCGM_FI_DEV_FB_USED{$sel}) by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE)"
)
# GPM's ratios need two samples: wait for the first profiling series before asking.
for _ in $(seq 40); do
  case "$(query 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE' || true)" in *'"result":[{'*) break ;; esac
  sleep 0.5
done
for panel in "${panels[@]}"; do
  title=${panel%%|*}
  expr=${panel#*|}
  answer=$(query "$expr" || true)
  case "$answer" in
    *'"result":[{'*) echo "dashboard panel \"$title\": $(echo "$answer" | grep -o '"value":\[[^]]*\]' | head -3 | tr '\n' ' ')" ;;
    *) fail "dashboard panel \"$title\" has no data: $expr -> $answer" ;;
  esac
done
# The two variable queries: label_values(DCGM_FI_DEV_FB_FREE, Hostname) and
# label_values(DCGM_FI_DEV_FB_FREE{Hostname=~"$Hostname"}, gpu), which Grafana asks of the label
# values API.
label_values() {
  curl -sf --get "http://127.0.0.1:$prom_port/api/v1/label/$1/values" --data-urlencode "match[]=$2"
}
answer=$(label_values Hostname 'DCGM_FI_DEV_FB_FREE')
echo "variable Hostname: $answer"
case "$answer" in *'"data":["ci-node"]'*) ;; *) fail "variable Hostname: $answer" ;; esac
answer=$(label_values gpu 'DCGM_FI_DEV_FB_FREE{Hostname=~"ci-node"}')
echo "variable gpu: $answer"
case "$answer" in *'"data":["0","1","2"]'*) ;; *) fail "variable gpu: $answer" ;; esac
# dcgm-exporter's default list also puts the driver version on every series as a label.
answer=$(query 'count(DCGM_FI_DEV_GPU_UTIL{DCGM_FI_DRIVER_VERSION="550.54.15"})')
case "$answer" in *'"3"]'*) ;; *) fail "DCGM_FI_DRIVER_VERSION label: $answer" ;; esac
# GPU 2 (an A100 without GPM): no made-up tensor activity, and a series that says why.
answer=$(query 'gpufleet_gpu_field_supported{gpu="2",field="DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"}')
case "$answer" in *'"0"]'*) ;; *) fail "GPU 2 should say tensor activity is unsupported: $answer" ;; esac
answer=$(query 'count(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu="2"})')
case "$answer" in *'"result":[]'*) ;; *) fail "GPU 2 exports a tensor activity: $answer" ;; esac
echo "PASS: Prometheus scraped the agent and answered PromQL, every dcgm-exporter dashboard panel included"
