// Best-effort close of the trace stream when SIGTERM or SIGINT arrives (a launcher stopping its ranks), without
// changing how the application ends.
//
// InstallSignalClose() is called once, by the runtime, when capture starts (never at load time). For each of
// SIGTERM and SIGINT whose disposition is not SIG_IGN it saves the disposition in place and installs a handler
// (sigaction, the saved mask and flags plus SA_SIGINFO). The handler does only async-signal-safe things: it
// writes one byte to a pipe for a thread of ours (started here, with both signals blocked), which calls
// `close(signal, ending)` on a thread of its own and waits for it at most `wait_ms`. Then the saved disposition
// runs as the kernel would have run it:
// - SIG_DFL (terminate): `ending` is true, the runtime writes the end record and closes the stream; the handler
//   has returned at once (the application goes on meanwhile, its calls no longer recorded), and the serving
//   thread restores SIG_DFL and sends the signal again: the process dies of that signal, at most wait_ms later;
// - a function (sa_handler or sa_sigaction): the runtime only flushes the stream (the application's handler may
//   let the process go on); the handler waits for that, at most wait_ms (nanosleep), and calls the function
//   with the same arguments.
//
// Re-entrancy: once a signal that ends the process is being served, later SIGTERM and SIGINT are absorbed (the
// process would already be dead of the first); a signal arriving while a flush for the application's own
// handler is under way skips the flush and chains at once. A forked child inherits the handler but not the thread: there it chains at once. An application that
// installs its own handler later replaces ours (then its exit path, atexit, still closes the stream).
#ifndef TTRACE_SHIM_SIGNAL_CLOSE_H_
#define TTRACE_SHIM_SIGNAL_CLOSE_H_

#include <signal.h>

namespace ttrace::shim {

using SignalCloseFn = void (*)(int signal, bool ending);

// Idempotent; any thread. False when the pipe or the thread could not be created (nothing installed then).
bool InstallSignalClose(SignalCloseFn close, int wait_ms);

// Blocks SIGTERM and SIGINT in the calling thread for its scope, so that threads started inside it (the drain)
// never run the handler themselves (the handler waits for them).
class BlockCloseSignals {
 public:
  BlockCloseSignals();
  ~BlockCloseSignals();
  BlockCloseSignals(const BlockCloseSignals&) = delete;
  BlockCloseSignals& operator=(const BlockCloseSignals&) = delete;

 private:
  sigset_t previous_;
};

}  // namespace ttrace::shim

#endif  // TTRACE_SHIM_SIGNAL_CLOSE_H_
