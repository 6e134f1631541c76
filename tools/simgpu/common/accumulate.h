// simgpu's accumulation orders: how every simgpu GEMM, convolution and matmul (cuBLAS, cuBLASLt, cuDNN) sums the
// k products of one output element. Real GPUs sum in orders that depend on the kernel, the tile shape and
// split-K; simgpu makes the order a documented, selectable parameter so that error models are tested against
// more than one rounding pattern. Part of the static library simgpu_accumulate, linked into each simgpu
// vendor library.
//
// SIMGPU_ACCUM (read once, when the library is loaded; a malformed value prints a message naming it and exits
// with status 2) selects the order. Notation: x_0 .. x_{k-1} are the products of one output element, each
// rounded to the accumulator precision (below); "s + x" is one addition rounded to the accumulator precision.
//   sequential   (default) s = +0; s = s + x_p for p = 0, 1, ..., k-1.
//   pairwise     a binary-counter tree: for p = 0 .. k-1, push x_p (a partial of size 1); while the two top
//                partials have the same size, pop t (top) and u and push u + t (size doubled). At the end, with
//                the stack e_0 (bottom) .. e_top: s = e_top; s = e_i + s for i = top-1 down to 0. k = 0 gives +0.
//                For k a power of two this is the balanced tree ((x0+x1)+(x2+x3))+...
//   blocked:K    K >= 1. Runs R_r = [rK, min(k, (r+1)K)) are each summed sequentially from +0, then combined
//                sequentially: s = +0; s = s + run_r for r = 0, 1, ...
//   splitk:S     S >= 1. S slices R_s = [floor(s*k/S), floor((s+1)*k/S)) (some empty when S > k), each summed
//                sequentially from +0, then combined sequentially as for blocked (an empty slice adds +0).
//   random:SEED  SEED a decimal integer < 2^64. Per call c (the caller's call number), a permutation pi of
//                0..k-1 and sequential summation in that order: s = +0; s = s + x_{pi(q)}, q = 0 .. k-1.
//                pi: start from the identity; with SplitMix64 state z = SEED ^ (c * 0x9E3779B97F4A7C15)
//                (next(): z += 0x9E3779B97F4A7C15; r = z; r = (r ^ r>>30) * 0xBF58476D1CE4E5B9;
//                r = (r ^ r>>27) * 0x94D049BB133111EB; return r ^ r>>31), for q = k-1 down to 1:
//                swap(pi[q], pi[next() % (q + 1)]). Every output element of one call uses the same pi (as
//                every element of one GPU kernel shares its order); different calls almost surely differ.
//   blas         for speed only, never for tests that need a stated order: SumPanel with kFp32 or kFp64 calls
//                the host BLAS (cblas_sgemm / cblas_dgemm from libopenblas.so.0, else Debian's libblas.so.3;
//                loaded with dlopen at the first use, so processes that never ask pay nothing), which sums in
//                its own undocumented order with fused multiply-adds, on its own threads (OPENBLAS_NUM_THREADS
//                limits them). Sum(), kFp16 and kFp8 use sequential. No usable BLAS: message, exit status 2.
//
// Accumulator precision (AccumPrecision, chosen by the caller from the compute type):
//   kFp32   products fl32(a*b), FP32 additions (round to nearest even).
//   kFp64   products a*b in FP64, FP64 additions.
//   kFp16   products fl16(fl32(a*b)), additions fl16(fl32(s + x)) (binary16, round to nearest even; rounding
//           an FP32 sum of two binary16 values to binary16 equals one correctly rounded binary16 addition,
//           since 24 >= 2*11 + 2). Overflow gives infinity.
//   kFp8    products fl32(a*b) (exact for FP8 operands). With SIMGPU_FP8_ACC_BITS unset: exactly kFp32.
//           With SIMGPU_FP8_ACC_BITS = B (an integer in [1, 23]), each sequential run (the whole sum for
//           sequential and random, each run of blocked and splitk) uses a reduced-precision partial P and an
//           FP32 total T: P = +0, T = +0; for each product x: P = trunc_B(P +_64 x), where +_64 is an FP64
//           addition and trunc_B keeps B fraction bits of the significand, rounding toward zero; after every
//           N products of the run (N = promote_interval; 0 means never), and at the end of the run:
//           T = T + fl32(P), P = +0. The run's value is T; runs and tree nodes combine in FP32. Pairwise
//           order has no sequential run, so kFp8 with pairwise is FP32 pairwise.
//           Model source: DeepSeek-V3 Technical Report (arXiv:2412.19437), section 3.3.2: FP8 GEMM accumulation
//           on H800 tensor cores "is limited to retaining around 14 bits", and promoting partial results to
//           FP32 registers every N_C = 128 elements (4 WGMMAs) restores accuracy; cuBLASLt's
//           CUBLASLT_MATMUL_DESC_FAST_ACCUM turns that periodic promotion off. Truncation (not rounding) of the
//           bits shifted out follows Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor
//           cores", PeerJ Comput. Sci. 7:e330 (2021). This is a model of the reported behaviour, not a bit-exact
//           emulation of a particular GPU.
//
// Thread safety: the functions here are pure except the once-parsed environment; an AccumPlan is immutable
// after construction and may be used from any thread.
#ifndef TTRACE_TOOLS_SIMGPU_COMMON_ACCUMULATE_H_
#define TTRACE_TOOLS_SIMGPU_COMMON_ACCUMULATE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace simgpu {

