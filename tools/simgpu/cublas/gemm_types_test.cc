// Every cuBLAS GEMM entry point x every type combination of its table x every transpose pair, with padded leading
// dimensions, batch gaps and several alpha/beta: the output equals gemm_reference.h's independent expectation bit
// for bit (for the SIMGPU_ACCUM order in effect, sequential by default) and lies within the FP64 error bound.
// Also: the exact set of supported type combinations, TF32 input rounding, FP16 accumulation, host and device
// pointer modes for every scale type. Registered once per accumulation order (CMakeLists.txt).
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/cublas/gemm_reference.h"

namespace simgpu::gemm_ref {
namespace {

enum class Entry {
  kGemmEx, kGemmEx64, kSgemmEx, kSgemmEx64, kSgemm, kSgemm64, kDgemm, kDgemm64, kHgemm, kHgemm64,
  kGemmStridedBatchedEx, kGemmStridedBatchedEx64, kGemmBatchedEx, kGemmBatchedEx64,
  kSgemmStridedBatched, kSgemmStridedBatched64, kDgemmStridedBatched, kDgemmStridedBatched64,
  kHgemmStridedBatched, kHgemmStridedBatched64, kSgemmBatched, kSgemmBatched64, kDgemmBatched, kDgemmBatched64,
  kHgemmBatched, kHgemmBatched64,
};
constexpr int kEntries = static_cast<int>(Entry::kHgemmBatched64) + 1;
const char* const kEntryNames[kEntries] = {
    "GemmEx", "GemmEx_64", "SgemmEx", "SgemmEx_64", "Sgemm", "Sgemm_64", "Dgemm", "Dgemm_64", "Hgemm",
    "Hgemm_64", "GemmStridedBatchedEx", "GemmStridedBatchedEx_64", "GemmBatchedEx", "GemmBatchedEx_64",
    "SgemmStridedBatched", "SgemmStridedBatched_64", "DgemmStridedBatched", "DgemmStridedBatched_64",
    "HgemmStridedBatched", "HgemmStridedBatched_64", "SgemmBatched", "SgemmBatched_64", "DgemmBatched",
    "DgemmBatched_64", "HgemmBatched", "HgemmBatched_64"};

bool Batched(Entry e) { return static_cast<int>(e) >= static_cast<int>(Entry::kGemmStridedBatchedEx); }
bool PointerArrays(Entry e) {
  switch (e) {
    case Entry::kGemmBatchedEx: case Entry::kGemmBatchedEx64: case Entry::kSgemmBatched:
    case Entry::kSgemmBatched64: case Entry::kDgemmBatched: case Entry::kDgemmBatched64:
    case Entry::kHgemmBatched: case Entry::kHgemmBatched64:
      return true;
    default:
      return false;
  }
}
bool Is64(Entry e) { return std::string(kEntryNames[static_cast<int>(e)]).find("_64") != std::string::npos; }

// Which types a typed routine fixes (CUDA_R_32F etc.), or -1 for the Ex routines that take them.
int FixedType(Entry e) {
  const std::string name = kEntryNames[static_cast<int>(e)];
  if (name.rfind("SgemmEx", 0) == 0 || name.find("GemmEx") == 0 || name.find("Gemm") == 0) return -1;
  if (name[0] == 'S') return CUDA_R_32F;
  if (name[0] == 'D') return CUDA_R_64F;
  return CUDA_R_16F;
}

struct Combo {
  cublasComputeType_t compute;
  cudaDataType ab, c;
  cublasMath_t mode;
};

// The rows of cuBLAS's cublasGemmEx table (real types), plus the math modes that change FP32 arithmetic.
const Combo kExCombos[] = {
    {CUBLAS_COMPUTE_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_DEFAULT_MATH},
    {CUBLAS_COMPUTE_16F_PEDANTIC, CUDA_R_16F, CUDA_R_16F, CUBLAS_DEFAULT_MATH},
    {CUBLAS_COMPUTE_32F, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_DEFAULT_MATH},
    {CUBLAS_COMPUTE_32F, CUDA_R_16F, CUDA_R_16F, CUBLAS_DEFAULT_MATH},
    {CUBLAS_COMPUTE_32F, CUDA_R_8I, CUDA_R_32F, CUBLAS_DEFAULT_MATH},
    {CUBLAS_COMPUTE_32F, CUDA_R_16BF, CUDA_R_32F, CUBLAS_DEFAULT_MATH},
    {CUBLAS_COMPUTE_32F, CUDA_R_16F, CUDA_R_32F, CUBLAS_DEFAULT_MATH},
    {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_DEFAULT_MATH},
    {CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_16F, CUDA_R_32F, CUBLAS_DEFAULT_MATH},
    {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_TF32_TENSOR_OP_MATH},
    {CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_32F, CUDA_R_32F, CUBLAS_TF32_TENSOR_OP_MATH},
    {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_TENSOR_OP_MATH},
    {CUBLAS_COMPUTE_32F_FAST_16F, CUDA_R_32F, CUDA_R_32F, CUBLAS_DEFAULT_MATH},
    {CUBLAS_COMPUTE_32F_FAST_16BF, CUDA_R_32F, CUDA_R_32F, CUBLAS_DEFAULT_MATH},
    {CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, CUDA_R_32F, CUBLAS_DEFAULT_MATH},
    {CUBLAS_COMPUTE_64F, CUDA_R_64F, CUDA_R_64F, CUBLAS_DEFAULT_MATH},
    {CUBLAS_COMPUTE_64F_PEDANTIC, CUDA_R_64F, CUDA_R_64F, CUBLAS_DEFAULT_MATH},
    {CUBLAS_COMPUTE_32I, CUDA_R_8I, CUDA_R_32I, CUBLAS_DEFAULT_MATH},
    {CUBLAS_COMPUTE_32I_PEDANTIC, CUDA_R_8I, CUDA_R_32I, CUBLAS_DEFAULT_MATH},
};
constexpr int kExComboCount = sizeof(kExCombos) / sizeof(kExCombos[0]);

// The combos an entry point runs: the Ex table for GemmEx-style entries, the 32F rows for SgemmEx, and for typed
// routines their one type under the math modes that matter (Sgemm: default, TF32, pedantic, tensor-op).
std::vector<Combo> CombosFor(Entry e) {
  std::vector<Combo> out;
  const std::string name = kEntryNames[static_cast<int>(e)];
  const int fixed = FixedType(e);
  if (fixed == CUDA_R_32F) {
    for (cublasMath_t mode : {CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH, CUBLAS_PEDANTIC_MATH,
                              CUBLAS_TENSOR_OP_MATH}) {
      out.push_back({mode == CUBLAS_PEDANTIC_MATH ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F, CUDA_R_32F,
                     CUDA_R_32F, mode});
    }
  } else if (fixed == CUDA_R_64F) {
    out.push_back({CUBLAS_COMPUTE_64F, CUDA_R_64F, CUDA_R_64F, CUBLAS_DEFAULT_MATH});
  } else if (fixed == CUDA_R_16F) {
    out.push_back({CUBLAS_COMPUTE_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_DEFAULT_MATH});
  } else if (name.rfind("SgemmEx", 0) == 0) {
    for (const Combo& c : kExCombos) {
      if (c.compute == CUBLAS_COMPUTE_32F) out.push_back(c);
    }
  } else {
    out.assign(std::begin(kExCombos), std::end(kExCombos));
  }
  return out;
}

// Scalars stored in the scale type of the combination (half, float, double or int32).
struct Scalar {
  alignas(8) uint8_t bytes[8] = {};
};
Scalar MakeScalar(const Arith& ar, double v) {
  Scalar s;
  switch (ar.acc) {
    case Acc::kF16: { _Float16 h = static_cast<_Float16>(v); memcpy(s.bytes, &h, 2); break; }
    case Acc::kF64: memcpy(s.bytes, &v, 8); break;
    case Acc::kI32: { int32_t i = static_cast<int32_t>(v); memcpy(s.bytes, &i, 4); break; }
    default: { float f = static_cast<float>(v); memcpy(s.bytes, &f, 4); break; }
  }
  return s;
}

class DeviceBytes {
 public:
  explicit DeviceBytes(size_t n) { cudaMalloc(&p_, n == 0 ? 1 : n); }
  explicit DeviceBytes(const std::vector<uint8_t>& b) : DeviceBytes(b.size()) {
    cudaMemcpy(p_, b.data(), b.size(), cudaMemcpyHostToDevice);
  }
  ~DeviceBytes() { cudaFree(p_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  char* get() const { return static_cast<char*>(p_); }

 private:
  void* p_ = nullptr;
};

AccumConfig ConfigFromEnv() {
  AccumConfig c;
  std::string error;
  const char* v = getenv("SIMGPU_ACCUM");
  if (v != nullptr) EXPECT_TRUE(ParseAccumConfig(v, &c, &error)) << error;
  return c;
}

// GEMM call numbers of this process, counted by the test the way the library counts them (successful calls).
int64_t& CallCounter() {
  static int64_t calls = 0;
  return calls;
}

// Calls `e` with device buffers holding a, b and c (batches at the case's strides; pointer-array entries get
// arrays of the same batch addresses).
cublasStatus_t Call(cublasHandle_t h, Entry e, const Combo& combo, const Case& g, char* a, char* b, char* c,
                    const void* alpha, const void* beta) {
  std::vector<const void*> pa(g.batch), pb(g.batch);
  std::vector<void*> pc(g.batch);
  for (int64_t i = 0; i < g.batch; ++i) {
    pa[i] = a + i * g.stride_a * Bytes(combo.ab);
    pb[i] = b + i * g.stride_b * Bytes(combo.ab);
    pc[i] = c + i * g.stride_c * Bytes(combo.c);
  }
  DeviceBytes arrays(3 * g.batch * sizeof(void*));
  auto** da = reinterpret_cast<const void**>(arrays.get());
  auto** db = da + g.batch;
  auto** dc = reinterpret_cast<void**>(arrays.get() + 2 * g.batch * sizeof(void*));
  cudaMemcpy(da, pa.data(), g.batch * sizeof(void*), cudaMemcpyHostToDevice);
  cudaMemcpy(db, pb.data(), g.batch * sizeof(void*), cudaMemcpyHostToDevice);
  cudaMemcpy(dc, pc.data(), g.batch * sizeof(void*), cudaMemcpyHostToDevice);
  const auto ta = g.ta, tb = g.tb;
  const int m = g.m, n = g.n, k = g.k, lda = g.lda, ldb = g.ldb, ldc = g.ldc, bc = g.batch;
  const auto sa = g.stride_a, sb = g.stride_b, sc = g.stride_c;
  using F = float;
  using D = double;
  using H = __half;
  auto fa = reinterpret_cast<const F*>(a);
  auto fb = reinterpret_cast<const F*>(b);
  auto fc = reinterpret_cast<F*>(c);
  auto xa = reinterpret_cast<const D*>(a);
  auto xb = reinterpret_cast<const D*>(b);
  auto xc = reinterpret_cast<D*>(c);
  auto ha = reinterpret_cast<const H*>(a);
  auto hb = reinterpret_cast<const H*>(b);
  auto hc = reinterpret_cast<H*>(c);
  auto fs = [](const void* p) { return static_cast<const F*>(p); };
  auto ds = [](const void* p) { return static_cast<const D*>(p); };
  auto hs = [](const void* p) { return static_cast<const H*>(p); };
  const cublasGemmAlgo_t algo = CUBLAS_GEMM_DEFAULT;
  cublasStatus_t st = CUBLAS_STATUS_INTERNAL_ERROR;
  switch (e) {
    case Entry::kGemmEx:
      st = cublasGemmEx(h, ta, tb, m, n, k, alpha, a, combo.ab, lda, b, combo.ab, ldb, beta, c, combo.c, ldc,
                        combo.compute, algo);
      break;
    case Entry::kGemmEx64:
      st = cublasGemmEx_64(h, ta, tb, m, n, k, alpha, a, combo.ab, lda, b, combo.ab, ldb, beta, c, combo.c, ldc,
                           combo.compute, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
      break;
    case Entry::kSgemmEx:
      st = cublasSgemmEx(h, ta, tb, m, n, k, fs(alpha), a, combo.ab, lda, b, combo.ab, ldb, fs(beta), c, combo.c,
                         ldc);
      break;
    case Entry::kSgemmEx64:
      st = cublasSgemmEx_64(h, ta, tb, m, n, k, fs(alpha), a, combo.ab, lda, b, combo.ab, ldb, fs(beta), c, combo.c,
                            ldc);
      break;
    case Entry::kSgemm: st = cublasSgemm_v2(h, ta, tb, m, n, k, fs(alpha), fa, lda, fb, ldb, fs(beta), fc, ldc); break;
    case Entry::kSgemm64:
      st = cublasSgemm_v2_64(h, ta, tb, m, n, k, fs(alpha), fa, lda, fb, ldb, fs(beta), fc, ldc);
      break;
    case Entry::kDgemm: st = cublasDgemm_v2(h, ta, tb, m, n, k, ds(alpha), xa, lda, xb, ldb, ds(beta), xc, ldc); break;
    case Entry::kDgemm64:
      st = cublasDgemm_v2_64(h, ta, tb, m, n, k, ds(alpha), xa, lda, xb, ldb, ds(beta), xc, ldc);
      break;
    case Entry::kHgemm: st = cublasHgemm(h, ta, tb, m, n, k, hs(alpha), ha, lda, hb, ldb, hs(beta), hc, ldc); break;
    case Entry::kHgemm64:
      st = cublasHgemm_64(h, ta, tb, m, n, k, hs(alpha), ha, lda, hb, ldb, hs(beta), hc, ldc);
      break;
    case Entry::kGemmStridedBatchedEx:
      st = cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, alpha, a, combo.ab, lda, sa, b, combo.ab, ldb, sb, beta, c,
                                      combo.c, ldc, sc, bc, combo.compute, algo);
      break;
    case Entry::kGemmStridedBatchedEx64:
      st = cublasGemmStridedBatchedEx_64(h, ta, tb, m, n, k, alpha, a, combo.ab, lda, sa, b, combo.ab, ldb, sb, beta,
                                         c, combo.c, ldc, sc, bc, combo.compute, algo);
      break;
    case Entry::kGemmBatchedEx:
      st = cublasGemmBatchedEx(h, ta, tb, m, n, k, alpha, da, combo.ab, lda, db, combo.ab, ldb, beta, dc, combo.c,
                               ldc, bc, combo.compute, algo);
      break;
    case Entry::kGemmBatchedEx64:
      st = cublasGemmBatchedEx_64(h, ta, tb, m, n, k, alpha, da, combo.ab, lda, db, combo.ab, ldb, beta, dc, combo.c,
                                  ldc, bc, combo.compute, algo);
      break;
    case Entry::kSgemmStridedBatched:
      st = cublasSgemmStridedBatched(h, ta, tb, m, n, k, fs(alpha), fa, lda, sa, fb, ldb, sb, fs(beta), fc, ldc, sc,
                                     bc);
      break;
    case Entry::kSgemmStridedBatched64:
      st = cublasSgemmStridedBatched_64(h, ta, tb, m, n, k, fs(alpha), fa, lda, sa, fb, ldb, sb, fs(beta), fc, ldc,
                                        sc, bc);
      break;
    case Entry::kDgemmStridedBatched:
      st = cublasDgemmStridedBatched(h, ta, tb, m, n, k, ds(alpha), xa, lda, sa, xb, ldb, sb, ds(beta), xc, ldc, sc,
                                     bc);
      break;
    case Entry::kDgemmStridedBatched64:
      st = cublasDgemmStridedBatched_64(h, ta, tb, m, n, k, ds(alpha), xa, lda, sa, xb, ldb, sb, ds(beta), xc, ldc,
                                        sc, bc);
      break;
    case Entry::kHgemmStridedBatched:
      st = cublasHgemmStridedBatched(h, ta, tb, m, n, k, hs(alpha), ha, lda, sa, hb, ldb, sb, hs(beta), hc, ldc, sc,
                                     bc);
      break;
    case Entry::kHgemmStridedBatched64:
      st = cublasHgemmStridedBatched_64(h, ta, tb, m, n, k, hs(alpha), ha, lda, sa, hb, ldb, sb, hs(beta), hc, ldc,
                                        sc, bc);
      break;
    case Entry::kSgemmBatched:
      st = cublasSgemmBatched(h, ta, tb, m, n, k, fs(alpha), reinterpret_cast<const F* const*>(da), lda,
                              reinterpret_cast<const F* const*>(db), ldb, fs(beta), reinterpret_cast<F* const*>(dc),
                              ldc, bc);
      break;
    case Entry::kSgemmBatched64:
      st = cublasSgemmBatched_64(h, ta, tb, m, n, k, fs(alpha), reinterpret_cast<const F* const*>(da), lda,
                                 reinterpret_cast<const F* const*>(db), ldb, fs(beta),
                                 reinterpret_cast<F* const*>(dc), ldc, bc);
      break;
    case Entry::kDgemmBatched:
      st = cublasDgemmBatched(h, ta, tb, m, n, k, ds(alpha), reinterpret_cast<const D* const*>(da), lda,
                              reinterpret_cast<const D* const*>(db), ldb, ds(beta), reinterpret_cast<D* const*>(dc),
                              ldc, bc);
      break;
    case Entry::kDgemmBatched64:
      st = cublasDgemmBatched_64(h, ta, tb, m, n, k, ds(alpha), reinterpret_cast<const D* const*>(da), lda,
                                 reinterpret_cast<const D* const*>(db), ldb, ds(beta),
                                 reinterpret_cast<D* const*>(dc), ldc, bc);
      break;
    case Entry::kHgemmBatched:
      st = cublasHgemmBatched(h, ta, tb, m, n, k, hs(alpha), reinterpret_cast<const H* const*>(da), lda,
                              reinterpret_cast<const H* const*>(db), ldb, hs(beta), reinterpret_cast<H* const*>(dc),
                              ldc, bc);
      break;
    case Entry::kHgemmBatched64:
      st = cublasHgemmBatched_64(h, ta, tb, m, n, k, hs(alpha), reinterpret_cast<const H* const*>(da), lda,
                                 reinterpret_cast<const H* const*>(db), ldb, hs(beta),
                                 reinterpret_cast<H* const*>(dc), ldc, bc);
      break;
  }
  cudaDeviceSynchronize();  // the pointer arrays are freed on return
  if (st == CUBLAS_STATUS_SUCCESS) ++CallCounter();
  return st;
}

const cublasOperation_t kOps[] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
const char* OpName(cublasOperation_t op) { return op == CUBLAS_OP_N ? "N" : op == CUBLAS_OP_T ? "T" : "C"; }

size_t SizeA(const Case& g) { return (g.batch - 1) * g.stride_a + g.lda * (g.ta == CUBLAS_OP_N ? g.k : g.m); }
size_t SizeB(const Case& g) { return (g.batch - 1) * g.stride_b + g.ldb * (g.tb == CUBLAS_OP_N ? g.n : g.k); }
size_t SizeC(const Case& g) { return (g.batch - 1) * g.stride_c + g.ldc * g.n; }

Case MakeCase(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, int pad, int64_t batch) {
  Case g;
  g.ta = ta;
  g.tb = tb;
  g.m = m;
  g.n = n;
  g.k = k;
  g.lda = (ta == CUBLAS_OP_N ? m : k) + pad;
  g.ldb = (tb == CUBLAS_OP_N ? k : n) + 2 * pad;
  g.ldc = m + 3 * pad;
  g.batch = batch;
  Case one = g;
  one.batch = 1;
  g.stride_a = SizeA(one) + pad;
  g.stride_b = SizeB(one) + 2 * pad;
  g.stride_c = SizeC(one) + pad;
  return g;
}

class EntryPoints : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { ASSERT_EQ(cublasCreate_v2(&h_), CUBLAS_STATUS_SUCCESS); }
  void TearDown() override { EXPECT_EQ(cublasDestroy_v2(h_), CUBLAS_STATUS_SUCCESS); }
  cublasHandle_t h_ = nullptr;
};

// (alpha, beta) pairs, exactly representable in every scale type (integers for int32).
const double kScalars[][2] = {{1.0, 0.0}, {-2.0, 3.0}, {0.5, -1.25}};

TEST_P(EntryPoints, EveryComboAndTransposeMatchesReferenceBitForBitAndWithinBound) {
  const Entry e = static_cast<Entry>(GetParam());
  const AccumConfig config = ConfigFromEnv();
  std::mt19937 rng(1000 + GetParam());
  int runs = 0;
  for (const Combo& combo : CombosFor(e)) {
    const Arith ar = Expected(combo.compute, combo.ab, combo.c, combo.mode);
    ASSERT_TRUE(ar.supported);
    ASSERT_EQ(cublasSetMathMode(h_, combo.mode), CUBLAS_STATUS_SUCCESS);
    for (cublasOperation_t ta : kOps) {
      for (cublasOperation_t tb : kOps) {
        for (const auto& sc : kScalars) {
          if (ar.acc == Acc::kI32 && sc[1] != std::floor(sc[1])) continue;
          const int pad = (runs % 2) * 3;
          Case g = MakeCase(ta, tb, 5, 7, 33, pad, Batched(e) ? 3 : 1);
          g.alpha = sc[0];
          g.beta = sc[1];
          SCOPED_TRACE(std::string(kEntryNames[GetParam()]) + " compute=" + std::to_string(combo.compute) +
                       " ab=" + std::to_string(combo.ab) + " c=" + std::to_string(combo.c) +
                       " mode=" + std::to_string(combo.mode) + " " + OpName(ta) + OpName(tb) +
                       " alpha=" + std::to_string(g.alpha) + " beta=" + std::to_string(g.beta) +
                       " pad=" + std::to_string(pad));
          Mat a = RandomMat(combo.ab, SizeA(g), &rng), b = RandomMat(combo.ab, SizeB(g), &rng);
          Mat c0 = RandomMat(combo.c, SizeC(g), &rng);
          DeviceBytes da(a.bytes), db(b.bytes), dc(c0.bytes);
          const Scalar alpha = MakeScalar(ar, g.alpha), beta = MakeScalar(ar, g.beta);
          const int64_t call = CallCounter();
          ASSERT_EQ(Call(h_, e, combo, g, da.get(), db.get(), dc.get(), alpha.bytes, beta.bytes),
                    CUBLAS_STATUS_SUCCESS);
          Mat out = c0;
          cudaMemcpy(out.bytes.data(), dc.get(), out.bytes.size(), cudaMemcpyDeviceToHost);
          out.Refresh();
          const Mat want = ExpectedOutput(g, ar, a, b, c0, config, call);
          ASSERT_EQ(out.bytes, want.bytes) << "differs from the reference summation";
          const BoundResult bound = CheckBound(g, ar, a, b, c0, out);
          ASSERT_EQ(bound.violations, 0) << "worst error / bound " << bound.worst_ratio;
          ASSERT_EQ(bound.padding_changed, 0);
          ++runs;
        }
      }
    }
  }
  EXPECT_GT(runs, 0);
}

INSTANTIATE_TEST_SUITE_P(All, EntryPoints, ::testing::Range(0, kEntries),
                         [](const ::testing::TestParamInfo<int>& info) { return kEntryNames[info.param]; });

class Gemm : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cublasCreate_v2(&h_), CUBLAS_STATUS_SUCCESS); }
  void TearDown() override { EXPECT_EQ(cublasDestroy_v2(h_), CUBLAS_STATUS_SUCCESS); }
  cublasHandle_t h_ = nullptr;
};

