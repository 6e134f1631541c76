// The handler cannot take the engine's locks (the thread it interrupted may hold them, or a lock the close needs,
// such as a vendor library's stream lock) nor allocate, so the work is handed to a thread of ours through a pipe.
// Under the default disposition the handler returns at once and that thread ends the process after the close;
// otherwise the handler waits (bounded) for a flush and chains. Either way a close that cannot finish costs the
// application at most wait_ms.
#include "shim/signal_close.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace ttrace::shim {
namespace {

constexpr int kSignals[] = {SIGTERM, SIGINT};
constexpr int kCount = 2;

struct sigaction g_previous[kCount];
int g_pipe[2] = {-1, -1};
pid_t g_pid = 0;
int g_wait_ms = 0;
SignalCloseFn g_close = nullptr;
std::atomic<int> g_busy{0};
std::atomic<bool> g_ending{false};  // a signal whose default action ends the process is being served
std::atomic<uint32_t> g_requests{0};
std::atomic<uint32_t> g_served{0};

int IndexOf(int sig) {
  for (int i = 0; i < kCount; ++i)
    if (kSignals[i] == sig) return i;
  return -1;
}

bool Ending(const struct sigaction& a) { return !(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_DFL; }

void Chain(int sig, siginfo_t* info, void* context) {
  const int i = IndexOf(sig);
  if (i < 0) return;
  const struct sigaction& previous = g_previous[i];
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(sig, info, context);
    return;
  }
  if (previous.sa_handler == SIG_IGN) return;
  if (previous.sa_handler == SIG_DFL) {
    // Blocked while this handler runs (unless SA_NODEFER): delivered, with its default action, when it returns.
    sigaction(sig, &previous, nullptr);
    raise(sig);
    return;
  }
  previous.sa_handler(sig);
}

// Ends the process the way the saved default disposition would: restored, and the signal sent again.
void EndProcess(int i) {
  sigaction(kSignals[i], &g_previous[i], nullptr);
  kill(getpid(), kSignals[i]);
}

void OnSignal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const int i = IndexOf(sig);
  if (i >= 0 && getpid() == g_pid && g_ending.load()) {
    errno = saved_errno;  // the process is already ending of an earlier signal, as it would have without us
    return;
  }
  if (i >= 0 && getpid() == g_pid && g_busy.exchange(1) == 0) {
    const bool ending = Ending(g_previous[i]);
    const uint32_t ticket = g_requests.fetch_add(1) + 1;
    const unsigned char message = static_cast<unsigned char>(i | (ending ? 0x80 : 0));
    if (write(g_pipe[1], &message, 1) == 1) {
      if (ending) {
        g_ending.store(true);
        // The serving thread closes the stream and then ends the process with this signal; the interrupted
        // thread goes on meanwhile, so that no lock it holds can stall the close.
        errno = saved_errno;
        return;
      }
      const timespec tick = {0, 1000000};
      for (int ms = 0; ms < g_wait_ms && g_served.load() < ticket; ++ms) nanosleep(&tick, nullptr);
    }
    g_busy.store(0);
  }
  errno = saved_errno;
  Chain(sig, info, context);
}

// Runs `g_close` on a thread of its own and waits at most g_wait_ms for it: a close stuck on a lock never keeps
// the process from ending.
void CloseBounded(int i, bool ending) {
  struct Done {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto state = std::make_shared<Done>();  // outlives this call when the closer is left behind
  std::thread closer([i, ending, state] {
    g_close(kSignals[i], ending);
    std::lock_guard<std::mutex> lock(state->mu);
    state->done = true;
    state->cv.notify_all();
  });
  bool done;
  {
    std::unique_lock<std::mutex> lock(state->mu);
    done = state->cv.wait_for(lock, std::chrono::milliseconds(g_wait_ms), [&] { return state->done; });
  }
  if (done) {
    closer.join();
  } else {
    closer.detach();
  }
}

void* Serve(void*) {
  unsigned char message;
  while (true) {
    const ssize_t n = read(g_pipe[0], &message, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return nullptr;
    const int i = message & 0x7f;
    const bool ending = (message & 0x80) != 0;
    if (i >= kCount) continue;
    CloseBounded(i, ending);
    g_served.fetch_add(1);
    if (ending) EndProcess(i);
  }
}

}  // namespace

BlockCloseSignals::BlockCloseSignals() {
  sigset_t block;
  sigemptyset(&block);
  for (int sig : kSignals) sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &previous_);
}

BlockCloseSignals::~BlockCloseSignals() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

bool InstallSignalClose(SignalCloseFn close, int wait_ms) {
  static std::mutex mu;
  static bool done = false;
  std::lock_guard<std::mutex> lock(mu);
  if (done) return true;
  done = true;
  if (pipe2(g_pipe, O_CLOEXEC) != 0) return false;
  g_close = close;
  g_wait_ms = wait_ms;
  g_pid = getpid();
  pthread_t thread;
  {
    const BlockCloseSignals blocked;
    if (pthread_create(&thread, nullptr, Serve, nullptr) != 0) return false;
  }
  pthread_detach(thread);
  for (int i = 0; i < kCount; ++i) {
    struct sigaction previous;
    if (sigaction(kSignals[i], nullptr, &previous) != 0) continue;
    if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler == SIG_IGN) continue;
    g_previous[i] = previous;
    struct sigaction ours = previous;
    ours.sa_flags = previous.sa_flags | SA_SIGINFO;
    ours.sa_sigaction = OnSignal;
    sigaction(kSignals[i], &ours, nullptr);
  }
  return true;
}

}  // namespace ttrace::shim