enum class AccumOrder { kSequential, kPairwise, kBlocked, kSplitK, kRandom, kBlas };

struct AccumConfig {
  AccumOrder order = AccumOrder::kSequential;
  int64_t param = 0;  // K for kBlocked, S for kSplitK
  uint64_t seed = 0;  // kRandom
};

// Parses a SIMGPU_ACCUM value (grammar above; an empty string is sequential). Returns false with a message.
bool ParseAccumConfig(const std::string& text, AccumConfig* out, std::string* error);
// Parses a SIMGPU_FP8_ACC_BITS value: an integer in [1, 23]. Returns false with a message.
bool ParseFp8AccBits(const std::string& text, int* bits, std::string* error);

// SIMGPU_ACCUM and SIMGPU_FP8_ACC_BITS (0 when unset) of this process, parsed once; the first call (at load
// time) exits with status 2 on a malformed value.
const AccumConfig& AccumFromEnv();
int Fp8AccBitsFromEnv();
// Parses `value` (nullptr: unset) or prints "simgpu: malformed SIMGPU_ACCUM=..." and exits with status 2.
// Exposed for tests.
AccumConfig AccumConfigOrDie(const char* value);
int Fp8AccBitsOrDie(const char* value);

enum class AccumPrecision { kFp16, kFp32, kFp64, kFp8 };

// Promotion interval of the reduced FP8 accumulator by default (DeepSeek-V3's N_C).
constexpr int64_t kFp8PromoteInterval = 128;

// The summation of one call (one GEMM, one convolution), fixed by the order, the precision, k and the call
// number. Construction is O(k) for random order, O(1) otherwise.
class AccumPlan {
 public:
  AccumPlan(const AccumConfig& config, AccumPrecision precision, int64_t k, int64_t call,
            int fp8_bits = Fp8AccBitsFromEnv(), int64_t promote_interval = kFp8PromoteInterval);

  // The sum of k products in this plan's order and precision: x[p] is product number p (rounded to the
  // accumulator precision first, as stated above). Use the float form for kFp16, kFp32 and kFp8, the double form
  // for kFp64.
  float Sum(const float* x) const;
  double Sum(const double* x) const;

  // Many sums at once: out[j * ldo + i] = sum over p of a[i + p * lda] * b[p + j * ldb] for i < m, j < n (the
  // column-major product of an m x k and a k x n matrix), each element summed exactly as Sum() would sum its k
  // products. Float operands for kFp16, kFp32 and kFp8, double for kFp64. out must not overlap a or b.
  void SumPanel(int64_t m, int64_t n, const float* a, int64_t lda, const float* b, int64_t ldb, float* out,
                int64_t ldo) const;
  void SumPanel(int64_t m, int64_t n, const double* a, int64_t lda, const double* b, int64_t ldb, double* out,
                int64_t ldo) const;

  // A run of positions [begin, end) in summation order, summed sequentially from +0 (internal to the kernels).
  struct Run {
    int64_t begin, end;
  };

  int64_t k() const { return k_; }
  AccumOrder order() const { return config_.order; }
  AccumPrecision precision() const { return precision_; }

 private:
  AccumConfig config_;
  AccumPrecision precision_;
  int64_t k_;
  int fp8_bits_;
  int64_t promote_interval_;
  std::vector<Run> runs_;       // sequential runs (all orders but pairwise and blas)
  std::vector<int64_t> perm_;   // random order: p = perm_[q]; empty: p = q
};

// The permutation random:SEED uses for call `call` with k products (exposed for tests and for callers that
// need the order itself).
std::vector<int64_t> RandomOrder(uint64_t seed, int64_t call, int64_t k);

}  // namespace simgpu

#endif  // TTRACE_TOOLS_SIMGPU_COMMON_ACCUMULATE_H_
