# Sourced by tools/test.sh and tools/demo.sh: installs what a fresh machine lacks, configures and builds.
#   ttrace_setup            check the CUDA toolkit, install missing Debian packages
#   ttrace_install PKG...   install those of the Debian packages PKG... that are missing (apt-get, no recommends)
#   ttrace_build [TARGETS]  configure build/ once (Ninja), then build incrementally
# Environment: TTRACE_CUDA_ROOT (default /usr/local/cuda), TTRACE_BUILD_DIR (default build), JOBS.

TTRACE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TTRACE_BUILD_DIR="${TTRACE_BUILD_DIR:-$TTRACE_ROOT/build}"
TTRACE_CUDA_ROOT="${TTRACE_CUDA_ROOT:-/usr/local/cuda}"
TTRACE_PACKAGES=(cmake ninja-build g++ pkg-config libabsl-dev libzstd-dev zstd libgtest-dev libgmock-dev
                 googletest libopenblas-dev libcpp-httplib-dev zlib1g-dev)
# Only the tests need these (tools/test.sh): Debian's chromium screenshots the HTML report (html_chromium_test,
# skipped without it). About 350 MB installed; 66 s to download and install on the development machine.
TTRACE_TEST_PACKAGES=(chromium)

ttrace_log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

ttrace_setup() {
  local missing_cuda=()
  for f in include/cuda_runtime_api.h include/cublas_v2.h include/cublasLt.h include/nccl.h include/cudnn.h \
           include/cupti.h; do
    [ -e "$TTRACE_CUDA_ROOT/$f" ] || missing_cuda+=("$f")
  done
  if [ ${#missing_cuda[@]} -gt 0 ]; then
    echo "error: the CUDA 13 toolkit (with CUPTI, NCCL and cuDNN headers) is not at $TTRACE_CUDA_ROOT:" >&2
    echo "       missing ${missing_cuda[*]}" >&2
    echo "       install it there, or point TTRACE_CUDA_ROOT at it. No GPU is needed." >&2
    exit 1
  fi
  ttrace_install "${TTRACE_PACKAGES[@]}"
}

ttrace_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    ttrace_log "installing ${missing[*]}"
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
      command -v sudo >/dev/null || { echo "error: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
      sudo="sudo"
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

ttrace_build() {
  if [ ! -f "$TTRACE_BUILD_DIR/build.ninja" ]; then
    ttrace_log "configuring $TTRACE_BUILD_DIR"
    cmake -S "$TTRACE_ROOT" -B "$TTRACE_BUILD_DIR" -G Ninja -DTTRACE_CUDA_ROOT="$TTRACE_CUDA_ROOT" >/dev/null
  fi
  ttrace_log "building"
  ninja -C "$TTRACE_BUILD_DIR" -j "${JOBS:-$(nproc)}" "$@" || { echo "error: build failed" >&2; exit 1; }
}