// Every (compute, A/B type, C type) among the listed values: SUCCESS exactly for the rows of cuBLAS's table.
TEST_F(Gemm, SupportedCombinationsAreExactlyTheTable) {
  const cublasComputeType_t computes[] = {
      CUBLAS_COMPUTE_16F, CUBLAS_COMPUTE_16F_PEDANTIC, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC,
      CUBLAS_COMPUTE_32F_FAST_16F, CUBLAS_COMPUTE_32F_FAST_16BF, CUBLAS_COMPUTE_32F_FAST_TF32,
      CUBLAS_COMPUTE_64F, CUBLAS_COMPUTE_64F_PEDANTIC, CUBLAS_COMPUTE_32I, CUBLAS_COMPUTE_32I_PEDANTIC,
      static_cast<cublasComputeType_t>(CUDA_R_32F), static_cast<cublasComputeType_t>(CUDA_R_64F),
      static_cast<cublasComputeType_t>(CUDA_R_16F), static_cast<cublasComputeType_t>(CUDA_R_32I),
      static_cast<cublasComputeType_t>(12345)};
  const cudaDataType types[] = {CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F, CUDA_R_64F, CUDA_R_8I, CUDA_R_32I,
                                CUDA_R_8U,  CUDA_C_32F,  CUDA_R_8F_E4M3};
  DeviceBytes buf(4096);
  const double one = 1.0;  // big enough for any scale type; value irrelevant for the status
  int supported = 0;
  for (cublasComputeType_t compute : computes) {
    cublasComputeType_t table_compute = compute;
    switch (static_cast<int>(compute)) {  // cublasMigrateComputeType's mapping of legacy cudaDataType values
      case CUDA_R_32F: table_compute = CUBLAS_COMPUTE_32F; break;
      case CUDA_R_64F: table_compute = CUBLAS_COMPUTE_64F; break;
      case CUDA_R_16F: table_compute = CUBLAS_COMPUTE_16F; break;
      case CUDA_R_32I: table_compute = CUBLAS_COMPUTE_32I; break;
      default: break;
    }
    for (cudaDataType ab : types) {
      for (cudaDataType c : types) {
        const bool want = Expected(table_compute, ab, c, CUBLAS_DEFAULT_MATH).supported;
        const cublasStatus_t st = cublasGemmEx(h_, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, buf.get(), ab, 2,
                                               buf.get() + 1024, ab, 2, &one, buf.get() + 2048, c, 2, compute,
                                               CUBLAS_GEMM_DEFAULT);
        EXPECT_EQ(st, want ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED)
            << "compute " << compute << " ab " << ab << " c " << c;
        supported += want;
        if (st == CUBLAS_STATUS_SUCCESS) ++CallCounter();
      }
    }
    // Mixed A and B types are never supported.
    EXPECT_EQ(cublasGemmEx(h_, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, buf.get(), CUDA_R_16F, 2, buf.get() + 1024,
                           CUDA_R_16BF, 2, &one, buf.get() + 2048, CUDA_R_32F, 2, compute, CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_NOT_SUPPORTED);
  }
  cudaDeviceSynchronize();
  // Each table row once per spelling of its compute type: 16F, 32F, 64F and 32I rows x (type, _PEDANTIC, legacy
  // cudaDataType) = 3 * (1 + 6 + 1 + 1), plus the three FAST types x 1 row.
  EXPECT_EQ(supported, 3 * 9 + 3);
}

// TF32 keeps 10 fraction bits, rounding to nearest even: 1 + 2^-11 (a tie) -> 1, 1 + 3 * 2^-11 -> 1 + 2^-9,
// 1 + 2^-11 + 2^-20 (above the tie) -> 1 + 2^-10. With B = 1 and k = 1, C = tf32(a) exactly.
TEST_F(Gemm, Tf32RoundsInputsToNearestEvenUnlessPedantic) {
  const float in[3] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-20f};
  const float tf32[3] = {1.0f, 1.0f + 0x1p-9f, 1.0f + 0x1p-10f};
  DeviceBytes buf(64);
  float* a = reinterpret_cast<float*>(buf.get());
  float* b = a + 4;
  float* c = a + 8;
  const float one = 1.0f, zero = 0.0f;
  for (int t = 0; t < 3; ++t) {
    cudaMemcpy(a, &in[t], 4, cudaMemcpyHostToDevice);
    cudaMemcpy(b, &one, 4, cudaMemcpyHostToDevice);
    auto run = [&](cublasMath_t mode, cublasComputeType_t compute, bool sgemm) {
      EXPECT_EQ(cublasSetMathMode(h_, mode), CUBLAS_STATUS_SUCCESS);
      EXPECT_EQ(sgemm ? cublasSgemm_v2(h_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, a, 1, b, 1, &zero, c, 1)
                      : cublasGemmEx(h_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, a, CUDA_R_32F, 1, b, CUDA_R_32F, 1,
                                     &zero, c, CUDA_R_32F, 1, compute, CUBLAS_GEMM_DEFAULT),
                CUBLAS_STATUS_SUCCESS);
      ++CallCounter();
      float out = 0;
      cudaMemcpy(&out, c, 4, cudaMemcpyDeviceToHost);
      return out;
    };
    EXPECT_EQ(run(CUBLAS_TF32_TENSOR_OP_MATH, CUBLAS_COMPUTE_32F, true), tf32[t]) << t;
    EXPECT_EQ(run(CUBLAS_TF32_TENSOR_OP_MATH, CUBLAS_COMPUTE_32F, false), tf32[t]) << t;
    EXPECT_EQ(run(CUBLAS_DEFAULT_MATH, CUBLAS_COMPUTE_32F_FAST_TF32, false), tf32[t]) << t;
    EXPECT_EQ(run(CUBLAS_DEFAULT_MATH, CUBLAS_COMPUTE_32F, true), in[t]) << t;
    EXPECT_EQ(run(CUBLAS_TF32_TENSOR_OP_MATH, CUBLAS_COMPUTE_32F_PEDANTIC, false), in[t]) << t;
    EXPECT_EQ(run(static_cast<cublasMath_t>(CUBLAS_PEDANTIC_MATH), CUBLAS_COMPUTE_32F, true), in[t]) << t;
  }
}

