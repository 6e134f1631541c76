// The trace model: every rank stream of a trace directory read into per-rank op timelines, with each op's
// captured tensors joined to it by seq (streams carry no order between kinds, docs/format.md).
//
// Loading validates what the checks rely on and fails with a status naming the file:
// - DataLoss / FailedPrecondition from the reader (corrupt stream; truncated unless allow_truncated);
// - NotFound: missing directory, or no *.ttr streams in it;
// - FailedPrecondition: streams of different jobs, duplicate ranks, inconsistent or exceeded world sizes.
// Problems of the trace's content that leave the rest usable (a duplicated seq, a tensor without its op, a tensor
// whose size disagrees with its shape) become warnings, and the affected op is reported as not checked.
// How complete each stream is (its EndRecord, where it stops, what the capture dropped) is recorded for the
// verdict (check.h), never an error: a stream cut inside a frame is read to its last complete frame when
// allow_truncated is set.
//
// Budgets: a tensor that belongs to no op is never decoded (tensors whose op record comes later are read in a
// second pass over the stream); the decoded tensors of a load are bounded by max_tensor_bytes
// (ResourceExhausted beyond). Strings from the trace (job, host, notice messages) are made printable: control
// bytes are escaped, so a trace cannot send terminal escape sequences.
//
// The whole trace is held in memory (payloads of ops included), unless LoadOptions::defer_tensors: then only the
// records, and the payloads are read op by op later. Single-threaded.
#ifndef TTRACE_ANALYZER_TRACE_MODEL_H_
#define TTRACE_ANALYZER_TRACE_MODEL_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analyzer/op_context.h"
#include "ttrace/format.h"

namespace ttrace::store {
class TraceReader;
}

namespace ttrace::analyzer {

struct Tensor {
  format::TensorRecord meta;
  std::string data;  // payload bytes in the kFull layout (kShuffled, kFloatCoded payloads decoded on load), size checked
  // Loaded with LoadOptions::defer_tensors: `data` stays empty until LoadDeferredTensors fills it; `ordinal` is the
  // record's position among the stream's tensor records and `payload_bytes` the size `data` will have.
  bool deferred = false;
  uint64_t ordinal = 0;
  uint64_t payload_bytes = 0;
  // Where its record lies: the frame's file offset and index, and the ordinal of the frame's first tensor record,
  // so that DeferredTensorReader seeks to it instead of reading the frames before it.
  uint64_t frame_offset = 0;
  uint32_t frame_index = 0;
  uint64_t frame_first_ordinal = 0;
};

enum class OpKind : uint8_t { kGemm, kCollective, kLtMatmul, kConv, kGraph };

struct Op {
  uint64_t seq = 0;
  OpKind kind = OpKind::kGemm;
  uint16_t api = 0;
  format::GemmRecord gemm{};        // valid when kind == kGemm
  format::CollectiveRecord coll{};  // valid when kind == kCollective
  format::LtMatmulRecord lt{};      // valid when kind == kLtMatmul
  format::ConvRecord conv{};        // valid when kind == kConv
  format::BackendGraphRecord graph{};             // valid when kind == kGraph, with its entries:
  std::vector<format::GraphTensor> graph_tensors;
  std::vector<format::GraphOp> graph_ops;
  std::map<uint32_t, std::unique_ptr<Tensor>> graph_in, graph_out;  // kGraphIn / kGraphOut by tensor number
  std::array<std::unique_ptr<Tensor>, format::kTensorSlots> tensors;  // by format::TensorSlot; null when not captured
  std::string tensor_problem;       // first reason a captured tensor was unusable, empty when none
  std::string missing_tensors;      // why tensors may be missing: "tensors dropped (ring full)", ...
  OpContext context;                // what ran before it on its thread (ContextRecord), when recorded

  // The not-checked reason of an op whose tensors are missing.
  std::string MissingTensorsReason() const {
    return missing_tensors.empty() ? "tensors not captured" : missing_tensors;
  }

