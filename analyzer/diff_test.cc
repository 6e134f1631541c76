// ttrace diff on synthetic traces written with the real TraceWriter: a one-rank reference against a two-rank
// tensor-parallel candidate (a column-parallel GEMM, a row-parallel GEMM, the all-reduce of its partial sums),
// and same-layout bitwise comparisons.
#include "analyzer/diff.h"

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "analyzer/align.h"
#include "analyzer/diff_sharded.h"
#include "analyzer/shard.h"
#include "analyzer/test_util.h"
#include "gtest/gtest.h"

namespace ttrace::analyzer {
namespace {

using format::DType;
using format::TensorSlot;
using testing::Encode;
using testing::StreamBuilder;

constexpr uint64_t kRefComm = 0x1111, kTpComm = 0x2222;
constexpr int64_t kM = 8, kN = 6, kK = 5, kP = 4;

using Mat = std::vector<double>;

// Column-major rows x cols, FP32 accumulation in order.
Mat MatMul(const Mat& a, const Mat& b, int64_t m, int64_t k, int64_t n) {
  Mat c(static_cast<size_t>(m * n));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      float s = 0;
      for (int64_t l = 0; l < k; ++l) s += static_cast<float>(a[i + l * m]) * static_cast<float>(b[l + j * k]);
      c[i + j * m] = s;
    }
  return c;
}

Mat Block(const Mat& x, int64_t rows, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  Mat out;
  for (int64_t j = c0; j < c1; ++j)
    for (int64_t i = r0; i < r1; ++i) out.push_back(x[i + j * rows]);
  return out;
}

Mat Random(size_t n, int seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  Mat v(n);
  for (double& x : v) x = d(g);
  return v;
}

struct Faults {
  double allreduce_scale = 1;   // candidate rank 0's all-reduce result scaled
  double gemm2_b_scale = 1;     // candidate rank 1's GEMM2 input scaled (host code between ops)
  bool extra_op = false;        // candidate rank 0 issues an extra GEMM the reference has not
  bool divide_then_sum = false;  // each rank's all-reduce input is its partial output halved (FP32), then summed
  bool avg = false;              // the all-reduce is ncclAvg of the partial outputs (its output their sum halved)
  int64_t bump_index = -1;       // >= 0: rank 0's all-reduce output at that element moved by `bump`
  double bump = 0;
  // With value_sum > 0: an all-reduce of a value the host computed (a squared gradient norm) follows, its inputs
  // 0.6 and 0.4 of value_sum (rank 1's scaled by value_input_scale), rank 0's output scaled by value_output_scale.
  double value_sum = 0, value_input_scale = 1, value_output_scale = 1;
};

constexpr double kValue = 1.3302;  // the reference's value (a squared gradient norm)

void WriteGemm(StreamBuilder* s, uint64_t seq, const Mat& a, const Mat& b, const Mat& c, int64_t m, int64_t k,
               int64_t n) {
  s->Gemm(testing::GemmRec(seq, m, n, k, DType::kF32, DType::kF32));
  s->Tensor(seq, TensorSlot::kA, DType::kF32, m, k, 1, Encode(DType::kF32, a));
  s->Tensor(seq, TensorSlot::kB, DType::kF32, k, n, 1, Encode(DType::kF32, b));
  s->Tensor(seq, TensorSlot::kCOut, DType::kF32, m, n, 1, Encode(DType::kF32, c));
}

void WriteAllReduce(StreamBuilder* s, uint64_t seq, uint64_t comm, int rank, int size, const Mat& in,
                    const Mat& out, int64_t rows, int64_t cols, int red_op = 0) {
  s->Collective(testing::AllReduceRec(seq, comm, 0, rank, size, DType::kF32, in.size(), red_op));
  s->Tensor(seq, TensorSlot::kSend, DType::kF32, static_cast<int64_t>(in.size()), 1, 1, Encode(DType::kF32, in));
  s->Tensor(seq, TensorSlot::kRecv, DType::kF32, static_cast<int64_t>(out.size()), 1, 1, Encode(DType::kF32, out));
  (void)rows;
  (void)cols;
}

// Reference: C1 = A1·B1 (m x n), C2 = A2·C1 (p x n), all-reduce(C2) on one rank; with `value` > 0 then the
// one-rank all-reduce of that value (FP32), as a program computing a statistic issues it.
std::string WriteReference(double value = 0) {
  const std::string dir = testing::TempDir("diff_ref");
  const Mat a1 = Random(kM * kK, 1), b1 = Random(kK * kN, 2), a2 = Random(kP * kM, 3);
  const Mat c1 = MatMul(a1, b1, kM, kK, kN), c2 = MatMul(a2, c1, kP, kM, kN);
  StreamBuilder s(dir + "/rank-0.ttr", 0, 1);
  s.CommInit(kRefComm, 0, 1);
  WriteGemm(&s, 0, a1, b1, c1, kM, kK, kN);
  WriteGemm(&s, 1, a2, c1, c2, kP, kM, kN);
  WriteAllReduce(&s, 2, kRefComm, 0, 1, c2, c2, kP, kN);
  if (value > 0) {
    const Mat v = {static_cast<float>(value)};
    s.Collective(testing::AllReduceRec(3, kRefComm, 1, 0, 1, DType::kF32, 1));
    s.Tensor(3, TensorSlot::kSend, DType::kF32, 1, 1, 1, Encode(DType::kF32, v));
    s.Tensor(3, TensorSlot::kRecv, DType::kF32, 1, 1, 1, Encode(DType::kF32, v));
  }
  return dir;
}

// Candidate, TP = 2: rank r holds rows r of A1 (column-parallel) and columns r of A2 (row-parallel).
std::string WriteCandidate(const std::string& name, const Faults& f = {}) {
  const std::string dir = testing::TempDir(name);
  const Mat a1 = Random(kM * kK, 1), b1 = Random(kK * kN, 2), a2 = Random(kP * kM, 3);
  const int64_t h = kM / 2;
  Mat partial[2], c1r[2];
  for (int r = 0; r < 2; ++r) {
    c1r[r] = MatMul(Block(a1, kM, r * h, (r + 1) * h, 0, kK), b1, h, kK, kN);
    if (r == 1)
      for (double& v : c1r[r]) v = static_cast<float>(v * f.gemm2_b_scale);
    partial[r] = MatMul(Block(a2, kP, 0, kP, r * h, (r + 1) * h), c1r[r], kP, h, kN);
  }
  Mat sum(partial[0].size()), in[2] = {partial[0], partial[1]};
  if (f.divide_then_sum)
    for (Mat& x : in)
      for (double& v : x) v = static_cast<float>(v / 2);
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = static_cast<float>(in[0][i] + in[1][i]) * (f.avg ? 0.5 : 1);
  for (int r = 0; r < 2; ++r) {
    StreamBuilder s(dir + "/rank-" + std::to_string(r) + ".ttr", r, 2);
    s.CommInit(kTpComm, r, 2);
    uint64_t seq = 0;
    const Mat c1 = MatMul(Block(a1, kM, r * h, (r + 1) * h, 0, kK), b1, h, kK, kN);
    WriteGemm(&s, seq++, Block(a1, kM, r * h, (r + 1) * h, 0, kK), b1, c1, h, kK, kN);
    if (f.extra_op && r == 0) WriteGemm(&s, seq++, b1, b1, MatMul(b1, b1, 1, 1, 1), 1, 1, 1);
    WriteGemm(&s, seq++, Block(a2, kP, 0, kP, r * h, (r + 1) * h), c1r[r], partial[r], kP, h, kN);
    Mat out = sum;
    if (r == 0)
      for (double& v : out) v *= f.allreduce_scale;
    if (r == 0 && f.bump_index >= 0) out[static_cast<size_t>(f.bump_index)] += f.bump;
    WriteAllReduce(&s, seq++, kTpComm, r, 2, in[r], out, kP, kN, f.avg ? 4 : 0);
    if (f.value_sum > 0) {
      const float x0 = static_cast<float>(0.6 * f.value_sum);
      const float x1 = static_cast<float>((f.value_sum - x0) * f.value_input_scale);
      const Mat in = {r == 0 ? x0 : x1};
      const Mat y = {static_cast<float>((x0 + x1) * (r == 0 ? f.value_output_scale : 1))};
      s.Collective(testing::AllReduceRec(seq, kTpComm, 1, r, 2, DType::kF32, 1));
      s.Tensor(seq, TensorSlot::kSend, DType::kF32, 1, 1, 1, Encode(DType::kF32, in));
      s.Tensor(seq, TensorSlot::kRecv, DType::kF32, 1, 1, 1, Encode(DType::kF32, y));
    }
  }
  return dir;
}

TraceSet Load(const std::string& dir) {
  absl::StatusOr<TraceSet> s = LoadTraceDir(dir);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : TraceSet{};
}

std::string Findings(const DiffResult& r) {
  std::string s;
  for (const Finding& f : r.report.findings())
    s += "(" + std::to_string(f.rank) + "," + std::to_string(f.seq) + ") " + f.message + " | " + f.detail + "\n";
  for (const std::string& g : r.report.summary().gaps) s += "gap: " + g + "\n";
  for (const auto& [k, v] : r.report.summary().not_checked) s += "not checked: " + k + "\n";
  return s;
}

TEST(DiffSharded, CleanTensorParallelRunIsClean) {
  const TraceSet ref = Load(WriteReference()), cand = Load(WriteCandidate("diff_clean"));
  const DiffResult r = RunDiff(ref, cand);
  EXPECT_EQ(r.mode, "sharded");
  EXPECT_EQ(r.report.verdict(), Verdict::kClean) << Findings(r);
  EXPECT_FALSE(r.first.valid);
  EXPECT_EQ(r.report.summary().checked.at("diff.gemm"), 2u);
  EXPECT_EQ(r.report.summary().checked.at("diff.allreduce"), 1u);
  EXPECT_NE(DiffToJson(r).find("\"first_divergence\": null"), std::string::npos);
}

TEST(DiffSharded, WrongAllReduceIsInsideIt) {
  Faults f;
  f.allreduce_scale = 2;
  const DiffResult r = RunDiff(Load(WriteReference()), Load(WriteCandidate("diff_ar", f)));
  ASSERT_EQ(r.report.verdict(), Verdict::kFindings) << Findings(r);
  ASSERT_TRUE(r.first.valid);
  EXPECT_EQ(r.first.kind, "inside");
  EXPECT_EQ(r.first.ref_seq, 2);
  EXPECT_EQ(r.first.operand, "recv");
  EXPECT_GT(r.first.ratio, 10);
  EXPECT_TRUE(r.first.has_last_matching);
  EXPECT_EQ(r.first.last_matching.seq, 1u);
  const std::string json = DiffToJson(r);
  EXPECT_NE(json.find("\"kind\": \"inside\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"last_matching\": {\"seq\": 1, \"rank\": 0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"mode\": \"sharded\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"model\": \"diff.propagation\", \"last_matching\""), std::string::npos) << json;
  ASSERT_FALSE(r.report.findings().empty());
  EXPECT_GT(r.report.findings()[0].max_abs_err, 0);
  EXPECT_EQ(json.find("\"max_abs_err\": 0,"), std::string::npos) << json;
}

// A data-parallel pair: the reference computes C1 = A1·B1 (m x n, n the batch rows) and the weight-gradient-like
// G = D·B1ᵀ (k = the batch), D = C1 its output gradient, and all-reduces G on its group of one. Each of the two
// candidate ranks holds half of the batch (B1's columns): C1_r = A1·B1_r (n split: the communicator is data-parallel),
// D_r = grad_scale·C1_r (2: each rank's loss a mean over its own rows, so its output gradient is twice the
// reference's; 1: a global mean), and all-reduces its partial G_r = D_r·B1_rᵀ (k split) with `red_op`, or divides it
// by 2 first (divide-then-sum).
struct DpFaults {
  double grad_scale = 2;
  int red_op = 4;                 // 0 sum, 4 ncclAvg
  bool divide_then_sum = false;   // inputs halved, then summed (red_op 0)
  double allreduce_scale = 1;     // rank 0's result scaled
  int64_t bump_index = -1;        // >= 0: rank 0's result at that element moved by `bump`
  double bump = 0;
};

constexpr uint64_t kDpComm = 0x3333;

Mat Transposed(const Mat& x, int64_t rows, int64_t cols) {
  Mat t(x.size());
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) t[j + i * cols] = x[i + j * rows];
  return t;
}

