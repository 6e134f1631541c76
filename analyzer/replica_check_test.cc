// replica.identical on synthetic data-parallel traces: per step, each layer's forward GEMM reads X·W, the
// backward GEMMs dY·Wᵀ and Xᵀ·dY; W lives at one address per rank and is updated in place by the same averaged
// gradient on every replica, X and dY are each rank's own data. What must hold: clean runs (data parallel, and
// tensor x data parallel where TP shards differ) give no finding; a replica whose weight moves by one ulp from
// step 1 on is found at its first read in step 1, on that rank, named against the majority, once; without a
// majority the classes are named; constant operands and activations are never taken for replicas.
#include "analyzer/replica_check.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzer/json.h"
#include "analyzer/test_util.h"
#include "gtest/gtest.h"

namespace ttrace::analyzer {
namespace {

using format::DType;
using format::TensorSlot;
using testing::Encode;
using testing::StreamBuilder;

constexpr int64_t kM = 8, kK = 6, kN = 5;  // X: m x k, W: k x n

struct Layout {
  int tp = 1, dp = 3;
  int steps = 3, layers = 2;
  int drift_rank = -1, drift_step = 1;  // this rank's weights move by one ulp from this step on
  bool zero_dy_first_step = false;      // dY of step 0 all zeros on every rank (constant: never a replica)
  bool reuse_activation_pointer = true; // X at the same address every step (activations must not be replicas)
  bool shared_first_input = false;      // layer 0's X the same on every rank (a replicated input), layer 1's not
};

std::vector<double> Random(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = static_cast<float>(u(rng));
  return v;
}

// Writes the trace; the op numbering differs across ranks (seq offset by rank) as it may in real runs.
std::string WriteTrace(const Layout& l) {
  const std::string dir = testing::TempDir("replica");
  const int world = l.tp * l.dp;
  for (int rank = 0; rank < world; ++rank) {
    const int tp_rank = rank % l.tp, dp_rank = rank / l.tp;
    StreamBuilder s(dir + "/rank-" + std::to_string(rank) + ".ttr", rank, world);
    std::mt19937_64 init(100 + static_cast<uint64_t>(tp_rank));  // the weight shard of this TP rank
    std::vector<std::vector<double>> w;
    for (int layer = 0; layer < l.layers; ++layer) w.push_back(Random(kK * kN, init));
    uint64_t seq = static_cast<uint64_t>(rank);
    for (int step = 0; step < l.steps; ++step) {
      std::mt19937_64 data(1000 + 37 * static_cast<uint64_t>(step) + static_cast<uint64_t>(dp_rank));
      std::mt19937_64 update(5000 + static_cast<uint64_t>(step) + 7 * static_cast<uint64_t>(tp_rank));
      if (rank == l.drift_rank && step == l.drift_step)
        for (auto& wl : w) wl[3] = std::nextafter(static_cast<float>(wl[3]), 2.0f);
      for (int layer = 0; layer < l.layers; ++layer) {
        const uint64_t w_ptr = 0x10000 + 0x1000 * static_cast<uint64_t>(layer) + (rank % 2) * 0x100000;
        const uint64_t x_ptr = l.reuse_activation_pointer ? 0x900000 + 0x1000 * static_cast<uint64_t>(layer)
                                                          : 0x900000 + 0x1000 * static_cast<uint64_t>(seq);
        std::mt19937_64 shared(77 + static_cast<uint64_t>(step));
        const std::vector<double> x = Random(kM * kK, l.shared_first_input && layer == 0 ? shared : data);
        std::vector<double> dy = Random(kM * kN, data);
        if (l.zero_dy_first_step && step == 0) dy.assign(dy.size(), 0.0);
        // Forward Y = X·W: A = X (m x k), B = W (k x n).
        format::GemmRecord fwd = testing::GemmRec(seq, kM, kN, kK, DType::kF32, DType::kF32);
        fwd.a_ptr = x_ptr;
        fwd.b_ptr = w_ptr;
        s.Gemm(fwd);
        s.Tensor(seq, TensorSlot::kA, DType::kF32, kM, kK, 1, Encode(DType::kF32, x));
        s.Tensor(seq, TensorSlot::kB, DType::kF32, kK, kN, 1, Encode(DType::kF32, w[static_cast<size_t>(layer)]));
        seq += 8;
        // Backward dX = dY·Wᵀ: A = dY (m x n), B = W stored k x n, transposed.
        format::GemmRecord bwd = testing::GemmRec(seq, kM, kK, kN, DType::kF32, DType::kF32);
        bwd.transb = 1;
        bwd.ldb = kK;
        bwd.a_ptr = 0xa00000;
        bwd.b_ptr = w_ptr;
        s.Gemm(bwd);
        s.Tensor(seq, TensorSlot::kA, DType::kF32, kM, kN, 1, Encode(DType::kF32, dy));
        s.Tensor(seq, TensorSlot::kB, DType::kF32, kK, kN, 1, Encode(DType::kF32, w[static_cast<size_t>(layer)]));
        seq += 8;
        // dW = Xᵀ·dY: both operands are this rank's data.
        format::GemmRecord dw = testing::GemmRec(seq, kK, kN, kM, DType::kF32, DType::kF32);
        dw.transa = 1;
        dw.lda = kM;
        dw.a_ptr = x_ptr;
        dw.b_ptr = 0xa00000;
        s.Gemm(dw);
        s.Tensor(seq, TensorSlot::kA, DType::kF32, kM, kK, 1, Encode(DType::kF32, x));
        s.Tensor(seq, TensorSlot::kB, DType::kF32, kM, kN, 1, Encode(DType::kF32, dy));
        seq += 8;
        // The same averaged update on every replica.
        const std::vector<double> g = Random(kK * kN, update);
        for (size_t e = 0; e < g.size(); ++e)
          w[static_cast<size_t>(layer)][e] = static_cast<float>(w[static_cast<size_t>(layer)][e] - 0.01 * g[e]);
      }
    }
  }
  return dir;
}

CheckReport Check(const Layout& l) {
  auto set = LoadTraceDir(WriteTrace(l));
  EXPECT_TRUE(set.ok()) << set.status();
  CheckReport report;
  if (set.ok()) CheckReplicas(*set, &report);
  return report;
}

std::string Describe(const CheckReport& r) {
  std::string s = ReplicaText(r.summary().replicas) + "\n";
  for (const Finding& f : r.findings()) absl::StrAppend(&s, "(", f.rank, ", ", f.seq, ") ", f.message, "\n");
  return s;
}

// The seq rank `rank` gives op `index` (0-based, in program order) of the synthetic trace.
uint64_t SeqOf(int rank, int step, int layer, int gemm, int layers = 2) {
  return static_cast<uint64_t>(rank) + 8 * static_cast<uint64_t>(3 * (step * layers + layer) + gemm);
}

TEST(ReplicaCheckTest, CleanDataParallelRunIsCleanAndComparesEveryLaterWeightRead) {
  const CheckReport r = Check(Layout{});
  EXPECT_TRUE(r.findings().empty()) << Describe(r);
  const ReplicaSummary& s = r.summary().replicas;
  EXPECT_EQ(s.groups, 1u);
  EXPECT_EQ(s.sets, (std::set<std::vector<int>>{{0, 1, 2}}));
  // Each layer's W, as read by its forward and by its backward-data GEMM (two operands: one per op signature), is
  // established at step 0 and compared at steps 1 and 2.
  EXPECT_EQ(s.operands_established, 4u) << Describe(r);
  EXPECT_EQ(s.uses_compared, 4u * 2) << Describe(r);
  EXPECT_EQ(s.parted, 0u);
  EXPECT_EQ(ReplicaText(s), "4 operands identical on ranks {0, 1, 2}; 8 later reads compared bitwise, 0 parted");
  const std::string json = ReportToJson(r);
  EXPECT_NE(json.find("\"replicas\": {\"groups\": 1, \"sets\": [[0, 1, 2]], \"operands_established\": 4, "
                      "\"uses_compared\": 8, \"parted\": 0}"),
            std::string::npos)
      << json;
}

TEST(ReplicaCheckTest, DriftingReplicaIsFoundAtItsFirstReadOnceAgainstTheMajority) {
  Layout l;
  l.drift_rank = 2;
  const CheckReport r = Check(l);
  ASSERT_EQ(r.findings().size(), 1u) << Describe(r);
  const Finding& f = r.findings()[0];
  EXPECT_EQ(f.check, "replica.identical");
  EXPECT_EQ(f.rank, 2);
  EXPECT_EQ(f.seq, SeqOf(2, 1, 0, 0));  // step 1, layer 0, the forward GEMM
  EXPECT_EQ(f.api, "cublasGemmEx");
  EXPECT_EQ(f.model, "exact");
  EXPECT_NE(f.message.find("rank 2 differs from the majority (0, 1)"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("operand B was bitwise identical on ranks 0, 1, 2"), std::string::npos) << f.message;
  // Evidence: exactly the element that moved, got (one ulp up) against the majority's value.
  EXPECT_EQ(f.violations, 1u);
  EXPECT_EQ(f.elements, static_cast<uint64_t>(kK * kN));
  ASSERT_TRUE(f.has_element);
  EXPECT_EQ(f.first.index, 3u);
  EXPECT_EQ(f.first.got, static_cast<double>(std::nextafter(static_cast<float>(f.first.expected), 2.0f)));
  EXPECT_GT(f.max_abs_err, 0);
  // The backward read of the weight and the other layer's weight part the same way: counted in the same finding.
  EXPECT_NE(f.message.find("3 more operands parted the same way, the last at seq " +
                           std::to_string(SeqOf(2, 1, 1, 1))),
            std::string::npos)
      << f.message;
  EXPECT_EQ(r.summary().replicas.parted, 4u);
  const std::string json = ReportToJson(r);
  EXPECT_NE(json.find("\"check\": \"replica.identical\", \"rank\": 2, \"seq\": " + std::to_string(f.seq)),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"parted\": 4}"), std::string::npos) << json;
}

TEST(ReplicaCheckTest, TwoReplicasWithoutAMajorityNameBothClasses) {
  Layout l;
  l.dp = 2;
  l.drift_rank = 0;
  l.drift_step = 2;
  const CheckReport r = Check(l);
  ASSERT_EQ(r.findings().size(), 1u) << Describe(r);
  const Finding& f = r.findings()[0];
  EXPECT_EQ(f.rank, 1);  // the first rank that differs from the lowest one's operand
  EXPECT_EQ(f.seq, SeqOf(1, 2, 0, 0));
  EXPECT_NE(f.message.find("no majority: {0} vs {1}"), std::string::npos) << f.message;
}

TEST(ReplicaCheckTest, TensorTimesDataParallelShardsAreSeparateReplicaSets) {
  Layout l;
  l.tp = 2;
  l.dp = 3;
  CheckReport r = Check(l);
  EXPECT_TRUE(r.findings().empty()) << Describe(r);
  // Weights on the DP replicas of each shard; the layer inputs (X, dY) on the TP ranks that share them.
  EXPECT_EQ(r.summary().replicas.sets, (std::set<std::vector<int>>{{0, 2, 4}, {1, 3, 5}, {0, 1}, {2, 3}, {4, 5}}))
      << Describe(r);
  l.drift_rank = 3;
  r = Check(l);
  ASSERT_EQ(r.findings().size(), 1u) << Describe(r);
  EXPECT_EQ(r.findings()[0].rank, 3);
  EXPECT_NE(r.findings()[0].message.find("rank 3 differs from the majority (1, 5)"), std::string::npos)
      << r.findings()[0].message;
}

TEST(ReplicaCheckTest, ConstantOperandsAndActivationsAreNeverReplicas) {
  Layout l;
  l.zero_dy_first_step = true;  // dY identical (zeros) on every rank at step 0, then each rank's own
  CheckReport r = Check(l);
  EXPECT_TRUE(r.findings().empty()) << Describe(r);
  EXPECT_EQ(r.summary().replicas.operands_established, 4u) << Describe(r);  // the weights only
  l.reuse_activation_pointer = false;
  r = Check(l);
  EXPECT_TRUE(r.findings().empty()) << Describe(r);
}

TEST(ReplicaCheckTest, OperandsAreTrackedByTheirBuffer) {
  // Layer 0's input is replicated on every rank, layer 1's (read by GEMMs of the same signature, from another
  // buffer) is each rank's own: only the first is a replica, and the second is never compared against it.
  Layout l;
  l.shared_first_input = true;
  const CheckReport r = Check(l);
  EXPECT_TRUE(r.findings().empty()) << Describe(r);
  const ReplicaSummary& s = r.summary().replicas;
  // The weights (4), and layer 0's X as read by its forward and weight-gradient GEMMs (2).
  EXPECT_EQ(s.operands_established, 6u) << Describe(r);
  EXPECT_EQ(s.uses_compared, 6u * 2) << Describe(r);
}

TEST(ReplicaCheckTest, RanksWithDifferentOpSequencesAreNotCompared) {
  // A drifting replica found in the run above, with one more GEMM on rank 2: no group holds it, no finding.
  Layout l;
  l.drift_rank = 2;
  const std::string dir = WriteTrace(l);
  {
    StreamBuilder extra(dir + "/rank-2.ttr", 2, 3);  // rewritten: only the first step's forward GEMM
    format::GemmRecord g = testing::GemmRec(2, kM, kN, kK, DType::kF32, DType::kF32);
    extra.Gemm(g);
  }
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  CheckReport r;
  CheckReplicas(*set, &r);
  EXPECT_TRUE(r.findings().empty()) << Describe(r);
  EXPECT_EQ(r.summary().replicas.sets, (std::set<std::vector<int>>{{0, 1}}));
}

}  // namespace
}  // namespace ttrace::analyzer
