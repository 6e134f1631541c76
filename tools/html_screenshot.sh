#!/usr/bin/env bash
# Regenerates docs/html-report.png, the README's screenshot of the HTML report: the demo's job (tp_mlp, 4 ranks,
# TP 2, BF16, 2 steps) on simgpu under libttrace.so with one exponent bit flipped in a GEMM output on rank 1
# (SIMGPU_FAULT=gemm:rank=1:call=2:elem=5:bit=13), checked with `ttrace check --html`, drawn by Debian's chromium
# headless at 1200 x 1600.
# Usage: tools/html_screenshot.sh [OUT.png]     (default docs/html-report.png)
set -euo pipefail
source "$(dirname "$0")/lib/setup.sh"
ttrace_setup
ttrace_install "${TTRACE_TEST_PACKAGES[@]}"
ttrace_build ttrace simrun tp_mlp ttrace_shim
out_png="$(realpath -m "${1:-$TTRACE_ROOT/docs/html-report.png}")"
B="$TTRACE_BUILD_DIR"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
env LD_LIBRARY_PATH="$B/simgpu/lib" LD_PRELOAD="$B/lib/libttrace.so" TTRACE_DIR="$work/demo-fault" TTRACE_JOB=demo-fault \
    SIMGPU_FAULT="gemm:rank=1:call=2:elem=5:bit=13" \
    "$B/bin/simrun" -n 4 -- "$B/bin/tp_mlp" --tp 2 --steps 2 --dtype bf16 --rdzv "$work/rdzv" >"$work/job.log" 2>&1 ||
  { cat "$work/job.log"; exit 1; }
rc=0
"$B/bin/ttrace" check "$work/demo-fault" --html "$work/report.html" >/dev/null || rc=$?
[ "$rc" = 1 ] || { echo "error: expected findings (exit 1), got exit $rc" >&2; exit 1; }
(cd "$work" && HOME="$work" timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
   --force-color-profile=srgb --window-size=1200,1600 --screenshot="$work/shot.png" "file://$work/report.html" \
   >"$work/chromium.log" 2>&1) || { cat "$work/chromium.log"; exit 1; }
cp "$work/shot.png" "$out_png"
ttrace_log "wrote $out_png ($(stat -c %s "$out_png") bytes)"
