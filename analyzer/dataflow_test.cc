// Micro-batch identity from data flow (dataflow.h) on op records with synthetic tensors: a two-stage 1F1B chain
// against a one-rank GPipe reference, each stage one linear (forward F, weight gradient G, input gradient D).
#include "analyzer/dataflow.h"

#include <memory>
#include <string>
#include <vector>

#include "analyzer/pipeline.h"
#include "gtest/gtest.h"

namespace ttrace::analyzer {
namespace {

constexpr uint64_t kPp = 0x5151;

// Tensor bytes that identify (what, layer, micro-batch): 32 bytes, not constant.
std::string Bytes(char what, int layer, int mb) {
  std::string s(32, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(what * 7 + layer * 31 + mb * 57 + i);
  return s;
}

std::unique_ptr<Tensor> T(const std::string& bytes) {
  auto t = std::make_unique<Tensor>();
  t->data = bytes;
  return t;
}

// F: x·W (A = x, B = W); G: xᵀ·dy (A = x, B = dy); D: dy·Wᵀ (A = dy, B = W). Distinct shapes per kind.
Op Gemm(char kind, int layer, int mb) {
  Op op;
  op.kind = OpKind::kGemm;
  op.api = static_cast<uint16_t>(format::ApiId::kCublasGemmEx);
  op.gemm.api = op.api;
  op.gemm.m = kind == 'F' ? 4 : kind == 'G' ? 6 : 5;
  op.gemm.n = 2;
  op.gemm.k = 4;
  op.gemm.batch_count = 1;
  const std::string x = Bytes('x', layer, mb), dy = Bytes('d', layer, mb), w = Bytes('w', layer, 0);
  op.tensors[static_cast<size_t>(format::TensorSlot::kA)] = T(kind == 'D' ? dy : x);
  op.tensors[static_cast<size_t>(format::TensorSlot::kB)] = T(kind == 'F' ? w : kind == 'G' ? dy : w);
  op.tensors[static_cast<size_t>(format::TensorSlot::kCOut)] = T(Bytes(kind, layer, mb + 10));
  return op;
}

Op P2p(bool send, int stage, int mb) {
  Op op;
  op.kind = OpKind::kCollective;
  op.api = static_cast<uint16_t>(send ? format::ApiId::kNcclSend : format::ApiId::kNcclRecv);
  op.coll.api = op.api;
  op.coll.comm_hash = kPp;
  op.coll.comm_size = 2;
  op.coll.comm_rank = stage;
  op.coll.root_or_peer = 1 - stage;
  op.coll.count = 8;
  op.tensors[static_cast<size_t>(send ? format::TensorSlot::kSend : format::TensorSlot::kRecv)] =
      T(Bytes('p', stage, mb));
  return op;
}

// "F1" = forward of micro-batch 1 on this layer; "S0"/"R0" = send/receive (micro-batch 0's message).
std::vector<Op> Ops(const std::string& program, int layer, int stage) {
  std::vector<Op> out;
  for (size_t i = 0; i + 1 < program.size(); i += 2) {
    const char c = program[i];
    const int mb = program[i + 1] - '0';
    out.push_back(c == 'S' || c == 'R' ? P2p(c == 'S', stage, mb) : Gemm(c, layer, mb));
    out.back().seq = out.size() - 1;
  }
  return out;
}

// Reference: GPipe on one rank, layers 0 and 1: forwards of micro-batch 0 and 1, backwards of 1 then 0.
std::vector<Op> Reference() {
  std::vector<Op> ref;
  const char* steps[][2] = {{"F0", "0"}, {"F0", "1"}, {"F1", "0"}, {"F1", "1"}, {"G1D1", "1"},
                            {"G1D1", "0"}, {"G0D0", "1"}, {"G0D0", "0"}};
  for (const auto& s : steps)
    for (Op& op : Ops(s[0], s[1][0] - '0', 0)) {
      op.seq = ref.size();
      ref.push_back(std::move(op));
    }
  return ref;
}

std::string Kind(const Op& op) {
  return std::string(1, op.gemm.m == 4 ? 'F' : op.gemm.m == 6 ? 'G' : 'D');
}

TEST(DataFlow, UnitsJoinEachLinearsPassesOfOneMicroBatch) {
  const std::vector<Op> ref = Reference();
  std::vector<const Op*> ops;
  for (const Op& op : ref) ops.push_back(&op);
  // F(l0,m0) F(l1,m0) F(l0,m1) F(l1,m1) | G D (l1,m1) | G D (l0,m1) | G D (l1,m0) | G D (l0,m0)
  EXPECT_EQ(DataFlowUnits(ops), (std::vector<size_t>{0, 1, 2, 3, 3, 3, 2, 2, 1, 1, 0, 0}));
  // The weight (read by both forwards and both input gradients: same signatures) joins nothing on its own: a
  // reference of forwards only leaves every op alone; a constant operand neither.
  const std::vector<Op> fwd = Ops("F0F1", 0, 0);
  EXPECT_EQ(DataFlowUnits({&fwd[0], &fwd[1]}), (std::vector<size_t>{0, 1}));
  std::vector<Op> zeros = Ops("F0G1", 0, 0);
  zeros[0].tensors[static_cast<size_t>(format::TensorSlot::kA)] = T(std::string(32, '\0'));
  zeros[1].tensors[static_cast<size_t>(format::TensorSlot::kA)] = T(std::string(32, '\0'));
  EXPECT_EQ(DataFlowUnits({&zeros[0], &zeros[1]}), (std::vector<size_t>{0, 1}));
}

// 1F1B on two stages: stage 0 runs F0 F1 then the backwards of 0 and 1; stage 1 runs F0 B0 F1 B1. Every
// candidate op pairs with the reference op of its own layer, pass and micro-batch.
TEST(DataFlow, OneForwardOneBackwardAlignsByMicroBatch) {
  const std::vector<Op> ref = Reference();
  TraceSet cand;
  cand.ranks.resize(2);
  cand.ranks[0].header.rank = 0;
  cand.ranks[0].ops = Ops("F0S0F1S1R0G0D0R1G1D1", 0, 0);
  cand.ranks[1].header.rank = 1;
  cand.ranks[1].ops = Ops("R0F0G0D0S0R1F1G1D1S1", 1, 1);
  const std::vector<RankAlignment> a = AlignPipelined(ref, cand, InferPipeline(cand), 64);
  ASSERT_EQ(a.size(), 2u);
  // Reference seqs: F(l,m) = 2m + l; G/D of (l1,m1) 4/5, (l0,m1) 6/7, (l1,m0) 8/9, (l0,m0) 10/11.
  EXPECT_EQ(a[0].ref_of_cand, (std::vector<int64_t>{0, -1, 2, -1, -1, 10, 11, -1, 6, 7}));
  EXPECT_EQ(a[1].ref_of_cand, (std::vector<int64_t>{-1, 1, 8, 9, -1, -1, 3, 4, 5, -1}));
  for (size_t r = 0; r < 2; ++r)
    for (size_t j = 0; j < cand.ranks[r].ops.size(); ++j)
      if (a[r].ref_of_cand[j] >= 0)
        EXPECT_EQ(Kind(ref[static_cast<size_t>(a[r].ref_of_cand[j])]), Kind(cand.ranks[r].ops[j]));
  // Positions alone (the merged order aligned as one sequence) pair stage 0's micro-batch-0 backward with the
  // reference's micro-batch-1 one: what data flow prevents.
  std::vector<const Op*> ref_ops, merged;
  for (const Op& op : ref) ref_ops.push_back(&op);
  for (const auto& [r, j] : MergeChain(cand, InferPipeline(cand).chains[0])) merged.push_back(&cand.ranks[r].ops[j]);
  const RankAlignment plain = AlignOps(ref_ops, merged, 64);
  bool wrong = false;
  for (size_t x = 0; x < merged.size(); ++x)
    if (merged[x] == &cand.ranks[0].ops[5]) wrong = plain.ref_of_cand[x] != 10;
  EXPECT_TRUE(wrong);
}

}  // namespace
}  // namespace ttrace::analyzer
