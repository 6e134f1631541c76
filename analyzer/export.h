// `ttrace export DIR [--perfetto FILE] [--npy OUTDIR [--rank R] [--seq S]]`, called by RunCli (cli.h) with the
// whole argv (argv[1] == "export"): the trace in formats other tools read.
//
// - --perfetto FILE: every rank's op timeline as Chrome trace-event JSON (the Perfetto UI and chrome://tracing
//   open it). One process per rank ("rank R"), one thread per CUDA stream of that rank; each op is a complete
//   ("X") slice named by its API, from its call to the next call on the same stream (host call times:
//   CLOCK_MONOTONIC at the call, relative to the earliest call of the trace; the trace has no device times), with
//   its seq, kind and shapes in args. The trace is checked first (`ttrace check` with default options): an op
//   with findings is coloured "terrible" (red), carries its findings in args, and an instant event
//   "finding: <check>" marks it on its rank.
// - --npy OUTDIR: every captured tensor (of rank R and seq S when given) as a NumPy .npy file (format version 1.0),
//   OUTDIR/rank<R>/seq<S>-<api>-<slot>.npy (graph tensors: <slot><index>), shape (rows, cols) or
//   (rows, cols, batch) in Fortran (column-major) order as captured, so numpy.load gives the matrix the library
//   saw (a transposed operand as stored). Types: f64, f32, f16, integers as themselves; bf16, e4m3 and e5m2,
//   which NumPy lacks, widened to f32 (exact).
//
// Exit status: 0 written, 2 usage or data error (one line "ttrace: error: ..."). A stream cut inside a frame is
// read to its last complete frame (a warning says so). Single-threaded.
#ifndef TTRACE_ANALYZER_EXPORT_H_
#define TTRACE_ANALYZER_EXPORT_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "analyzer/report.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

// The export lines of `ttrace --help` (a macro so cli.cc can splice it into its usage literal).
#define TTRACE_EXPORT_USAGE \
    "  export DIR [--perfetto FILE] [--npy OUTDIR [--rank R] [--seq S]]\n" \
    "      --perfetto FILE: every rank's op timeline as Chrome trace JSON for the Perfetto UI, ops with\n" \
    "      findings in red. --npy OUTDIR: captured tensors (of rank R, seq S) as .npy files,\n" \
    "      OUTDIR/rank<R>/seq<S>-<api>-<slot>.npy (bf16 and fp8 widened to f32).\n"

int RunExportCommand(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// The Chrome trace-event JSON of `set`, findings of `report` (may be null) marked.
std::string PerfettoJson(const TraceSet& set, const CheckReport* report);

// One tensor as the bytes of a .npy file.
std::string NpyBytes(const Tensor& tensor);

// Writes the .npy files of `set`'s tensors (filtered by rank and seq) under `dir`; returns how many.
absl::StatusOr<uint64_t> ExportNpy(const TraceSet& set, const std::string& dir, std::optional<int> rank,
                                   std::optional<uint64_t> seq);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_EXPORT_H_
