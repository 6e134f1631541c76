// Waiters yield a few times before sleeping because peers are usually about to arrive, and sleep on the futex
// with a short timeout so that the watchdog (timeout, abort, peer liveness) runs even when nobody rings.
// Wakers skip the futex syscall when nobody sleeps: `sleepers` and `bell` are both seq_cst, so either the
// waker sees the sleeper or the sleeper's FUTEX_WAIT sees the new bell value and returns at once.
#include "tools/simgpu/nccl/sync.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "tools/simgpu/nccl/params.h"

namespace simgpu::nccl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kYieldRounds = 16;
constexpr int kSleepMs = 20;
constexpr auto kLivenessPeriod = std::chrono::milliseconds(100);

uint32_t* BellWord(Segment* seg) { return reinterpret_cast<uint32_t*>(&seg->header()->bell); }

void SleepOnBell(Segment* seg, uint32_t seen) {
  SegmentHeader* h = seg->header();
  h->sleepers.fetch_add(1);
  timespec ts{0, kSleepMs * 1000000L};
  syscall(SYS_futex, BellWord(seg), FUTEX_WAIT, seen, &ts, nullptr, 0);
  h->sleepers.fetch_sub(1);
}

std::string RankList(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < 16; ++i) {
    if (!s.empty()) s += ", ";
    s += std::to_string(ranks[i]);
  }
  if (ranks.size() > 16) s += ", ...";
  return s.empty() ? "(none)" : s;
}

}  // namespace

void RingBell(Segment* seg) {
  SegmentHeader* h = seg->header();
  h->bell.fetch_add(1);
  if (h->sleepers.load() > 0) syscall(SYS_futex, BellWord(seg), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void PublishFailure(Segment* seg, int rank, const std::string& why) {
  SegmentHeader* h = seg->header();
  // -1 claims the slot while the reason is written; readers only act on positive values.
  int32_t expected = 0;
  if (!h->failed_by.compare_exchange_strong(expected, -1)) return;
  std::snprintf(h->failure, sizeof h->failure, "%s", why.c_str());
  h->failed_by.store(rank + 1, std::memory_order_release);
  RingBell(seg);
}

bool ProcessGone(int pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return true;
  char buf[512];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* close_paren = std::strrchr(buf, ')');
  if (close_paren == nullptr || close_paren[1] == '\0') return false;
  char state = close_paren[2];
  return state == 'Z' || state == 'X';
}

ncclResult_t Drive(const WaitContext& ctx, const char* what, const std::function<Step()>& step,
                   const std::function<std::vector<int>()>& missing, std::string* error) {
  SegmentHeader* h = ctx.seg->header();
  const auto timeout = std::chrono::duration<double>(TimeoutSeconds());
  auto last_progress = Clock::now();
  auto next_liveness = last_progress + kLivenessPeriod;
  const int self_pid = static_cast<int>(getpid());
  int idle_rounds = 0;
  for (;;) {
    uint32_t seen = h->bell.load();
    Step s = step();
    if (s == Step::kDone) return ncclSuccess;
    if (s == Step::kProgress) {
      last_progress = Clock::now();
      idle_rounds = 0;
      continue;
    }
    if (ctx.local_abort != nullptr && ctx.local_abort->load()) {
      *error = std::string(what) + ": the communicator was aborted (ncclCommAbort)";
      return ncclSystemError;
    }
    int failed_by = h->failed_by.load(std::memory_order_acquire);
    if (failed_by > 0 && failed_by - 1 != ctx.rank) {
      *error = std::string(what) + ": rank " + std::to_string(failed_by - 1) + " gave up: " + h->failure;
      return ncclRemoteError;
    }
    auto now = Clock::now();
    if (now - last_progress > timeout) {
      char msg[512];
      std::snprintf(msg, sizeof msg,
                    "%s: timed out after %g s waiting for rank(s) %s; giving up instead of hanging (raise "
                    "SIMGPU_NCCL_TIMEOUT_S if those ranks are only slow)",
                    what, TimeoutSeconds(), RankList(missing()).c_str());
      *error = msg;
      return ncclSystemError;
    }
    if (now >= next_liveness) {
      next_liveness = now + kLivenessPeriod;
      for (int r : missing()) {
        int pid = ctx.seg->slot(r)->pid.load(std::memory_order_acquire);
        if (pid > 0 && pid != self_pid && ProcessGone(pid)) {
          *error = std::string(what) + ": rank " + std::to_string(r) + " (pid " + std::to_string(pid) +
                   ") exited before taking part";
          return ncclRemoteError;
        }
      }
    }
    if (++idle_rounds < kYieldRounds) {
      sched_yield();
    } else {
      SleepOnBell(ctx.seg, seen);
    }
  }
}

ncclResult_t Barrier(const WaitContext& ctx, uint64_t epoch, const char* what, std::string* error,
                     BarrierKind kind) {
  Segment* seg = ctx.seg;
  const int n = seg->nranks();
  auto counter = [&](int r) -> std::atomic<uint64_t>& {
    return kind == BarrierKind::kStream ? seg->slot(r)->epoch : seg->slot(r)->host_epoch;
  };
  counter(ctx.rank).store(epoch, std::memory_order_release);
  RingBell(seg);
  auto missing = [&] {
    std::vector<int> out;
    for (int r = 0; r < n; ++r) {
      if (counter(r).load(std::memory_order_acquire) < epoch) out.push_back(r);
    }
    return out;
  };
  return Drive(
      ctx, what,
      [&] {
        for (int r = 0; r < n; ++r) {
          if (counter(r).load(std::memory_order_acquire) < epoch) return Step::kIdle;
        }
        return Step::kDone;
      },
      missing, error);
}

}  // namespace simgpu::nccl
