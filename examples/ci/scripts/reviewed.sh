#!/usr/bin/env bash
# reviewed.sh HOST — after a merge, find what was reviewed: the pull request
# the merged commit came from, the digest in that pull request's plan
# comment for HOST (what reviewers saw and approved), and the successful
# plan run of the pull request's head commit (whose artifact holds the plan
# file). Prints, as KEY=VALUE lines for $GITHUB_OUTPUT:
#
#   pr=NUMBER
#   digest=sha256:HEX
#   run_id=ID
#
# Environment: GH_REPO (owner/name), MERGE_SHA (the merged commit),
# WORKFLOW (the workflow file, default "toque.yml"), GH, COMMENT_AUTHOR.
set -euo pipefail

host=${1:?usage: reviewed.sh HOST}
gh=${GH:-gh}
repo=${GH_REPO:?GH_REPO must name the repository (owner/name)}
sha=${MERGE_SHA:?MERGE_SHA must be the merged commit}
workflow=${WORKFLOW:-toque.yml}
author=${COMMENT_AUTHOR:-github-actions[bot]}

pr=$("$gh" api "repos/$repo/commits/$sha/pulls" --jq '.[0].number // empty')
if [ -z "$pr" ]; then
  echo "reviewed.sh: commit $sha belongs to no pull request: nothing was reviewed, so nothing is applied" >&2
  exit 1
fi

marker="<!-- toque-plan host=$host "
line=$("$gh" api --paginate "repos/$repo/issues/$pr/comments" \
  --jq ".[] | select(.user.login == \"$author\" and (.body | startswith(\"$marker\"))) | .body | split(\"\n\")[0]" | tail -n 1)
digest=$(printf '%s\n' "$line" | sed -n 's/.* digest=\(sha256:[0-9a-f]\{64\}\) .*/\1/p')
if [ -z "$digest" ]; then
  echo "reviewed.sh: pull request #$pr has no plan comment for $host: nothing was reviewed, so nothing is applied" >&2
  exit 1
fi

head=$("$gh" api "repos/$repo/pulls/$pr" --jq .head.sha)
run_id=$("$gh" api "repos/$repo/actions/workflows/$workflow/runs?event=pull_request&status=success&head_sha=$head" \
  --jq '.workflow_runs[0].id // empty')
if [ -z "$run_id" ]; then
  echo "reviewed.sh: no successful $workflow run for the head commit $head of pull request #$pr" >&2
  exit 1
fi

printf 'pr=%s\ndigest=%s\nrun_id=%s\n' "$pr" "$digest" "$run_id"