// The candidate's partial weight gradients G_r (as WriteDataParallel writes them).
std::vector<Mat> DpPartials(double grad_scale) {
  const Mat a1 = Random(kM * kK, 1), b1 = Random(kK * kN, 2);
  const int64_t h = kN / 2;
  std::vector<Mat> out;
  for (int r = 0; r < 2; ++r) {
    const Mat br = Block(b1, kK, 0, kK, r * h, (r + 1) * h);
    Mat d = MatMul(a1, br, kM, kK, h);
    for (double& v : d) v = static_cast<float>(v * grad_scale);
    out.push_back(MatMul(d, Transposed(br, kK, h), kM, h, kK));
  }
  return out;
}

// Writes the reference (into ref_dir) and the candidate (cand_dir) of the data-parallel pair.
void WriteDataParallel(const std::string& ref_dir, const std::string& cand_dir, const DpFaults& f) {
  const Mat a1 = Random(kM * kK, 1), b1 = Random(kK * kN, 2), c1 = MatMul(a1, b1, kM, kK, kN);
  const Mat b1t = Transposed(b1, kK, kN), g = MatMul(c1, b1t, kM, kN, kK);
  {
    StreamBuilder s(ref_dir + "/rank-0.ttr", 0, 1);
    s.CommInit(kRefComm, 0, 1);
    WriteGemm(&s, 0, a1, b1, c1, kM, kK, kN);
    WriteGemm(&s, 1, c1, b1t, g, kM, kN, kK);
    WriteAllReduce(&s, 2, kRefComm, 0, 1, g, g, kM, kK);
  }
  const int64_t h = kN / 2;
  const std::vector<Mat> partial = DpPartials(f.grad_scale);
  Mat in[2] = {partial[0], partial[1]}, sum(partial[0].size());
  if (f.divide_then_sum)
    for (Mat& x : in)
      for (double& v : x) v = static_cast<float>(v / 2);
  const int red_op = f.divide_then_sum ? 0 : f.red_op;
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = static_cast<float>(in[0][i] + in[1][i]) * (red_op == 4 ? 0.5 : 1);
  for (int r = 0; r < 2; ++r) {
    StreamBuilder s(cand_dir + "/rank-" + std::to_string(r) + ".ttr", r, 2);
    s.CommInit(kDpComm, r, 2);
    const Mat br = Block(b1, kK, 0, kK, r * h, (r + 1) * h), c = MatMul(a1, br, kM, kK, h);
    Mat d = c;
    for (double& v : d) v = static_cast<float>(v * f.grad_scale);
    WriteGemm(&s, 0, a1, br, c, kM, kK, h);
    WriteGemm(&s, 1, d, Transposed(br, kK, h), partial[r], kM, h, kK);
    Mat out = sum;
    if (r == 0)
      for (double& v : out) v *= f.allreduce_scale;
    if (r == 0 && f.bump_index >= 0) out[static_cast<size_t>(f.bump_index)] += f.bump;
    WriteAllReduce(&s, 2, kDpComm, r, 2, in[r], out, kM, kK, red_op);
  }
}

