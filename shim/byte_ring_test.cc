#include "shim/byte_ring.h"

#include <random>
#include <utility>
#include <deque>

#include "gtest/gtest.h"

namespace ttrace::shim {
namespace {

constexpr size_t kA = ByteRing::kAlignment;

TEST(ByteRingTest, AllocatesInOrderAndRefusesWhenFull) {
  ByteRing ring(4 * kA);
  size_t a, b, c, d, e;
  ASSERT_TRUE(ring.Allocate(1, &a));
  ASSERT_TRUE(ring.Allocate(kA, &b));
  ASSERT_TRUE(ring.Allocate(kA + 1, &c));  // rounds up to two units
  EXPECT_EQ(a, 0u);
  EXPECT_EQ(b, kA);
  EXPECT_EQ(c, 2 * kA);
  EXPECT_EQ(ring.used(), 4 * kA);
  EXPECT_FALSE(ring.Allocate(1, &d));
  ring.ReleaseOldest();
  ASSERT_TRUE(ring.Allocate(kA, &d));  // wraps into the freed head
  EXPECT_EQ(d, 0u);
  EXPECT_FALSE(ring.Allocate(1, &e));
}

TEST(ByteRingTest, SkipsTailThatIsTooShort) {
  ByteRing ring(4 * kA);
  size_t a, b, c;
  ASSERT_TRUE(ring.Allocate(2 * kA, &a));
  ASSERT_TRUE(ring.Allocate(kA, &b));  // [2, 3)
  ring.ReleaseOldest();                // free: [0, 2) and [3, 4)
  ASSERT_TRUE(ring.Allocate(2 * kA, &c));
  EXPECT_EQ(c, 0u);                    // tail [3, 4) is too short: skipped
  EXPECT_EQ(ring.used(), 4 * kA);      // the skipped unit counts until c is released
  ring.ReleaseOldest();                // b
  ring.ReleaseOldest();                // c and the skipped tail
  EXPECT_EQ(ring.used(), 0u);
  size_t d;
  ASSERT_TRUE(ring.Allocate(4 * kA, &d));
  EXPECT_EQ(d, 0u);
}

TEST(ByteRingTest, NeverFitsLargerThanCapacityOrEmpty) {
  ByteRing ring(2 * kA);
  size_t off;
  EXPECT_FALSE(ring.CanEverFit(2 * kA + 1));
  EXPECT_FALSE(ring.CanEverFit(0));
  EXPECT_TRUE(ring.CanEverFit(2 * kA));
  EXPECT_FALSE(ring.Allocate(2 * kA + 1, &off));
}

// Random FIFO workload against a byte-level model: live allocations never overlap and stay inside the buffer.
TEST(ByteRingTest, RandomWorkloadKeepsAllocationsDisjoint) {
  const size_t capacity = 64 * kA;
  ByteRing ring(capacity);
  std::mt19937 rng(7);
  std::deque<std::pair<size_t, size_t>> live;
  std::vector<int> owner(capacity, 0);
  int next_id = 1, allocations = 0;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      const size_t bytes = 1 + rng() % (20 * kA);
      size_t off;
      if (!ring.Allocate(bytes, &off)) {
        ASSERT_FALSE(live.empty()) << "an empty ring refused " << bytes << " bytes";
        continue;
      }
      ASSERT_LE(off + bytes, capacity);
      for (size_t i = off; i < off + bytes; ++i) ASSERT_EQ(owner[i], 0) << "overlap at " << i;
      for (size_t i = off; i < off + bytes; ++i) owner[i] = next_id;
      live.emplace_back(off, bytes);
      ++next_id;
      ++allocations;
    } else {
      for (size_t i = live.front().first; i < live.front().first + live.front().second; ++i) owner[i] = 0;
      live.pop_front();
      ring.ReleaseOldest();
    }
    ASSERT_EQ(ring.live(), live.size());
  }
  EXPECT_GT(allocations, 5000);
}

}  // namespace
}  // namespace ttrace::shim
