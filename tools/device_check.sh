#!/usr/bin/env bash
# Every GPU check, in one command, for a machine with an NVIDIA GPU (and PyTorch for the last part):
#   1. build with nvcc (needs the same Debian packages as tools/test.sh; if they cannot be installed, a build/
#      carried from a development machine is used);
#   2. ctest -L gpu (kernels against their CPU twins);
#   3. tp_mlp on the real GPU (1 rank) under libttrace.so, then `ttrace check`;
#   4. PyTorch with and without libttrace.so (tools/gpu/torch_check.py: matmuls through cuBLAS/cuBLASLt;
#      tools/gpu/torch_attention_check.py: a BF16 attention block, forward and backward, on cuDNN's SDPA): results
#      bitwise identical, and `ttrace check` clean;
#   5. cuDNN's native CUDA graph API with nodes it did not populate (tools/gpu/cudnn_native_graph_probe.cc, built
#      with nvcc against pip's nvidia-cudnn): the facts the shim's design for native-graph operands rests on.
# Logs and traces go to $OUT (default ./device-out). Exit status: number of failed steps.
# A GPU machine without the build's Debian packages (the lent H200 runs Ubuntu 24.04 without cmake, ninja or
# Abseil, and /usr/local/cuda has no nccl.h or cudnn.h) cannot build: carry build/lib/libttrace.so (it needs only
# libc) and steps 4 and 5 still run ("shim only"); steps 2 and 3 are skipped, and when build/bin/ttrace cannot run
# there, the traces under $OUT are checked on the development machine (`ttrace check OUT/torch`; docs/testing.md).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$ROOT/device-out}"
mkdir -p "$OUT"
exec > >(tee "$OUT/device_check.log") 2>&1
failed=0
shim_only=0
step() { echo; echo "=== $*"; }
fail() { echo "FAILED: $*"; failed=$((failed + 1)); }

step "machine"
nvidia-smi || fail "nvidia-smi"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())' ||
  echo "(no PyTorch)"

step "build"
B="$ROOT/build"
if (source "$ROOT/tools/lib/setup.sh" && ttrace_setup && ttrace_build) > "$OUT/build.log" 2>&1; then
  echo "built in $B"
elif [ -x "$B/bin/ttrace" ] && [ -f "$B/lib/libttrace.so" ] && [ -x "$B/bin/tp_mlp" ]; then
  echo "build failed (see build.log); using the carried build in $B"
elif [ -f "$B/lib/libttrace.so" ]; then
  echo "build failed (see build.log); shim only: the carried $B/lib/libttrace.so, GPU tests and tp_mlp skipped"
  tail -3 "$OUT/build.log"; shim_only=1
else
  fail "build (see build.log)"; tail -20 "$OUT/build.log"; exit "$failed"
fi
# `ttrace check DIR NAME`: the trace checked here when the analyzer runs on this machine, else said where to check it.
ttrace_ok=0; "$B/bin/ttrace" --help >/dev/null 2>&1 && ttrace_ok=1
check_trace() {
  if [ "$ttrace_ok" = 1 ]; then
    "$B/bin/ttrace" check "$1" --json "$1.json" || fail "ttrace check $2"
  else
    echo "ttrace does not run here: check $1 on the development machine (ttrace check DIR)"
  fi
}

step "ctest -L gpu"
if [ "$shim_only" = 1 ]; then echo "skipped: shim only"; else
  (cd "$B" && ctest -L gpu --output-on-failure) || fail "gpu tests"
fi

step "tp_mlp on the GPU under libttrace.so"
rm -rf "$OUT/tp_mlp"
[ "$shim_only" = 1 ] && echo "skipped: shim only"
for dtype in fp32 bf16; do
  [ "$shim_only" = 1 ] && break
  if RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LD_PRELOAD="$B/lib/libttrace.so" TTRACE_DIR="$OUT/tp_mlp/$dtype" \
     TTRACE_VERBOSE=1 "$B/bin/tp_mlp" --tp 1 --steps 3 --dtype "$dtype" --hidden 256 --ffn 1024 --batch 64 \
     --rdzv "$OUT/rdzv-$dtype"; then
    "$B/bin/ttrace" check "$OUT/tp_mlp/$dtype" --json "$OUT/tp_mlp_$dtype.json" || fail "ttrace check tp_mlp $dtype"
  else
    fail "tp_mlp $dtype"
  fi
done

step "PyTorch with and without libttrace.so"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  export CUBLAS_WORKSPACE_CONFIG=:4096:8
  for w in torch_check torch_attention_check; do
    python3 "$ROOT/tools/gpu/$w.py" "$OUT/${w}_plain.pt" || { fail "$w plain"; continue; }
    rm -rf "$OUT/$w"
    LD_PRELOAD="$B/lib/libttrace.so" TTRACE_DIR="$OUT/$w" TTRACE_VERBOSE=1 \
      python3 "$ROOT/tools/gpu/$w.py" "$OUT/${w}_traced.pt" || { fail "$w traced"; continue; }
    python3 - "$OUT/${w}_plain.pt" "$OUT/${w}_traced.pt" <<'PY' || fail "$w results differ under the shim"
import sys, torch
a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])
bad = [k for k in a if not torch.equal(a[k].view(torch.uint8), b[k].view(torch.uint8))]
print(f"{len(a)} results", "bitwise identical" if not bad else f"differ: {bad}")
sys.exit(1 if bad else 0)
PY
    rm -f "$OUT/${w}_plain.pt" "$OUT/${w}_traced.pt"
    check_trace "$OUT/$w" "$w"
  done
else
  echo "skipped: no PyTorch with CUDA"
fi

step "cuDNN native CUDA graph probe"
inc="$(find /opt /usr/local /usr/lib /usr/include -name cudnn.h -path '*nvidia*' 2>/dev/null | head -1)"
[ -n "$inc" ] || inc="$(find /opt /usr/local /usr/include -name cudnn.h 2>/dev/null | head -1)"
if [ -n "$inc" ] && command -v nvcc >/dev/null; then
  lib="$(dirname "$(find "$(dirname "$(dirname "$inc")")" -name 'libcudnn.so.9' | head -1)")"
  if nvcc -std=c++17 -I"$ROOT" -I"$(dirname "$inc")" "$ROOT/tools/gpu/cudnn_native_graph_probe.cc" \
       -o "$OUT/cudnn_native_graph_probe" -L"$lib" -l:libcudnn.so.9 -lcudart -Xlinker -rpath="$lib"; then
    LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}" timeout 300 "$OUT/cudnn_native_graph_probe" ||
      fail "cuDNN native CUDA graph probe"
  else
    fail "building the cuDNN native CUDA graph probe"
  fi
else
  echo "skipped: no cudnn.h or no nvcc"
fi

step "done: $failed failed step(s)"
exit "$failed"
