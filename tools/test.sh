#!/usr/bin/env bash
# Runs every test on a fresh machine: installs what is missing, builds into build/, runs ctest.
# Usage: tools/test.sh [ctest args...]     e.g. tools/test.sh -R trace_store
set -euo pipefail
source "$(dirname "$0")/lib/setup.sh"
ttrace_setup
ttrace_install "${TTRACE_TEST_PACKAGES[@]}"
ttrace_build
ttrace_log "running tests"
cd "$TTRACE_BUILD_DIR"
start=$(date +%s)
ctest --output-on-failure --timeout 600 -j "${JOBS:-$(nproc)}" "$@"
echo "tests took $(( $(date +%s) - start ))s"
