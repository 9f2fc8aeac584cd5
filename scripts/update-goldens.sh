#!/usr/bin/env bash
# Regenerates tests/report/data/goldens/, the golden summaries of every shipped scenario
# (step time in ns, events, flows, tasks, breakdown, MFU; one step each), after a change that
# moves them on purpose. Review the diff and commit it with the change that caused it.
#   usage: scripts/update-goldens.sh [BUILD_DIR]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$build" -j "$(nproc)" --target test_report
IRONLAW_UPDATE_GOLDENS=1 "$build/test_report" "[golden]"
git --no-pager diff --stat -- tests/report/data/goldens/ || true
