#!/usr/bin/env bash
# tools/nvidia_samples.sh --lt DIR [--build DIR] [--out DIR] [--only REGEX]
#
# NVIDIA's own samples under libttrace.so on simgpu: builds each sample from its public sources outside the
# repository (never commit them: fetch NVIDIA/CUDALibrarySamples yourself; its cuBLASLt folder as of CUDA 13.1),
# runs it with `ttrace run` against simgpu's libraries, and prints one line per sample: whether it built, its exit
# status without and with the shim, the ops recorded and the check's verdict. Exits 1 when a sample that ran
# cleanly without the shim fails under it, or its trace is not clean. (cudnn-frontend's C++ samples are not
# driven yet: they need Catch2.)
#   --lt DIR        the cuBLASLt folder of CUDALibrarySamples (each Lt* folder: *.cu and main.cpp or main.cu,
#                   with Common/helpers.cpp); host code only, compiled as C++ with the toolkit's headers
#   --build DIR     ttrace's build folder (default: build/ beside this script's folder)
#   --out DIR       where binaries and traces go (default /tmp/ttrace-nvidia-samples)
#   --only REGEX    only samples whose name matches
set -euo pipefail
shopt -s nullglob

root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
out=/tmp/ttrace-nvidia-samples
lt=""
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --lt) lt="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    *) echo "usage: $0 --lt DIR [--build DIR] [--out DIR] [--only REGEX]" >&2; exit 2 ;;
  esac
done
[ -n "$lt" ] || { echo "usage: $0 --lt DIR [--build DIR] [--out DIR] [--only REGEX]" >&2; exit 2; }
cuda="${TTRACE_CUDA_ROOT:-/usr/local/cuda}"
simgpu="$build/simgpu/lib"
ttrace="$build/bin/ttrace"
for f in "$ttrace" "$build/lib/libttrace.so" "$simgpu/libcublasLt.so.13"; do
  [ -e "$f" ] || { echo "error: $f not found: build ttrace first" >&2; exit 2; }
done
mkdir -p "$out/bin" "$out/log"
rm -rf "$out/traces"
cxx() { g++ -std=c++17 -O1 -w -I"$cuda/include" "$@" -L"$cuda/lib64" -Wl,-rpath-link,"$cuda/lib64"; }

status=0
printf '%-36s %-8s %-6s %-6s %s\n' sample build plain traced "verdict (ops)"
if ! cxx -c -x c++ "$lt/Common/helpers.cpp" -I"$lt/Common" -o "$out/helpers.o" >"$out/log/helpers.log" 2>&1; then
  echo "error: $lt/Common/helpers.cpp does not build (see $out/log/helpers.log)" >&2
  exit 2
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
exit $status