DiffResult DiffDataParallel(const std::string& name, const DpFaults& f) {
  const std::string ref = testing::TempDir(name + "_ref"), cand = testing::TempDir(name);
  WriteDataParallel(ref, cand, f);
  return RunDiff(Load(ref), Load(cand));
}

// The first finding is inside the all-reduce (reference seq 2) and its message says `plain`.
void ExpectInsideTheAllReduce(const DiffResult& r, const std::string& plain, const std::string& tag) {
  ASSERT_TRUE(r.first.valid) << tag << "\n" << Findings(r);
  EXPECT_EQ(r.first.kind, "inside") << tag << "\n" << Findings(r);
  EXPECT_EQ(r.first.ref_seq, 2) << tag;
  EXPECT_EQ(r.first.operand, "recv") << tag;
  EXPECT_GT(r.first.ratio, 10) << tag;
  ASSERT_FALSE(r.report.findings().empty()) << tag;
  EXPECT_NE(r.report.findings()[0].message.find(plain), std::string::npos) << tag << "\n" << Findings(r);
}

// The legitimate scale of a gradient is tied to the batch split, not to the reduction op the run chose: the
// communicator splits n (the batch) at the first GEMM, so its size may scale the second GEMM's operand D, and its
// reduction must give the reference's gradient: the average of twice-as-large partials (ncclAvg, or divide-then-sum:
// PyTorch DDP's reducer), or the sum of a global mean's. A sum of the per-rank means' partials is twice the
// reference's, an average of the global mean's half: both found inside the all-reduce, said plainly. Before, the
// scale was allowed only on a communicator where the run averaged, so the per-rank means' sum was found at the
// second GEMM (between at A) and the global mean's average judged clean (scaled back by the comm size).
TEST(DiffSharded, AReductionOverTheBatchSplitGivesTheReferencesGradient) {
  DpFaults f;
  for (const bool dts : {false, true}) {
    f.divide_then_sum = dts;
    const DiffResult clean = DiffDataParallel(dts ? "diff_dp_dts" : "diff_dp_avg", f);
    EXPECT_EQ(clean.report.verdict(), Verdict::kClean) << dts << "\n" << Findings(clean);
    EXPECT_EQ(clean.report.summary().checked.at("diff.allreduce"), 1u) << Findings(clean);
    EXPECT_LT(clean.report.summary().overall.max_ratio, 1.0);
    f.allreduce_scale = 2;  // a result twice as large: inside it
    const DiffResult r = DiffDataParallel(dts ? "diff_dp_dts_ar" : "diff_dp_avg_ar", f);
    ExpectInsideTheAllReduce(r, "elements differ", dts ? "dts x2" : "avg x2");
    f.allreduce_scale = 1;
  }
  f = DpFaults{};
  f.red_op = 0;
  ExpectInsideTheAllReduce(DiffDataParallel("diff_dp_sum", f),
                           "the result is 2 x the reference's: a sum where the run's per-rank mean losses need an "
                           "average", "per-rank mean summed");
  f.grad_scale = 1;
  const DiffResult global = DiffDataParallel("diff_dp_global_sum", f);
  EXPECT_EQ(global.report.verdict(), Verdict::kClean) << Findings(global);
  EXPECT_EQ(global.report.summary().checked.at("diff.allreduce"), 1u) << Findings(global);
  f.red_op = 4;
  ExpectInsideTheAllReduce(DiffDataParallel("diff_dp_global_avg", f),
                           "the result is 1/2 of the reference's: an average where the partial outputs (of a "
                           "global-mean loss) need a sum", "global mean averaged");
}

