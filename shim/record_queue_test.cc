#include "shim/record_queue.h"

#include "gtest/gtest.h"

namespace ttrace::shim {
namespace {

QueuedRecord Rec(const std::string& body) { return {format::RecordType::kGemm, body, ""}; }

std::vector<std::string> Bodies(const std::vector<QueuedRecord>& records) {
  std::vector<std::string> out;
  for (const QueuedRecord& r : records) out.push_back(r.body);
  return out;
}

TEST(RecordQueueTest, ReleasesInTicketOrder) {
  RecordQueue q;
  const uint64_t t0 = 0, t1 = 1, t2 = 2;
  std::vector<QueuedRecord> out;
  ASSERT_TRUE(q.Put(t2, Rec("c")));
  ASSERT_TRUE(q.Put(t1, Rec("b")));
  q.TakeReady(&out);
  EXPECT_TRUE(out.empty());  // t0 still running
  ASSERT_TRUE(q.Put(t0, Rec("a")));
  q.TakeReady(&out);
  EXPECT_EQ(Bodies(out), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(q.taken(), 3u);
  EXPECT_EQ(q.waiting(), 0u);
}

TEST(RecordQueueTest, TakeAllSkipsCallsThatNeverReturned) {
  RecordQueue q;
  const uint64_t t0 = 0, t1 = 1, t2 = 2;
  ASSERT_TRUE(q.Put(t2, Rec("c")));
  ASSERT_TRUE(q.Put(t1, Rec("b")));
  std::vector<QueuedRecord> out;
  q.TakeAll(/*reserved=*/3, &out);
  EXPECT_EQ(Bodies(out), (std::vector<std::string>{"b", "c"}));
  EXPECT_FALSE(q.Put(t0, Rec("late")));  // skipped for good
  const uint64_t t3 = 3;
  EXPECT_TRUE(q.Put(t3, Rec("d")));
  out.clear();
  q.TakeReady(&out);
  EXPECT_EQ(Bodies(out), (std::vector<std::string>{"d"}));
}

TEST(RecordQueueTest, SkipStalledGivesUpOnlyTheTicketsHoldingTheQueue) {
  RecordQueue q;
  const uint64_t t0 = 0, t1 = 1, t2 = 2, t3 = 3, t4 = 4;
  ASSERT_TRUE(q.Put(t2, Rec("c")));
  ASSERT_TRUE(q.Put(t4, Rec("e")));
  std::vector<uint64_t> skipped;
  std::vector<QueuedRecord> out;
  q.SkipStalled(&skipped, &out);
  EXPECT_EQ(skipped, (std::vector<uint64_t>{t0, t1}));
  EXPECT_EQ(Bodies(out), (std::vector<std::string>{"c"}));  // e still waits for t3, which is running normally
  EXPECT_FALSE(q.Put(t0, Rec("late")));
  EXPECT_FALSE(q.Put(t1, Rec("late")));
  ASSERT_TRUE(q.Put(t3, Rec("d")));
  out.clear();
  q.TakeReady(&out);
  EXPECT_EQ(Bodies(out), (std::vector<std::string>{"d", "e"}));
  skipped.clear();
  q.SkipStalled(&skipped, &out);  // nothing waits: nothing skipped
  EXPECT_TRUE(skipped.empty());
}

TEST(RecordQueueTest, TakeAllSkipsEveryTicketReservedSoFar) {
  RecordQueue q;
  std::vector<QueuedRecord> out;
  ASSERT_TRUE(q.Put(1, Rec("b")));
  q.TakeAll(/*reserved=*/4, &out);  // tickets 0, 2 and 3 never came
  EXPECT_EQ(Bodies(out), (std::vector<std::string>{"b"}));
  EXPECT_FALSE(q.Put(3, Rec("late")));
  EXPECT_EQ(q.taken(), 4u);
  EXPECT_TRUE(q.Put(4, Rec("e")));
}

}  // namespace
}  // namespace ttrace::shim
