#!/usr/bin/env bash
# Run the built test binaries with the wall clock moved to another day (libfaketime, Debian's
# `faketime`, installed when missing). Every test reads time from the sim's manual clock, which
# starts at a fixed instant, so the suite must pass unchanged. The krew test is left out: it runs
# rustc, which hangs under libfaketime. Usage: scripts/test-other-day.sh [OFFSET] (default +1187d).
set -euo pipefail
cd "$(dirname "$0")/.."
offset="${1:-+1187d}"
if ! command -v faketime >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y -qq faketime >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq faketime; }
    else
        echo "faketime is not installed (apt-get install faketime): the other-day run did not run" >&2
        exit 1
    fi
fi
# build first (rustc must not run under the fake clock), then list the test executables
mapfile -t binaries < <(cargo test --locked --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        print(m["executable"])')
echo "the wall clock for this run: $(FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "$offset" date -u +%FT%TZ)"
passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for bin in "${binaries[@]}"; do
    status=0
    FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "$offset" "$bin" --skip krew 2>&1 | tee "$log" || status=$?
    p=$(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1/p' "$log" | tail -1)
    f=$(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\2/p' "$log" | tail -1)
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
    if [ "$status" != 0 ]; then
        echo "other-day: $passed passed, $((failed > 0 ? failed : 1)) failed"
        exit 1
    fi
done
echo "other-day: $passed passed, $failed failed"
