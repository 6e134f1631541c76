// AccumPlan::SumPanel: many sums of accumulate.h at once, bit-identical to AccumPlan::Sum per element.
//
// FP32 and FP64 accumulation in run orders (sequential, blocked, splitk, random) use a register-blocked kernel:
// A is packed in blocks of kMr rows (zero-padded) and B in blocks of kNr columns, so that for each product
// position p (in the plan's order) one contiguous load of A and kNr broadcasts of B feed kMr x kNr accumulators
// held in registers. Every output element still performs exactly its own sequence of rounded products and
// additions; only independent elements advance together, so nothing is reassociated. Vectors are GCC vector
// extensions of 64 bytes; the functions are cloned for AVX-512, AVX2 and baseline x86-64 (always_inline keeps
// the kernel inside each clone), which changes speed only: vector instructions round exactly as scalar ones.
// Pairwise order keeps a per-tile stack of partial sums. The file is compiled with -ffp-contract=off.
//
// FP16 and reduced-FP8 accumulation gather each element's products and call Sum(): rare, small, and simplest
// to keep identical that way. blas order hands FP32/FP64 panels to the host BLAS through dlopen, so that no
// simgpu process maps a BLAS it does not use.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tools/simgpu/common/accumulate.h"
#include "tools/simgpu/common/accumulate_internal.h"