// FP16 accumulation: in sequential order, summing 3000 products 1 * 1 stalls at 2048 (2048 + 1 ties to the even
// 2048 in binary16); other orders give what the reference says for them. FP32 accumulation of the same FP16
// operands reaches 3000 in every order (all partial sums are small integers).
TEST_F(Gemm, Fp16ComputeAccumulatesInHalfPrecision) {
  const int k = 3000;
  std::vector<_Float16> ones(k, static_cast<_Float16>(1.0f));
  DeviceBytes a(k * 2), out16(2), out32(4);
  cudaMemcpy(a.get(), ones.data(), k * 2, cudaMemcpyHostToDevice);
  const _Float16 h1 = 1, h0 = 0;
  const float f1 = 1, f0 = 0;
  testing_ref::RefSpec spec;
  spec.config = ConfigFromEnv();
  spec.precision = AccumPrecision::kFp16;
  spec.call = CallCounter();
  const double want16 = testing_ref::RefSum(spec, std::vector<double>(k, 1.0));
  if (spec.config.order == AccumOrder::kSequential) EXPECT_EQ(want16, 2048.0);
  ASSERT_EQ(cublasHgemm(h_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, k, reinterpret_cast<const __half*>(&h1),
                        reinterpret_cast<const __half*>(a.get()), 1, reinterpret_cast<const __half*>(a.get()), k,
                        reinterpret_cast<const __half*>(&h0), reinterpret_cast<__half*>(out16.get()), 1),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGemmEx(h_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, k, &f1, a.get(), CUDA_R_16F, 1, a.get(), CUDA_R_16F, k,
                         &f0, out32.get(), CUDA_R_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  CallCounter() += 2;
  _Float16 r16;
  float r32;
  cudaMemcpy(&r16, out16.get(), 2, cudaMemcpyDeviceToHost);
  cudaMemcpy(&r32, out32.get(), 4, cudaMemcpyDeviceToHost);
  EXPECT_EQ(static_cast<double>(r16), want16);
  EXPECT_EQ(r32, 3000.0f);
}

// The order decides the bits. One output element, k = 7 products x = (2^24, 0, 0, 0, 1, 0, 1) in FP32; the expected
// sums are written out here from accumulate.h's text, not computed with simgpu's or the reference's code:
//   sequential, blocked:7, blocked:1000 (one run):  ((2^24 + 0 + 0 + 0) + 1) + 0 + 1: each +1 ties to even, 2^24
//   pairwise: stack ((x0+x1)+(x2+x3)), (x4+x5), x6; s = x6; s = (x4+x5) + s = 2; s = e0 + s = 2^24 + 2
//   splitk:3: slices [0,2) [2,4) [4,7) sum to 2^24, 0, 2; combined sequentially: 2^24 + 2
// A wrong order (a left-to-right final combine, a missing run) gives 2^24 where 2^24 + 2 is due, or the reverse.
TEST_F(Gemm, AccumulationOrderDecidesTheBits) {
  const AccumConfig config = ConfigFromEnv();
  float want = 0;
  switch (config.order) {
    case AccumOrder::kSequential: want = 0x1p24f; break;
    case AccumOrder::kBlocked: want = 0x1p24f; break;  // K = 7 and 1000: one run
    case AccumOrder::kPairwise: want = 0x1p24f + 2; break;
    case AccumOrder::kSplitK: want = config.param == 3 ? 0x1p24f + 2 : 0; break;
    default: GTEST_SKIP() << "no hand-written expectation for this order";
  }
  ASSERT_NE(want, 0) << "no hand-written expectation for splitk:" << config.param;
  const float x[7] = {0x1p24f, 0, 0, 0, 1, 0, 1}, ones[7] = {1, 1, 1, 1, 1, 1, 1};
  DeviceBytes a(sizeof x), b(sizeof ones), c(4);
  cudaMemcpy(a.get(), x, sizeof x, cudaMemcpyHostToDevice);
  cudaMemcpy(b.get(), ones, sizeof ones, cudaMemcpyHostToDevice);
  const float one = 1, zero = 0;
  ASSERT_EQ(cublasSgemm_v2(h_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 7, &one, reinterpret_cast<const float*>(a.get()), 1,
                           reinterpret_cast<const float*>(b.get()), 7, &zero, reinterpret_cast<float*>(c.get()), 1),
            CUBLAS_STATUS_SUCCESS);
  ++CallCounter();
  float got = 0;
  cudaMemcpy(&got, c.get(), 4, cudaMemcpyDeviceToHost);
  EXPECT_EQ(got, want);
}

// random:SEED: the same GEMM called twice sums in two different orders (a different result on data whose rounding
// depends on the order), each the one the reference derives from the call number.
TEST_F(Gemm, RandomOrderDiffersBetweenCalls) {
  const AccumConfig config = ConfigFromEnv();
  if (config.order != AccumOrder::kRandom) GTEST_SKIP() << "runs under SIMGPU_ACCUM=random:SEED";
  const Combo combo{CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_DEFAULT_MATH};
  const Arith ar = Expected(combo.compute, combo.ab, combo.c, combo.mode);
  Case g = MakeCase(CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 2000, 0, 1);
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> pos(0.0, 1.0);
  Mat a(CUDA_R_32F, SizeA(g)), b(CUDA_R_32F, SizeB(g)), c0(CUDA_R_32F, SizeC(g));
  for (size_t i = 0; i < a.size(); ++i) a.Set(i, pos(rng));
  for (size_t i = 0; i < b.size(); ++i) b.Set(i, pos(rng));
  DeviceBytes da(a.bytes), db(b.bytes), dc(c0.bytes);
  const Scalar alpha = MakeScalar(ar, 1.0), beta = MakeScalar(ar, 0.0);
  std::vector<Mat> outs;
  for (int rep = 0; rep < 2; ++rep) {
    const int64_t call = CallCounter();
    ASSERT_EQ(Call(h_, Entry::kSgemm, combo, g, da.get(), db.get(), dc.get(), alpha.bytes, beta.bytes),
              CUBLAS_STATUS_SUCCESS);
    Mat out = c0;
    cudaMemcpy(out.bytes.data(), dc.get(), out.bytes.size(), cudaMemcpyDeviceToHost);
    out.Refresh();
    EXPECT_EQ(out.bytes, ExpectedOutput(g, ar, a, b, c0, config, call).bytes) << rep;
    outs.push_back(out);
  }
  EXPECT_NE(outs[0].bytes, outs[1].bytes);
}

// Device pointer mode for every scale type: alpha and beta are read from device memory, as the scale type.
TEST_F(Gemm, DevicePointerModeForEveryScaleType) {
  ASSERT_EQ(cublasSetPointerMode_v2(h_, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
  const Combo combos[] = {{CUBLAS_COMPUTE_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_DEFAULT_MATH},
                          {CUBLAS_COMPUTE_32F, CUDA_R_16BF, CUDA_R_32F, CUBLAS_DEFAULT_MATH},
                          {CUBLAS_COMPUTE_64F, CUDA_R_64F, CUDA_R_64F, CUBLAS_DEFAULT_MATH},
                          {CUBLAS_COMPUTE_32I, CUDA_R_8I, CUDA_R_32I, CUBLAS_DEFAULT_MATH}};
  std::mt19937 rng(77);
  for (const Combo& combo : combos) {
    const Arith ar = Expected(combo.compute, combo.ab, combo.c, combo.mode);
    Case g = MakeCase(CUBLAS_OP_T, CUBLAS_OP_N, 4, 3, 9, 1, 1);
    g.alpha = -3;
    g.beta = 2;
    Mat a = RandomMat(combo.ab, SizeA(g), &rng), b = RandomMat(combo.ab, SizeB(g), &rng);
    Mat c0 = RandomMat(combo.c, SizeC(g), &rng);
    DeviceBytes da(a.bytes), db(b.bytes), dc(c0.bytes), scalars(16);
    const Scalar alpha = MakeScalar(ar, g.alpha), beta = MakeScalar(ar, g.beta);
    cudaMemcpy(scalars.get(), alpha.bytes, 8, cudaMemcpyHostToDevice);
    cudaMemcpy(scalars.get() + 8, beta.bytes, 8, cudaMemcpyHostToDevice);
    const int64_t call = CallCounter();
    ASSERT_EQ(Call(h_, Entry::kGemmEx, combo, g, da.get(), db.get(), dc.get(), scalars.get(), scalars.get() + 8),
              CUBLAS_STATUS_SUCCESS);
    Mat out = c0;
    cudaMemcpy(out.bytes.data(), dc.get(), out.bytes.size(), cudaMemcpyDeviceToHost);
    out.Refresh();
    EXPECT_EQ(out.bytes, ExpectedOutput(g, ar, a, b, c0, ConfigFromEnv(), call).bytes) << combo.compute;
  }
}

}  // namespace
}  // namespace simgpu::gemm_ref