// A communicator that splits features (tensor parallelism: the first GEMM's m, the second's k) sums its partial
// outputs: an ncclAvg there, or divide-then-sum, gives half the reference's output, found inside the all-reduce.
// Before, the averaging made the communicator an averaging one and the all-reduce was judged clean, scaled back.
TEST(DiffSharded, AnAverageOverATensorParallelCommunicatorIsInsideIt) {
  Faults f;
  f.avg = true;
  ExpectInsideTheAllReduce(RunDiff(Load(WriteReference()), Load(WriteCandidate("diff_tp_avg", f))),
                           "the result is 1/2 of the reference's: an average over a communicator that splits "
                           "features (tensor parallelism), whose partial outputs need a sum", "tp avg");
  f.avg = false;
  f.divide_then_sum = true;
  ExpectInsideTheAllReduce(RunDiff(Load(WriteReference()), Load(WriteCandidate("diff_tp_dts", f))),
                           "the result is 1/2 of the reference's", "tp divide-then-sum");
}

// The divide-then-sum bound (docs/diff.md): the sum's bound over the divided partials plus one rounding of each
// division, u·Σ|partials|/P, where ncclAvg of the same partials has the avg bound over the undivided ones. The
// GEMM's part of the bound is the same for both, so the difference of the two bounds at one element (read from a
// finding there: an error of 1 at element 5) is the reduction's part alone, and is compared with the model computed
// from the partials: a term 2x too loose (or left out) moves it by the whole term, 4x the tolerance.
TEST(DiffSharded, DivideThenSumBoundHasOneRoundingPerPartial) {
  constexpr int64_t kAt = 5;
  auto bound_at = [](DpFaults f) {
    f.bump_index = kAt;
    f.bump = 1;
    const DiffResult r = DiffDataParallel("diff_dts_bound", f);
    EXPECT_TRUE(r.first.valid && r.first.operand == "recv" && r.first.ref_seq == 2) << Findings(r);
    return r.first.threshold;
  };
  DpFaults pre, avg;
  pre.divide_then_sum = true;
  double sum = 0, abs_sum = 0;  // the partial outputs at element kAt
  for (const Mat& partial : DpPartials(pre.grad_scale)) {
    sum += partial[kAt];
    abs_sum += std::fabs(partial[kAt]);
  }
  const FloatFormat f = FormatOf(DType::kF32);
  // The averaged output is compared at the reference's scale: the partials' 2 taken away by the average, so the
  // reduction's bound in the run's units is the bound in the reference's.
  const double term = f.u * abs_sum / 2;
  const double model = ReduceBound(f, ReduceOp::kSum, 2).Bound({sum / 2, abs_sum / 2}) -
                       ReduceBound(f, ReduceOp::kAvg, 2).Bound({sum / 2, abs_sum}) + term;
  const double got = bound_at(pre) - bound_at(avg);
  EXPECT_GT(term, 0);
  EXPECT_NEAR(got, model, 0.25 * term) << "term " << term;
}

TEST(DiffSharded, ChangedInputIsBetweenOps) {
  Faults f;
  f.gemm2_b_scale = 1.01;
  const DiffResult r = RunDiff(Load(WriteReference()), Load(WriteCandidate("diff_between", f)));
  ASSERT_TRUE(r.first.valid) << Findings(r);
  EXPECT_EQ(r.first.kind, "between");
  EXPECT_EQ(r.first.ref_seq, 1);
  EXPECT_EQ(r.first.operand, "B");
  EXPECT_EQ(r.first.op.rank, 1) << "the rank whose input was changed";
  EXPECT_EQ(r.first.last_matching.seq, 0u);
  EXPECT_GT(r.first.err_eps, 1000);
}

// Data parallelism splits n: each rank holds all of A and its half of B's columns. When rank 1's copy of A has
// drifted (host code between ops: an optimizer step on its own gradient), its half of C is right for its own
// inputs: the divergence is between ops, at rank 1's A, not inside the GEMM (the merged A holds rank 0's copy,
// against which rank 1's output would look wrong).
TEST(DiffSharded, ReplicasWithDifferentInputsAreBetweenNotInside) {
  const Mat a = Random(kM * kK, 1), b = Random(kK * kN, 2);
  const std::string ref_dir = testing::TempDir("diff_rep_ref"), cand_dir = testing::TempDir("diff_rep_cand");
  {
    StreamBuilder s(ref_dir + "/rank-0.ttr", 0, 1);
    s.CommInit(kRefComm, 0, 1);
    WriteGemm(&s, 0, a, b, MatMul(a, b, kM, kK, kN), kM, kK, kN);
  }
  const int64_t h = kN / 2;
  for (int r = 0; r < 2; ++r) {
    Mat ar = a;
    if (r == 1)
      for (double& v : ar) v = static_cast<float>(v * 1.001);
    const Mat br = Block(b, kK, 0, kK, r * h, (r + 1) * h), c = MatMul(ar, br, kM, kK, h);
    StreamBuilder s(cand_dir + "/rank-" + std::to_string(r) + ".ttr", r, 2);
    s.CommInit(kDpComm, r, 2);
    WriteGemm(&s, 0, ar, br, c, kM, kK, h);
    WriteAllReduce(&s, 1, kDpComm, r, 2, c, c, kM, h);
  }
  const DiffResult r = RunDiff(Load(ref_dir), Load(cand_dir));
  ASSERT_TRUE(r.first.valid) << Findings(r);
  EXPECT_EQ(r.first.kind, "between") << Findings(r);
  EXPECT_EQ(r.first.operand, "A");
  EXPECT_EQ(r.first.op.rank, 1);
  EXPECT_GT(r.first.ratio, 100);
  EXPECT_EQ(r.report.summary().checked.at("diff.gemm"), 1u);
  for (const Finding& f : r.report.findings()) EXPECT_NE(f.check, "diff.inside") << Findings(r);
}

