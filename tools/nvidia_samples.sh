#!/usr/bin/env bash
# tools/nvidia_samples.sh [--lt DIR] [--cudnn-frontend DIR] [--build DIR] [--out DIR] [--only REGEX] [--skip REGEX]
#
# NVIDIA's own samples under libttrace.so on simgpu: builds each sample from its public sources outside the
# repository (never commit them: fetch NVIDIA/CUDALibrarySamples and NVIDIA/cudnn-frontend yourself), runs it with
# `ttrace run` against simgpu's libraries, and prints one line per sample: whether it built, its exit status
# without and with the shim, the ops recorded and the check's verdict. Exits 1 when a sample that ran cleanly
# without the shim fails under it, or its trace is not clean (cudnn-frontend: has findings, or records another
# number of ops than the sample executed).
#   --lt DIR        the cuBLASLt folder of CUDALibrarySamples (each Lt* folder: *.cu and main.cpp or main.cu,
#                   with Common/helpers.cpp); host code only, compiled as C++ with the toolkit's headers
#   --cudnn-frontend DIR
#                   a cudnn-frontend source tree (header-only): its samples/cpp convolution/*.cpp and sdpa/*.cpp
#                   (benchmarks aside) linked into one binary as NVIDIA does, each Catch2 test case run alone as one
#                   sample, named file: test case (found by Catch2's file-name tags). They are written for Catch2 3;
#                   they build against Debian's Catch2 2 (`apt-get install catch2`) through a compatibility header
#                   written under --out (Catch2 3's SKIP becomes an exception: the sample shows as "skip" with its
#                   reason). Plain and traced are the test case's exit status (Catch2: failed assertions; "skip":
#                   skipped); the verdict comes with the ops recorded / cudnnBackendExecute calls without the shim
#                   (as cudnn-frontend logs them; they must be equal), plus the native CUDA graph calls
#                   (cudnnBackendPopulateCudaGraph / UpdateCudaGraph, which cudnn-frontend does not log: each launch
#                   of a captured one is an op, one not captured is an op itself; counted in the trace: "4/4 = 2
#                   executed + 2 native-graph ops"), checked and not checked (by operation), and,
#                   for a test case that does not pass without the shim, why (cudnn-frontend's log: the status and
#                   the descriptor simgpu refused). A graph the analyzer has no checker for makes the verdict
#                   "incomplete", which is not a failure here; findings are. Compiling takes minutes per file (a 0.5
#                   GB precompiled header under --out is made once).
#   --build DIR     ttrace's build folder (default: build/ beside this script's folder)
#   --out DIR       where binaries and traces go (default /tmp/ttrace-nvidia-samples); delete it afterwards
#   --only REGEX    only samples whose name matches (cudnn-frontend: files whose folder/name matches, e.g.
#                   'convolution/fprop|sdpa/fp16_fwd$')
#   --skip REGEX    cudnn-frontend test cases whose name matches are listed, not run (default 'large|forward with
#                   flexible|paged caches': "Convolution fprop large" takes over 8 GB of host memory on simgpu,
#                   "Toy sdpa forward with flexible graph" was killed for memory on a 23 GB machine, with and without
#                   the shim; "Toy sdpa forward paged caches decode and prefill" builds and runs on simgpu since
#                   PAGED_CACHE_LOAD, but its 100 prefill executions (b 8, h 8, s_q 512, s_kv 32 Ki: FP32 score
#                   tensors of 4 GiB) did not finish in 120 s without the shim and held 2 GB of host memory, growing,
#                   after 50 s; "Toy sdpa forward with paged caches" builds and executes on simgpu since its fused
#                   SDPA_FWD with page tables, but it runs 48 graphs (b 1..8, s_kv 1 Ki..32 Ki, h 8, d 128) 1,001
#                   times each, about 4.8e12 multiply-adds of host arithmetic)
set -euo pipefail
shopt -s nullglob