  const Tensor* tensor(format::TensorSlot slot) const { return tensors[static_cast<size_t>(slot)].get(); }
  const char* api_name() const { return format::ApiName(api); }
};

struct RankTrace {
  std::string path;
  format::FileHeader header{};
  std::vector<Op> ops;  // ascending seq, unique
  std::vector<format::CommInitRecord> comm_inits;
  std::vector<format::CommDestroyRecord> comm_ends;  // ncclCommDestroy, ncclCommAbort, ncclCommFinalize, in order
  uint64_t records = 0;
  uint64_t unknown_records = 0;    // record types this analyzer does not know: skipped
  uint64_t notices = 0;
  uint64_t contexts = 0;           // ContextRecords read (ops' context between ops)
  uint64_t dropped_payloads = 0;   // NoticeCode::kPayloadDropped events
  uint64_t tensor_records = 0;
  uint64_t orphan_tensors = 0;     // tensors of no op record: skipped, not decoded
  uint64_t graph_templates = 0;    // op records made while a CUDA graph was captured (NoticeCode::kGraphCaptured):
                                   // they did not run, so they are not in `ops`; their launches are
  uint32_t frames = 0;             // complete frames read
  bool ended = false;              // the last record is an EndRecord: the writer closed the stream
  format::EndRecord end{};         // valid when ended
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
  std::vector<int> missing_ranks;   // ranks below world_size without a stream (at most 17 listed)
  uint64_t missing_rank_count = 0;
  std::vector<std::string> warnings;
};

struct LoadOptions {
  bool allow_truncated = false;
  uint64_t max_tensor_bytes = 0;  // decoded tensor bytes a load may hold in all; 0: no limit
  // Index only: tensors are validated and attached to their ops without their payloads (Tensor::deferred), in one
  // pass; LoadDeferredTensors reads the payloads later (check.h streams them within its memory limit).
  bool defer_tensors = false;
  // With defer_tensors: the payloads of tensors whose op record came before them are decoded and kept (still marked
  // deferred, so a check releases them as it would loaded ones) while their total stays within this many bytes, so
  // a trace that fits is read once, not twice (`ttrace check`: a quarter of its memory limit). Later ones stay
  // deferred.
  uint64_t keep_tensor_bytes = 0;
  std::function<void(const std::string& path)> on_file;  // called before each stream is read (progress)
};

// Reads one stream.
absl::StatusOr<RankTrace> LoadRankTrace(const std::string& path, const LoadOptions& options = {});

// The *.ttr regular files of `dir`, sorted by name.
absl::StatusOr<std::vector<std::string>> ListStreams(const std::string& dir);

// Reads and validates every stream of `dir`.
absl::StatusOr<TraceSet> LoadTraceDir(const std::string& dir, const LoadOptions& options = {});

// Reads the payloads of deferred tensors of one stream: Load(wanted) fills each wanted tensor's data (kFull layout).
// It reads on from where the last call stopped while the next wanted tensor lies in the current frame or the one
// after it, and otherwise seeks to the wanted tensor's frame (backwards too), so a call reads only the frames that
// hold wanted tensors (and none twice while the wanted tensors lie ahead). DataLoss when the stream no longer holds
// them. Single-threaded.
class DeferredTensorReader {
 public:
  DeferredTensorReader(std::string path, bool allow_truncated);
  ~DeferredTensorReader();
  absl::Status Load(std::vector<Tensor*> wanted);  // any order; sorted by ordinal inside
  uint64_t frames_read() const { return frames_read_; }  // frames decoded by all calls so far

 private:
  absl::Status SeekToFrameOf(const Tensor& tensor);

  std::string path_;
  bool allow_truncated_;
  std::unique_ptr<store::TraceReader> reader_;
  uint64_t next_ordinal_ = 0;  // ordinal of the next tensor record reader_ returns
  uint64_t frames_read_ = 0;
};

// The basename of a path, for messages.
std::string BaseName(const std::string& path);

// `text` with control bytes (< 0x20, 0x7f) and bytes >= 0x80 escaped as \xNN, backslashes doubled: safe to print.
std::string Printable(absl::string_view text);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_TRACE_MODEL_H_