// Gradient accumulation (C = A·B + C0, Megatron's weight gradient accumulated into main_grad) with the inner
// dimension split over data parallelism: each rank accumulates its own partial gradient, so the ranks' C0 sum to
// the reference's C0, and the all-reduce of the outputs is the reference GEMM's output. Clean: every op compared;
// rank 1's accumulator changed between ops (scaled by 1.01): between at C0, not inside.
void WriteAccumulation(const std::string& ref_dir, const std::string& cand_dir, double c0_scale) {
  constexpr uint64_t kAccComm = 0x4444;
  const Mat a = Random(kM * kK * 2, 1), b = Random(kK * 2 * kN, 2), c0 = Random(kM * kN, 3), r0 = Random(kM * kN, 4);
  auto with_c0 = [](Mat c, const Mat& add) {
    for (size_t x = 0; x < c.size(); ++x) c[x] = static_cast<float>(c[x] + add[x]);
    return c;
  };
  auto write = [](StreamBuilder* s, const Mat& a, const Mat& b, const Mat& c0, const Mat& c, int64_t k) {
    s->Gemm(testing::GemmRec(0, kM, kN, k, DType::kF32, DType::kF32, 68, 1.0, 1.0));
    s->Tensor(0, TensorSlot::kA, DType::kF32, kM, k, 1, Encode(DType::kF32, a));
    s->Tensor(0, TensorSlot::kB, DType::kF32, k, kN, 1, Encode(DType::kF32, b));
    s->Tensor(0, TensorSlot::kCIn, DType::kF32, kM, kN, 1, Encode(DType::kF32, c0));
    s->Tensor(0, TensorSlot::kCOut, DType::kF32, kM, kN, 1, Encode(DType::kF32, c));
  };
  {
    StreamBuilder s(ref_dir + "/rank-0.ttr", 0, 1);
    s.CommInit(kRefComm, 0, 1);
    write(&s, a, b, c0, with_c0(MatMul(a, b, kM, 2 * kK, kN), c0), 2 * kK);
  }
  Mat part_c0[2] = {r0, r0}, out[2];
  for (size_t x = 0; x < c0.size(); ++x) part_c0[1][x] = static_cast<float>(c0[x] - r0[x]);
  for (double& v : part_c0[1]) v = static_cast<float>(v * c0_scale);
  Mat sum(c0.size());
  for (int r = 0; r < 2; ++r) {
    out[r] = with_c0(MatMul(Block(a, kM, 0, kM, r * kK, (r + 1) * kK), Block(b, 2 * kK, r * kK, (r + 1) * kK, 0, kN),
                         kM, kK, kN),
                     part_c0[r]);
    for (size_t x = 0; x < sum.size(); ++x) sum[x] = static_cast<float>(sum[x] + out[r][x]);
  }
  for (int r = 0; r < 2; ++r) {
    StreamBuilder s(cand_dir + "/rank-" + std::to_string(r) + ".ttr", r, 2);
    s.CommInit(kAccComm, r, 2);
    write(&s, Block(a, kM, 0, kM, r * kK, (r + 1) * kK), Block(b, 2 * kK, r * kK, (r + 1) * kK, 0, kN), part_c0[r],
          out[r], kK);
    WriteAllReduce(&s, 1, kAccComm, r, 2, out[r], sum, kM, kN);
  }
}

TEST(DiffSharded, AccumulatingGemmsWithBetaAreCompared) {
  const std::string ref = testing::TempDir("diff_acc_ref"), clean = testing::TempDir("diff_acc_clean");
  WriteAccumulation(ref, clean, 1.0);
  const DiffResult r = RunDiff(Load(ref), Load(clean));
  EXPECT_EQ(r.report.verdict(), Verdict::kClean) << Findings(r);
  EXPECT_EQ(r.report.summary().checked.at("diff.gemm"), 1u);
  EXPECT_EQ(r.report.summary().checked.at("diff.allreduce"), 1u) << Findings(r);
  EXPECT_GT(r.report.summary().overall.max_ratio, 0) << "the output was compared";
  const std::string bad = testing::TempDir("diff_acc_bad");
  WriteAccumulation(testing::TempDir("diff_acc_ref2"), bad, 1.01);
  const DiffResult b = RunDiff(Load(ref), Load(bad));
  ASSERT_TRUE(b.first.valid) << Findings(b);
  EXPECT_EQ(b.first.kind, "between") << Findings(b);
  EXPECT_EQ(b.first.operand, "C0");
  EXPECT_GT(b.first.ratio, 100);
}

// An all-reduce no GEMM feeds (a value the host computed: gradient clipping's squared norm): the one-rank
// reference issues it too, on its communicator of one. Compared by its inputs' sum against the reference's input
// (between) and by its output against the reference's output (inside).
TEST(DiffSharded, ValueAllReduceIsComparedWithTheReferences) {
  const TraceSet ref = Load(WriteReference(kValue));
  Faults f;
  f.value_sum = kValue;
  const DiffResult clean = RunDiff(ref, Load(WriteCandidate("diff_value", f)));
  EXPECT_EQ(clean.report.verdict(), Verdict::kClean) << Findings(clean);
  EXPECT_EQ(clean.report.summary().checked.at("diff.allreduce"), 2u);
  EXPECT_EQ(clean.report.summary().not_checked_total(), 0u) << Findings(clean);

  f.value_input_scale = 1.01;  // rank 1's input 1 % too large: what the host computed already differs
  const DiffResult between = RunDiff(ref, Load(WriteCandidate("diff_value_in", f)));
  ASSERT_TRUE(between.first.valid) << Findings(between);
  EXPECT_EQ(between.first.kind, "between");
  EXPECT_EQ(between.first.ref_seq, 3);
  EXPECT_EQ(between.first.operand, "send");
  EXPECT_EQ(between.first.model, "diff.between");
  EXPECT_EQ(between.first.last_matching.seq, 2u) << "the partial-sum all-reduce before it matched";
  EXPECT_NEAR(between.report.findings()[0].max_rel_err, 0.4 * 0.01, 1e-6);

  f.value_input_scale = 1;
  f.value_output_scale = 2;  // rank 0's output wrong for its inputs
  const DiffResult inside = RunDiff(ref, Load(WriteCandidate("diff_value_out", f)));
  ASSERT_TRUE(inside.first.valid) << Findings(inside);
  EXPECT_EQ(inside.first.kind, "inside");
  EXPECT_EQ(inside.first.operand, "recv");
  EXPECT_EQ(inside.first.op.rank, 0);
  EXPECT_EQ(inside.first.model, "diff.propagation");
  EXPECT_GT(inside.first.ratio, 1e5);
}

