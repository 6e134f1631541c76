// The ring order's element ranges, computed by hand from NCCL's runRing (all_reduce.h) for small cases: the
// last loop's chunk is alignUp(divUp(remaining, nranks), 16 / sizeof(T)), chunk c starts at rank c + 1.
#include "tools/simgpu/nccl/order.h"

#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace simgpu::nccl {
namespace {

using Range = std::tuple<size_t, size_t, int>;  // begin, end, first rank

std::vector<Range> Ranges(ReductionOrder order, RingShape shape, size_t lo, size_t hi) {
  std::vector<Range> out;
  ForEachAllReduceRange(order, shape, lo, hi, [&](size_t b, size_t e, int f) { out.emplace_back(b, e, f); });
  return out;
}

constexpr size_t kDefault = 2 << 20;

TEST(RingOrder, LastLoopChunksAreAlignedTo16Bytes) {
  // 10 floats on 3 ranks: divUp(10, 3) = 4, already a multiple of 4 floats.
  EXPECT_EQ(Ranges(ReductionOrder::kRing, {10, 3, 4, kDefault}, 0, 10),
            (std::vector<Range>{{0, 4, 1}, {4, 8, 2}, {8, 10, 0}}));
  // 5 floats on 4 ranks: divUp = 2, aligned up to 4: chunks 2 and 3 are empty.
  EXPECT_EQ(Ranges(ReductionOrder::kRing, {5, 4, 4, kDefault}, 0, 5), (std::vector<Range>{{0, 4, 1}, {4, 5, 2}}));
  // 7 doubles on 3 ranks: divUp = 3, aligned to 2 doubles: 4.
  EXPECT_EQ(Ranges(ReductionOrder::kRing, {7, 3, 8, kDefault}, 0, 7), (std::vector<Range>{{0, 4, 1}, {4, 7, 2}}));
  // 40 int8 on 2 ranks: divUp = 20, aligned to 16 bytes: 32.
  EXPECT_EQ(Ranges(ReductionOrder::kRing, {40, 2, 1, kDefault}, 0, 40),
            (std::vector<Range>{{0, 32, 1}, {32, 40, 0}}));
}

TEST(RingOrder, FullLoopsUseTheConfiguredChunk) {
  // 16-byte chunks of 4 floats, 3 ranks: loops of 12 elements, then 6 left: divUp(6, 3) = 2, aligned to 4.
  std::vector<Range> want;
  for (size_t loop : {0, 12}) {
    want.emplace_back(loop, loop + 4, 1);
    want.emplace_back(loop + 4, loop + 8, 2);
    want.emplace_back(loop + 8, loop + 12, 0);
  }
  want.emplace_back(24, 28, 1);
  want.emplace_back(28, 30, 2);
  RingShape shape{30, 3, 4, 16};
  EXPECT_EQ(Ranges(ReductionOrder::kRing, shape, 0, 30), want);
  for (size_t i = 0; i < 30; ++i) {
    for (const Range& r : want) {
      if (i >= std::get<0>(r) && i < std::get<1>(r)) EXPECT_EQ((RingChunkOf(shape, i) + 1) % 3, std::get<2>(r)) << i;
    }
  }
  // A window into the buffer is cut at the same boundaries.
  EXPECT_EQ(Ranges(ReductionOrder::kRing, shape, 6, 14), (std::vector<Range>{{6, 8, 2}, {8, 12, 0}, {12, 14, 1}}));
}

TEST(RingOrder, RankOrderAndOtherCollectives) {
  EXPECT_EQ(Ranges(ReductionOrder::kRank, {10, 3, 4, kDefault}, 2, 9), (std::vector<Range>{{2, 9, 0}}));
  EXPECT_EQ(Ranges(ReductionOrder::kRing, {10, 1, 4, kDefault}, 0, 10), (std::vector<Range>{{0, 10, 0}}));
  EXPECT_EQ(ReduceScatterFirst(ReductionOrder::kRing, 2, 3), 0);
  EXPECT_EQ(ReduceScatterFirst(ReductionOrder::kRing, 0, 3), 1);
  EXPECT_EQ(ReduceScatterFirst(ReductionOrder::kRank, 0, 3), 0);
  EXPECT_EQ(ReduceFirstRank(ReductionOrder::kRing, 0, 4), 1);
  EXPECT_EQ(ReduceFirstRank(ReductionOrder::kRing, 3, 4), 0);
  EXPECT_EQ(ReduceFirstRank(ReductionOrder::kRank, 3, 4), 0);
}

}  // namespace
}  // namespace simgpu::nccl
