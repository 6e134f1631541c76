#include "shim/record_buffer.h"

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace ttrace::shim {
namespace {

using format::RecordType;

std::string Take(RecordBuffer* b, uint64_t* ticket) {
  RecordBuffer::SlotHeader h;
  const char *body, *payload;
  std::lock_guard<std::mutex> lock(b->consumer_mu());
  if (!b->Front(&h, &body, &payload)) return "<empty>";
  *ticket = h.ticket;
  std::string out = std::string(body, h.body_bytes) + "|" + std::string(payload, h.payload_bytes);
  b->Pop();
  return out;
}

TEST(RecordBufferTest, RecordsComeOutInPushOrderAcrossManyWrapArounds) {
  auto b = std::make_unique<RecordBuffer>();
  uint64_t pushed = 0, taken = 0;
  // Sizes that do not divide the capacity, so records land at every offset and some ends are skipped.
  for (int round = 0; round < 40000; ++round) {
    const std::string body(1 + (round * 37) % 700, static_cast<char>('a' + round % 26));
    const std::string payload((round * 11) % 90, 'p');
    ASSERT_TRUE(b->Push(pushed++, RecordType::kGemm, body.data(), body.size(), payload.data(), payload.size()));
    if (round % 3 != 0) continue;
    while (taken < pushed) {
      uint64_t ticket = ~0ull;
      const std::string got = Take(b.get(), &ticket);
      ASSERT_EQ(ticket, taken) << got;
      const int r = static_cast<int>(taken++);
      ASSERT_EQ(got, std::string(1 + (r * 37) % 700, static_cast<char>('a' + r % 26)) + "|" +
                         std::string((r * 11) % 90, 'p'));
    }
    ASSERT_EQ(b->size(), 0u);
  }
}

TEST(RecordBufferTest, FullRingRefusesThenTakesAgainOnceDrained) {
  auto b = std::make_unique<RecordBuffer>();
  const std::string body(184, 'g');
  uint64_t n = 0;
  while (b->Push(n, RecordType::kGemm, body.data(), body.size(), nullptr, 0)) ++n;
  EXPECT_EQ(n, RecordBuffer::kCapacity / (sizeof(RecordBuffer::SlotHeader) + 184));
  EXPECT_EQ(b->size(), n);
  uint64_t ticket;
  EXPECT_EQ(Take(b.get(), &ticket), body + "|");
  EXPECT_TRUE(b->Push(n, RecordType::kGemm, body.data(), body.size(), nullptr, 0));
  const std::string huge(RecordBuffer::kMaxRecordBytes + 1, 'x');
  EXPECT_FALSE(b->Push(n + 1, RecordType::kNotice, huge.data(), huge.size(), nullptr, 0));
}

TEST(RecordBufferTest, OneProducerOneConsumerConcurrently) {
  auto b = std::make_unique<RecordBuffer>();
  constexpr uint64_t kRecords = 200000;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kRecords;) {
      const uint64_t v = i * 3;
      if (b->Push(i, RecordType::kGemm, &v, sizeof v, nullptr, 0)) ++i;
    }
  });
  for (uint64_t i = 0; i < kRecords;) {
    RecordBuffer::SlotHeader h;
    const char *body, *payload;
    std::lock_guard<std::mutex> lock(b->consumer_mu());
    if (!b->Front(&h, &body, &payload)) continue;
    uint64_t v;
    memcpy(&v, body, sizeof v);
    ASSERT_EQ(h.ticket, i);
    ASSERT_EQ(v, i * 3);
    b->Pop();
    ++i;
  }
  producer.join();
}

TEST(RecordBufferTest, RunningNamesOnlyTheCurrentOp) {
  RecordBuffer* b = new RecordBuffer;
  uint64_t seq = 0;
  EXPECT_FALSE(b->Running(7, &seq));
  b->SetRunning(7, 3);
  ASSERT_TRUE(b->Running(7, &seq));
  EXPECT_EQ(seq, 3u);
  b->ClearRunning();
  EXPECT_FALSE(b->Running(7, &seq));
  delete b;
}

// Tickets are dense, and seqs dense over ops and increasing with the ticket, whatever threads interleave.
TEST(OrderCounterTest, SeqsFollowTicketsAcrossThreads) {
  OrderCounter counter;
  constexpr int kThreads = 4, kCalls = 50000;
  std::vector<std::vector<OrderCounter::Pair>> got(kThreads);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) got[t].push_back(counter.Next(/*op=*/(i + t) % 3 != 0));
    });
  for (std::thread& t : pool) t.join();
  std::vector<int64_t> seq_at(kThreads * kCalls, -1);  // by ticket: seq count before it, and whether it was an op
  std::vector<int> op_at(kThreads * kCalls, 0);
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kCalls; ++i) {
      const OrderCounter::Pair p = got[t][i];
      ASSERT_LT(p.ticket, seq_at.size());
      ASSERT_EQ(seq_at[p.ticket], -1) << "ticket " << p.ticket << " handed out twice";
      seq_at[p.ticket] = static_cast<int64_t>(p.seq);
      op_at[p.ticket] = (i + t) % 3 != 0;
    }
  int64_t seqs = 0;
  for (size_t ticket = 0; ticket < seq_at.size(); ++ticket) {
    ASSERT_EQ(seq_at[ticket], seqs) << "ticket " << ticket;
    seqs += op_at[ticket];
  }
  EXPECT_EQ(counter.tickets(), seq_at.size());
  EXPECT_EQ(counter.seqs(), static_cast<uint64_t>(seqs));
}

}  // namespace
}  // namespace ttrace::shim
