#!/usr/bin/env bash
# How soon `list -w` shows a change made right after a real kube-apiserver restarts (issue 45,
# item 5; docs/benchmarks.md, "Live again after a restart"). Not part of the tests: it needs a
# realapi kit (a directory with start.sh and stop.sh that start etcd and kube-apiserver on
# loopback, write DIR/env and DIR/kubeconfig with context real-admin, and restart the apiserver
# alone with `stop.sh --apiserver-only DIR` then `start.sh --apiserver-only DIR`).
#
#   scripts/bench-restart.sh KIT [RUNS]     (after `cargo build --release`)
#
# Each run: stop the apiserver (etcd keeps running), start it again, and the moment it takes a
# write, write a new holder epoch on a watched Sandbox; print how long until `list -w -o json`
# printed it (the time `kubectl annotate` itself takes is in the figure; 0 when the line came
# before `kubectl annotate` returned).
set -euo pipefail
KIT=${1:?usage: scripts/bench-restart.sh KIT [RUNS]}
RUNS=${2:-3}
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/kubectl-namzu}
[ -x "$BIN" ] || { echo "bench-restart: $BIN is missing (cargo build --release)" >&2; exit 2; }
for tool in kubectl jq; do
  command -v "$tool" >/dev/null || { echo "bench-restart: $tool is missing" >&2; exit 2; }
done
DIR=$(mktemp -d)
WATCH=""
cleanup() {
  # the watch's pipeline: every process of it is this shell's child
  if [ -n "$WATCH" ]; then pkill -P $$ 2>/dev/null || true; fi
  "$KIT/stop.sh" --rm "$DIR" >/dev/null 2>&1 || true
}
trap cleanup EXIT
"$KIT/start.sh" "$DIR" >/dev/null
k() { kubectl --kubeconfig "$DIR/kubeconfig" --context real-admin "$@"; }
k create namespace agents >/dev/null
k apply -f - >/dev/null <<'EOF'
apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: namzu-ws-restart
  namespace: agents
  annotations:
    sandbox.namzu.ai/holder-epoch: "1"
spec:
  podTemplate:
    metadata:
      labels:
        sandbox.namzu.ai/template: coder
    spec:
      containers:
        - name: agent
          image: ghcr.io/x/agent:1.0
EOF
now() { date +%s.%N; }
# each printed change, stamped when it arrived: "<unix time> <holder epoch>"
"$BIN" --kubeconfig "$DIR/kubeconfig" --context real-admin list -w -n agents -o json 2>"$DIR/watch.err" \
  | jq --unbuffered -r '(if .kind == "List" then .items[] else . end | .holderEpoch.value) // empty' \
  | while IFS= read -r epoch; do printf '%s %s\n' "$(now)" "$epoch"; done >"$DIR/watch.log" &
WATCH=$!
for _ in $(seq 1 100); do grep -q ' 1$' "$DIR/watch.log" 2>/dev/null && break; sleep 0.1; done
grep -q ' 1$' "$DIR/watch.log" || { echo "bench-restart: list -w printed nothing" >&2; cat "$DIR/watch.err" >&2; exit 1; }
echo "| run | apiserver down to first write taken | that write → printed by \`list -w\` |"
echo "|---|---|---|"
for run in $(seq 1 "$RUNS"); do
  epoch=$((100 + run))
  "$KIT/stop.sh" --apiserver-only "$DIR" >/dev/null
  down=$(now)
  "$KIT/start.sh" --apiserver-only "$DIR" >"$DIR/restart.log" 2>&1 &
  starting=$!
  # the change is made the moment the restarted server takes a write, before it says it is ready
  tries=0
  until k annotate sandbox -n agents namzu-ws-restart "sandbox.namzu.ai/holder-epoch=$epoch" --overwrite \
    --request-timeout=2s >/dev/null 2>&1; do
    tries=$((tries + 1))
    if [ -n "$starting" ] && ! kill -0 "$starting" 2>/dev/null; then
      [ -z "$starting" ] || wait "$starting" || { echo "bench-restart: run $run: the apiserver did not start again" >&2; cat "$DIR/restart.log" >&2; exit 1; }
      starting=""
    fi
    [ "$tries" -lt 1200 ] || { echo "bench-restart: run $run: no write taken in a minute" >&2; exit 1; }
    sleep 0.05
  done
  written=$(now)
  [ -z "$starting" ] || wait "$starting" || { echo "bench-restart: run $run: the apiserver did not start again" >&2; cat "$DIR/restart.log" >&2; exit 1; }
  seen=""
  for _ in $(seq 1 600); do
    seen=$(awk -v e="$epoch" '$2 == e {print $1; exit}' "$DIR/watch.log")
    [ -n "$seen" ] && break
    sleep 0.05
  done
  [ -n "$seen" ] || { echo "bench-restart: run $run: never printed" >&2; cat "$DIR/watch.err" >&2; exit 1; }
  awk -v r="$run" -v d="$down" -v w="$written" -v s="$seen" \
    'BEGIN {p = s - w; if (p < 0) p = 0; printf "| %s | %.2f s | %.2f s |\n", r, w - d, p}'
  # the watches settle before the next restart
  sleep 5
done
