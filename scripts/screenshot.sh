#!/usr/bin/env bash
# Re-make assets/screenshot.png from the demo TUI: run it in tmux, capture the screen with its
# colours, render it with scripts/ansi2png.py. Needs tmux, python3 and Pillow (pip install pillow).
set -euo pipefail
cd "$(dirname "$0")/.."
# NAMZU_SHOT_PROFILE=debug uses the debug build (quicker to make; the screen is the same)
profile="${NAMZU_SHOT_PROFILE:-release}"
if [ "$profile" = release ]; then cargo build --release --locked; else cargo build --locked; fi
socket="namzu-shot-$$"
trap 'tmux -L "$socket" kill-server 2>/dev/null || true' EXIT
tmux -L "$socket" new-session -d -s shot -x 150 -y 36 "TERM=xterm-256color ./target/$profile/kubectl-namzu demo"
for _ in $(seq 100); do
  tmux -L "$socket" capture-pane -p -t shot | grep -q "● live │ staging" && break
  sleep 0.1
done
# the demo's fleet view, every context in; select prod-eu-west's foxtrot (unschedulable) so the
# highlight shows a diagnosis (the cursor stays on its workspace as rows arrive)
sleep 2
tmux -L "$socket" send-keys -t shot j j j j j j j
# the demo's deliberate RBAC denial is said once in the status line: the picture waits until it
# has expired
for _ in $(seq 150); do
  tmux -L "$socket" capture-pane -p -t shot | tail -1 | grep -q "warning" || break
  sleep 0.1
done
sleep 0.5
tmux -L "$socket" capture-pane -e -p -t shot | python3 scripts/ansi2png.py assets/screenshot.png
echo assets/screenshot.png
