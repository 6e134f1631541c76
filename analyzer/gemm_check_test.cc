// GEMM replay through the whole analyzer path: synthetic traces written with TraceWriter, loaded, checked.
// Bit-flip sweeps: every flip of a stored output bit that moves the value beyond the bound is found, at the
// flipped element and op only; clean traces are clean; uncheckable ops are counted, not reported.
#include "analyzer/gemm_check.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "analyzer/check.h"
#include "analyzer/tensor_data.h"
#include "analyzer/test_util.h"
#include "analyzer/trace_model.h"
#include "gtest/gtest.h"
#include "store/float_codec.h"

namespace ttrace::analyzer {
namespace {

using format::DType;
using format::PayloadKind;
using format::TensorSlot;
using testing::Encode;
using testing::RoundTo;
using testing::StreamBuilder;

// A GEMM with random operands and the output a device computes (FP32 sequential accumulation, one rounding to
// C's type), all values representable in their dtypes. No transposes (the bound tests cover them).
struct Sample {
  format::GemmRecord rec;
  DType ab, c;
  std::vector<double> a, b, c_in, c_out;
};

// c_out from A, B (and C0) as the device computes it.
void ComputeOut(Sample* s) {
  const int64_t m = s->rec.m, n = s->rec.n, k = s->rec.k;
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i) {
      float acc = 0;
      for (int64_t l = 0; l < k; ++l) acc += static_cast<float>(s->a[i + l * m]) * static_cast<float>(s->b[l + j * k]);
      float r = static_cast<float>(s->rec.alpha) * acc;
      if (s->rec.beta != 0) r += static_cast<float>(s->rec.beta) * static_cast<float>(s->c_in[i + j * m]);
      s->c_out[i + j * m] = RoundTo(s->c, r);
    }
  }
}

Sample MakeSample(uint64_t seq, int64_t m, int64_t n, int64_t k, DType ab, DType c, double alpha, double beta,
                  std::mt19937_64& rng) {
  Sample s{testing::GemmRec(seq, m, n, k, ab, c, 68, alpha, beta), ab, c, {}, {}, {}, {}};
  std::uniform_real_distribution<double> u(-1, 1);
  s.a.resize(static_cast<size_t>(m * k));
  s.b.resize(static_cast<size_t>(k * n));
  for (auto& v : s.a) v = RoundTo(ab, u(rng));
  for (auto& v : s.b) v = RoundTo(ab, u(rng));
  if (beta != 0) {
    s.c_in.resize(static_cast<size_t>(m * n));
    for (auto& v : s.c_in) v = RoundTo(c, u(rng));
  }
  s.c_out.resize(static_cast<size_t>(m * n));
  ComputeOut(&s);
  return s;
}

GemmProblem ProblemOf(const Sample& s) {
  GemmProblem p;
  p.m = s.rec.m;
  p.n = s.rec.n;
  p.k = s.rec.k;
  p.alpha = s.rec.alpha;
  p.beta = s.rec.beta;
  p.a = s.a;
  p.b = s.b;
  p.c_in = s.c_in;
  p.c_out = s.c_out;
  return p;
}

// Writes the sample's record and tensors; `c_out_bytes` overrides the encoded output (for faults).
void WriteSample(StreamBuilder& w, const Sample& s, const std::string* c_out_bytes = nullptr) {
  const auto& g = s.rec;
  w.Gemm(g);
  w.Tensor(g.seq, TensorSlot::kA, s.ab, g.m, g.k, 1, Encode(s.ab, s.a));
  w.Tensor(g.seq, TensorSlot::kB, s.ab, g.k, g.n, 1, Encode(s.ab, s.b));
  if (g.beta != 0) w.Tensor(g.seq, TensorSlot::kCIn, s.c, g.m, g.n, 1, Encode(s.c, s.c_in));
  w.Tensor(g.seq, TensorSlot::kCOut, s.c, g.m, g.n, 1, c_out_bytes ? *c_out_bytes : Encode(s.c, s.c_out));
}

int Bits(DType d) { return 8 * static_cast<int>(format::DTypeSize(static_cast<uint8_t>(d))); }

// The textbook worst case of a correct FP32-accumulating device for element e of a sample (Higham, Theorem 3.5, to
// first order, written out here independently of error_model.cc): each product passes through at most k + 2
// roundings of 2^-24 (k - 1 additions, β·C0, α), then one rounding to C's type: (k + 2)·2^-24·P + u_out·|C|.
struct Textbook {
  double ref = 0;    // α·Σ a·b + β·c0 in FP64
  double worst = 0;  // the worst clean error
};
Textbook TextbookOf(const Sample& s, uint64_t e) {
  const int64_t m = s.rec.m, k = s.rec.k, i = static_cast<int64_t>(e) % m, j = static_cast<int64_t>(e) / m;
  double sum = 0, abs_sum = 0;
  for (int64_t l = 0; l < k; ++l) {
    sum += s.a[i + l * m] * s.b[l + j * k];
    abs_sum += std::fabs(s.a[i + l * m] * s.b[l + j * k]);
  }
  Textbook t;
  const double c0 = s.rec.beta != 0 ? s.c_in[e] : 0;
  t.ref = s.rec.alpha * sum + s.rec.beta * c0;
  const double p = std::fabs(s.rec.alpha) * abs_sum + std::fabs(s.rec.beta * c0);
  const double u_out = s.c == DType::kF32 ? 0 : s.c == DType::kF16 ? 0x1p-11 : 0x1p-8;
  t.worst = static_cast<double>(k + 2) * 0x1p-24 * p + u_out * std::fabs(t.ref);
  return t;
}