usage="usage: $0 [--lt DIR] [--cudnn-frontend DIR] [--build DIR] [--out DIR] [--only REGEX] [--skip REGEX]"
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
out=/tmp/ttrace-nvidia-samples
lt=""
cfe=""
only=""
skip='large|forward with flexible|paged caches'
while [ $# -gt 0 ]; do
  case "$1" in
    --lt) lt="$2"; shift 2 ;;
    --cudnn-frontend) cfe="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --skip) skip="$2"; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[ -n "$lt$cfe" ] || { echo "$usage" >&2; exit 2; }
cuda="${TTRACE_CUDA_ROOT:-/usr/local/cuda}"
simgpu="$build/simgpu/lib"
ttrace="$build/bin/ttrace"
for f in "$ttrace" "$build/lib/libttrace.so" "$simgpu/libcublasLt.so.13" "$simgpu/libcudnn.so.9"; do
  [ -e "$f" ] || { echo "error: $f not found: build ttrace first" >&2; exit 2; }
done
mkdir -p "$out/bin" "$out/log"
rm -rf "$out/traces"
cxx() { g++ -std=c++17 -O1 -w -I"$cuda/include" "$@" -L"$cuda/lib64" -Wl,-rpath-link,"$cuda/lib64"; }

lt_samples() {
  printf '%-36s %-8s %-6s %-6s %s\n' sample build plain traced "verdict (ops)"
  if ! cxx -c -x c++ "$lt/Common/helpers.cpp" -I"$lt/Common" -o "$out/helpers.o" >"$out/log/helpers.log" 2>&1; then
    echo "error: $lt/Common/helpers.cpp does not build (see $out/log/helpers.log)" >&2
    status=2
    return
  fi
  for dir in "$lt"/Lt*/; do
    name="$(basename "$dir")"
    [[ -z "$only" || "$name" =~ $only ]] || continue
    main=""
    for m in main.cpp main.cu; do [ -f "$dir$m" ] && main="$dir$m"; done
    [ -n "$main" ] || continue
    srcs=("$main")
    for s in "$dir"*.cu; do [ "$s" != "$main" ] && srcs+=("$s"); done
    if ! cxx -x c++ "${srcs[@]}" -x none "$out/helpers.o" -I"$lt/Common" -I"$dir" -lcublasLt -lcudart \
        -o "$out/bin/$name" >"$out/log/$name.build" 2>&1; then
      printf '%-36s %-8s\n' "$name" "no"
      continue
    fi
    plain=0
    { LD_LIBRARY_PATH="$simgpu" timeout 300 "$out/bin/$name" >"$out/log/$name.plain" 2>&1; } 2>/dev/null || plain=$?
    traced=0
    LD_LIBRARY_PATH="$simgpu" timeout 600 "$ttrace" run --dir "$out/traces/$name" --json "$out/log/$name.json" -- \
      "$out/bin/$name" >"$out/log/$name.traced" 2>&1 || traced=$?
    verdict="$(grep -o '"verdict": *"[a-z]*"' "$out/log/$name.json" 2>/dev/null | sed 's/.*"\([a-z]*\)"$/\1/' || true)"
    ops="$(grep -o '^  job .*, [0-9]* ops' "$out/log/$name.traced" | grep -o '[0-9]* ops' || true)"
    printf '%-36s %-8s %-6s %-6s %s\n' "$name" yes "$plain" "$traced" "${verdict:-none} (${ops:-0 ops})"
    if [ "$plain" = 0 ] && { [ "$traced" != 0 ] || [ "$verdict" != clean ]; }; then status=1; fi
  done
}
# cudnn-frontend's C++ samples: one binary per file (a precompiled cudnn_frontend.h shared by all), each Catch2
# test case run alone, without and with the shim.
cfe_status() {  # log file, exit status: the test case's outcome as printed
  if grep -q 'SKIPPED: ' "$1" 2>/dev/null; then echo skip; else echo "$2"; fi
}
cfe_reason() {  # plain log: why a test case did not pass without the shim (cudnn-frontend's log, SKIP's message)
  local why desc
  why="$({ grep -o 'SKIPPED: .*' "$1" || grep -o 'failed with message: .*, and code: [A-Z_]*' "$1" ||
    grep -o 'FAILED:' "$1"; } 2>/dev/null | head -1 | sed 's/^failed with message: //; s/, and code: \(.*\)/ (\1)/')"
  desc="$(grep 'ERROR' "$1" 2>/dev/null | grep -o 'CUDNN_BACKEND_[A-Z_]*_DESCRIPTOR\|CUDNN_ATTR_[A-Z_]*' | head -1)"
  echo "$why${desc:+ at $desc}"
}
cfe_samples() {
  local inc="$out/cfe/inc" cflags
  mkdir -p "$inc/catch2" "$out/cfe/obj" "$out/cfe/bin"
  if [ ! -f /usr/include/catch2/catch.hpp ]; then
    echo "error: Catch2 not found (apt-get install catch2)" >&2
    status=2
    return
  fi
  # Catch2 3's header and SKIP, over Catch2 2 (a skipped test case ends with an exception naming the reason).
  cat >"$inc/catch2/catch_test_macros.hpp" <<'HDR'
#pragma once
#include <sstream>
#include <stdexcept>
#include <catch2/catch.hpp>
#define SKIP(msg) throw std::runtime_error([&] { std::ostringstream s_; s_ << "SKIPPED: " << msg; return s_.str(); }())
HDR
  echo '#include <cudnn_frontend.h>' >"$inc/pch.h"
  cflags=(-std=c++17 -O1 -w -I"$inc" -I"$cfe/include" -I"$cuda/include" -I"$cfe/samples/cpp")
  if [ ! -f "$inc/pch.h.gch" ] || [ "$cfe/include/cudnn_frontend.h" -nt "$inc/pch.h.gch" ]; then
    if ! g++ "${cflags[@]}" -x c++-header "$inc/pch.h" -o "$inc/pch.h.gch" >"$out/log/cfe-pch.log" 2>&1; then
      echo "error: $cfe/include/cudnn_frontend.h does not build (see $out/log/cfe-pch.log)" >&2
      status=2
      return
    fi
  fi
  printf '%-64s %-5s %-5s %-6s %s\n' sample build plain traced "verdict (ops recorded/executed; checked; not checked)"
  local src file obj files=()
  for src in "$cfe"/samples/cpp/convolution/*.cpp "$cfe"/samples/cpp/sdpa/*.cpp; do
    file="${src#"$cfe"/samples/cpp/}"
    file="${file%.cpp}"
    [[ "$file" != *benchmark* ]] || continue
    [[ -z "$only" || "$file" =~ $only ]] || continue
    obj="$out/cfe/obj/${file//\//_}.o"
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$inc/pch.h.gch" -nt "$obj" ]; then
      g++ "${cflags[@]}" -include pch.h -c "$src" -o "$obj" >"$out/log/${file//\//_}.build" 2>&1 || rm -f "$obj"
    fi
    if [ -f "$obj" ]; then files+=("$file"); else printf '%-64s %-5s\n' "$file" no; fi
  done
  # One binary, as NVIDIA builds them (some files call functions of others: fp16_cached those of fp16_fwd and
  # fp16_bwd), of every object built so far; each file's test cases are found by Catch2's file-name tags.
  local bin="$out/cfe/bin/samples"
  if ! g++ "$out"/cfe/obj/*.o -o "$bin" -L"$cuda/lib64" -L"$cuda/lib64/stubs" -Wl,-rpath-link,"$cuda/lib64" \
      -lCatch2WithMain -lcudnn -lcudart -lnvrtc -lcuda -lpthread -ldl >"$out/log/cfe-link.log" 2>&1; then
    echo "error: the samples do not link (see $out/log/cfe-link.log; --only may leave out a file another needs)" >&2
    status=2
    return
  fi
  for file in "${files[@]}"; do
    local name
    while IFS= read -r name; do
      [ -n "$name" ] || continue
      local tag="${file//\//_}.$(printf '%s' "$name" | tr -c 'A-Za-z0-9_-' '_')"
      # Catch2 2's test spec: an exact name, its special characters escaped.
      local spec="$(printf '%s' "$name" | sed 's/[][,*\\"~]/\\&/g')"
      local plain=0 traced=0 checked notc verdict ops native
      if [[ -n "$skip" && "$name" =~ $skip ]]; then
        printf '%-64s %-5s %s\n' "$file: $name" yes "not run (--skip)"
        continue
      fi
      { LD_LIBRARY_PATH="$simgpu" CUDNN_FRONTEND_LOG_INFO=1 CUDNN_FRONTEND_LOG_FILE=stdout timeout 600 "$bin" "$spec" \
          >"$out/log/$tag.plain" 2>&1; } 2>/dev/null || plain=$?
      plain="$(cfe_status "$out/log/$tag.plain" "$plain")"
      LD_LIBRARY_PATH="$simgpu" timeout 900 "$ttrace" run --dir "$out/traces/$tag" --json "$out/log/$tag.json" -- \
        "$bin" "$spec" >"$out/log/$tag.traced" 2>&1 || true
      traced="$(grep -o 'exited with status [0-9]*\|killed by signal [0-9]*' "$out/log/$tag.traced" | tail -1 |
        sed 's/exited with status //; s/killed by signal /signal /' || true)"
      traced="$(cfe_status "$out/log/$tag.traced" "${traced:-none}")"
      verdict="$(grep -o '"verdict": *"[a-z]*"' "$out/log/$tag.json" 2>/dev/null | sed 's/.*"\([a-z]*\)"$/\1/' || true)"
      ops="$(grep -o '"ops": *[0-9]*' "$out/log/$tag.json" 2>/dev/null | head -1 | grep -o '[0-9]*$' || true)"
      checked="$(grep -o '"checked": *{[^}]*}' "$out/log/$tag.json" 2>/dev/null | sed 's/"checked": *//' || true)"
      notc="$(grep -o '"not_checked": *{[^}]*}' "$out/log/$tag.json" 2>/dev/null | sed 's/"not_checked": *//' || true)"
      local why="" executes
      [ "$plain" = 0 ] || why="; without the shim: $(cfe_reason "$out/log/$tag.plain")"
      # cudnnBackendExecute calls without the shim, as cudnn-frontend logs them: what the trace must hold, plus its
      # cudnnBackendPopulateCudaGraph / UpdateCudaGraph ops (recorded as ops too; cudnn-frontend logs no line for
      # them, so they are counted in the trace, by API name, as `ttrace dump` prints each op's record).
      executes="$(grep -c 'INFO: Executing .*\.\.\.$' "$out/log/$tag.plain" || true)"
      # A populate or update whose operands are captured at the graph's launches is a template (a code-4 notice),
      # not an op; each launch is an op with the template's API name.
      native="$("$ttrace" dump "$out/traces/$tag" 2>/dev/null | awk '
        /^ *seq=[0-9]+ cudnnBackend(Populate|Update)CudaGraph status=/ { sub(/^ *seq=/, ""); sub(/ .*/, ""); r[$0] = 1 }
        /^ *notice code=4 seq=[0-9]+ / { sub(/^ *notice code=4 seq=/, ""); sub(/ .*/, ""); t[$0] = 1 }
        END { n = 0; for (s in r) if (!(s in t)) ++n; print n }' || true)"
      local expected="$((${executes:-0} + ${native:-0}))" shown
      shown="$expected"
      [ "${native:-0}" = 0 ] || shown="$expected = ${executes:-0} executed + $native native-graph"
      printf '%-64s %-5s %-5s %-6s %s\n' "$file: $name" yes "$plain" "$traced" \
        "${verdict:-none} (${ops:-0}/$shown ops; ${checked:-{\}}; ${notc:-{\}})$why"
      if [ "$plain" = 0 ] && { [ "$traced" != 0 ] || [ "${ops:-0}" != "$expected" ] ||
          { [ "${ops:-0}" != 0 ] && [ "$verdict" != clean ] && [ "$verdict" != incomplete ]; }; }; then status=1; fi
    done < <(LD_LIBRARY_PATH="$simgpu" "$bin" -# --list-test-names-only "[#$(basename "$file")]" 2>/dev/null |
      sed 's/\r$//')
  done
}
status=0
[ -z "$lt" ] || lt_samples
[ -z "$cfe" ] || cfe_samples
exit $status