// The threshold of such a value from both sides: diff.between, 2 x the largest output error before + eps. Rank
// 1's GEMM2 input is 5 % off (found there), which sets that output error; the value's inputs' sum then differs
// from the reference's by 0.5 (clean) or 2 (found) times the threshold. A calibration run does not tighten it:
// its spread at one value is one sample (docs/diff.md).
TEST(DiffSharded, ValueAllReduceIsJudgedByDiffBetween) {
  const TraceSet ref = Load(WriteReference(kValue));
  absl::StatusOr<Calibration> c = MeasureCalibration(ref, Load(WriteReference(kValue * 1.0001)), 64);
  ASSERT_TRUE(c.ok()) << c.status();
  DiffOptions o;
  o.calibration = &*c;
  auto at_value = [](const DiffResult& r) -> const Finding* {
    for (const Finding& f : r.report.findings())
      if (f.api == "ncclAllReduce" && f.seq == 3) return &f;
    return nullptr;
  };
  Faults f;
  f.gemm2_b_scale = 1.05;
  f.value_sum = kValue * 1.5;
  const DiffResult probe = RunDiff(ref, Load(WriteCandidate("diff_value_probe", f)));
  const Finding* p = at_value(probe);
  ASSERT_NE(p, nullptr) << Findings(probe);
  const double tau = p->threshold;
  EXPECT_GT(tau, 0.01) << "2 x GEMM2's output error";
  for (const double multiple : {0.5, 2.0}) {
    f.value_sum = kValue * (1 + multiple * tau);
    const TraceSet cand = Load(WriteCandidate("diff_value_tau", f));
    for (const DiffResult& r : {RunDiff(ref, cand), RunDiff(ref, cand, o)}) {
      const Finding* v = at_value(r);
      EXPECT_EQ(v != nullptr, multiple > 1) << multiple << "\n" << Findings(r);
      if (v == nullptr) continue;
      EXPECT_EQ(v->model, "diff.between");
      EXPECT_NEAR(v->threshold, tau, 1e-9);
      EXPECT_NEAR(v->ratio, multiple, 0.01);
    }
  }
}

TEST(DiffSharded, ExtraOpIsNotAlignedAndIncomplete) {
  Faults f;
  f.extra_op = true;
  const DiffResult r = RunDiff(Load(WriteReference()), Load(WriteCandidate("diff_extra", f)));
  EXPECT_EQ(r.report.verdict(), Verdict::kIncomplete) << Findings(r);
  EXPECT_EQ(r.report.summary().checked.at("diff.gemm"), 2u) << Findings(r);
  ASSERT_FALSE(r.report.summary().gaps.empty());
  EXPECT_NE(r.report.summary().gaps[0].find("rank 0 seq 1"), std::string::npos) << r.report.summary().gaps[0];
}

TEST(DiffBitwise, SameRunTwiceIsCleanAndFlipsAreLocalized) {
  const std::string a = WriteCandidate("diff_bw_a");
  const TraceSet ref = Load(a);
  DiffResult r = RunDiff(ref, Load(a));
  EXPECT_EQ(r.mode, "bitwise");
  EXPECT_EQ(r.report.verdict(), Verdict::kClean) << Findings(r);
  Faults f;
  f.allreduce_scale = 2;
  r = RunDiff(ref, Load(WriteCandidate("diff_bw_b", f)));
  ASSERT_TRUE(r.first.valid);
  EXPECT_EQ(r.first.kind, "inside");
  EXPECT_EQ(r.first.op.seq, 2u);
  EXPECT_EQ(r.first.operand, "recv");
  f = {};
  f.gemm2_b_scale = 2;
  r = RunDiff(ref, Load(WriteCandidate("diff_bw_c", f)));
  ASSERT_TRUE(r.first.valid);
  EXPECT_EQ(r.first.kind, "between");
  EXPECT_EQ(r.first.op.rank, 1);
  EXPECT_EQ(r.first.op.seq, 1u);
  EXPECT_EQ(r.first.operand, "B");
  ASSERT_TRUE(r.first.has_last_matching);
  EXPECT_EQ(r.first.last_matching.seq, 0u);
  ASSERT_FALSE(r.report.findings().empty());
  EXPECT_GT(r.report.findings()[0].max_abs_err, 0) << "bitwise findings give the largest difference too";
}

TEST(DiffCalibrate, MeasuresGemmOperandSpreadsOfAOneRankRun) {
  const TraceSet ref = Load(WriteReference());
  absl::StatusOr<Calibration> c = MeasureCalibration(ref, Load(WriteReference()), 64);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->spread.size(), 3u);
  EXPECT_EQ(c->measured, 2u);
  EXPECT_EQ(c->unaligned, 0u);
  EXPECT_EQ(c->spread[0].a, 0);
  EXPECT_EQ(c->spread[1].c, 0);
  EXPECT_LT(c->spread[2].a, 0) << "an all-reduce has no GEMM operands";
  const absl::StatusOr<Calibration> bad = MeasureCalibration(ref, Load(WriteCandidate("diff_cal_2")), 64);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_DOUBLE_EQ(CalibratedThreshold(8, 1e-3, 0x1p-8), 8e-3 + 0x1p-8);
}

