#!/bin/sh
# Usage: placement_report_check.sh GPUFLEET_BINARY OPENB_TRACE_DIR
# Checks that bestfit, fgd and gpupacking match the published curves for seeds 42..44 on the
# default openb trace. Exits 77 (a skip for CTest) when the traces are not there.
set -u
bin=$1
traces=$2
if [ ! -f "$traces/openb_node_list_gpu_node.csv" ]; then
  echo "SKIPPED: ../shared/traces not found: $traces/openb_node_list_gpu_node.csv is absent"
  exit 77
fi
exec "$bin" sim placement-report --traces "$traces" --policies bestfit,fgd,gpupacking \
  --trace openb_pod_list_default --seeds 3 --out '' --check --threads 2
