#!/usr/bin/env bash
# Usage: ddp_netns_check.sh GPUFLEET_BINARY
# A real two-node PyTorch DDP job (gloo on CPU, Debian's python3-torch) under gpufleet, with each
# agent in a network namespace of its own, as on two hosts (issue 12, section 8): a controller on
# a bridge in this namespace, agents "ddp-a" and "ddp-b" behind veth pairs. The host name (shared:
# the namespaces have no UTS namespace of their own) maps to a loopback address, as on Debian; the
# job sets no socket interface, so it works only if gpufleet sets GLOO_SOCKET_IFNAME to the
# interface holding each node's advertise address. Checks that the job ends SUCCEEDED and that
# both ranks report the same world size and the same all-reduced sum. (`ip netns exec` mounts a
# sysfs of its own, without /sys/fs/cgroup: these agents run jobs without cgroups, measured from
# /proc.)
# Exits 77 (skipped) without root, `ip`, or python3-torch (scripts/setup.sh --tests installs it).
set -euo pipefail
bin=$1
if [ "$(id -u)" -ne 0 ]; then echo "SKIPPED: needs root (network namespaces)"; exit 77; fi
if ! command -v ip >/dev/null; then echo "SKIPPED: ip (iproute2) is not installed"; exit 77; fi
# Debian's python3 (the one python3-torch is for), ahead of any other on PATH (pyenv, venvs).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! "$py" -c 'import torch.distributed' 2>/dev/null; then
  echo "SKIPPED: python3-torch is not installed (scripts/setup.sh --tests installs it)"
  exit 77
fi

# Names unique to this run, short enough for interface names (15 characters at most).
tag=$$
ns_a=gfa$tag ns_b=gfb$tag br=gfbr$tag
net=10.231.$((tag % 200 + 20))  # a /24 this test makes for itself, inside this machine only
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns pids "$ns_a" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns pids "$ns_b" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  wait 2>/dev/null || true
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
  ip link del "$br" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do echo "--- $f"; tail -30 "$f"; done
  exit 1
}

# The bridge (the "switch" between the hosts) and one veth pair per namespace.
ip link add "$br" type bridge
ip addr add "$net.1/24" dev "$br"
ip link set "$br" up
for ns in "$ns_a" "$ns_b"; do
  ip netns add "$ns"
  ip link add "v$ns" type veth peer name eth0 netns "$ns"
  ip link set "v$ns" master "$br"
  ip link set "v$ns" up
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
done
ip -n "$ns_a" addr add "$net.2/24" dev eth0
ip -n "$ns_b" addr add "$net.3/24" dev eth0

# The controller on the bridge (https: it listens beyond loopback); its admin token for the agents.
"$bin" controller --data-dir "$work/ctl" --listen "$net.1:0" --lease 10 >"$work/controller.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/ctl/server" ] && break; sleep 0.1; done
[ -s "$work/ctl/server" ] || fail "the controller did not start"
url=$(cat "$work/ctl/server")
case $url in https://*) ;; *) fail "expected an https controller beyond loopback, got $url" ;; esac

for node in a b; do
  ns=$ns_a addr=$net.2
  if [ $node = b ]; then ns=$ns_b addr=$net.3; fi
  ip netns exec "$ns" "$bin" agent --controller "$url" --token-file "$work/ctl/token" \
    --ca "$work/ctl/tls/ca.pem" --hostname "ddp-$node" --advertise-address "$addr" \
    --data-dir "$work/$node" --listen "$addr:0" --simulated-gpus 1 --heartbeat 0.2 \
    --allow-root-jobs >"$work/agent-$node.log" 2>&1 &
  pids+=($!)
done
export GPUFLEET_DATA_DIR=$work/ctl
ready=0
for _ in $(seq 150); do
  ready=$("$bin" nodes --json 2>/dev/null | "$py" -c \
    'import json,sys; print(sum(n["state"] == "READY" for n in json.load(sys.stdin)))' || echo 0)
  [ "$ready" = 2 ] && break
  sleep 0.2
done
[ "$ready" = 2 ] || fail "the two agents did not join ($ready ready)"

# The job: one process per node (one GPU each), env:// rendezvous on the variables gpufleet sets;
# one all-reduce through a DDP model's gradient sync, then a plain one.
cat >"$work/ddp.py" <<'EOF'
import os
import torch
import torch.distributed as dist
dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
model(torch.ones(2, 4)).sum().backward()
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
print(f"rank={rank} world={world} sum={int(total.item())} "
      f"ifname={os.environ.get('GLOO_SOCKET_IFNAME', '-')} master={os.environ['MASTER_ADDR']}",
      flush=True)
dist.destroy_process_group()
EOF
chmod 644 "$work/ddp.py"
id=$("$bin" submit --json --nodes 2 --gpus 1 --name ddp -- "$py" "$work/ddp.py" |
  "$py" -c 'import json,sys; print(json.load(sys.stdin)["id"])') || fail "submit failed"
state=""
for _ in $(seq 600); do
  state=$("$bin" show --json "$id" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["state"])')
  case $state in SUCCEEDED | FAILED | CANCELLED | LOST) break ;; esac
  sleep 0.2
done
"$bin" show "$id" >"$work/job.log" 2>&1 || true
"$bin" logs "$id" >"$work/rank0.log" 2>&1 || true
cp "$work/ctl/logs/$id.rank1.log" "$work/rank1.log" 2>/dev/null || true
[ "$state" = SUCCEEDED ] || fail "job $id ended $state"
# MASTER_ADDR is the advertise address of the node rank 0 was placed on (either namespace).
master=$("$bin" show --json "$id" | "$py" -c '
import json, sys
first = json.load(sys.stdin)["node"].split(",")[0]
print({"ddp-a": "'"$net"'.2", "ddp-b": "'"$net"'.3"}[first])')
for rank in 0 1; do
  grep -q "^rank=$rank world=2 sum=3 ifname=eth0 master=$master$" "$work/rank$rank.log" ||
    fail "rank $rank did not report world=2 sum=3 over eth0 with MASTER_ADDR $master"
done
echo "PASS: a 2-node gloo DDP job across two network namespaces ended SUCCEEDED; both ranks:"
cat "$work/rank0.log" "$work/rank1.log"
