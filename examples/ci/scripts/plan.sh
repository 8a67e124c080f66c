#!/usr/bin/env bash
# plan.sh OUT_DIR — plan this host and prepare what a reviewer reads.
#
# Writes, in OUT_DIR:
#   plan.out     the saved plan (uploaded as an artifact, applied on merge)
#   plan.md      the plan as Markdown, for the pull-request comment
#   plan.digest  the plan's digest ("sha256:HEX"), also in plan.md
#
# Environment: TOQUE (the toque binary, default "toque"), TOQUE_DIR (the
# recipes directory, default "."), TOQUE_MAX_BYTES (the comment's size
# limit, default 60000).
set -euo pipefail

out=${1:?usage: plan.sh OUT_DIR}
toque=${TOQUE:-toque}
recipes=${TOQUE_DIR:-.}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The plan itself; its text goes to the job log.
"$toque" -chdir="$recipes" plan -no-color -out="$out/plan.out"

# Run from OUT_DIR so the comment's hint reads "toque show plan.out".
cd "$out"
"$toque" show -markdown -max-bytes="${TOQUE_MAX_BYTES:-60000}" plan.out > plan.md
digest=$("$toque" show -no-color plan.out | sed -n 's/^Plan digest: \(sha256:[0-9a-f]\{64\}\)$/\1/p')
if [ -z "$digest" ]; then
  echo "plan.sh: toque show printed no plan digest" >&2
  exit 1
fi
printf '%s\n' "$digest" > plan.digest
echo "plan.sh: plan digest $digest"
