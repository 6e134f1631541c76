// Process-wide state of libttrace.so: the options, the capture switch, the capture engine, exit and fork handling.
//
// Nothing here runs before the first intercepted call: no constructors, no threads, no CUDA at load time (every
// child of a launcher inherits LD_PRELOAD). The first intercepted call parses the options; the first call that
// records creates the engine (opens the stream file, starts the drain thread, registers the exit handler).
//
// Exit: an atexit handler registered at that point (so it runs before the vendor libraries' own teardown) drains
// every record and tensor and closes the stream; calls made after it pass straight through.
// Signals: SIGTERM and SIGINT close the stream (end record) before the process ends the way it would have, or
// flush it when the application handles them itself (signal_close.h); installed with the engine.
// Fork: a child forked after capture started captures nothing (its calls pass straight through; the parent's
// writer, drain thread and pinned ring are not its own). A child forked before that starts its own stream lazily,
// named from its own RANK / pid.
#ifndef TTRACE_SHIM_RUNTIME_H_
#define TTRACE_SHIM_RUNTIME_H_

#include <cstdint>
#include <string>

#include "shim/options.h"

namespace ttrace::shim {

class CaptureEngine;

// Options of this process, parsed on first use (warnings go to stderr once). Any thread.
const Options& GetOptions();

// True while calls are recorded: not TTRACE_DISABLE, no fatal internal failure, not a forked child, not exiting.
// Any thread; a relaxed atomic load after the first call.
bool CaptureEnabled();
// CaptureEnabled() and TTRACE_OPS selects format::kApis[api_index] (options.h: ParseOpsFilter). Any thread.
bool CaptureEnabled(int api_index);

// Turns recording off for the rest of the process (vendor calls go on unchanged); says why once on stderr.
void DisableCapture(const std::string& why);

// The engine, created on first use. nullptr when it cannot start (the stream file cannot be created); capture is
// then disabled. The engine lives until the process ends.
CaptureEngine* Engine();

// CLOCK_MONOTONIC in nanoseconds: the t_ns of every record.
uint64_t MonotonicNs();

}  // namespace ttrace::shim

#endif  // TTRACE_SHIM_RUNTIME_H_