// Sweep every bit of a sample of output elements. The criterion is independent of the bound under test: a flip
// that leaves the value within the textbook worst case of a correct device must not be flagged (a correct device
// could have produced it); one that moves it beyond 1.5x that worst case must be found, at its element and only
// there (the bound's higher-order terms add far less than 50%). So a bound 2x too loose or too tight fails here.
TEST(GemmCheckTest, BitFlipSweepFindsEveryFlipBeyondTheTextbookWorstCase) {
  std::mt19937_64 rng(42);
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    int flips = 0, found = 0, in_window = 0, missed_high = -1;
    for (int64_t k : {16, 512}) {
      Sample s = MakeSample(0, 8, 6, k, dt, dt, 1.0, k == 16 ? 0.5 : 0.0, rng);
      GemmProblem p = ProblemOf(s);
      auto precision = ResolveGemmPrecision(s.rec.api, 68, 0, dt, dt, dt);
      ASSERT_TRUE(precision.ok());
      ASSERT_EQ(ReplayGemm(p, *precision).violations, 0u);
      const std::string clean_bytes = Encode(dt, s.c_out);
      for (uint64_t e : {0u, 7u, 20u, 47u}) {
        const Textbook tb = TextbookOf(s, e);
        ASSERT_LE(std::fabs(s.c_out[e] - tb.ref), tb.worst) << "the sample's device result is itself out of bounds";
        for (int bit = 0; bit < Bits(dt); ++bit) {
          std::string bytes = clean_bytes;
          testing::FlipBit(&bytes, dt, e, bit);
          p.c_out = DecodeAll(dt, bytes);
          const ElementStats st = ReplayGemm(p, *precision);
          const double flipped = p.c_out[e];
          const double err = std::isfinite(flipped) ? std::fabs(flipped - tb.ref) : HUGE_VAL;
          ++flips;
          ASSERT_LE(st.violations, 1u) << "a flip of one element must not implicate others";
          if (st.violations == 1) {
            ++found;
            EXPECT_EQ(st.first_index, e);
          } else if (bit > missed_high) {
            missed_high = bit;
          }
          const std::string what = DTypeName(static_cast<uint8_t>(dt)) + " k=" + std::to_string(k) + " element " +
                                   std::to_string(e) + " bit " + std::to_string(bit) + ": err " +
                                   std::to_string(err) + ", textbook worst case " + std::to_string(tb.worst);
          if (err <= tb.worst) EXPECT_EQ(st.violations, 0u) << what << ": a correct device could give this";
          if (err > 1.5 * tb.worst) EXPECT_EQ(st.violations, 1u) << what << ": beyond any correct device";
          if (err > 1.5 * tb.worst && err <= 3 * tb.worst) ++in_window;
        }
      }
    }
    printf("[bitflip] %-5s output: %d of %d single-bit flips found, %d of them 1.5-3x the textbook worst case; the "
           "rest within it (highest such bit %d)\n",
           DTypeName(static_cast<uint8_t>(dt)).c_str(), found, flips, in_window, missed_high);
  }
}

// Writes `n_ranks` streams of `gemms_per_rank` GEMMs (mixed dtypes, α, β) with an optional fault, then checks.
struct TraceCase {
  std::string dir;
  std::vector<std::vector<Sample>> samples;  // [rank][op]
};

TraceCase WriteTrace(int n_ranks, int gemms_per_rank, int fault_rank, int fault_op, int fault_elem, int fault_bit,
                     uint64_t seed) {
  std::mt19937_64 rng(seed);
  TraceCase tc;
  tc.dir = testing::TempDir("gemm_trace");
  const DType types[][2] = {{DType::kF32, DType::kF32}, {DType::kBF16, DType::kBF16}, {DType::kF16, DType::kF16},
                            {DType::kBF16, DType::kF32}};
  tc.samples.resize(static_cast<size_t>(n_ranks));
  for (int r = 0; r < n_ranks; ++r) {
    StreamBuilder w(tc.dir + "/rank-" + std::to_string(r) + ".ttr", r, n_ranks, "job", 4096);
    for (int i = 0; i < gemms_per_rank; ++i) {
      const auto& t = types[(i + r) % 4];
      const uint64_t seq = static_cast<uint64_t>(2 * i + r);  // seqs differ across ranks
      Sample s = MakeSample(seq, 4 + i % 5, 3 + i % 4, 8 << (i % 6), t[0], t[1], i % 3 == 0 ? -0.5 : 1.0,
                            i % 4 == 1 ? 1.0 : 0.0, rng);
      if (r == fault_rank && i == fault_op) {
        std::string bytes = Encode(s.c, s.c_out);
        testing::FlipBit(&bytes, s.c, static_cast<uint64_t>(fault_elem), fault_bit);
        WriteSample(w, s, &bytes);
      } else {
        WriteSample(w, s);
      }
      tc.samples[static_cast<size_t>(r)].push_back(std::move(s));
    }
  }
  return tc;
}

TEST(GemmCheckTest, CleanTraceIsCleanAndReportsTightness) {
  TraceCase tc = WriteTrace(2, 12, -1, 0, 0, 0, 7);
  auto set = LoadTraceDir(tc.dir);
  ASSERT_TRUE(set.ok()) << set.status();
  CheckReport report = RunChecks(*set);
  EXPECT_TRUE(report.no_findings()) << report.findings().front().message;
  EXPECT_EQ(report.summary().checked.at("gemm"), 24u);
  EXPECT_EQ(report.summary().ops, 24u);
  EXPECT_EQ(report.summary().not_checked_total(), 0u);
  ASSERT_TRUE(report.summary().overall.valid);
  EXPECT_GT(report.summary().overall.max_ratio, 0.0);
  EXPECT_LE(report.summary().overall.max_ratio, 1.0);
}

