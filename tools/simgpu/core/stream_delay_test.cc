// The stream fault site: runs with RANK=0 and SIMGPU_FAULT delaying operation 1 (and a rank-1 delay of operation
// 0 that must not apply); main() re-executes the binary with them set, because the core reads the environment
// once. One test, so that the process's operation numbering is the test's own.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "gtest/gtest.h"
#include "tools/simgpu/common/gate.h"
#include "tools/simgpu/core/simgpu.h"

namespace simgpu {
namespace {

using Clock = std::chrono::steady_clock;

TEST(StreamDelay, TheNamedOperationStartsLateAndHoldsItsStreamOnly) {
  ASSERT_EQ(StreamDelayMs(1), 400);
  ASSERT_EQ(StreamDelayMs(0), 0);  // the op=0 fault is for rank 1
  Stream* s = CreateStream(cudaStreamNonBlocking, 0);
  Stream* other = CreateStream(cudaStreamNonBlocking, 0);
  std::atomic<int> ran[3] = {};
  const Clock::time_point start = Clock::now();
  Enqueue(s, [&] { ran[0] = 1; });      // op 0
  Enqueue(s, [&] { ran[1] = 1; });      // op 1: 400 ms late
  Enqueue(s, [&] { ran[2] = ran[1].load() + 1; });  // op 2: behind op 1 on the same stream
  std::atomic<bool> other_ran{false};
  Enqueue(other, [&] { other_ran = true; });  // op 3: another stream is not held
  EXPECT_TRUE(testing::Eventually([&] { return ran[0].load() == 1 && other_ran.load(); },
                                  std::chrono::milliseconds(300)));
  EXPECT_EQ(ran[1].load(), 0);  // a reader that does not synchronize sees the old state
  EXPECT_FALSE(StreamIdle(s));
  SynchronizeStream(s);
  const double waited_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  EXPECT_GE(waited_ms, 400.0);
  EXPECT_EQ(ran[1].load(), 1);
  EXPECT_EQ(ran[2].load(), 2);
  DestroyStream(s);
  DestroyStream(other);
}

}  // namespace
}  // namespace simgpu

int main(int argc, char** argv) {
  if (getenv("SIMGPU_FAULT") == nullptr) {
    setenv("RANK", "0", 1);
    setenv("SIMGPU_FAULT", "stream:rank=0:op=1:delay_ms=400;stream:rank=1:op=0:delay_ms=100000", 1);
    execv("/proc/self/exe", argv);
    perror("execv /proc/self/exe");
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
