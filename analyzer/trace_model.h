// The trace model: every rank stream of a trace directory read into per-rank op timelines, with each op's
// captured tensors joined to it by seq (streams carry no order between kinds, docs/format.md).
//
// Loading validates what the checks rely on and fails with a status naming the file:
// - DataLoss / FailedPrecondition from the reader (corrupt stream; truncated unless allow_truncated);
// - NotFound: missing directory, or no *.ttr streams in it;
// - FailedPrecondition: streams of different jobs, duplicate ranks, inconsistent or exceeded world sizes.
// Problems of the trace's content that leave the rest usable (a duplicated seq, a tensor without its op, a tensor
// whose size disagrees with its shape) become warnings, and the affected op is reported as not checked.
//
// The whole trace is held in memory (payloads included). Single-threaded.
#ifndef TTRACE_ANALYZER_TRACE_MODEL_H_
#define TTRACE_ANALYZER_TRACE_MODEL_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ttrace/format.h"

namespace ttrace::analyzer {

struct Tensor {
  format::TensorRecord meta;
  std::string data;  // payload bytes in the kFull layout (kShuffled payloads are decoded on load), size checked
};

enum class OpKind : uint8_t { kGemm, kCollective };

struct Op {
  uint64_t seq = 0;
  OpKind kind = OpKind::kGemm;
  uint16_t api = 0;
  format::GemmRecord gemm{};        // valid when kind == kGemm
  format::CollectiveRecord coll{};  // valid when kind == kCollective
  std::array<std::unique_ptr<Tensor>, 8> tensors;  // by format::TensorSlot; null when not captured
  std::string tensor_problem;       // first reason a captured tensor was unusable, empty when none

  const Tensor* tensor(format::TensorSlot slot) const { return tensors[static_cast<size_t>(slot)].get(); }
  const char* api_name() const { return format::ApiName(api); }
};

struct RankTrace {
  std::string path;
  format::FileHeader header{};
  std::vector<Op> ops;  // ascending seq, unique
  std::vector<format::CommInitRecord> comm_inits;
  uint64_t records = 0;
  uint64_t unknown_records = 0;    // record types this analyzer does not know: skipped
  uint64_t notices = 0;
  uint64_t dropped_payloads = 0;   // NoticeCode::kPayloadDropped events
  bool truncated = false;          // only with allow_truncated
  std::string truncation;
  std::vector<std::string> warnings;

  int rank() const { return header.rank; }
};

struct TraceSet {
  std::string dir;
  std::string job;
  int world_size = -1;              // from the headers, -1 when unknown
  std::vector<RankTrace> ranks;     // ascending rank
  std::vector<std::string> warnings;
};

struct LoadOptions {
  bool allow_truncated = false;
  std::function<void(const std::string& path)> on_file;  // called before each stream is read (progress)
};

// Reads one stream.
absl::StatusOr<RankTrace> LoadRankTrace(const std::string& path, const LoadOptions& options = {});

// The *.ttr regular files of `dir`, sorted by name.
absl::StatusOr<std::vector<std::string>> ListStreams(const std::string& dir);

// Reads and validates every stream of `dir`.
absl::StatusOr<TraceSet> LoadTraceDir(const std::string& dir, const LoadOptions& options = {});

// The basename of a path, for messages.
std::string BaseName(const std::string& path);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_TRACE_MODEL_H_
