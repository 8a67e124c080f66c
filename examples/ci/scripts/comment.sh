#!/usr/bin/env bash
# comment.sh PLAN_MD — post the plan's Markdown on the pull request, or
# update the comment an earlier run posted, so each pull request has ONE
# plan comment per host.
#
# The comment is found by the hidden marker toque writes on the Markdown's
# first line ("<!-- toque-plan host=HOST ..."), among comments written by
# COMMENT_AUTHOR (default "github-actions[bot]", the identity of
# GITHUB_TOKEN).
#
# Environment: GH_REPO (owner/name), PR_NUMBER, GH_TOKEN (for gh), GH (the
# gh binary, default "gh"), COMMENT_AUTHOR.
set -euo pipefail

md=${1:?usage: comment.sh PLAN_MD}
gh=${GH:-gh}
repo=${GH_REPO:?GH_REPO must name the repository (owner/name)}
pr=${PR_NUMBER:?PR_NUMBER must be the pull request number}
author=${COMMENT_AUTHOR:-github-actions[bot]}

first=$(head -n 1 "$md")
case "$first" in
  "<!-- toque-plan host="*) ;;
  *) echo "comment.sh: $md does not start with toque's plan marker; was it made by 'toque show -markdown'?" >&2; exit 1 ;;
esac
# "<!-- toque-plan host=web-01 " identifies this host's comment.
marker="${first%% format=*} "

id=$("$gh" api --paginate "repos/$repo/issues/$pr/comments" \
  --jq ".[] | select(.user.login == \"$author\" and (.body | startswith(\"$marker\"))) | .id" | tail -n 1)

if [ -n "$id" ]; then
  url=$("$gh" api --method PATCH "repos/$repo/issues/comments/$id" -F body=@"$md" --jq .html_url)
  echo "comment.sh: updated $url"
else
  url=$("$gh" api --method POST "repos/$repo/issues/$pr/comments" -F body=@"$md" --jq .html_url)
  echo "comment.sh: posted $url"
fi
