// Globals are constant-initialized (atomics, a std::mutex, raw pointers) so that loading libttrace.so runs no code.
// The engine and the options are heap objects that are never destroyed: interceptors may still run while the
// process exits (destructors of the application's statics), and must then find valid, stopped objects.
#include "shim/runtime.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "shim/capture_engine.h"
#include "shim/cupti_context.h"
#include "shim/driver_api.h"
#include "shim/log.h"
#include "shim/signal_close.h"
#include "shim/sink.h"

namespace ttrace::shim {
namespace {

enum State : int { kUninitialized = 0, kEnabled = 1, kDisabled = 2 };

std::atomic<int> g_state{kUninitialized};
std::mutex g_mu;                         // initialization of the options and the engine; held across fork
const Options* g_options = nullptr;      // set once under g_mu, before g_state leaves kUninitialized
std::atomic<CaptureEngine*> g_engine{nullptr};
bool g_engine_tried = false;             // under g_mu
std::atomic<bool> g_forked_child{false};
bool g_api_selected[kApiCount] = {};    // TTRACE_OPS; set once under g_mu, before g_state leaves kUninitialized

const char* Getenv(const char* name) { return getenv(name); }

void ForkPrepare() { g_mu.lock(); }
void ForkParent() { g_mu.unlock(); }
void ForkChild() {
  if (g_engine.load() != nullptr) {
    g_forked_child.store(true);
    g_state.store(kDisabled);
  }
  g_mu.unlock();
}

void Initialize() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_state.load() != kUninitialized) return;
  std::vector<std::string> warnings;
  g_options = new Options(ParseOptions(Getenv, &warnings));
  ParseOpsFilter(g_options->ops, g_api_selected, &warnings);
  for (const std::string& w : warnings) Log("%s", w.c_str());
  pthread_atfork(ForkPrepare, ForkParent, ForkChild);
  g_state.store(g_options->disable ? kDisabled : kEnabled);
}

void AtExit() {
  if (g_forked_child.load()) return;
  CaptureEngine* engine = g_engine.load();
  if (engine == nullptr) return;
  g_state.store(kDisabled);
  engine->Shutdown();
  if (g_options->verbose > 0) {
    const CaptureEngine::Stats s = engine->stats();
    Log("wrote %llu records (%llu tensors, %.1f MiB of payload, %llu payloads dropped) to %s",
        static_cast<unsigned long long>(s.records), static_cast<unsigned long long>(s.tensors),
        static_cast<double>(s.tensor_bytes) / (1 << 20), static_cast<unsigned long long>(s.dropped),
        engine->sink_name().c_str());
  }
}

// Runs on signal_close's thread: the stream is closed (with its end record) when the signal will end the process,
// and only flushed when the application's own handler decides.
void CloseOnSignal(int signal, bool ending) {
  CaptureEngine* engine = g_engine.load();
  if (engine == nullptr || g_forked_child.load()) return;
  if (!ending) {
    engine->FlushAndWait(g_options->exit_wait_ms > 0 ? static_cast<int>(g_options->exit_wait_ms) : 0);
    return;
  }
  g_state.store(kDisabled);
  engine->SetEndReason(format::EndReason::kSignal, signal);
  engine->Shutdown();
}

// The directory of a stream path ("" for a bare file name): the trace directory the job's ranks share.
std::string TraceDirOf(const std::string& stream_path) {
  const size_t slash = stream_path.rfind('/');
  return slash == std::string::npos ? "" : stream_path.substr(0, slash);
}

}  // namespace

const Options& GetOptions() {
  if (g_state.load(std::memory_order_acquire) == kUninitialized) Initialize();
  return *g_options;
}

bool CaptureEnabled() {
  int state = g_state.load(std::memory_order_acquire);
  if (state == kUninitialized) {
    Initialize();
    state = g_state.load(std::memory_order_acquire);
  }
  return state == kEnabled;
}

bool CaptureEnabled(int api_index) {
  // g_api_selected is read after g_state's acquire load, which orders it after Initialize's writes.
  const int state = g_state.load(std::memory_order_acquire);
  if (state == kEnabled) return g_api_selected[api_index];
  return state == kUninitialized && CaptureEnabled() && g_api_selected[api_index];
}

void DisableCapture(const std::string& why) {
  if (g_state.exchange(kDisabled) == kEnabled) Log("capture disabled: %s; calls pass straight through", why.c_str());
}

CaptureEngine* Engine() {
  CaptureEngine* engine = g_engine.load(std::memory_order_acquire);
  if (engine != nullptr) return engine;
  const Options& options = GetOptions();
  std::lock_guard<std::mutex> lock(g_mu);
  if ((engine = g_engine.load()) != nullptr || g_engine_tried) return engine;
  g_engine_tried = true;
  const int pid = static_cast<int>(getpid());
  const std::string path = StreamPath(options, Getenv, pid);
  std::string error;
  store::WriterOptions writer_options;
  writer_options.zstd_level = static_cast<int>(std::min<int64_t>(options.zstd_level, 19));
  const store::StreamIdentity identity = StreamIdentityFromEnv(options, Getenv, pid);
  std::unique_ptr<Sink> sink =
      options.collector.empty()
          ? OpenFileSink(path, identity, &error, writer_options)
          : OpenCollectorSink(options.collector,
                              options.collector_token_file.empty() ? "" : ReadTokenFile(options.collector_token_file),
                              static_cast<int>(std::min<int64_t>(options.collector_timeout_ms, 600000)), path,
                              identity, &error, writer_options);
  if (sink == nullptr) {
    DisableCapture("cannot create the trace stream: " + error);
    return nullptr;
  }
  EngineConfig config = EngineConfigFromOptions(options);
  config.on_failure = [](const std::string& why) { DisableCapture(why); };
  const DriverApi* driver = nullptr;
  if (config.capture_tensors) {
    const char* missing = nullptr;
    driver = ProcessDriver(&missing);
    if (driver == nullptr)
      Log("the CUDA driver (libcuda.so.1) cannot be used (%s not found): recording calls without tensors",
          missing != nullptr ? missing : "cuMemcpyDtoHAsync");
  }
  engine = new CaptureEngine(config, std::move(sink), driver);
  {
    const BlockCloseSignals blocked;
    engine->Start();
  }
  atexit(AtExit);
  if (options.context) StartContext(options.verbose > 0, TraceDirOf(path));
  g_engine.store(engine, std::memory_order_release);
  // Shutdown waits up to exit_wait_ms for copies, then up to 1 s for the final drain.
  InstallSignalClose(CloseOnSignal, static_cast<int>(std::min<int64_t>(options.exit_wait_ms, 60000)) + 2000);
  if (options.verbose > 0)
    Log("recording to %s (TTRACE_MODE=%s%s)", path.c_str(), CaptureModeName(options.mode),
        engine->capturing_tensors() ? "" : ", without tensors");
  return engine;
}

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace ttrace::shim
