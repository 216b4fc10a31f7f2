#!/usr/bin/env bash
# gpufleet exec provider for Google Compute Engine (see src/cloud/exec_provider.h for the
# contract):
#   gcp-compute.sh create --group G --name N [--spot]   gcp-compute.sh delete --name N
#   gcp-compute.sh list
#
# UNTESTED against a real Google Cloud project: written against the Google Cloud CLI (gcloud)
# 460 and jq 1.6 from their documentation. Try it on a test project before relying on it.
#
# What it expects:
#   - `gcloud` authenticated for the project (a service account of the controller's machine, or
#     `gcloud auth login`) and `jq`;
#   - an image with the NVIDIA driver and `gpufleet` installed at /usr/local/bin/gpufleet (this
#     script installs nothing);
#   - in the environment, or in the file $CLOUD_ENV_FILE (default /etc/gpufleet/gcp-compute.env):
#       GCE_PROJECT        the project id
#       GCE_ZONE           the zone instances are created in (one zone per script)
#       GCE_IMAGE          the image (projects/P/global/images/I, or a family: set
#                          GCE_IMAGE_FAMILY and GCE_IMAGE_PROJECT instead)
#       GCE_NETWORK, GCE_SUBNET   optional: the VPC network and subnet (default: "default")
#       FLEET              optional: labels this fleet's instances (default "gpufleet"), so
#                          that `list` sees no other fleet's
#   - a machine type (and, for N1 types, accelerators) for every node group in [[groups]] of
#     the autoscale file: edit machine_type() below.
#
# Instance names are gpufleet's node names, which Compute Engine accepts when they start with a
# letter. The join token reaches the instance in its startup-script metadata (readable from the
# instance's metadata server and by principals allowed compute.instances.get): it is
# single-use, and spent at the agent's first start. Spot VMs get no advance notice here (Compute
# Engine gives 30 s, to the instance only), so `list` reports no interruption_at.
set -euo pipefail

env_file=${CLOUD_ENV_FILE:-/etc/gpufleet/gcp-compute.env}
# shellcheck disable=SC1090
if [ -r "$env_file" ]; then . "$env_file"; fi
fleet=${FLEET:-gpufleet}

die() { echo "gcp-compute.sh: $*" >&2; exit 1; }
# shellcheck source=scripts/cloud/agent-boot.sh
. "$(dirname "${BASH_SOURCE[0]}")/agent-boot.sh"
command -v gcloud >/dev/null || die "the Google Cloud CLI (gcloud) is not installed"
command -v jq >/dev/null || die "jq is not installed"
: "${GCE_PROJECT:?set GCE_PROJECT}" "${GCE_ZONE:?set GCE_ZONE}"
where=(--project "$GCE_PROJECT" --zone "$GCE_ZONE")

# Prints the gcloud flags of group $1's machine: the A2/A3/G2 types include their GPUs.
machine_type() {
  case "$1" in
    a100-8) echo --machine-type=a2-ultragpu-8g ;;
    h100-8) echo --machine-type=a3-highgpu-8g ;;
    l4-1) echo --machine-type=g2-standard-8 ;;
    t4-1) echo --machine-type=n1-standard-8 --accelerator=type=nvidia-tesla-t4,count=1 ;;
    *) die "no machine type for group '$1': add it to machine_type()" ;;
  esac
}

exists() {
  [ -n "$(gcloud compute instances list --project "$GCE_PROJECT" --format='value(name)' \
          --filter="name=$1 AND zone:$GCE_ZONE AND labels.gpufleet-fleet=$fleet")" ]
}

cmd_create() {
  local group name spot
  parse_create_args "$@"
  [[ "$name" =~ ^[a-z]([-a-z0-9]*[a-z0-9])?$ ]] ||
    die "create: '$name' is no Compute Engine instance name (a letter first, no '-' last)"
  : "${GPUFLEET_CONTROLLER_URL:?}" "${GPUFLEET_JOIN_TOKEN:?}"
  # Idempotent: a retry after a timeout must not create a second instance.
  if exists "$name"; then printf '{"name": "%s"}\n' "$name"; exit 0; fi
  local machine
  machine=$(machine_type "$group")
  script=$(mktemp)
  trap 'rm -f "$script"' EXIT
  agent_boot_script "$name" > "$script"
  # shellcheck disable=SC2206  # the flags machine_type printed, a word each
  local args=($machine
              --network="${GCE_NETWORK:-default}"
              --labels="gpufleet-fleet=$fleet,gpufleet-name=$name,gpufleet-group=$group"
              --metadata-from-file="startup-script=$script"
              --maintenance-policy=TERMINATE)
  if [ -n "${GCE_SUBNET:-}" ]; then args+=(--subnet="$GCE_SUBNET"); fi
  if [ -n "${GCE_IMAGE:-}" ]; then
    args+=(--image="$GCE_IMAGE")
  else
    : "${GCE_IMAGE_FAMILY:?set GCE_IMAGE or GCE_IMAGE_FAMILY}" "${GCE_IMAGE_PROJECT:?}"
    args+=(--image-family="$GCE_IMAGE_FAMILY" --image-project="$GCE_IMAGE_PROJECT")
  fi
  if $spot; then args+=(--provisioning-model=SPOT --instance-termination-action=DELETE); fi
  gcloud compute instances create "$name" "${where[@]}" "${args[@]}" --format=none --quiet
  printf '{"name": "%s"}\n' "$name"
}

cmd_delete() {
  if [ "${1:-}" != --name ] || [ -z "${2:-}" ]; then die "delete: usage: delete --name N"; fi
  exists "$2" || exit 0  # gone already
  gcloud compute instances delete "$2" "${where[@]}" --quiet --format=none
}

cmd_list() {
  gcloud compute instances list --project "$GCE_PROJECT" --format=json \
    --filter="zone:$GCE_ZONE AND labels.gpufleet-fleet=$fleet" |
    jq '{instances: [.[] | select(.labels["gpufleet-name"] != null)
          | {name: .labels["gpufleet-name"], group: (.labels["gpufleet-group"] // ""),
             spot: (.scheduling.provisioningModel == "SPOT"),
             state: (if .status == "PROVISIONING" or .status == "STAGING" then "pending"
                     elif .status == "RUNNING" then "running" else "stopping" end)}]}'
}

case "${1:-}" in
  create) shift; cmd_create "$@" ;;
  delete) shift; cmd_delete "$@" ;;
  list) shift; cmd_list ;;
  *) die "usage: gcp-compute.sh create --group G --name N [--spot] | delete --name N | list" ;;
esac