// A flip in one rank's GEMM output is reported at that (rank, seq) and nowhere else, for flips that leave the
// bound; high bits (sign, exponent, top mantissa) always do for these data.
TEST(GemmCheckTest, FaultSweepThroughTracesNamesTheRightOp) {
  int cases = 0;
  for (int fault_rank = 0; fault_rank < 2; ++fault_rank) {
    for (int op = 0; op < 8; op += 3) {
      for (int top = 1; top <= 3; ++top) {
        TraceCase probe = WriteTrace(2, 8, -1, 0, 0, 0, 99);
        const Sample& s = probe.samples[static_cast<size_t>(fault_rank)][static_cast<size_t>(op)];
        const int bit = Bits(s.c) - top;  // sign, then the two highest exponent bits
        const int elem = op % static_cast<int>(s.c_out.size());
        if (s.c_out[static_cast<size_t>(elem)] == 0 && top == 1) continue;  // -0 == 0
        TraceCase tc = WriteTrace(2, 8, fault_rank, op, elem, bit, 99);
        auto set = LoadTraceDir(tc.dir);
        ASSERT_TRUE(set.ok()) << set.status();
        CheckReport report = RunChecks(*set);
        ASSERT_EQ(report.findings().size(), 1u) << "rank " << fault_rank << " op " << op << " bit " << bit;
        const Finding& f = report.findings()[0];
        EXPECT_EQ(f.rank, fault_rank);
        EXPECT_EQ(f.seq, s.rec.seq);
        EXPECT_EQ(f.check, "gemm.replay");
        EXPECT_EQ(f.api, "cublasGemmEx");
        EXPECT_EQ(f.first.index, static_cast<uint64_t>(elem));
        EXPECT_EQ(f.violations, 1u);
        EXPECT_GT(f.ratio, 1.0);
        EXPECT_EQ(report.summary().checked.at("gemm"), 16u);
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 12);
}

GemmProblem Tiny(double a, double b, double out, double alpha = 1, double beta = 0, double c0 = 0) {
  GemmProblem p;
  p.m = p.n = p.k = 1;
  p.alpha = alpha;
  p.beta = beta;
  p.a = {a};
  p.b = {b};
  if (beta != 0) p.c_in = {c0};
  p.c_out = {out};
  return p;
}

TEST(GemmCheckTest, NonFiniteRules) {
  auto prec = ResolveGemmPrecision(3, 68, 0, DType::kF32, DType::kF32, DType::kF32);
  ASSERT_TRUE(prec.ok());
  const double nan = std::nan(""), inf = HUGE_VAL;
  EXPECT_EQ(ReplayGemm(Tiny(2, 3, 6), *prec).violations, 0u);
  EXPECT_EQ(ReplayGemm(Tiny(2, 3, nan), *prec).violations, 1u);        // NaN where the reference is finite
  EXPECT_EQ(ReplayGemm(Tiny(2, 3, inf), *prec).violations, 1u);        // Inf where no overflow is possible
  EXPECT_EQ(ReplayGemm(Tiny(nan, 3, nan), *prec).violations, 0u);      // NaN in, NaN out
  EXPECT_EQ(ReplayGemm(Tiny(nan, 3, 1), *prec).violations, 1u);        // NaN in, finite out
  EXPECT_EQ(ReplayGemm(Tiny(inf, 3, inf), *prec).violations, 0u);
  EXPECT_EQ(ReplayGemm(Tiny(inf, 3, -inf), *prec).violations, 1u);     // the other infinity
  EXPECT_EQ(ReplayGemm(Tiny(inf, 0, nan), *prec).violations, 0u);      // Inf·0 = NaN
  EXPECT_EQ(ReplayGemm(Tiny(3e38, 3e38, inf), *prec).violations, 0u);  // legitimate FP32 overflow
  EXPECT_EQ(ReplayGemm(Tiny(nan, 3, 5, 0, 1, 5), *prec).violations, 0u);  // α = 0: A, B not read
  EXPECT_EQ(ReplayGemm(Tiny(2, 3, 6, 1, 0, nan), *prec).violations, 0u);  // β = 0: C0 not read
  EXPECT_EQ(ReplayGemm(Tiny(2, 3, 6.5, 1, 0), *prec).violations, 1u);
}

TEST(GemmCheckTest, BatchedTransposedAndBroadcastOperands) {
  // op(A) = Aᵀ with A stored k x m, B shared by all batches (stored once), 3 batches.
  const int64_t m = 3, n = 2, k = 4, batch = 3;
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> d(-4, 4);
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  p.transa = 1;
  p.a.resize(static_cast<size_t>(k * m * batch));
  p.b.resize(static_cast<size_t>(k * n));
  for (auto& v : p.a) v = d(rng);
  for (auto& v : p.b) v = d(rng);
  p.c_out.resize(static_cast<size_t>(m * n * batch));
  for (int64_t bt = 0; bt < batch; ++bt)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) {
        double s = 0;
        for (int64_t l = 0; l < k; ++l) s += p.a[bt * k * m + l + i * k] * p.b[l + j * k];
        p.c_out[bt * m * n + i + j * m] = s;
      }
  auto prec = ResolveGemmPrecision(3, 68, 0, DType::kF32, DType::kF32, DType::kF32);
  ASSERT_TRUE(prec.ok());
  EXPECT_EQ(ReplayGemm(p, *prec).violations, 0u);
  p.c_out[m * n + 1 + 1 * m] += 1;  // batch 1, row 1, col 1
  ElementStats st = ReplayGemm(p, *prec);
  EXPECT_EQ(st.violations, 1u);
  EXPECT_EQ(st.first_index, static_cast<uint64_t>(m * n + 1 + m));
  EXPECT_GT(st.worst_ratio, 1.0);
}

// Strided batched GEMMs through the whole path: one clean op, then a fault in the first, a middle and the last batch
// (each its own op), with A, B and C per batch or B shared by every batch (stride 0, stored once). The corrupted
// element becomes 2c + 1: an error of at least 1, while no correct device errs by more than (k + 2)·2^-24·P +
// u_out·|C| < 0.05 here (|a|, |b| <= 1, k = 24). Each is found at its batch and element, alone, and the summary
// counts every element of every batch.
TEST(GemmCheckTest, FaultInFirstMiddleAndLastBatchIsFoundThere) {
  const int64_t m = 4, n = 3, k = 24, batch = 5, mn = m * n;
  for (DType dt : {DType::kF32, DType::kBF16}) {
    for (bool shared_b : {false, true}) {
      std::mt19937_64 rng(shared_b ? 8 : 9);
      const std::string dir = testing::TempDir("gemm_batched");
      uint64_t elements = 0;
      {
        StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
        for (uint64_t seq = 0; seq < 4; ++seq) {
          // Batch bt of A and C from its own sample; B from sample 0 when shared.
          std::vector<Sample> parts;
          for (int64_t bt = 0; bt < batch; ++bt) parts.push_back(MakeSample(seq, m, n, k, dt, dt, 1.0, 0.0, rng));
          if (shared_b) {
            for (int64_t bt = 1; bt < batch; ++bt) {
              parts[bt].b = parts[0].b;
              ComputeOut(&parts[bt]);
            }
          }
          std::vector<double> a, b, c;
          for (int64_t bt = 0; bt < batch; ++bt) {
            a.insert(a.end(), parts[bt].a.begin(), parts[bt].a.end());
            if (!shared_b || bt == 0) b.insert(b.end(), parts[bt].b.begin(), parts[bt].b.end());
            c.insert(c.end(), parts[bt].c_out.begin(), parts[bt].c_out.end());
          }
          const int64_t fault_batch = seq == 1 ? 0 : seq == 2 ? batch / 2 : batch - 1;
          const int64_t fault = fault_batch * mn + static_cast<int64_t>((seq * 7 + 3) % mn);
          if (seq > 0) c[fault] = RoundTo(dt, 2 * c[fault] + 1);
          format::GemmRecord g = testing::GemmRec(seq, m, n, k, dt, dt);
          g.api = static_cast<uint16_t>(format::ApiId::kCublasGemmStridedBatchedEx);
          g.batch_count = batch;
          g.stride_a = m * k;
          g.stride_b = shared_b ? 0 : k * n;
          g.stride_c = mn;
          w.Gemm(g);
          w.Tensor(seq, TensorSlot::kA, dt, m, k, batch, Encode(dt, a));
          w.Tensor(seq, TensorSlot::kB, dt, k, n, shared_b ? 1 : batch, Encode(dt, b));
          w.Tensor(seq, TensorSlot::kCOut, dt, m, n, batch, Encode(dt, c));
          elements += static_cast<uint64_t>(mn * batch);
        }
      }
      auto set = LoadTraceDir(dir);
      ASSERT_TRUE(set.ok()) << set.status();
      CheckReport report = RunChecks(*set);
      const std::string what = DTypeName(static_cast<uint8_t>(dt)) + (shared_b ? " shared B" : " batched B");
      EXPECT_EQ(report.summary().checked.at("gemm"), 4u) << what;
      EXPECT_EQ(report.summary().elements_checked, elements) << what;
      ASSERT_EQ(report.findings().size(), 3u) << what;
      for (uint64_t seq = 1; seq < 4; ++seq) {
        const Finding& f = report.findings()[seq - 1];
        const int64_t fault_batch = seq == 1 ? 0 : seq == 2 ? batch / 2 : batch - 1;
        EXPECT_EQ(f.seq, seq) << what;
        EXPECT_EQ(f.check, "gemm.replay") << what;
        EXPECT_EQ(f.violations, 1u) << what;
        EXPECT_EQ(f.elements, static_cast<uint64_t>(mn * batch)) << what;
        EXPECT_EQ(f.first.batch, fault_batch) << what << " seq " << seq;
        EXPECT_EQ(f.first.index, static_cast<uint64_t>(fault_batch * mn + static_cast<int64_t>((seq * 7 + 3) % mn)))
            << what << " seq " << seq;
        EXPECT_GT(f.ratio, 1.0) << what;
      }
    }
  }
}

TEST(GemmCheckTest, UncheckableOpsAreCountedNotReported) {
  std::string dir = testing::TempDir("uncheckable");
  std::mt19937_64 rng(3);
  {
    StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
    Sample s = MakeSample(0, 4, 4, 8, DType::kF32, DType::kF32, 1, 0, rng);
    w.Gemm(s.rec);  // meta mode: no tensors
    s.rec.seq = 1;
    s.rec.beta = 1;  // β != 0 but no C_in captured
    w.Gemm(s.rec);
    w.Tensor(1, TensorSlot::kA, DType::kF32, 4, 8, 1, Encode(DType::kF32, s.a));
    w.Tensor(1, TensorSlot::kB, DType::kF32, 8, 4, 1, Encode(DType::kF32, s.b));
    w.Tensor(1, TensorSlot::kCOut, DType::kF32, 4, 4, 1, Encode(DType::kF32, s.c_out));
    Sample f = MakeSample(2, 4, 4, 8, DType::kF32, DType::kF32, 1, 0, rng);
    f.rec.status = 7;  // the call failed
    WriteSample(w, f);
    Sample d = MakeSample(3, 4, 4, 8, DType::kF32, DType::kF32, 1, 0, rng);
    d.rec.flags = format::kScalarsUnknown;
    WriteSample(w, d);
    Sample x = MakeSample(4, 4, 4, 8, DType::kF32, DType::kF32, 1, 0, rng);
    x.rec.compute_type = 79;  // FP64 fixed-point emulation: no model
    WriteSample(w, x);
    Sample sh = MakeSample(5, 4, 4, 8, DType::kF32, DType::kF32, 1, 0, rng);
    sh.rec.k = 9;  // the record disagrees with the (self-consistent) tensors
    w.Gemm(sh.rec);
    w.Tensor(5, TensorSlot::kA, DType::kF32, 4, 8, 1, Encode(DType::kF32, sh.a));
    w.Tensor(5, TensorSlot::kB, DType::kF32, 8, 4, 1, Encode(DType::kF32, sh.b));
    w.Tensor(5, TensorSlot::kCOut, DType::kF32, 4, 4, 1, Encode(DType::kF32, sh.c_out));
    w.Tensor(6, TensorSlot::kCOut, DType::kF32, 4, 4, 1, std::string(10, 'x'));  // size disagrees with shape
    Sample bad = MakeSample(6, 4, 4, 8, DType::kF32, DType::kF32, 1, 0, rng);
    w.Gemm(bad.rec);
    Sample ok = MakeSample(7, 4, 4, 8, DType::kF32, DType::kF32, 1, 0, rng);
    WriteSample(w, ok);
  }
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  CheckReport r = RunChecks(*set);
  EXPECT_TRUE(r.no_findings());
  auto nc = r.summary().not_checked;
  EXPECT_EQ(nc["tensors not captured"], 2u);
  EXPECT_EQ(nc["call failed"], 1u);
  EXPECT_EQ(nc["alpha/beta on device"], 1u);
  EXPECT_EQ(nc["no error model"], 1u);
  EXPECT_EQ(nc["shape mismatch"], 1u);
  EXPECT_EQ(nc["tensor unusable"], 1u);
  EXPECT_EQ(r.summary().checked.at("gemm"), 1u);
  EXPECT_EQ(r.summary().checked_total() + r.summary().not_checked_total(), r.summary().ops);
  bool shape_warned = false;
  for (const auto& w : r.summary().warnings) shape_warned |= w.find("shapes do not match") != std::string::npos;
  EXPECT_TRUE(shape_warned);
}

TEST(GemmCheckTest, EmptyOutputWithHugeBatchCountFinishesAtOnce) {
  // n = 0: no output elements, so a crafted batch count costs no payload; A is shared by all batches.
  std::string dir = testing::TempDir("empty_huge_batch");
  {
    StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
    format::GemmRecord g = testing::GemmRec(0, 1, 0, 1, DType::kF32, DType::kF32);
    g.batch_count = int64_t{1} << 60;
    w.Gemm(g);
    w.Tensor(0, TensorSlot::kA, DType::kF32, 1, 1, 1, Encode(DType::kF32, {1.0}));
    w.Tensor(0, TensorSlot::kB, DType::kF32, 1, 0, 1, "");
    w.Tensor(0, TensorSlot::kCOut, DType::kF32, 1, 0, g.batch_count, "");
  }
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  CheckReport r = RunChecks(*set);
  EXPECT_TRUE(r.no_findings());
  EXPECT_EQ(r.summary().checked.at("gemm"), 1u);
  EXPECT_EQ(r.summary().elements_checked, 0u);
}

TEST(GemmCheckTest, AccumulationBoundBeyondRangeIsInfiniteNotNaN) {
  // FP16 accumulation with k = 2e6: θ_{k+2}(2^-11) overflows to +Inf; a zero row of A (|A|·|B| = 0) must not
  // turn it into Inf·0 = NaN, which reads as a violation of a clean element.
  auto prec = ResolveGemmPrecision(static_cast<uint16_t>(format::ApiId::kCublasGemmEx), 64, 0, DType::kF16,
                                   DType::kF16, DType::kF16);
  ASSERT_TRUE(prec.ok());
  GemmProblem p;
  p.m = 1;
  p.n = 1;
  p.k = 2000000;
  p.a.assign(static_cast<size_t>(p.k), 0.0);
  p.b.assign(static_cast<size_t>(p.k), 1.0);
  p.c_out = {0.0};
  ElementStats st = ReplayGemm(p, *prec);
  EXPECT_EQ(st.violations, 0u);
}

TEST(GemmCheckTest, DuplicateSeqIsNotCheckedSinceItsTensorsCannotBeAttributed) {
  // Two GEMMs under one seq: which record a tensor belongs to is unknown, so mixing them must not be a finding.
  std::string dir = testing::TempDir("dup_seq");
  std::mt19937_64 rng(12);
  {
    StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
    Sample s1 = MakeSample(0, 4, 4, 8, DType::kF32, DType::kF32, 1, 0, rng);
    Sample s2 = MakeSample(0, 4, 4, 8, DType::kF32, DType::kF32, 1, 0, rng);
    w.Gemm(s1.rec);
    w.Gemm(s2.rec);
    w.Tensor(0, TensorSlot::kA, DType::kF32, 4, 8, 1, Encode(DType::kF32, s1.a));
    w.Tensor(0, TensorSlot::kB, DType::kF32, 8, 4, 1, Encode(DType::kF32, s1.b));
    w.Tensor(0, TensorSlot::kCOut, DType::kF32, 4, 4, 1, Encode(DType::kF32, s2.c_out));
  }
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  CheckReport r = RunChecks(*set);
  EXPECT_TRUE(r.no_findings()) << (r.no_findings() ? "" : r.findings()[0].message);
  EXPECT_EQ(r.summary().checked_total(), 0u);
  EXPECT_EQ(r.summary().not_checked_total(), 1u);
}

TEST(GemmCheckTest, AlphaZeroWithHugeKAllocatesNoOperands) {
  // α = 0: A and B are not read, so k is not bounded by any captured payload.
  std::string dir = testing::TempDir("alpha0_huge_k");
  {
    StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
    format::GemmRecord g = testing::GemmRec(0, 2, 1, int64_t{1} << 50, DType::kF32, DType::kF32, 68, 0, 1);
    w.Gemm(g);
    w.Tensor(0, TensorSlot::kCIn, DType::kF32, 2, 1, 1, Encode(DType::kF32, {1.5, -2}));
    w.Tensor(0, TensorSlot::kCOut, DType::kF32, 2, 1, 1, Encode(DType::kF32, {1.5, -2}));
  }
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  CheckReport r = RunChecks(*set);
  EXPECT_TRUE(r.no_findings()) << (r.no_findings() ? "" : r.findings()[0].message);
  EXPECT_EQ(r.summary().elements_checked, 2u);
}

TEST(GemmCheckTest, AlphaZeroWithHugeKStillCatchesACorruptedC) {
  // The bound of D = β·C0 does not grow with k: an error of 1e-4 in 1.5 is found even with k = 2^50.
  std::string dir = testing::TempDir("alpha0_corrupt");
  {
    StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
    format::GemmRecord g = testing::GemmRec(0, 2, 1, int64_t{1} << 50, DType::kF32, DType::kF32, 68, 0, 1);
    w.Gemm(g);
    w.Tensor(0, TensorSlot::kCIn, DType::kF32, 2, 1, 1, Encode(DType::kF32, {1.5, -2}));
    w.Tensor(0, TensorSlot::kCOut, DType::kF32, 2, 1, 1, Encode(DType::kF32, {1.5001, -2}));
  }
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  CheckReport r = RunChecks(*set);
  ASSERT_EQ(r.findings().size(), 1u);
  EXPECT_EQ(r.findings()[0].first.index, 0u);
}

TEST(GemmCheckTest, GemmWithoutAFiniteBoundIsNotCountedAsChecked) {
  // FP16 accumulation (CUBLAS_COMPUTE_16F) with k = 2^21: θ_k(2^-11) overflows, so no error is detectable and the
  // op must be reported as not checked, with a warning, rather than checked and clean.
  std::string dir = testing::TempDir("fp16_huge_k");
  const int64_t k = int64_t{1} << 21;
  {
    StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
    format::GemmRecord g = testing::GemmRec(0, 1, 1, k, DType::kF16, DType::kF16, 64, 1, 0);
    w.Gemm(g);
    const std::vector<double> zeros(static_cast<size_t>(k), 0.0);
    w.Tensor(0, TensorSlot::kA, DType::kF16, 1, k, 1, Encode(DType::kF16, zeros));
    w.Tensor(0, TensorSlot::kB, DType::kF16, k, 1, 1, Encode(DType::kF16, zeros));
    w.Tensor(0, TensorSlot::kCOut, DType::kF16, 1, 1, 1, Encode(DType::kF16, {7.0}));
  }
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  CheckReport r = RunChecks(*set);
  EXPECT_TRUE(r.no_findings());
  EXPECT_EQ(r.summary().checked_total(), 0u);
  EXPECT_EQ(r.summary().not_checked.at("no finite error bound"), 1u);
  bool warned = false;
  for (const auto& w : r.summary().warnings) warned |= w.find("beyond what the error model") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(GemmCheckTest, ShuffledPayloadsDecodeToTheirElements) {
  // The same GEMM stored byte-shuffled: checked clean; a flip of the exponent's top bit of C element 5 in the
  // shuffled bytes (byte 3 of element 5: offset 3 * 16 + 5 of 16 FP32 elements) is found at element 5.
  std::mt19937_64 rng(21);
  Sample s = MakeSample(0, 4, 4, 8, DType::kF32, DType::kF32, 1, 0, rng);
  for (bool corrupt : {false, true}) {
    std::string dir = testing::TempDir(corrupt ? "shuffled_bad" : "shuffled");
    {
      StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
      w.Gemm(s.rec);
      w.Tensor(0, TensorSlot::kA, DType::kF32, 4, 8, 1, Encode(DType::kF32, s.a), true);
      w.Tensor(0, TensorSlot::kB, DType::kF32, 8, 4, 1, Encode(DType::kF32, s.b), true);
      std::string c = Encode(DType::kF32, s.c_out);
      if (corrupt) c[5 * 4 + 3] ^= 0x40;  // the same byte before shuffling
      w.Tensor(0, TensorSlot::kCOut, DType::kF32, 4, 4, 1, c, true);
    }
    auto set = LoadTraceDir(dir);
    ASSERT_TRUE(set.ok()) << set.status();
    CheckReport r = RunChecks(*set);
    EXPECT_EQ(r.summary().checked.at("gemm"), 1u);
    if (!corrupt) {
      EXPECT_TRUE(r.no_findings()) << r.findings()[0].message;
    } else {
      ASSERT_EQ(r.findings().size(), 1u);
      EXPECT_EQ(r.findings()[0].first.index, 5u);
    }
  }
}

TEST(GemmCheckTest, FloatCodedPayloadsDecodeToTheirElements) {
  // The same GEMM stored float-coded (BF16 inputs, FP32 output): checked clean; a flip of the exponent's top bit
  // of C element 5 before coding is found at element 5; a coded payload that does not decode, or whose shape
  // claims more elements than it holds, leaves the op not checked with the reason.
  std::mt19937_64 rng(22);
  Sample s = MakeSample(0, 40, 30, 50, DType::kBF16, DType::kF32, 1, 0, rng);
  for (int variant = 0; variant < 4; ++variant) {
    std::string dir = testing::TempDir("coded_" + std::to_string(variant));
    {
      StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
      w.Gemm(s.rec);
      w.Tensor(0, TensorSlot::kA, DType::kBF16, 40, 50, 1, Encode(DType::kBF16, s.a), PayloadKind::kFloatCoded);
      w.Tensor(0, TensorSlot::kB, DType::kBF16, 50, 30, 1, Encode(DType::kBF16, s.b), PayloadKind::kFloatCoded);
      std::string c = Encode(DType::kF32, s.c_out);
      if (variant == 1) c[5 * 4 + 3] ^= 0x40;
      if (variant < 2) {
        w.Tensor(0, TensorSlot::kCOut, DType::kF32, 40, 30, 1, c, PayloadKind::kFloatCoded);
      } else {
        std::string coded(store::FloatCodecMaxBytes(1200, 4), '\0');
        coded.resize(store::FloatEncode(c.data(), 1200, 4, coded.data()));
        if (variant == 2) coded.back() ^= 0x5a;  // inside the last plane: raw, or a stream's last byte
        if (variant == 2) coded += '\0';         // a trailing byte the codec refuses either way
        format::TensorRecord t{};
        t.slot = static_cast<uint8_t>(TensorSlot::kCOut);
        t.payload_kind = static_cast<uint8_t>(PayloadKind::kFloatCoded);
        t.dtype = static_cast<uint8_t>(DType::kF32);
        t.rows = variant == 2 ? 40 : int64_t{1} << 40;
        t.cols = variant == 2 ? 30 : 1 << 20;
        t.batch = 1;
        t.payload_bytes = coded.size();
        std::string body(reinterpret_cast<const char*>(&t), sizeof t);
        w.Raw(static_cast<uint16_t>(format::RecordType::kTensor), body, coded);
      }
    }
    auto set = LoadTraceDir(dir);
    ASSERT_TRUE(set.ok()) << set.status();
    CheckReport r = RunChecks(*set);
    if (variant == 0) {
      EXPECT_EQ(r.summary().checked.at("gemm"), 1u);
      EXPECT_TRUE(r.no_findings()) << r.findings()[0].message;
    } else if (variant == 1) {
      ASSERT_EQ(r.findings().size(), 1u);
      EXPECT_EQ(r.findings()[0].first.index, 5u);
    } else {
      EXPECT_TRUE(r.no_findings());
      EXPECT_EQ(r.summary().checked.count("gemm"), 0u);
      bool said = false;
      for (const auto& w : r.summary().warnings)
        said |= w.find(variant == 2 ? "float-coded payload: " : "cannot hold") != std::string::npos;
      EXPECT_TRUE(said) << "variant " << variant;
    }
  }
}

TEST(GemmCheckTest, DeviceScalarsCapturedByTheShimMakeTheGemmCheckable) {
  // kScalarsUnknown with the alpha and beta snapshots (slots kAlpha, kBeta): checked with them; an alpha that
  // is not the one the output was computed with is a finding; without the snapshots the op is not checked.
  std::mt19937_64 rng(33);
  Sample s = MakeSample(0, 4, 4, 8, DType::kF32, DType::kF32, 0.75, 0, rng);
  for (int variant = 0; variant < 3; ++variant) {
    std::string dir = testing::TempDir("device_scalars_" + std::to_string(variant));
    {
      StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
      format::GemmRecord rec = s.rec;
      rec.flags = format::kScalarsUnknown;
      rec.alpha = rec.beta = 0;  // not read on the host
      w.Gemm(rec);
      w.Tensor(0, TensorSlot::kA, DType::kF32, 4, 8, 1, Encode(DType::kF32, s.a));
      w.Tensor(0, TensorSlot::kB, DType::kF32, 8, 4, 1, Encode(DType::kF32, s.b));
      w.Tensor(0, TensorSlot::kCIn, DType::kF32, 4, 4, 1, Encode(DType::kF32, std::vector<double>(16, 9.0)));
      w.Tensor(0, TensorSlot::kCOut, DType::kF32, 4, 4, 1, Encode(DType::kF32, s.c_out));
      if (variant < 2) {
        w.Tensor(0, TensorSlot::kAlpha, DType::kF32, 1, 1, 1, Encode(DType::kF32, {variant == 0 ? 0.75 : 0.5}));
        w.Tensor(0, TensorSlot::kBeta, DType::kF32, 1, 1, 1, Encode(DType::kF32, {0.0}));
      }
    }
    auto set = LoadTraceDir(dir);
    ASSERT_TRUE(set.ok()) << set.status();
    CheckReport r = RunChecks(*set);
    if (variant == 0) {
      EXPECT_TRUE(r.no_findings()) << r.findings()[0].message;
      EXPECT_EQ(r.summary().checked.at("gemm"), 1u);
    } else if (variant == 1) {
      EXPECT_EQ(r.findings().size(), 1u);
    } else {
      EXPECT_EQ(r.summary().not_checked.at("alpha/beta on device"), 1u);
    }
  }
}

TEST(GemmCheckTest, ShapeProductsWrappingTo128BitsAreUnusable) {
  // 2^62·2^62·2^62·4 bytes is 2^188: it must not wrap to the empty payload written here.
  std::string dir = testing::TempDir("wrapping_shape");
  const int64_t big = int64_t{1} << 62;
  {
    StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
    format::GemmRecord g = testing::GemmRec(0, big, big, big, DType::kF32, DType::kF32);
    g.batch_count = big;
    w.Gemm(g);
    for (TensorSlot slot : {TensorSlot::kA, TensorSlot::kB, TensorSlot::kCOut})
      w.Tensor(0, slot, DType::kF32, big, big, big, "");
  }
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  CheckReport r = RunChecks(*set);
  EXPECT_TRUE(r.no_findings());
  EXPECT_EQ(r.summary().not_checked.at("tensor unusable"), 1u);
}

// The replay runs through BLAS; this is the hand loop it replaced, written out (sequential sums over l), on small
// problems of every shape the replay handles: transposes, batches with shared and per-batch operands, α and β
// zero or not, k = 0. BLAS sums in its own order, so the references may differ by the FP64 replay error the
// model already counts (each within E_ref = θ_{k+3}(2^-53)(|α|P + |β|Z) of the exact value: 2·E_ref apart at
// most); |A|·|B| within 2θ_k(2^-53) relative; row and column sums and |C0| exactly. Outputs placed at 0.5 and 2
// times the bound from the hand-loop reference get the same verdict, element for element.
TEST(GemmCheckTest, BlasReplayMatchesTheHandLoop) {
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> u(-1, 1);
  auto precision = ResolveGemmPrecision(static_cast<uint16_t>(format::ApiId::kCublasGemmEx), 68, 0, DType::kBF16,
                                        DType::kBF16, DType::kBF16);
  ASSERT_TRUE(precision.ok());
  const double alphas[] = {1, -0.5, 0, 2.5};
  const double betas[] = {0, 1, -0.75};
  const int64_t ks[] = {0, 1, 2, 7, 33, 300};
  uint64_t compared = 0, flagged = 0;
  for (int trial = 0; trial < 120; ++trial) {
    GemmProblem p;
    p.m = 1 + static_cast<int64_t>(rng() % 9);
    p.n = 1 + static_cast<int64_t>(rng() % 9);
    p.k = ks[rng() % 6];
    p.batch = 1 + static_cast<int64_t>(rng() % 3);
    p.transa = static_cast<uint8_t>(rng() % 3);
    p.transb = static_cast<uint8_t>(rng() % 3);
    p.alpha = alphas[rng() % 4];
    p.beta = betas[rng() % 3];
    const int64_t m = p.m, n = p.n, k = p.k;
    const int64_t a_batches = rng() % 2 ? p.batch : 1, b_batches = rng() % 2 ? p.batch : 1;
    const int64_t c_batches = rng() % 2 ? p.batch : 1;
    p.a.resize(static_cast<size_t>(m * k * a_batches));
    p.b.resize(static_cast<size_t>(k * n * b_batches));
    for (auto& v : p.a) v = RoundTo(DType::kBF16, u(rng));
    for (auto& v : p.b) v = RoundTo(DType::kBF16, u(rng) * 1000);
    if (p.beta != 0) {
      p.c_in.resize(static_cast<size_t>(m * n * c_batches));
      for (auto& v : p.c_in) v = RoundTo(DType::kBF16, u(rng));
    }
    // The hand loop: op(A)_il = a[i + l·m] (or a[l + i·k] transposed), op(B)_lj = b[l + j·k] (or b[j + l·n]).
    std::vector<GemmElementTerms> hand(static_cast<size_t>(m * n * p.batch));
    for (int64_t bt = 0; bt < p.batch; ++bt) {
      const double* a = p.a.data() + (a_batches > 1 ? bt * m * k : 0);
      const double* b = p.b.data() + (b_batches > 1 ? bt * k * n : 0);
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < m; ++i) {
          GemmElementTerms& t = hand[static_cast<size_t>(bt * m * n + i + j * m)];
          if (p.alpha != 0) {
            double acc = 0;
            for (int64_t l = 0; l < k; ++l) {
              const double av = p.transa ? a[l + i * k] : a[i + l * m];
              const double bv = p.transb ? b[j + l * n] : b[l + j * k];
              acc += av * bv;
              t.abs_ab += std::fabs(av) * std::fabs(bv);
              t.abs_row_a += std::fabs(av);
              t.abs_col_b += std::fabs(bv);
            }
            t.ref = p.alpha * acc;
          }
          if (p.beta != 0) {
            const double c0 = p.c_in[static_cast<size_t>((c_batches > 1 ? bt * m * n : 0) + i + j * m)];
            t.ref += p.beta * c0;
            t.abs_c0 = std::fabs(c0);
          }
        }
      }
    }
    const std::vector<GemmElementTerms> blas = GemmReference(p);
    ASSERT_EQ(blas.size(), hand.size());
    const double theta_ref = Theta(0x1p-53, static_cast<double>(k + 3));
    const GemmBound bound(*precision, k, p.alpha, p.beta);
    p.c_out.resize(hand.size());
    std::vector<bool> violates(hand.size());
    for (size_t x = 0; x < hand.size(); ++x) {
      const GemmElementTerms &h = hand[x], &b = blas[x];
      const double e_ref = theta_ref * (std::fabs(p.alpha) * h.abs_ab + std::fabs(p.beta) * h.abs_c0);
      EXPECT_LE(std::fabs(b.ref - h.ref), 2 * e_ref) << "trial " << trial << " element " << x;
      EXPECT_LE(std::fabs(b.abs_ab - h.abs_ab), 2 * Theta(0x1p-53, static_cast<double>(k)) * h.abs_ab);
      EXPECT_EQ(b.abs_row_a, h.abs_row_a);
      EXPECT_EQ(b.abs_col_b, h.abs_col_b);
      EXPECT_EQ(b.abs_c0, h.abs_c0);
      violates[x] = rng() % 4 == 0;
      p.c_out[x] = h.ref + (violates[x] ? 2.0 : 0.5) * bound.Bound(h) * (rng() % 2 ? 1 : -1);
    }
    const ElementStats st = ReplayGemm(p, *precision);
    uint64_t expected = 0, first = 0;
    for (size_t x = hand.size(); x-- > 0;)
      if (violates[x] && bound.Bound(hand[x]) > 0) ++expected, first = x;
    EXPECT_EQ(st.violations, expected) << "trial " << trial;
    if (expected > 0) EXPECT_EQ(st.first_index, first) << "trial " << trial;
    compared += hand.size();
    flagged += expected;
  }
  EXPECT_GT(compared, 2000u);
  EXPECT_GT(flagged, 300u);
}

}  // namespace
}  // namespace ttrace::analyzer
