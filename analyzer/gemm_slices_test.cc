// Full replay in FP32 slices (GemmMethod::kFullFp32): the verdict of FP64 full replay, element for element. Pinned
// from both sides: elements placed just within and just beyond their FP64 bound, on either side of the reference,
// on data whose FP32 slices err most (magnitudes spread over 2^±12: the slices' sums cancel), are judged as full
// replay judges them (a pass criterion that dropped the reference's error, or a bound 2x too loose, fails here);
// single-bit flips of every bit of a BF16 and an FP16 output are found exactly where full replay finds them; on clean
// GEMMs computed as a device would (three orders) nothing is found, few elements are recomputed, and the reported
// worst err/bound is full replay's to 1e-3; data it does not fit goes to FP64 full replay.
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analyzer/bf16_slices.h"
#include "analyzer/gemm_check.h"
#include "analyzer/tensor_data.h"
#include "analyzer/test_util.h"
#include "gtest/gtest.h"

namespace ttrace::analyzer {
namespace {

using format::DType;
using testing::Encode;
using testing::RoundTo;

constexpr uint16_t kGemmEx = static_cast<uint16_t>(format::ApiId::kCublasGemmEx);

GemmPrecision Precision(DType in, DType out) {
  auto p = ResolveGemmPrecision(kGemmEx, 68, 0, in, in, out);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

// A GEMM of `in` operands stored as the transposes say (spread: magnitudes 2^[-12, 12) with random signs; else
// uniform in [-1, 1)), C0 when β != 0, and an output the device would give: the FP64 product summed in FP32 in
// `order` (0 sequential, 1 reversed, 2 blocks of 32), rounded to `out`.
GemmProblem Make(std::mt19937_64& rng, int64_t m, int64_t n, int64_t k, int64_t batch, DType in, DType out,
                 double alpha, double beta, uint8_t ta, uint8_t tb, bool spread, int order) {
  std::uniform_real_distribution<double> u(-1, 1), e(-12, 12);
  auto value = [&] { return RoundTo(in, spread ? (rng() % 2 ? 1.0 : -1.0) * std::exp2(e(rng)) : u(rng)); };
  GemmProblem p;
  p.m = m, p.n = n, p.k = k, p.batch = batch, p.alpha = alpha, p.beta = beta, p.transa = ta, p.transb = tb;
  p.a.resize(static_cast<size_t>(m * k * batch));
  p.b.resize(static_cast<size_t>(k * n * batch));
  for (auto& v : p.a) v = value();
  for (auto& v : p.b) v = value();
  if (beta != 0) {
    p.c_in.resize(static_cast<size_t>(m * n * batch));
    for (auto& v : p.c_in) v = RoundTo(out, u(rng));
  }
  p.c_out.resize(static_cast<size_t>(m * n * batch));
  std::vector<float> prod(static_cast<size_t>(k));
  for (int64_t bt = 0; bt < batch; ++bt) {
    const double* a = p.a.data() + bt * m * k;
    const double* b = p.b.data() + bt * k * n;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t l = 0; l < k; ++l)
          prod[l] = static_cast<float>(a[ta ? l + i * k : i + l * m]) * static_cast<float>(b[tb ? j + l * n : l + j * k]);
        float acc = 0;
        if (order == 1) {
          for (int64_t l = k - 1; l >= 0; --l) acc += prod[l];
        } else if (order == 2) {
          for (int64_t l0 = 0; l0 < k; l0 += 32) {
            float part = 0;
            for (int64_t l = l0; l < std::min(k, l0 + 32); ++l) part += prod[l];
            acc += part;
          }
        } else {
          for (float v : prod) acc += v;
        }
        const size_t x = static_cast<size_t>(bt * m * n + i + j * m);
        float r = static_cast<float>(alpha) * acc;
        if (beta != 0) r += static_cast<float>(beta) * static_cast<float>(p.c_in[x]);
        p.c_out[x] = RoundTo(out, r);
      }
  }
  return p;
}

// How the slices run: P computed (kAlways) or bounded only (kNever); the slices by SGEMM or by the vdpbf16ps kernel
// (where the CPU has it: Ways() lists the kernel's ways only then).
struct Way {
  Fp32P fp32_p = Fp32P::kWhereNeeded;
  SliceKernel kernel = SliceKernel::kAuto;
};

GemmVerdict Verify(const GemmProblem& p, const GemmPrecision& prec, GemmMethod method, Way way = {}) {
  GemmCheckOptions o;
  o.method = method;
  o.fp32_p = way.fp32_p;
  o.slice_kernel = way.kernel;
  return VerifyGemm(p, prec, o);
}

std::vector<Way> Ways() {
  std::vector<Way> ways;
  for (SliceKernel kernel : {SliceKernel::kSgemm, SliceKernel::kBf16Dot}) {
    if (kernel == SliceKernel::kBf16Dot && !Bf16DotAvailable()) continue;
    for (Fp32P path : {Fp32P::kAlways, Fp32P::kNever}) ways.push_back({path, kernel});
  }
  return ways;
}
std::string PathName(Way way) {
  return std::string(way.fp32_p == Fp32P::kAlways ? " P computed" : " P bounded") +
         (way.kernel == SliceKernel::kBf16Dot ? " vdpbf16ps" : " SGEMM");
}

void ExpectSameFindings(const GemmVerdict& full, const GemmVerdict& slices, const std::string& what) {
  EXPECT_EQ(full.method, GemmMethod::kFull) << what;
  EXPECT_EQ(slices.method, GemmMethod::kFullFp32) << what;
  EXPECT_EQ(slices.stats.elements, full.stats.elements) << what;
  EXPECT_EQ(slices.stats.violations, full.stats.violations) << what;
  EXPECT_EQ(slices.stats.has_violation, full.stats.has_violation) << what;
  if (full.stats.has_violation && slices.stats.has_violation) {
    EXPECT_EQ(slices.stats.first_index, full.stats.first_index) << what;
    EXPECT_EQ(slices.stats.first_got, full.stats.first_got) << what;
    EXPECT_NEAR(slices.stats.first_ref, full.stats.first_ref, 1e-12 * (1 + std::fabs(full.stats.first_ref))) << what;
    EXPECT_NEAR(slices.stats.first_bound, full.stats.first_bound, 1e-12 * full.stats.first_bound) << what;
  }
}

// The kernel a way forces ran: SGEMM computes no panel by vdpbf16ps; the kernel computes every panel of BF16 data.
void ExpectKernel(const GemmVerdict& v, Way way, DType dt, const std::string& what) {
  if (v.method != GemmMethod::kFullFp32) return;
  if (way.kernel == SliceKernel::kSgemm) EXPECT_EQ(v.bf16_dot_panels, 0u) << what;
  if (way.kernel == SliceKernel::kBf16Dot && dt == DType::kBF16) EXPECT_GT(v.bf16_dot_panels, 0u) << what;
}

// Each of 48 elements set to ref ± f·bound (FP64 full replay's numbers) for f just below and just above 1, on both
// sides: the slices judge every one as full replay does. The data spreads magnitudes so that the FP32 slices err by
// far more than the margin (2^-20 of the bound): a pass criterion without the reference's error term lets some
// element beyond its bound pass, one with the bound doubled lets all of them pass.
TEST(GemmSlicesTest, ElementsAtTheirBoundAreJudgedAsFullReplayJudgesThem) {
  std::mt19937_64 rng(5);
  int cases = 0;
  for (DType dt : {DType::kBF16, DType::kF16}) {
    for (int64_t k : {40, 700, 3000}) {
      for (bool spread : {true, false}) {
        const double alpha = spread ? 1 : -0.75, beta = k == 700 ? 0.5 : 0;
        GemmProblem p = Make(rng, 24, 20, k, 1, dt, dt, alpha, beta, k == 3000, k == 40, spread && dt == DType::kBF16, 0);
        const GemmPrecision prec = Precision(dt, dt);
        const std::vector<GemmElementTerms> ref = GemmReference(p);
        const GemmBound bound(prec, k, alpha, beta);
        std::vector<size_t> picked;
        for (int e = 0; e < 48; ++e) picked.push_back(static_cast<size_t>(rng() % p.c_out.size()));
        for (double f : {1 - 0x1p-20, 1 + 0x1p-20}) {
          GemmProblem q = p;
          for (size_t e = 0; e < picked.size(); ++e) {
            const double b = bound.Bound(ref[picked[e]]);
            q.c_out[picked[e]] = ref[picked[e]].ref + (e % 2 ? 1 : -1) * f * b;
          }
          const GemmVerdict full = Verify(q, prec, GemmMethod::kFull);
          const std::string what = std::string(format::FindDType(static_cast<uint8_t>(dt))->name) +
                                   " k=" + std::to_string(k) + (spread ? " spread" : "") + " f=" + std::to_string(f);
          for (const Way& path : Ways()) {
            const GemmVerdict v = Verify(q, prec, GemmMethod::kFullFp32, path);
            ExpectSameFindings(full, v, what + PathName(path));
            ExpectKernel(v, path, dt, what + PathName(path));
          }
          // 48 of 480 elements at their bound: beyond 1/32 undecided by P's bounds alone, so P is computed.
          const GemmVerdict where_needed = Verify(q, prec, GemmMethod::kFullFp32);
          ExpectSameFindings(full, where_needed, what);
          EXPECT_EQ(where_needed.p_gemm_panels, 1u) << what;
          if (f > 1) {
            EXPECT_EQ(full.stats.violations, std::set<size_t>(picked.begin(), picked.end()).size()) << what;
          } else {
            EXPECT_EQ(full.stats.violations, 0u) << what;
          }
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 24);
}

// Every bit of one output element flipped (BF16: bits 0-15, FP16: 0-15), 6 elements per bit including small ones: the
// slices find exactly the flips full replay finds, at the same element (k = 1500, the size class where auto chose the
// projection before, scaled down).
TEST(GemmSlicesTest, BitFlipsAreFoundExactlyAsFullReplayFindsThem) {
  std::mt19937_64 rng(9);
  for (DType dt : {DType::kBF16, DType::kF16}) {
    const GemmProblem p = Make(rng, 32, 24, 1500, 1, dt, dt, 1, 0, 0, 1, false, 2);
    const GemmPrecision prec = Precision(dt, dt);
    int found = 0;
    for (int bit = 0; bit < 16; ++bit) {
      for (int e = 0; e < 6; ++e) {
        GemmProblem q = p;
        const size_t x = e == 0 ? 0 : static_cast<size_t>(rng() % q.c_out.size());
        std::string bytes = Encode(dt, {q.c_out[x]});
        testing::FlipBit(&bytes, dt, 0, bit);
        q.c_out[x] = DecodeAll(dt, bytes)[0];
        const GemmVerdict full = Verify(q, prec, GemmMethod::kFull);
        for (const Way& path : Ways()) {
          const GemmVerdict v = Verify(q, prec, GemmMethod::kFullFp32, path);
          ExpectSameFindings(full, v, "bit " + std::to_string(bit) + PathName(path));
          ExpectKernel(v, path, dt, "bit " + std::to_string(bit) + PathName(path));
        }
        found += full.stats.violations > 0;
      }
    }
    EXPECT_GT(found, 60) << "the exponent and top mantissa flips";  // 16 bits x 6: the low mantissa bits may pass
  }
}

// Clean GEMMs computed as a device would, in three orders, with transposes, α, β and batches: no finding, almost every
// element decided from the slices (recomputed below 1%), and the worst err/bound reported within 1e-3 of full replay's
// (the decided elements' numbers are evaluated from the FP32 reference and |A||B|: a bound 2x too loose halves it).
TEST(GemmSlicesTest, CleanGemmsAreCleanAndTheirTightnessIsFullReplays) {
  std::mt19937_64 rng(17);
  for (DType dt : {DType::kBF16, DType::kF16}) {
    for (int order = 0; order < 3; ++order) {
      for (int64_t k : {16, 333, 2048}) {
        const double alpha = order == 1 ? 2.5 : 1, beta = order == 2 ? -0.75 : 0;
        const GemmProblem p = Make(rng, 40, 36, k, order == 0 ? 2 : 1, dt, dt, alpha, beta, order == 1, order != 1,
                                   false, order);
        const GemmPrecision prec = Precision(dt, dt);
        const GemmVerdict full = Verify(p, prec, GemmMethod::kFull);
        const std::string what = "order " + std::to_string(order) + " k=" + std::to_string(k);
        EXPECT_GT(full.stats.worst_ratio, 0.1) << what;  // the comparisons below are meaningful
        for (const Way& path : Ways()) {
          const GemmVerdict slices = Verify(p, prec, GemmMethod::kFullFp32, path);
          const std::string at = what + PathName(path);
          ExpectSameFindings(full, slices, at);
          ExpectKernel(slices, path, dt, at);
          EXPECT_EQ(slices.stats.violations, 0u) << at;
          EXPECT_EQ(Verify(p, prec, GemmMethod::kFullFp32).p_gemm_panels, 0u) << what << ": P not needed";
          EXPECT_LT(slices.recomputed, slices.stats.elements / 100 + 1) << at;
          EXPECT_NEAR(slices.stats.max_abs_err, full.stats.max_abs_err, 1e-3 * full.stats.max_abs_err) << at;
          if (path.fp32_p == Fp32P::kAlways) {
            EXPECT_NEAR(slices.stats.worst_ratio, full.stats.worst_ratio, 1e-3 * full.stats.worst_ratio) << at;
            EXPECT_NEAR(slices.guaranteed, full.guaranteed, 1e-3 * full.guaranteed) << at;
          } else {
            // Decided elements are reported with the bound at P's lower end: at least full replay's err/bound,
            // within 1; the guaranteed level at its upper end, within 1.25 of full replay's here (measured 1.24:
            // Cauchy–Schwarz on uniform data is 4/3·P; an upper end twice too high fails).
            EXPECT_GE(slices.stats.worst_ratio, full.stats.worst_ratio * (1 - 1e-9)) << at;
            EXPECT_LE(slices.stats.worst_ratio, 1) << at;
            EXPECT_GE(slices.guaranteed, full.guaranteed * (1 - 1e-9)) << at;
            EXPECT_LE(slices.guaranteed, 1.3 * full.guaranteed) << at;
          }
        }
      }
    }
  }
}

// Data the slices do not fit goes to FP64 full replay with the same verdict: FP32 inputs (more than 12 significant
// bits), an FP32 subnormal, a NaN, products whose sum could overflow FP32.
TEST(GemmSlicesTest, DataTheSlicesDoNotFitIsReplayedInFp64) {
  std::mt19937_64 rng(23);
  const GemmPrecision prec = Precision(DType::kBF16, DType::kBF16);
  const GemmProblem base = Make(rng, 8, 8, 16, 1, DType::kBF16, DType::kBF16, 1, 0, 0, 0, false, 0);
  EXPECT_EQ(Verify(base, prec, GemmMethod::kFullFp32).method, GemmMethod::kFullFp32);
  for (int c = 0; c < 4; ++c) {
    GemmProblem q = base;
    if (c == 0) q.a[3] = 1 + 0x1p-20;
    if (c == 1) q.b[5] = 0x1p-130;
    if (c == 2) q.a[1] = std::nan("");
    if (c == 3) q.a[2] = 0x1p100, q.b[2] = 0x1p30;
    const GemmVerdict v = Verify(q, prec, GemmMethod::kFullFp32), full = Verify(q, prec, GemmMethod::kFull);
    EXPECT_EQ(v.method, GemmMethod::kFull) << c;
    EXPECT_EQ(v.stats.violations, full.stats.violations) << c;
  }
}

// Captured operands (the bytes CheckGemmOp passes: raw_a, raw_b, raw_c_out) are read by their own conversion (BF16,
// FP16 bits): the verdict is the decoded operands' one, with every transpose, a batch of shared and unshared
// operands, and a flipped output; an operand holding a BF16 subnormal, an Inf or a NaN is replayed in FP64 instead.
TEST(GemmSlicesTest, CapturedOperandsGiveTheDecodedOperandsVerdict) {
  std::mt19937_64 rng(31);
  for (DType dt : {DType::kBF16, DType::kF16}) {
    const GemmPrecision prec = Precision(dt, dt);
    for (int shape = 0; shape < 4; ++shape) {
      const uint8_t ta = shape & 1, tb = (shape >> 1) & 1;
      GemmProblem p = Make(rng, 70, 45, 300, 2, dt, dt, 1, 0, ta, tb, shape == 3 && dt == DType::kBF16, shape % 3);
      p.c_out[77] = RoundTo(dt, -3 * p.c_out[77]);
      const std::string a = Encode(dt, p.a), b = Encode(dt, p.b), c = Encode(dt, p.c_out);
      GemmProblem raw = p;
      raw.raw_a = GemmOperand{dt, a.data(), p.a.size()};
      raw.raw_b = GemmOperand{dt, b.data(), p.b.size()};
      raw.raw_c_out = GemmOperand{dt, c.data(), p.c_out.size()};
      const std::string what = std::string(format::FindDType(static_cast<uint8_t>(dt))->name) + " shape " +
                               std::to_string(shape);
      for (const Way& way : Ways()) {
        if (way.fp32_p != Fp32P::kNever) continue;
        const Way each{Fp32P::kWhereNeeded, way.kernel};
        const std::string how = what + PathName(each);
        const GemmVerdict decoded = Verify(p, prec, GemmMethod::kFullFp32, each);
        const GemmVerdict captured = Verify(raw, prec, GemmMethod::kFullFp32, each);
        ASSERT_EQ(captured.method, GemmMethod::kFullFp32) << how;
        ExpectKernel(captured, each, dt, how);
        EXPECT_EQ(captured.bf16_dot_panels, decoded.bf16_dot_panels) << how;
        EXPECT_EQ(captured.stats.violations, decoded.stats.violations) << how;
        EXPECT_GE(captured.stats.violations, 1u) << how;
        EXPECT_EQ(captured.stats.first_index, decoded.stats.first_index) << how;
        EXPECT_EQ(captured.stats.worst_index, decoded.stats.worst_index) << how;
        EXPECT_EQ(captured.stats.worst_ratio, decoded.stats.worst_ratio) << how;
        EXPECT_EQ(captured.recomputed, decoded.recomputed) << how;
        EXPECT_EQ(captured.guaranteed, decoded.guaranteed) << how;
      }
      // One value the slices do not take, in A's second batch or in B: FP64 full replay.
      const uint16_t refused[] = {dt == DType::kBF16 ? uint16_t{0x0003} : uint16_t{0x7c00}, 0xfc00, 0x7fc1};
      for (int r = 0; r < 3; ++r) {
        std::string a2 = a, b2 = b;
        std::string& bytes = r == 1 ? b2 : a2;
        const size_t at = r == 1 ? 5 : p.a.size() - 7;
        std::memcpy(&bytes[2 * at], &refused[r], 2);
        GemmProblem q = raw;
        q.raw_a.data = a2.data();
        q.raw_b.data = b2.data();
        for (SliceKernel kernel : {SliceKernel::kSgemm, SliceKernel::kBf16Dot})
          EXPECT_EQ(Verify(q, prec, GemmMethod::kFullFp32, {Fp32P::kWhereNeeded, kernel}).method, GemmMethod::kFull)
              << what << " refused " << r << " kernel " << static_cast<int>(kernel);
      }
    }
  }
}

// Outputs of more than one panel (2^20 elements: 2048 x 1100 is panels of 512, 512 and 76 columns), op(B) read a panel
// at a time as stored or transposed, captured or decoded: full replay's findings, with wrong elements in the first
// and last panels; a value of B the slices do not take in the last panel only sends the GEMM to FP64 replay.
TEST(GemmSlicesTest, PanelsOfBAreReadWhereTheyLie) {
  std::mt19937_64 rng(37);
  const DType dt = DType::kBF16;
  const GemmPrecision prec = Precision(dt, dt);
  for (uint8_t tb : {0, 1}) {
    GemmProblem p = Make(rng, 2048, 1100, 16, 1, dt, dt, 1, 0, 0, tb, false, 0);
    // op(B)'s last 76 columns and their outputs x 64 (exact): the largest bounds lie in the last panel.
    for (int64_t j = 1024; j < 1100; ++j) {
      for (int64_t l = 0; l < 16; ++l) p.b[static_cast<size_t>(tb ? j + l * 1100 : l + j * 16)] *= 64;
      for (int64_t i = 0; i < 2048; ++i) p.c_out[static_cast<size_t>(i + j * 2048)] *= 64;
    }
    for (size_t x : {size_t{5}, size_t{2048} * 1099 + 17, size_t{2048} * 600 + 3})
      p.c_out[x] = RoundTo(dt, -2 * p.c_out[x] + 0.5);
    const std::string b = Encode(dt, p.b);
    GemmProblem raw = p;
    raw.raw_b = GemmOperand{dt, b.data(), p.b.size()};
    const GemmVerdict full = Verify(p, prec, GemmMethod::kFull);
    EXPECT_EQ(full.stats.violations, 3u) << int{tb};
    for (const Way& path : Ways()) {
      for (const GemmProblem* q : {&p, &raw}) {
        const std::string what = (q == &raw ? "captured, tb " : "tb ") + std::to_string(tb) + PathName(path);
        const GemmVerdict v = Verify(*q, prec, GemmMethod::kFullFp32, path);
        ExpectSameFindings(full, v, what);
        ExpectKernel(v, path, dt, what);
        // The guaranteed level, 2 x the largest bound at P's upper end (at P32 where computed): at least full
        // replay's and within 1.3 of it (column sums of B where they belong: the last panel's bounds are the largest).
        EXPECT_GE(v.guaranteed, full.guaranteed * (1 - 1e-9)) << what;
        EXPECT_LE(v.guaranteed, full.guaranteed * 1.3) << what;
      }
    }
    // B's element (l = 3, j = 1090): the last panel's.
    GemmProblem q = p;
    q.b[static_cast<size_t>(tb ? 1090 + 3 * 1100 : 3 + 1090 * 16)] = 0x1p-130;
    EXPECT_EQ(Verify(q, prec, GemmMethod::kFullFp32).method, GemmMethod::kFull) << int{tb};
  }
}

// The kernel runs panel by panel where the values are BF16 numbers: a BF16 GEMM whose op(B) holds, in its last panel's
// column 1090, values of 12 significant bits (each ±(1 + 2^-8 + 2^-9 + 2^-10 + 2^-11): truncated to BF16 they would
// move that column's outputs by 0.73%, beyond their bound) computes that panel by SGEMM and the two others by
// vdpbf16ps, with full replay's findings; auto takes the kernel where the CPU has it, SGEMM forced never does.
TEST(GemmSlicesTest, TheKernelRunsWhereTheValuesAreBf16Numbers) {
  std::mt19937_64 rng(41);
  const DType dt = DType::kBF16;
  const GemmPrecision prec = Precision(dt, dt);
  const int64_t m = 2048, n = 1100, k = 16, j = 1090;
  GemmProblem p = Make(rng, m, n, k, 1, dt, dt, 1, 0, 0, 0, false, 0);
  const double wide = 1 + 0x1p-8 + 0x1p-9 + 0x1p-10 + 0x1p-11;
  for (int64_t l = 0; l < k; ++l) p.b[static_cast<size_t>(l + j * k)] = rng() % 2 ? wide : -wide;
  for (int64_t i = 0; i < m; ++i) {
    float acc = 0;
    for (int64_t l = 0; l < k; ++l)
      acc += static_cast<float>(p.a[static_cast<size_t>(i + l * m)]) * static_cast<float>(p.b[static_cast<size_t>(l + j * k)]);
    p.c_out[static_cast<size_t>(i + j * m)] = RoundTo(dt, acc);
  }
  for (size_t x : {size_t{9}, static_cast<size_t>(m * j + 100), static_cast<size_t>(m * 1099 + 5)})
    p.c_out[x] = RoundTo(dt, -2 * p.c_out[x] + 0.5);
  const GemmVerdict full = Verify(p, prec, GemmMethod::kFull);
  EXPECT_EQ(full.stats.violations, 3u);
  for (const Way& way : Ways()) {
    const GemmVerdict v = Verify(p, prec, GemmMethod::kFullFp32, way);
    ExpectSameFindings(full, v, PathName(way));
    EXPECT_EQ(v.bf16_dot_panels, way.kernel == SliceKernel::kBf16Dot ? 2u : 0u) << PathName(way);
  }
  EXPECT_EQ(Verify(p, prec, GemmMethod::kFullFp32).bf16_dot_panels, Bf16DotAvailable() ? 2u : 0u);
}

// auto: FP64 full replay up to projection_above, the slices above for 16-bit outputs of inputs that fit; FP32 outputs
// and FP32 inputs keep their rules.
TEST(GemmSlicesTest, AutoChoosesTheSlicesAboveTheFullReplayBudget) {
  std::mt19937_64 rng(29);
  GemmCheckOptions o;
  o.projection_above = 1000;
  o.full_16bit_up_to = 5000;
  for (DType dt : {DType::kBF16, DType::kF16}) {
    const GemmPrecision prec = Precision(dt, dt);
    EXPECT_EQ(VerifyGemm(Make(rng, 8, 8, 8, 1, dt, dt, 1, 0, 0, 0, false, 0), prec, o).method, GemmMethod::kFull);
    EXPECT_EQ(VerifyGemm(Make(rng, 16, 16, 64, 1, dt, dt, 1, 0, 0, 0, false, 0), prec, o).method,
              GemmMethod::kFullFp32);
  }
  EXPECT_EQ(VerifyGemm(Make(rng, 16, 16, 64, 1, DType::kBF16, DType::kF32, 1, 0, 0, 0, false, 0),
                       Precision(DType::kBF16, DType::kF32), o).method,
            GemmMethod::kProjection);
  EXPECT_TRUE(Fp32SlicesFit(DType::kBF16, DType::kE4M3));
  EXPECT_FALSE(Fp32SlicesFit(DType::kF32, DType::kBF16));
}

}  // namespace
}  // namespace ttrace::analyzer
