#include "shim/comm_registry.h"

#include <cstring>

#include "gtest/gtest.h"

namespace ttrace::shim {
namespace {

TEST(CommRegistryTest, Fnv1aMatchesReferenceVectors) {
  // Reference values of 64-bit FNV-1a (offset basis 14695981039346656037, prime 1099511628211).
  EXPECT_EQ(Fnv1a64("", 0), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar", 6), 0x85944171f73967e8ull);
}

TEST(CommRegistryTest, InitAllHashDependsOnPidAndCall) {
  EXPECT_NE(InitAllHash(100, 0), InitAllHash(100, 1));
  EXPECT_NE(InitAllHash(100, 0), InitAllHash(101, 0));
  EXPECT_EQ(InitAllHash(100, 3), InitAllHash(100, 3));
}

TEST(CommRegistryTest, CountsOpsPerCommunicator) {
  CommRegistry reg;
  CommInfo a{11, 0, 2, 0}, b{22, 1, 4, 1};
  reg.Add(0x1000, a);
  reg.Add(0x2000, b);
  int described = 0;
  auto describe = [&] {
    ++described;
    return CommInfo{};
  };
  uint64_t i;
  EXPECT_EQ(reg.NextOp(0x1000, describe, &i).hash, 11u);
  EXPECT_EQ(i, 0u);
  EXPECT_EQ(reg.NextOp(0x2000, describe, &i).rank, 1);
  EXPECT_EQ(i, 0u);
  reg.NextOp(0x1000, describe, &i);
  EXPECT_EQ(i, 1u);
  EXPECT_EQ(described, 0);
  CommInfo removed;
  EXPECT_TRUE(reg.Remove(0x1000, &removed));
  EXPECT_EQ(removed.hash, 11u);
  EXPECT_FALSE(reg.Remove(0x1000, &removed));
  reg.Add(0x1000, b);  // a handle reused by a new communicator counts from 0
  reg.NextOp(0x1000, describe, &i);
  EXPECT_EQ(i, 0u);
}

TEST(CommRegistryTest, UnknownCommunicatorIsDescribedOnceAndCounted) {
  CommRegistry reg;
  int described = 0;
  auto describe = [&] {
    ++described;
    return CommInfo{0, 3, 8, 2};
  };
  uint64_t i;
  CommInfo info = reg.NextOp(0x3000, describe, &i);
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.size, 8);
  EXPECT_EQ(i, 0u);
  reg.NextOp(0x3000, describe, &i);
  EXPECT_EQ(i, 1u);
  EXPECT_EQ(described, 1);
  EXPECT_EQ(reg.NextInitAll(), 0u);
  EXPECT_EQ(reg.NextInitAll(), 1u);
}

TEST(CommRegistryTest, PointToPointIsCountedPerPeerAndDirectionApartFromCollectives) {
  CommRegistry reg;
  reg.Add(0x1000, CommInfo{11, 0, 4, 0});
  auto describe = [] { return CommInfo{}; };
  uint64_t i;
  reg.NextP2p(0x1000, describe, 1, /*send=*/true, &i);
  EXPECT_EQ(i, 0u);
  reg.NextP2p(0x1000, describe, 1, /*send=*/true, &i);
  EXPECT_EQ(i, 1u);
  reg.NextP2p(0x1000, describe, 1, /*send=*/false, &i);
  EXPECT_EQ(i, 0u);
  reg.NextP2p(0x1000, describe, 2, /*send=*/true, &i);
  EXPECT_EQ(i, 0u);
  reg.NextOp(0x1000, describe, &i);
  EXPECT_EQ(i, 0u) << "point-to-point calls do not advance the collective index";
}

TEST(CommRegistryTest, SplitsAreNumberedPerParentAndHashedWithTheColor) {
  CommRegistry reg;
  reg.Add(0x1000, CommInfo{11, 0, 4, 0});
  CommInfo parent;
  uint64_t n;
  EXPECT_FALSE(reg.NextSplit(0x2000, &parent, &n));
  ASSERT_TRUE(reg.NextSplit(0x1000, &parent, &n));
  EXPECT_EQ(parent.hash, 11u);
  EXPECT_EQ(n, 0u);
  ASSERT_TRUE(reg.NextSplit(0x1000, &parent, &n));
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(SplitHash(11, 0, 1), SplitHash(11, 0, 1));
  EXPECT_NE(SplitHash(11, 0, 1), SplitHash(11, 0, 2));
  EXPECT_NE(SplitHash(11, 0, 1), SplitHash(11, 1, 1));
  EXPECT_NE(SplitHash(11, 0, 1), SplitHash(12, 0, 1));
  reg.Add(0x3000, CommInfo{SplitHash(11, 0, 1), -1, -1, -1});
  reg.Complete(0x3000, CommInfo{0, 1, 2, 0});
  CommInfo child;
  ASSERT_TRUE(reg.Find(0x3000, &child));
  EXPECT_EQ(child.hash, SplitHash(11, 0, 1));
  EXPECT_EQ(child.rank, 1);
  EXPECT_EQ(child.size, 2);
}

// Shrinks are numbered apart from splits (the excluded ranks do not call shrink), and the child's identity takes the
// excluded ranks as a set.
TEST(CommRegistryTest, ShrinksAreNumberedApartFromSplitsAndHashedWithTheExcludedSet) {
  CommRegistry reg;
  reg.Add(0x1000, CommInfo{11, 0, 4, 0});
  CommInfo parent;
  uint64_t n;
  EXPECT_FALSE(reg.NextShrink(0x2000, &parent, &n));
  ASSERT_TRUE(reg.NextShrink(0x1000, &parent, &n));
  EXPECT_EQ(parent.hash, 11u);
  EXPECT_EQ(n, 0u);
  ASSERT_TRUE(reg.NextSplit(0x1000, &parent, &n));
  EXPECT_EQ(n, 0u) << "a shrink does not advance the split number";
  ASSERT_TRUE(reg.NextShrink(0x1000, &parent, &n));
  EXPECT_EQ(n, 1u);
  const int32_t a[] = {3, 1}, b[] = {1, 3, 1}, c[] = {1}, d[] = {1, 2};
  EXPECT_EQ(ShrinkHash(11, 0, a, 2), ShrinkHash(11, 0, b, 3));
  EXPECT_NE(ShrinkHash(11, 0, a, 2), ShrinkHash(11, 0, c, 1));
  EXPECT_NE(ShrinkHash(11, 0, a, 2), ShrinkHash(11, 0, d, 2));
  EXPECT_NE(ShrinkHash(11, 0, a, 2), ShrinkHash(11, 1, a, 2));
  EXPECT_NE(ShrinkHash(11, 0, a, 2), ShrinkHash(12, 0, a, 2));
  EXPECT_EQ(ShrinkHash(11, 0, nullptr, 0), ShrinkHash(11, 0, c, 0));
  EXPECT_NE(ShrinkHash(11, 0, nullptr, 0), SplitHash(11, 0, 0)) << "a shrink's child is not a split's";
  EXPECT_NE(ShrinkHash(11, 0, nullptr, 0), 11u);
}

}  // namespace
}  // namespace ttrace::shim
