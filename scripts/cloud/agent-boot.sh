# shellcheck shell=bash
# Shared by the example provider scripts beside it (sourced; each defines `die` first).

# Prints the boot script of instance $1: it starts `gpufleet agent` (as a systemd unit that
# restarts on failure) joining $GPUFLEET_CONTROLLER_URL as node $1. The single-use join token goes
# in a root-only file the unit reads (EnvironmentFile), not on a command line nor in the unit's
# own Environment, which `systemctl show` gives every local account; $GPUFLEET_CA_FILE, when set,
# is copied in.
# Safe to run at every boot: a restarted agent uses the node credential it saved at the join.
agent_boot_script() {
  local name=$1 ca_line="" ca_flag=""
  if [ -n "${GPUFLEET_CA_FILE:-}" ]; then
    [ -r "$GPUFLEET_CA_FILE" ] || die "GPUFLEET_CA_FILE $GPUFLEET_CA_FILE is not readable"
    ca_line="mkdir -p /etc/gpufleet && printf '%s\\n' $(printf '%q' "$(cat "$GPUFLEET_CA_FILE")") > /etc/gpufleet/controller-ca.pem"
    ca_flag="--ca /etc/gpufleet/controller-ca.pem"
  fi
  cat <<SCRIPT
#!/bin/bash
set -eu
systemctl is-active --quiet gpufleet-agent && exit 0
$ca_line
mkdir -p /etc/gpufleet
(umask 077 && printf 'GPUFLEET_JOIN_TOKEN=%s\\n' $(printf '%q' "$GPUFLEET_JOIN_TOKEN") > /etc/gpufleet/join.env)
systemd-run --unit=gpufleet-agent --property=Restart=on-failure \\
  --property=EnvironmentFile=/etc/gpufleet/join.env \\
  /usr/local/bin/gpufleet agent --controller $(printf '%q' "$GPUFLEET_CONTROLLER_URL") \\
  --hostname $(printf '%q' "$name") \\
  --data-dir /var/lib/gpufleet/agent $ca_flag
SCRIPT
}

# Parses `create`'s arguments (--group G --name N [--spot]) into $group, $name and $spot.
# shellcheck disable=SC2034  # the caller reads them
parse_create_args() {
  group="" name="" spot=false
  while [ $# -gt 0 ]; do
    case "$1" in
      --group) group=$2; shift 2 ;;
      --name) name=$2; shift 2 ;;
      --spot) spot=true; shift ;;
      *) die "create: unknown argument '$1'" ;;
    esac
  done
  if [ -z "$group" ] || [ -z "$name" ]; then die "create: --group and --name are required"; fi
}