TEST(DiffCalibrate, ThresholdIsTheSmallerOfCalibratedAndBetween) {
  // The calibration run equals the reference: spread 0, so diff.calibrated allows an input u = 6e-8 (FP32) and
  // diff.between eps = 1.2e-7 (the outputs before agree exactly). GEMM2's input drifts by about 2.8e-7: both are
  // exceeded, and the finding names the smaller threshold's model.
  const TraceSet ref = Load(WriteReference());
  absl::StatusOr<Calibration> c = MeasureCalibration(ref, Load(WriteReference()), 64);
  ASSERT_TRUE(c.ok());
  Faults f;
  f.gemm2_b_scale = 1 + 4e-7;
  const TraceSet cand = Load(WriteCandidate("diff_cal_drift", f));
  DiffOptions o;
  o.calibration = &*c;
  const DiffResult r = RunDiff(ref, cand, o);
  ASSERT_TRUE(r.first.valid) << Findings(r);
  EXPECT_EQ(r.first.operand, "B");
  EXPECT_EQ(r.first.model, "diff.calibrated");
  EXPECT_NEAR(r.first.threshold, 0x1p-24, 1e-12);
  EXPECT_TRUE(r.calibration.used);
  EXPECT_GT(r.calibration.operands, 0u);
  const DiffResult plain = RunDiff(ref, cand);
  ASSERT_TRUE(plain.first.valid);
  EXPECT_EQ(plain.first.model, "diff.between");
  EXPECT_FALSE(plain.calibration.used);
}

TEST(DiffAlign, SkipsExtraAndMissingOps) {
  const TraceSet ref = Load(WriteReference()), cand = Load(WriteCandidate("diff_align", Faults{1, 1, true}));
  const RankAlignment al = AlignOps(ref.ranks[0].ops, cand.ranks[0].ops);
  EXPECT_EQ(al.ref_of_cand, (std::vector<int64_t>{0, -1, 1, 2}));
  EXPECT_EQ(al.cand_of_ref, (std::vector<int64_t>{0, 2, 3}));
}

// A communicator no collective ran on (a data-parallel group whose gradient reduction went elsewhere) is known
// from its creation record, after the used ones.
TEST(DiffShard, UnusedCommunicatorsComeFromTheirCreationRecords) {
  TraceSet set;
  for (int r = 0; r < 2; ++r) {
    RankTrace t;
    t.header.rank = r;
    Op op;
    op.kind = OpKind::kCollective;
    op.coll.comm_hash = kTpComm;
    op.coll.comm_rank = r;
    op.coll.comm_size = 2;
    t.ops.push_back(std::move(op));
    format::CommInitRecord c{};
    c.comm_hash = 0x5555;
    c.comm_rank = 1 - r;
    c.comm_size = 2;
    t.comm_inits.push_back(c);
    set.ranks.push_back(std::move(t));
  }
  const CommLayout comms(set);
  EXPECT_EQ(comms.CommsOf(1), (std::vector<uint64_t>{kTpComm, 0x5555}));
  EXPECT_EQ(comms.CoordOf(1, 0x5555), 0);
  EXPECT_EQ(comms.SizeOf(0x5555), 2);
}

// Divide-then-sum averaging (PyTorch DDP's reducer): a reduction's input is its GEMM's output divided by the group
// size, each element rounded once. Both sides: one rounding of the type passes, 1.5 fails; another divisor, a
// different length and an all-zero output (which any divisor reproduces) are not divided copies.
TEST(DiffShard, DividedCopyIsWithinOneRounding) {
  const FloatFormat fp32 = FormatOf(format::DType::kF32), bf16 = FormatOf(format::DType::kBF16);
  const std::vector<double> y = {3.0, -1.0, 0.7, 1e-3, 0.0};
  for (const FloatFormat& f : {fp32, bf16})
    for (int p : {2, 3}) {
      std::vector<double> x, off;
      for (double v : y) {
        x.push_back(v / p * (1 + 0.99 * f.u));  // one rounding, nearly at its largest
        off.push_back(v / p * (1 + 1.5 * f.u));  // beyond one rounding (a bound 2x too loose takes it)
      }
      EXPECT_TRUE(IsDividedCopy(x, y, p, f)) << f.name << " " << p;
      EXPECT_FALSE(IsDividedCopy(off, y, p, f)) << f.name << " " << p;
      EXPECT_FALSE(IsDividedCopy(x, y, p + 1, f)) << f.name << " " << p;
    }
  EXPECT_FALSE(IsDividedCopy({1.5, -0.5}, {3.0, -1.0, 0.7}, 2, fp32));
  EXPECT_FALSE(IsDividedCopy({0.0, 0.0}, {0.0, 0.0}, 2, fp32));
  EXPECT_FALSE(IsDividedCopy({3.0, -1.0}, {3.0, -1.0}, 1, fp32));
}

// A DDP bucket: gradients side by side, each divided by the group size, after a bias gradient no GEMM computed.
// Every segment is found at its offset (the bias skipped); one rounding passes and 1.5 do not; another divisor, or
// no division, finds nothing; a length that runs past the end is not taken.
TEST(DiffShard, DividedSegmentsOfABucketAreFoundAtTheirOffsets) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> uni(-1, 1);
  for (const DType dt : {DType::kF32, DType::kBF16}) {
    const FloatFormat f = FormatOf(dt);
    std::vector<double> y1(12), y2(20), bias(5);
    for (auto* v : {&y1, &y2, &bias})
      for (double& e : *v) e = testing::RoundTo(dt, uni(rng));
    const std::string b1 = Encode(dt, y1), b2 = Encode(dt, y2);
    const std::vector<StoredValues> outputs = {{dt, b1}, {dt, b2}};
    for (int p : {2, 3}) {
      // [bias | y2/p | y1/p], each divided element off by `rounds` roundings.
      auto bucket = [&](int divisor, double rounds) {
        std::vector<double> x = bias;
        for (const auto* y : {&y2, &y1})
          for (double e : *y) x.push_back(e / divisor * (1 + rounds * f.u));
        return x;
      };
      const std::vector<DividedSegment> s = FindDividedSegments(bucket(p, 0.99), outputs, p, f);
      ASSERT_EQ(s.size(), 2u) << f.name << " " << p;
      EXPECT_EQ(s[0].offset, 5u);
      EXPECT_EQ(s[0].length, 20u);
      EXPECT_EQ(s[0].source, 1u);
      EXPECT_EQ(s[1].offset, 25u);
      EXPECT_EQ(s[1].length, 12u);
      EXPECT_EQ(s[1].source, 0u);
      EXPECT_TRUE(FindDividedSegments(bucket(p, 1.5), outputs, p, f).empty()) << f.name << " " << p;
      EXPECT_TRUE(FindDividedSegments(bucket(p + 1, 0), outputs, p, f).empty()) << f.name << " " << p;
      EXPECT_TRUE(FindDividedSegments(bucket(1, 0), outputs, p, f).empty()) << f.name << " " << p;
      EXPECT_EQ(FindDividedSegments(bucket(1, 0), outputs, 1, f).size(), 2u) << "copies, with p = 1";
      std::vector<double> cut = bucket(p, 0);
      cut.pop_back();  // y1/p one element short at the end
      EXPECT_EQ(FindDividedSegments(cut, outputs, p, f).size(), 1u) << f.name << " " << p;
    }
  }
}

