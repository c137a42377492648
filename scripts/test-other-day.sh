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
for bin in "${binaries[@]}"; do
    FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "$offset" "$bin" --skip krew
done