namespace simgpu {
namespace {

constexpr int kMaxLevels = 64;

#define SIMGPU_INLINE __attribute__((always_inline)) inline

template <typename T>
struct Vec;
template <>
struct Vec<float> {
  typedef float type __attribute__((vector_size(64)));
};
template <>
struct Vec<double> {
  typedef double type __attribute__((vector_size(64)));
};

constexpr int kMv = 2;  // vectors per column of a register tile
constexpr int kNr = 8;  // columns of a register tile

template <typename T>
constexpr int Lanes() {
  return 64 / sizeof(T);
}
template <typename T>
constexpr int Mr() {
  return kMv * Lanes<T>();
}

// The register tile of rows [i0, i0 + Mr) and columns [j0, j0 + kNr): pa is A's packed row block (pa[p * Mr + r]),
// pb B's packed column block (pb[p * kNr + c]). Writes the valid rows x cols of the result to out.
template <typename T>
SIMGPU_INLINE void RunsTile(const std::vector<AccumPlan::Run>& runs, const int64_t* perm, const T* pa, const T* pb,
                            int rows, int cols, T* out, int64_t ldo) {
  using V = typename Vec<T>::type;
  constexpr int kL = Lanes<T>(), kM = Mr<T>();
  // The running total over runs lives in memory (touched once per run); the run's accumulators in registers.
  alignas(64) T total[kNr][kM] = {};
  for (const AccumPlan::Run& run : runs) {
    V blk[kNr][kMv];
    for (int c = 0; c < kNr; ++c) {
      for (int v = 0; v < kMv; ++v) blk[c][v] = V{};
    }
    for (int64_t q = run.begin; q < run.end; ++q) {
      const int64_t p = perm ? perm[q] : q;
      V a[kMv];
      for (int v = 0; v < kMv; ++v) memcpy(&a[v], pa + p * kM + v * kL, sizeof(V));
      const T* bp = pb + p * kNr;
      for (int c = 0; c < kNr; ++c) {
        V b;
        for (int l = 0; l < kL; ++l) b[l] = bp[c];
        for (int v = 0; v < kMv; ++v) blk[c][v] = blk[c][v] + a[v] * b;
      }
    }
    for (int c = 0; c < kNr; ++c) {
      for (int v = 0; v < kMv; ++v) {
        V t;
        memcpy(&t, &total[c][v * kL], sizeof(V));
        t = t + blk[c][v];
        memcpy(&total[c][v * kL], &t, sizeof(V));
      }
    }
  }
  for (int c = 0; c < cols; ++c) {
    for (int r = 0; r < rows; ++r) out[r + c * ldo] = total[c][r];
  }
}

// The pairwise register tile: a stack of partial-sum tiles in memory (binary counter, as accumulate.h states),
// leaves computed in registers. stack holds kMaxLevels tiles of kNr x kMv vectors.
template <typename T>
SIMGPU_INLINE void PairwiseTile(int64_t k, const T* pa, const T* pb, int rows, int cols, T* out, int64_t ldo,
                                typename Vec<T>::type* stack) {
  using V = typename Vec<T>::type;
  constexpr int kL = Lanes<T>(), kM = Mr<T>(), kTile = kNr * kMv;
  int64_t size[kMaxLevels];
  int top = 0;
  for (int64_t p = 0; p < k; ++p) {
    V a[kMv];
    for (int v = 0; v < kMv; ++v) memcpy(&a[v], pa + p * kM + v * kL, sizeof(V));
    V* leaf = stack + top * kTile;
    for (int c = 0; c < kNr; ++c) {
      V b;
      for (int l = 0; l < kL; ++l) b[l] = pb[p * kNr + c];
      for (int v = 0; v < kMv; ++v) leaf[c * kMv + v] = a[v] * b;
    }
    size[top++] = 1;
    while (top >= 2 && size[top - 1] == size[top - 2]) {
      V* lo = stack + (top - 2) * kTile;
      const V* hi = stack + (top - 1) * kTile;
      for (int i = 0; i < kTile; ++i) lo[i] = lo[i] + hi[i];
      size[top - 2] *= 2;
      --top;
    }
  }
  alignas(64) T result[kNr][kM] = {};
  if (top > 0) {
    V s[kTile];
    for (int i = 0; i < kTile; ++i) s[i] = stack[(top - 1) * kTile + i];
    for (int lvl = top - 2; lvl >= 0; --lvl) {
      for (int i = 0; i < kTile; ++i) s[i] = stack[lvl * kTile + i] + s[i];
    }
    memcpy(result, s, sizeof result);
  }
  for (int c = 0; c < cols; ++c) {
    for (int r = 0; r < rows; ++r) out[r + c * ldo] = result[c][r];
  }
}

// Per-thread scratch buffer `slot` of at least n elements, kept between calls: fresh allocations of packed panels
// cost more in page faults and zeroing than the packing itself. Each stream worker keeps its largest panels.
template <typename T, int slot>
T* Scratch(size_t n) {
  static thread_local std::vector<T> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// Packs A in row blocks of Mr and B in column blocks of kNr (zero-padded) and calls
// tile(packed A block, packed B block, rows, cols, out) for every register tile of the output.
template <typename T, typename Tile>
SIMGPU_INLINE void TiledPanel(int64_t k, int64_t m, int64_t n, const T* a, int64_t lda, const T* b, int64_t ldb,
                              T* out, int64_t ldo, Tile tile) {
  constexpr int kM = Mr<T>();
  const int64_t col_blocks = (n + kNr - 1) / kNr;
  T* pack_b = Scratch<T, 0>(static_cast<size_t>(col_blocks) * kNr * k);
  for (int64_t jb = 0; jb < col_blocks; ++jb) {
    T* dst = pack_b + jb * kNr * k;
    for (int c = 0; c < kNr; ++c) {
      const int64_t j = jb * kNr + c;
      for (int64_t p = 0; p < k; ++p) dst[p * kNr + c] = j < n ? b[p + j * ldb] : T(0);
    }
  }
  T* pack_a = Scratch<T, 1>(static_cast<size_t>(kM) * k);
  for (int64_t i0 = 0; i0 < m; i0 += kM) {
    const int rows = static_cast<int>(std::min<int64_t>(kM, m - i0));
    for (int64_t p = 0; p < k; ++p) {
      T* dst = pack_a + p * kM;
      const T* src = a + i0 + p * lda;
      for (int r = 0; r < rows; ++r) dst[r] = src[r];
      for (int r = rows; r < kM; ++r) dst[r] = T(0);
    }
    for (int64_t jb = 0; jb < col_blocks; ++jb) {
      const int cols = static_cast<int>(std::min<int64_t>(kNr, n - jb * kNr));
      tile(pack_a, pack_b + jb * kNr * k, rows, cols, out + i0 + jb * kNr * ldo);
    }
  }
}

template <typename T>
SIMGPU_INLINE void PanelTiles(const std::vector<AccumPlan::Run>& runs, const int64_t* perm, bool pairwise, int64_t k,
                              int64_t m, int64_t n, const T* a, int64_t lda, const T* b, int64_t ldb, T* out,
                              int64_t ldo) {
  using V = typename Vec<T>::type;
  if (pairwise) {
    // std::vector<V> does not honour V's 64-byte alignment here: align a byte buffer by hand.
    std::vector<unsigned char> storage(sizeof(V) * kMaxLevels * kNr * kMv + 64);
    V* stack = reinterpret_cast<V*>((reinterpret_cast<uintptr_t>(storage.data()) + 63) & ~uintptr_t{63});
    TiledPanel<T>(k, m, n, a, lda, b, ldb, out, ldo,
                  [&](const T* pa, const T* pb, int rows, int cols, T* o) __attribute__((always_inline)) {
                    PairwiseTile<T>(k, pa, pb, rows, cols, o, ldo, stack);
                  });
  } else {
    TiledPanel<T>(k, m, n, a, lda, b, ldb, out, ldo,
                  [&](const T* pa, const T* pb, int rows, int cols, T* o) __attribute__((always_inline)) {
                    RunsTile<T>(runs, perm, pa, pb, rows, cols, o, ldo);
                  });
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void PanelTilesF32(
    const std::vector<AccumPlan::Run>& runs, const int64_t* perm, bool pairwise, int64_t k, int64_t m, int64_t n,
    const float* a, int64_t lda, const float* b, int64_t ldb, float* out, int64_t ldo) {
  PanelTiles<float>(runs, perm, pairwise, k, m, n, a, lda, b, ldb, out, ldo);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void PanelTilesF64(
    const std::vector<AccumPlan::Run>& runs, const int64_t* perm, bool pairwise, int64_t k, int64_t m, int64_t n,
    const double* a, int64_t lda, const double* b, int64_t ldb, double* out, int64_t ldo) {
  PanelTiles<double>(runs, perm, pairwise, k, m, n, a, lda, b, ldb, out, ldo);
}

// The host BLAS, resolved once. CBLAS constants: CblasColMajor = 102, CblasNoTrans = 111 (cblas.h).
struct HostBlas {
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                         int);
  using Dgemm = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double,
                         double*, int);
  Sgemm sgemm = nullptr;
  Dgemm dgemm = nullptr;
};

const HostBlas& Blas() {
  static const HostBlas blas = [] {
    HostBlas b;
    for (const char* name : {"libopenblas.so.0", "libblas.so.3"}) {
      void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) continue;
      b.sgemm = reinterpret_cast<HostBlas::Sgemm>(dlsym(lib, "cblas_sgemm"));
      b.dgemm = reinterpret_cast<HostBlas::Dgemm>(dlsym(lib, "cblas_dgemm"));
      if (b.sgemm != nullptr && b.dgemm != nullptr) return b;
    }
    fprintf(stderr, "simgpu: SIMGPU_ACCUM=blas: no host BLAS with cblas_sgemm/cblas_dgemm "
                    "(tried libopenblas.so.0, libblas.so.3)\n");
    fflush(stderr);
    _exit(2);
  }();
  return blas;
}

bool FitsInt(int64_t v) { return v <= INT_MAX; }

}  // namespace

void AccumPlan::SumPanel(int64_t m, int64_t n, const float* a, int64_t lda, const float* b, int64_t ldb, float* out,
                         int64_t ldo) const {
  if (m <= 0 || n <= 0) return;
  const bool pairwise = config_.order == AccumOrder::kPairwise;
  if (precision_ == AccumPrecision::kFp16 || (precision_ == AccumPrecision::kFp8 && !pairwise)) {
    std::vector<float> x(k_);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t p = 0; p < k_; ++p) x[p] = a[i + p * lda] * b[p + j * ldb];
        out[i + j * ldo] = Sum(x.data());
      }
    }
    return;
  }
  if (config_.order == AccumOrder::kBlas && k_ > 0 && FitsInt(m) && FitsInt(n) && FitsInt(k_) && FitsInt(lda) &&
      FitsInt(ldb) && FitsInt(ldo)) {
    Blas().sgemm(102, 111, 111, m, n, k_, 1.0f, a, lda, b, ldb, 0.0f, out, ldo);
    return;
  }
  PanelTilesF32(runs_, perm_.empty() ? nullptr : perm_.data(), pairwise, k_, m, n, a, lda, b, ldb, out, ldo);
}

void AccumPlan::SumPanel(int64_t m, int64_t n, const double* a, int64_t lda, const double* b, int64_t ldb,
                         double* out, int64_t ldo) const {
  if (m <= 0 || n <= 0) return;
  if (config_.order == AccumOrder::kBlas && k_ > 0 && FitsInt(m) && FitsInt(n) && FitsInt(k_) && FitsInt(lda) &&
      FitsInt(ldb) && FitsInt(ldo)) {
    Blas().dgemm(102, 111, 111, m, n, k_, 1.0, a, lda, b, ldb, 0.0, out, ldo);
    return;
  }
  PanelTilesF64(runs_, perm_.empty() ? nullptr : perm_.data(), config_.order == AccumOrder::kPairwise, k_, m, n, a,
                lda, b, ldb, out, ldo);
}

}  // namespace simgpu
