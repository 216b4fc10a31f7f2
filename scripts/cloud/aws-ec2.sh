#!/usr/bin/env bash
# gpufleet exec provider for AWS EC2 (see src/cloud/exec_provider.h for the contract):
#   aws-ec2.sh create --group G --name N [--spot]   aws-ec2.sh delete --name N   aws-ec2.sh list
#
# UNTESTED against a real AWS account: written against AWS CLI v2 (2.15) and jq 1.6 from their
# documentation. Try it on a test account, with small instance types, before relying on it.
#
# What it expects:
#   - `aws` configured for the account (credentials and region: AWS_PROFILE, AWS_REGION, or
#     ~/.aws of the controller's user) and `jq`;
#   - an AMI with the NVIDIA driver and `gpufleet` installed at /usr/local/bin/gpufleet (this
#     script installs nothing);
#   - in the environment, or in the file $CLOUD_ENV_FILE (default /etc/gpufleet/aws-ec2.env):
#       EC2_AMI              the AMI id (ami-...)
#       EC2_SUBNET           the subnet id (subnet-...)
#       EC2_SECURITY_GROUPS  security group ids, separated by spaces (the agent must reach the
#                            controller's URL; nothing needs to reach the agent but other nodes
#                            of multi-node jobs)
#       EC2_KEY_NAME         optional: an SSH key pair name
#       FLEET                optional: tags this fleet's instances (default "gpufleet"), so that
#                            `list` sees no other fleet's
#   - an instance type for every node group in [[groups]] of the autoscale file: edit
#     instance_type() below (or set EC2_TYPE_<group, with '-' as '_'>, e.g. EC2_TYPE_a100_8).
#
# The join token reaches the instance in its user data (readable from the instance's metadata
# service and by principals allowed ec2:DescribeInstanceAttribute): it is single-use, and spent
# at the agent's first start.
set -euo pipefail

env_file=${CLOUD_ENV_FILE:-/etc/gpufleet/aws-ec2.env}
# shellcheck disable=SC1090
if [ -r "$env_file" ]; then . "$env_file"; fi
fleet=${FLEET:-gpufleet}

die() { echo "aws-ec2.sh: $*" >&2; exit 1; }
# shellcheck source=scripts/cloud/agent-boot.sh
. "$(dirname "${BASH_SOURCE[0]}")/agent-boot.sh"
command -v aws >/dev/null || die "the AWS CLI (aws) is not installed"
command -v jq >/dev/null || die "jq is not installed"

instance_type() {
  local var="EC2_TYPE_${1//-/_}"
  if [ -n "${!var:-}" ]; then echo "${!var}"; return; fi
  case "$1" in
    a100-8) echo p4de.24xlarge ;;
    h100-8) echo p5.48xlarge ;;
    l4-1) echo g6.xlarge ;;
    a10g-1) echo g5.xlarge ;;
    *) die "no instance type for group '$1': add it to instance_type() or set $var" ;;
  esac
}

# The instance ids (not terminated) tagged with this fleet and gpufleet-name $1.
ids_of() {
  aws ec2 describe-instances --output json \
    --filters "Name=tag:gpufleet-fleet,Values=$fleet" "Name=tag:gpufleet-name,Values=$1" \
              "Name=instance-state-name,Values=pending,running,stopping,stopped,shutting-down" \
    | jq -r '.Reservations[].Instances[].InstanceId'
}

cmd_create() {
  local group name spot
  parse_create_args "$@"
  : "${EC2_AMI:?set EC2_AMI}" "${EC2_SUBNET:?set EC2_SUBNET}"
  : "${EC2_SECURITY_GROUPS:?set EC2_SECURITY_GROUPS}"
  : "${GPUFLEET_CONTROLLER_URL:?}" "${GPUFLEET_JOIN_TOKEN:?}"
  # Idempotent: a retry after a timeout must not buy a second instance.
  if [ -n "$(ids_of "$name")" ]; then printf '{"name": "%s"}\n' "$name"; exit 0; fi
  local type
  type=$(instance_type "$group")
  data=$(mktemp)
  trap 'rm -f "$data"' EXIT
  agent_boot_script "$name" > "$data"
  local args=(--image-id "$EC2_AMI" --instance-type "$type" --count 1
              --subnet-id "$EC2_SUBNET" --user-data "file://$data"
              --tag-specifications
              "ResourceType=instance,Tags=[{Key=Name,Value=$name},{Key=gpufleet-name,Value=$name},{Key=gpufleet-group,Value=$group},{Key=gpufleet-fleet,Value=$fleet}]")
  # shellcheck disable=SC2206  # a list of ids separated by spaces
  local groups=($EC2_SECURITY_GROUPS)
  args+=(--security-group-ids "${groups[@]}")
  if [ -n "${EC2_KEY_NAME:-}" ]; then args+=(--key-name "$EC2_KEY_NAME"); fi
  if $spot; then
    args+=(--instance-market-options
           'MarketType=spot,SpotOptions={SpotInstanceType=one-time,InstanceInterruptionBehavior=terminate}')
  fi
  aws ec2 run-instances --output json "${args[@]}" >/dev/null
  printf '{"name": "%s"}\n' "$name"
}

cmd_delete() {
  if [ "${1:-}" != --name ] || [ -z "${2:-}" ]; then die "delete: usage: delete --name N"; fi
  local ids
  ids=$(ids_of "$2")
  [ -z "$ids" ] && exit 0  # gone already
  # shellcheck disable=SC2086  # one id a word
  aws ec2 terminate-instances --output json --instance-ids $ids >/dev/null
}

cmd_list() {
  local instances notices
  instances=$(aws ec2 describe-instances --output json \
    --filters "Name=tag:gpufleet-fleet,Values=$fleet" \
              "Name=instance-state-name,Values=pending,running,stopping,stopped,shutting-down")
  # A spot instance marked for termination has its 2-minute notice: its request's status says
  # so, from the time of the update.
  notices=$(aws ec2 describe-spot-instance-requests --output json \
    --filters "Name=tag:gpufleet-fleet,Values=$fleet" "Name=status-code,Values=marked-for-termination" \
    2>/dev/null || echo '{"SpotInstanceRequests": []}')
  jq -n --argjson inst "$instances" --argjson spot "$notices" '
    def tag($k): (.Tags // []) | map(select(.Key == $k)) | (.[0].Value // "");
    def seconds: sub("\\.[0-9]+"; "") | sub("\\+00:00$"; "Z") | fromdateiso8601;
    ($spot.SpotInstanceRequests
      | map({key: .InstanceId, value: ((.Status.UpdateTime | seconds) + 120)}) | from_entries)
      as $notice
    | {instances: [$inst.Reservations[].Instances[]
        | select(tag("gpufleet-name") != "")
        | {name: tag("gpufleet-name"), group: tag("gpufleet-group"),
           spot: (.InstanceLifecycle == "spot"),
           state: (if .State.Name == "pending" then "pending"
                   elif .State.Name == "running" then "running" else "stopping" end)}
          + (if $notice[.InstanceId] then {interruption_at: $notice[.InstanceId]} else {} end)]}'
}

case "${1:-}" in
  create) shift; cmd_create "$@" ;;
  delete) shift; cmd_delete "$@" ;;
  list) shift; cmd_list ;;
  *) die "usage: aws-ec2.sh create --group G --name N [--spot] | delete --name N | list" ;;
esac
