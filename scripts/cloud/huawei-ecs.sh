#!/usr/bin/env bash
# gpufleet exec provider for Huawei Cloud ECS (see src/cloud/exec_provider.h for the contract):
#   huawei-ecs.sh create --group G --name N [--spot]   huawei-ecs.sh delete --name N
#   huawei-ecs.sh list
#
# UNTESTED against a real Huawei Cloud account: written against KooCLI (`hcloud`) 5.x and the
# ECS API v1 (CreateServers, ListServersDetails, DeleteServers) from their documentation, and
# jq 1.6. Try it on a test account before relying on it; `hcloud ECS <operation> --help` shows
# the parameters your KooCLI version takes.
#
# What it expects:
#   - `hcloud` configured for the account (`hcloud configure init`, or HUAWEICLOUD_SDK_AK/SK in
#     the environment) and `jq`;
#   - an image with the NVIDIA driver and `gpufleet` installed at /usr/local/bin/gpufleet (this
#     script installs nothing);
#   - in the environment, or in the file $CLOUD_ENV_FILE (default /etc/gpufleet/huawei-ecs.env):
#       ECS_REGION           the region (e.g. ap-southeast-1)
#       ECS_IMAGE            the image id
#       ECS_VPC, ECS_SUBNET  the VPC id and the subnet's network id
#       ECS_SECURITY_GROUP   optional: a security group id
#       ECS_AZ               optional: the availability zone
#       FLEET                optional: tags this fleet's servers (default "gpufleet"), so that
#                            `list` sees no other fleet's
#   - a flavor for every node group in [[groups]] of the autoscale file: edit flavor() below.
#
# The join token reaches the server in its user data (readable from the server's metadata
# service): it is single-use, and spent at the agent's first start. Spot servers get no advance
# notice through this API, so `list` reports no interruption_at.
set -euo pipefail

env_file=${CLOUD_ENV_FILE:-/etc/gpufleet/huawei-ecs.env}
# shellcheck disable=SC1090
if [ -r "$env_file" ]; then . "$env_file"; fi
fleet=${FLEET:-gpufleet}

die() { echo "huawei-ecs.sh: $*" >&2; exit 1; }
# shellcheck source=scripts/cloud/agent-boot.sh
. "$(dirname "${BASH_SOURCE[0]}")/agent-boot.sh"
command -v hcloud >/dev/null || die "KooCLI (hcloud) is not installed"
command -v jq >/dev/null || die "jq is not installed"
: "${ECS_REGION:?set ECS_REGION}"

flavor() {
  case "$1" in
    a100-8) echo p3.8xlarge.8 ;;
    v100-8) echo p2s.16xlarge.8 ;;
    t4-1) echo pi2.2xlarge.4 ;;
    *) die "no flavor for group '$1': add it to flavor()" ;;
  esac
}

# This fleet's servers, as ListServersDetails returns them (tags as "key=value" strings).
servers() {
  hcloud ECS ListServersDetails --cli-region="$ECS_REGION" --cli-output=json \
    --tags="gpufleet-fleet=$fleet" --limit=1000
}

# The ids of the servers named $1 (not deleted).
ids_of() {
  servers | jq -r --arg n "$1" '.servers[]
    | select((.tags // []) | index("gpufleet-name=" + $n)) | select(.status != "DELETED") | .id'
}

cmd_create() {
  local group name spot
  parse_create_args "$@"
  : "${ECS_IMAGE:?set ECS_IMAGE}" "${ECS_VPC:?set ECS_VPC}" "${ECS_SUBNET:?set ECS_SUBNET}"
  : "${GPUFLEET_CONTROLLER_URL:?}" "${GPUFLEET_JOIN_TOKEN:?}"
  # Idempotent: a retry after a timeout must not buy a second server.
  if [ -n "$(ids_of "$name")" ]; then printf '{"name": "%s"}\n' "$name"; exit 0; fi
  # The request goes in a file (--cli-jsonInput): the user data holds the join token, which
  # must not be on a command line.
  request=$(mktemp)
  data=$(mktemp)
  trap 'rm -f "$request" "$data"' EXIT
  agent_boot_script "$name" | base64 -w0 > "$data"
  jq -n --arg name "$name" --arg group "$group" --arg fleet "$fleet" --arg flavor "$(flavor "$group")" \
        --arg image "$ECS_IMAGE" --arg vpc "$ECS_VPC" --arg subnet "$ECS_SUBNET" \
        --arg sg "${ECS_SECURITY_GROUP:-}" --arg az "${ECS_AZ:-}" --argjson spot "$spot" \
        --rawfile data "$data" '
    {server: ({name: $name, count: 1, flavorRef: $flavor, imageRef: $image, vpcid: $vpc,
               nics: [{subnet_id: $subnet}], root_volume: {volumetype: "SSD"}, user_data: $data,
               server_tags: [{key: "gpufleet-fleet", value: $fleet},
                             {key: "gpufleet-name", value: $name},
                             {key: "gpufleet-group", value: $group}]}
              + (if $sg != "" then {security_groups: [{id: $sg}]} else {} end)
              + (if $az != "" then {availability_zone: $az} else {} end)
              + (if $spot then {extendparam: {marketType: "spot"}} else {} end))}' > "$request"
  hcloud ECS CreateServers --cli-region="$ECS_REGION" --cli-output=json \
    --cli-jsonInput="$request" >/dev/null
  printf '{"name": "%s"}\n' "$name"
}

cmd_delete() {
  if [ "${1:-}" != --name ] || [ -z "${2:-}" ]; then die "delete: usage: delete --name N"; fi
  local ids args=() i=1
  ids=$(ids_of "$2")
  [ -z "$ids" ] && exit 0  # gone already
  for id in $ids; do args+=("--servers.$i.id=$id"); i=$((i + 1)); done
  hcloud ECS DeleteServers --cli-region="$ECS_REGION" --cli-output=json \
    --delete_publicip=true --delete_volume=true "${args[@]}" >/dev/null
}

cmd_list() {
  # metadata.charging_mode "2" is a spot server.
  servers | jq '
    def tag($k): (.tags // []) | map(select(startswith($k + "="))) | (.[0] // "")
                 | sub("^[^=]*="; "");
    {instances: [.servers[] | select(.status != "DELETED") | select(tag("gpufleet-name") != "")
      | {name: tag("gpufleet-name"), group: tag("gpufleet-group"),
         spot: (.metadata.charging_mode == "2"),
         state: (if .status == "BUILD" then "pending"
                 elif .status == "ACTIVE" or .status == "REBOOT" or .status == "HARD_REBOOT"
                 then "running" else "stopping" end)}]}'
}

case "${1:-}" in
  create) shift; cmd_create "$@" ;;
  delete) shift; cmd_delete "$@" ;;
  list) shift; cmd_list ;;
  *) die "usage: huawei-ecs.sh create --group G --name N [--spot] | delete --name N | list" ;;
esac
