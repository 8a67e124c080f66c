#!/usr/bin/env bash
# apply.sh PLAN_FILE DIGEST — apply the reviewed plan, and only it.
#
# toque refuses the plan file unless its digest is DIGEST (the one in the
# reviewed comment), unless its checksum holds, and unless the host still
# matches it (a stale plan exits 3: plan again in a new pull request).
# Progress is written as JSON events (docs/apply-json.md) to APPLY_EVENTS
# (default apply.jsonl) and summarised in the log.
#
# Environment: TOQUE (default "toque"), APPLY_EVENTS.
set -euo pipefail

plan=${1:?usage: apply.sh PLAN_FILE DIGEST}
digest=${2:-}
toque=${TOQUE:-toque}
events=${APPLY_EVENTS:-apply.jsonl}

if [ -z "$digest" ]; then
  echo "apply.sh: no reviewed digest: refusing to apply a plan nobody approved" >&2
  exit 1
fi
if [ ! -f "$plan" ]; then
  echo "apply.sh: $plan does not exist" >&2
  exit 1
fi

status=0
"$toque" apply -json -expect-digest="$digest" "$plan" > "$events" || status=$?

# One readable line per event in the job log.
if command -v jq >/dev/null 2>&1; then
  jq -r '
    if .type == "resource_end" then "\(.address): \(.outcome) in \(.duration_ms) ms"
    elif .type == "already_done" then "\(.address): already done"
    elif .type == "summary" then "apply \(.outcome): \(.changed) changed, \(.failed) failed"
    elif .type == "error" then "error (\(.error_kind)): \(.message)"
    else empty end' "$events"
else
  cat "$events"
fi
exit "$status"