// An averaging scale is named only when it explains the operand. A real averaged gradient (twice the reference's,
// rounded to BF16) gets scale 2; an unrelated tensor of the same size (orthogonal: √2 away, 1.118 under scale 2, the
// picker took 2 before) keeps its own error. Both sides of kScaleExplains: 0.2 away under the scale is taken, 0.4 is
// not (a bound 2x too loose takes it, one 2x too tight misses 0.2); after a divergence the threshold's larger
// allowance takes it.
TEST(DiffShard, AScaleIsNamedOnlyWhenItExplainsTheData) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> uni(-1, 1);
  std::vector<double> r(64), n(64);
  for (double& v : r) v = uni(rng);
  for (double& v : n) v = uni(rng);
  double rn = 0, rr = 0, nn = 0;  // n made orthogonal to r and of r's norm
  for (size_t i = 0; i < r.size(); ++i) rn += r[i] * n[i], rr += r[i] * r[i];
  for (size_t i = 0; i < r.size(); ++i) n[i] -= rn / rr * r[i];
  for (double v : n) nn += v * v;
  for (double& v : n) v *= std::sqrt(rr / nn);
  auto away = [&](double f) {  // 2·(r + f·n): f away from r under scale 2
    std::vector<double> x(r.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = 2 * (r[i] + f * n[i]);
    return x;
  };
  const std::vector<double> scales = {2};
  double rel = 0;
  std::vector<double> grad(r.size());
  for (size_t i = 0; i < r.size(); ++i) grad[i] = 2 * r[i] * (1 + 0x1p-8 * uni(rng));
  EXPECT_EQ(ExplainingScale(grad, r, scales, kScaleExplains, &rel), 2);
  EXPECT_LT(rel, 0x1p-8);
  EXPECT_EQ(ExplainingScale(n, r, scales, kScaleExplains, &rel), 1);
  EXPECT_NEAR(rel, std::sqrt(2.0), 1e-12);
  EXPECT_EQ(ExplainingScale(away(0.2), r, scales, kScaleExplains, &rel), 2);
  EXPECT_NEAR(rel, 0.2, 1e-12);
  EXPECT_EQ(ExplainingScale(away(0.4), r, scales, kScaleExplains, &rel), 1);
  EXPECT_NEAR(rel, RelFrobenius(away(0.4), r), 1e-12);
  EXPECT_EQ(ExplainingScale(away(0.4), r, scales, 0.9, &rel), 2);
  EXPECT_EQ(ExplainingScale(grad, r, {}, kScaleExplains, &rel), 1);  // no averaging communicator: no scale
}

TEST(DiffShard, GroupedSplitsInterleaveSlices) {
  // A fused QKV weight of 6 columns [q0 q1 | k0 k1 | v0 v1] split 2 ways by heads: slice 1 holds q1 k1 v1.
  DimSplit d;
  d.factor = 2;
  d.groups = 3;
  EXPECT_EQ(FullIndex(d, 3, 1, 0), 1);
  EXPECT_EQ(FullIndex(d, 3, 1, 1), 3);
  EXPECT_EQ(FullIndex(d, 3, 1, 2), 5);
  EXPECT_EQ(CoordOfFull(d, 3, 4), 0);
  EXPECT_EQ(CoordOfFull(d, 3, 5), 1);
  std::vector<double> full(6, 0);
  PlaceBlock({10, 11, 12}, 1, 3, 0, 1, DimSplit{}, d, &full);
  EXPECT_EQ(full, (std::vector<double>{0, 10, 0, 11, 0, 12}));
  GemmShape ref{4, 6, 2, 1}, cand{4, 3, 2, 1};
  CommLayout none((TraceSet{}));
  EXPECT_TRUE(CandidateSplits(ref, cand, none, 0).empty()) << "no communicator of size 2";
}

TEST(DiffMapping, ParsesAndRejects) {
  absl::StatusOr<SplitMapping> m = ParseSplitMapping("# comment\nop 4 m=2@0x2222 k=2@1111\n\nop 7\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->ops.at(4).m.factor, 2);
  EXPECT_EQ(m->ops.at(4).m.comm, 0x2222u);
  EXPECT_EQ(m->ops.at(4).k.comm, 0x1111u);
  EXPECT_EQ(m->ops.at(7).n.factor, 1);
  EXPECT_TRUE(m->owns.empty());
  EXPECT_FALSE(ParseSplitMapping("op x").ok());
  EXPECT_FALSE(ParseSplitMapping("op 1 q=2@1").ok());
  absl::StatusOr<SplitMapping> o = ParseSplitMapping("owns 1 0,3-5 8-8\nowns 0 1 # stage 0\nop 2\n");
  ASSERT_TRUE(o.ok()) << o.status();
  using R = std::vector<std::pair<uint64_t, uint64_t>>;
  EXPECT_EQ(o->owns.at(1), (R{{0, 0}, {3, 5}, {8, 8}}));
  EXPECT_EQ(o->owns.at(0), (R{{1, 1}}));
  EXPECT_EQ(o->ops.count(2), 1u);
  for (const char* bad : {"owns", "owns 1", "owns -1 3", "owns x 3", "owns 1 5-3", "owns 1 a-b", "owns 1 3-"})
    EXPECT_FALSE(ParseSplitMapping(bad).ok()) << bad;
}

}  // namespace
}  // namespace ttrace::analyzer
