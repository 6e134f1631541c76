// Pipeline stage ownership on op records alone (no tensors): a two-stage GPipe chain whose stages run layers of
// identical signatures, against the one-rank reference's order.
#include "analyzer/pipeline.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ttrace::analyzer {
namespace {

constexpr uint64_t kPp = 0x5151;

// Op names: F/B = a layer's forward/backward GEMM (the same signature on every layer), H/h = the head's forward
// and backward GEMM, S/R = send/recv to/from the other stage.
void Add(RankTrace* r, char what, int stage) {
  Op op;
  op.seq = r->ops.size();
  if (what == 'S' || what == 'R') {
    op.kind = OpKind::kCollective;
    op.api = static_cast<uint16_t>(what == 'S' ? format::ApiId::kNcclSend : format::ApiId::kNcclRecv);
    op.coll.api = op.api;
    op.coll.comm_hash = kPp;
    op.coll.comm_size = 2;
    op.coll.comm_rank = stage;
    op.coll.root_or_peer = 1 - stage;
    op.coll.count = 8;
  } else {
    op.kind = OpKind::kGemm;
    op.api = static_cast<uint16_t>(format::ApiId::kCublasGemmEx);
    op.gemm.api = op.api;
    op.gemm.m = what == 'F' ? 4 : what == 'B' ? 5 : what == 'H' ? 8 : 9;
    op.gemm.n = 2;
    op.gemm.k = 4;
    op.gemm.batch_count = 1;
  }
  r->ops.push_back(std::move(op));
}

RankTrace Rank(int rank, const std::string& ops, int stage) {
  RankTrace r;
  r.header.rank = rank;
  for (char c : ops) Add(&r, c, stage);
  return r;
}

// Reference (one rank, two layers, two micro-batches): F F H per micro-batch forward, then h B B per micro-batch
// backward in reverse. Stage 0 holds layer 0, stage 1 layer 1 and the head. The candidate lists stage 1 first to
// show that the stage order comes from the sends and receives, not from rank numbers.
struct Fixture {
  std::vector<Op> ref = Rank(0, "FFHFFHhBBhBB", 0).ops;
  TraceSet cand;
  Fixture() {
    cand.ranks.push_back(Rank(1, "RFHRFHhBShBS", 1));
    cand.ranks.push_back(Rank(0, "FSFSRBRB", 0));
  }
};

TEST(Pipeline, StagesFollowTheSendsAndReceives) {
  Fixture f;
  const PipelineLayout p = InferPipeline(f.cand);
  EXPECT_EQ(p.stages, 2);
  ASSERT_EQ(p.chains.size(), 1u);
  EXPECT_EQ(p.chains[0], (std::vector<size_t>{1, 0}));
  EXPECT_EQ(p.stage, (std::vector<int>{1, 0}));
}

TEST(Pipeline, TheMergedChainIsTheOneProcessOrder) {
  Fixture f;
  std::string order;
  for (const auto& [r, j] : MergeChain(f.cand, InferPipeline(f.cand).chains[0])) {
    const Op& op = f.cand.ranks[r].ops[j];
    const bool send = op.api == static_cast<uint16_t>(format::ApiId::kNcclSend);
    order += op.kind == OpKind::kCollective ? (send ? 's' : 'r')
             : op.gemm.m == 4               ? 'F'
             : op.gemm.m == 5               ? 'B'
             : op.gemm.m == 8               ? 'H'
                                            : 'h';
    order += static_cast<char>('0' + f.cand.ranks[r].rank());
  }
  // Forward micro-batch 0 through both stages, then micro-batch 1, then the backward passes from the last stage.
  EXPECT_EQ(order, "F0s0r1F1H1F0s0r1F1H1h1B1s1r0B0h1B1s1r0B0");
}

TEST(Pipeline, EachStageOwnsItsOwnLayers) {
  Fixture f;
  const std::vector<RankAlignment> a = AlignPipelined(f.ref, f.cand, InferPipeline(f.cand), 64);
  ASSERT_EQ(a.size(), 2u);
  // Stage 1 (rank 1): layer 1 forward at reference 1 and 4, the head at 2 and 5, 6 and 9, layer 1 backward at 7, 10.
  EXPECT_EQ(a[0].ref_of_cand, (std::vector<int64_t>{-1, 1, 2, -1, 4, 5, 6, 7, -1, 9, 10, -1}));
  // Stage 0 (rank 0): layer 0 forward at 0 and 3, backward at 8 and 11.
  EXPECT_EQ(a[1].ref_of_cand, (std::vector<int64_t>{0, -1, 3, -1, -1, 8, -1, 11}));
  // Aligned on its own, stage 0's second forward pairs with a layer-1 op of the reference (4, not 3): the reason
  // for stage ownership.
  EXPECT_EQ(AlignOps(f.ref, f.cand.ranks[1].ops, 64).ref_of_cand[2], 4);
}

// A program whose stages talk through calls the shim does not see (no send/recv records): each rank is its own
// chain and stage 0 aligned on its own pairs its second forward with a layer-1 op. A mapping file's `owns` lines
// give each rank its stage's reference ops, and every op lands on its own layer again.
TEST(Pipeline, OwnedRangesOverrideInference) {
  const Fixture f;
  TraceSet cand;
  cand.ranks.push_back(Rank(1, "FHFHhBhB", 1));
  cand.ranks.push_back(Rank(0, "FFBB", 0));
  const PipelineLayout p = InferPipeline(cand);
  ASSERT_EQ(p.chains.size(), 2u);
  EXPECT_EQ(AlignPipelined(f.ref, cand, p, 64)[1].ref_of_cand, (std::vector<int64_t>{0, 1, 7, 8}));
  const OwnedRanges owned = {{0, {{0, 0}, {3, 3}, {8, 8}, {11, 11}}}, {1, {{1, 2}, {4, 7}, {9, 10}}}};
  const std::vector<RankAlignment> a = AlignPipelined(f.ref, cand, p, 64, &owned);
  EXPECT_EQ(a[0].ref_of_cand, (std::vector<int64_t>{1, 2, 4, 5, 6, 7, 9, 10}));
  EXPECT_EQ(a[1].ref_of_cand, (std::vector<int64_t>{0, 3, 8, 11}));
  EXPECT_EQ(a[1].cand_of_ref[8], 2);
  EXPECT_EQ(a[1].cand_of_ref[1], -1);
  // A rank the mapping names is taken out of its inferred chain; the other ranks of the chain are merged without it.
  const std::vector<RankAlignment> b = AlignPipelined(f.ref, f.cand, InferPipeline(f.cand), 64,
                                                      &owned);
  EXPECT_EQ(b[1].ref_of_cand, (std::vector<int64_t>{0, -1, 3, -1, -1, 8, -1, 11}));
  const OwnedRanges only_stage0 = {{0, {{0, 0}, {3, 3}, {8, 8}, {11, 11}}}};
  const std::vector<RankAlignment> c = AlignPipelined(f.ref, f.cand, InferPipeline(f.cand), 64, &only_stage0);
  EXPECT_EQ(c[1].ref_of_cand, (std::vector<int64_t>{0, -1, 3, -1, -1, 8, -1, 11}));
  EXPECT_EQ(c[0].ref_of_cand.size(), f.cand.ranks[0].ops.size());
}

TEST(Pipeline, RanksWithoutPointToPointOpsAreTheirOwnChains) {
  TraceSet cand;
  cand.ranks.push_back(Rank(0, "FFH", 0));
  cand.ranks.push_back(Rank(1, "FFH", 0));
  const PipelineLayout p = InferPipeline(cand);
  EXPECT_EQ(p.stages, 1);
  EXPECT_EQ(p.chains.size(), 2u);
}

// An all-to-all issued as grouped sends and receives (PyTorch's all_to_all_single on NCCL, an expert-parallel
// token exchange): every rank talks to every rank. That is no pipeline: each rank stays its own chain.
Op PointToPoint(bool send, uint64_t comm, int size, int me, int peer) {
  Op op;
  op.kind = OpKind::kCollective;
  op.api = static_cast<uint16_t>(send ? format::ApiId::kNcclSend : format::ApiId::kNcclRecv);
  op.coll.api = op.api;
  op.coll.comm_hash = comm;
  op.coll.comm_size = size;
  op.coll.comm_rank = me;
  op.coll.root_or_peer = peer;
  op.coll.count = 8;
  return op;
}

// Each of `size` ranks: a GEMM, then a send to and a receive from every other rank on `comm` (and itself, with_self),
// all in one NCCL group (`grouped`; NCCL needs it: two ranks that each send first would wait for each other).
TraceSet Exchange(int size, uint64_t comm, bool with_self, bool grouped = true) {
  TraceSet set;
  for (int r = 0; r < size; ++r) {
    RankTrace t = Rank(r, "F", 0);
    for (int p = 0; p < size; ++p) {
      if (p == r && !with_self) continue;
      for (bool send : {true, false}) {
        t.ops.push_back(PointToPoint(send, comm, size, r, p));
        t.ops.back().seq = t.ops.size() - 1;
        t.ops.back().coll.in_group = grouped;
      }
    }
    set.ranks.push_back(std::move(t));
  }
  return set;
}

TEST(Pipeline, AllToAllExchangesAreNotAPipeline) {
  // Two ranks that also send to themselves (a pipeline stage never does), and four that talk to three others each
  // (a stage talks to the one before and the one after).
  for (const auto& [size, with_self] : {std::pair<int, bool>{2, true}, {4, false}, {4, true}}) {
    const PipelineLayout p = InferPipeline(Exchange(size, 0xa2a, with_self));
    EXPECT_EQ(p.stages, 1) << size << with_self;
    EXPECT_EQ(p.chains.size(), static_cast<size_t>(size)) << size << with_self;
  }
  // Two or three ranks exchanging without self-sends (the self chunk copied or skipped) talk to one or two others,
  // as pipeline stages do: every rank's first group sends to and receives from the same peer, which no pipeline
  // stage's does. Before: read as a two- and a three-stage pipeline.
  for (int size : {2, 3}) {
    const PipelineLayout p = InferPipeline(Exchange(size, 0xa2a, false));
    EXPECT_EQ(p.stages, 1) << size;
    EXPECT_EQ(p.chains.size(), static_cast<size_t>(size)) << size;
  }
  // The same transfers issued one by one, outside any group, are what a pipeline issues: still a chain.
  EXPECT_EQ(InferPipeline(Exchange(2, 0xa2a, false, /*grouped=*/false)).stages, 2);
  // Issued one by one, every rank's first transfer is one way, so the first group tells nothing: a rank that sends
  // to itself, or talks to three others, still makes its communicator an exchange.
  for (const auto& [size, with_self] : {std::pair<int, bool>{2, true}, {4, false}}) {
    const PipelineLayout p = InferPipeline(Exchange(size, 0xa2a, with_self, /*grouped=*/false));
    EXPECT_EQ(p.stages, 1) << size << with_self;
    EXPECT_EQ(p.chains.size(), static_cast<size_t>(size)) << size << with_self;
  }
  // A pipeline on its own communicator is still found beside an exchange on another: the exchange's ops join no
  // chain and the merge passes over them.
  Fixture f;
  for (size_t r = 0; r < f.cand.ranks.size(); ++r) {
    const int me = f.cand.ranks[r].rank();
    for (int peer : {0, 1}) {
      f.cand.ranks[r].ops.push_back(PointToPoint(true, 0xa2a, 2, me, peer));
      f.cand.ranks[r].ops.back().seq = f.cand.ranks[r].ops.size() - 1;
    }
  }
  const PipelineLayout p = InferPipeline(f.cand);
  EXPECT_EQ(p.stages, 2);
  ASSERT_EQ(p.chains.size(), 1u);
  EXPECT_EQ(p.chains[0], (std::vector<size_t>{1, 0}));
  EXPECT_EQ(MergeChain(f.cand, p.chains[0]).size(), f.cand.ranks[0].ops.size() + f.cand.ranks[1].ops.size());
}

// Pipelines whose transfers are grouped stay pipelines: a 1F1B stage 0 pairs its forward send with the backward
// receive from the same stage in one group (Megatron-LM's send_forward_recv_backward, gpt --schedule 1f1b), and with
// one micro-batch stage 0's send and receive are two groups back to back, read as one two-way group. The last stage
// starts one way (it receives an activation first) in both.
TEST(Pipeline, GroupedPipelineTransfersAreNotAnExchange) {
  for (const auto& [stage0, stage1] : {std::pair<std::string, std::string>{"FSFPBRB", "RFHhBPFHhBS"},  // P: a send_recv
                                       {"FSRB", "RFHhBS"}}) {
    TraceSet cand;
    cand.ranks.push_back(Rank(0, "", 0));
    cand.ranks.push_back(Rank(1, "", 1));
    for (int r : {0, 1})
      for (char c : r == 0 ? stage0 : stage1) {
        RankTrace& t = cand.ranks[static_cast<size_t>(r)];
        for (char x : c == 'P' ? std::string("SR") : std::string(1, c)) {
          Add(&t, x, r);
          t.ops.back().coll.in_group = t.ops.back().kind == OpKind::kCollective;
        }
      }
    const PipelineLayout p = InferPipeline(cand);
    EXPECT_EQ(p.stages, 2) << stage0;
    ASSERT_EQ(p.chains.size(), 1u) << stage0;
    EXPECT_EQ(p.stage, (std::vector<int>{0, 1})) << stage0;
  }
}

TEST(Pipeline, UnpairedReceivesDoNotStopTheMerge) {
  TraceSet cand;
  cand.ranks.push_back(Rank(0, "RFRF", 0));
  cand.ranks.push_back(Rank(1, "RFSF", 1));
  EXPECT_EQ(MergeChain(cand, InferPipeline(cand).chains[0]).size(), 8u);
}

}  // namespace
}  // namespace ttrace::analyzer
