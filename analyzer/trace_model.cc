// Ops are collected in a map by seq while reading, because tensors may precede or follow their op record; tensors
// whose op has not appeared yet wait in a pending map and are joined at the end. Content problems are warnings
// (capped per stream) so that one bad record does not hide the rest of a run; framing problems are the reader's
// errors and stop the load.
#include "analyzer/trace_model.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "store/float_codec.h"
#include "ttrace/byte_shuffle.h"
#include "analyzer/status_macros.h"
#include "analyzer/tensor_data.h"
#include "store/trace_reader.h"

namespace ttrace::analyzer {

using format::RecordType;
using store::ReaderOptions;
using store::RecordView;
using store::TraceReader;

namespace {

constexpr size_t kMaxWarningsPerStream = 20;

void Warn(RankTrace* t, std::string message) {
  if (t->warnings.size() < kMaxWarningsPerStream) {
    t->warnings.push_back(absl::StrCat(BaseName(t->path), ": ", message));
  } else if (t->warnings.size() == kMaxWarningsPerStream) {
    t->warnings.push_back(absl::StrCat(BaseName(t->path), ": further warnings suppressed"));
  }
}

// Why a tensor cannot be used, or "" when its payload matches its shape; `full_bytes` gets the bytes of its kFull
// layout (a float-coded payload is smaller than that, and decodes to it).
std::string TensorProblem(const format::TensorRecord& m, const char* payload, uint64_t payload_size,
                          uint64_t* full_bytes) {
  const bool coded = m.payload_kind == static_cast<uint8_t>(format::PayloadKind::kFloatCoded);
  if (m.payload_kind != static_cast<uint8_t>(format::PayloadKind::kFull) &&
      m.payload_kind != static_cast<uint8_t>(format::PayloadKind::kShuffled) && !coded)
    return absl::StrCat("payload kind ", m.payload_kind, " not supported");
  const uint32_t size = format::DTypeSize(m.dtype);
  if (size == 0) return absl::StrCat("unknown dtype ", m.dtype);
  if (m.rows < 0 || m.cols < 0 || m.batch < 0) return "negative shape";
  unsigned __int128 bytes = size;  // stays below 2^127: each factor < 2^63 multiplies at most 2^64
  for (int64_t d : {m.rows, m.cols, m.batch})
    if (bytes <= UINT64_MAX || d == 0) bytes *= static_cast<uint64_t>(d);
  if ((coded ? bytes > UINT64_MAX : bytes != payload_size) || m.payload_bytes != payload_size)
    return absl::StrCat("payload of ", payload_size, " bytes does not hold ", m.rows, "x", m.cols, "x", m.batch, " ",
                        DTypeName(m.dtype));
  if (coded && bytes > static_cast<unsigned __int128>(store::FloatCodecMaxElements(payload, payload_size, size)) * size)
    return absl::StrCat("float-coded payload of ", payload_size, " bytes cannot hold ", m.rows, "x", m.cols, "x",
                        m.batch, " ", DTypeName(m.dtype));
  *full_bytes = static_cast<uint64_t>(bytes);
  return "";
}

// A graph tensor a reader can size: at most kGraphMaxDims dims, each at least 1 (cuDNN finalizes no other), and an
// element count that fits int64 (a trace is hostile input: the checks multiply dims).
bool Sizeable(const format::GraphTensor& t) {
  if (t.nb_dims > format::kGraphMaxDims) return false;
  int64_t n = 1;
  for (int i = 0; i < t.nb_dims; ++i)
    if (t.dims[i] < 1 || __builtin_mul_overflow(n, t.dims[i], &n)) return false;
  return true;
}

// A BackendGraphRecord and its entries, each as long as the record says (0: the sizes before entries grew): fields
// past an entry's length are zero (format.h; more_operands -1), longer entries' fields this reader does not know are skipped; false
// when the payload does not hold what the counts say or a tensor is not Sizeable.
bool ReadGraph(const RecordView& r, Op* op) {
  op->graph = r.Body<format::BackendGraphRecord>();
  op->seq = op->graph.seq;
  op->api = op->graph.api;
  const format::BackendGraphRecord& g = op->graph;
  const uint64_t tensor_bytes = g.tensor_entry_bytes != 0 ? g.tensor_entry_bytes : format::kGraphTensorEntryBytesV1;
  const uint64_t op_bytes = g.op_entry_bytes != 0 ? g.op_entry_bytes : format::kGraphOpEntryBytesV1;
  if (tensor_bytes < format::kGraphTensorEntryBytesV1 || op_bytes < format::kGraphOpEntryBytesV1 ||
      op_bytes > (1u << 16))
    return false;
  const uint64_t need = uint64_t{g.tensor_count} * tensor_bytes + uint64_t{g.op_count} * op_bytes;
  if (g.tensor_count > (1u << 16) || g.op_count > (1u << 16) || r.payload.size() != need) return false;
  op->graph_tensors.assign(g.tensor_count, format::GraphTensor{});
  op->graph_ops.assign(g.op_count, format::GraphOp{});
  const char* at = r.payload.data();
  for (format::GraphTensor& t : op->graph_tensors)
    memcpy(&t, at, std::min<uint64_t>(tensor_bytes, sizeof t)), at += tensor_bytes;
  if (!std::all_of(op->graph_tensors.begin(), op->graph_tensors.end(), Sizeable)) {
    op->graph_tensors.clear(), op->graph_ops.clear();
    return false;
  }
  for (format::GraphOp& o : op->graph_ops) {
    memcpy(&o, at, std::min<uint64_t>(op_bytes, sizeof o)), at += op_bytes;
    // Entries before more_operands have no operands past the eighth (their zero fill would name tensor 0).
    if (op_bytes < format::kGraphOpEntryBytesMoreOperands)
      std::fill(std::begin(o.more_operands), std::end(o.more_operands), -1);
  }
  for (const format::GraphOp& o : op->graph_ops)
    for (int role = 0; role < format::kGraphOpMaxOperands; ++role)
      if (const int32_t i = format::GraphOperand(o, role); i >= static_cast<int32_t>(g.tensor_count) || i < -1) {
        op->graph_tensors.clear(), op->graph_ops.clear();  // malformed: no entries, as for a short payload
        return false;
      }
  return true;
}

// A ContextRecord as read: its names resolve once the whole stream is read (NameRecords of other threads may come
// later).
struct ContextIds {
  format::ContextRecord record;
  std::vector<format::ContextKernel> kernels;
  std::vector<uint32_t> nvtx;
};

OpContext ResolveContext(const ContextIds& c, const std::map<uint32_t, std::string>& names) {
  auto name = [&](uint32_t id) {
    auto it = names.find(id);
    return it != names.end() ? it->second : std::string(id == 0 ? "(name table full)" : "(unnamed)");
  };
  OpContext o;
  o.valid = true;
  o.kernels = c.record.kernels;
  o.unnamed_kernels = c.record.unnamed_kernels;
  o.graph_launches = c.record.graph_launches;
  o.nvtx_depth = c.record.nvtx_depth;
  for (const format::ContextKernel& k : c.kernels) o.kernel_names.emplace_back(name(k.name_id), k.count);
  for (uint32_t id : c.nvtx) o.nvtx.push_back(name(id));
  return o;
}

struct PendingTensor {
  uint64_t seq;
  std::unique_ptr<Tensor> tensor;
  std::string problem;
};

}  // namespace

std::string BaseName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

namespace {

// *out emptied, with room for n bytes advised for huge pages (store::AdviseHugePages: a payload's bytes are written
// once, a page fault per 4 KiB otherwise).
void ReserveFresh(std::string* out, size_t n) {
  out->clear();
  out->reserve(n);
  store::AdviseHugePages(out->data(), out->capacity());
}

// Elements [i0, i0 + count) of a shuffled array of n elements of E bytes (ttrace/byte_shuffle.h) into out.
template <size_t E>
void UnshuffleRange(const unsigned char* in, size_t n, size_t i0, size_t count, unsigned char* out) {
  for (size_t i = 0; i < count; ++i)
    for (size_t b = 0; b < E; ++b) out[i * E + b] = in[b * n + i0 + i];
}

// A shuffled payload of elements of e bytes unshuffled into *out (UnshuffleBytes's result, trailing bytes short of
// an element zero), 64 KiB at a time through a buffer appended to *out: a string resized first is zero-filled, a
// pass over every byte before they are overwritten.
void UnshuffleInto(absl::string_view in, uint32_t e, std::string* out) {
  ReserveFresh(out, in.size());
  if (e != 2 && e != 4 && e != 8) {
    out->resize(in.size());
    format::UnshuffleBytes(in.data(), e > 0 ? in.size() / e : 0, e, out->data());
    return;
  }
  const size_t n = in.size() / e;
  constexpr size_t kChunk = 64 << 10;
  unsigned char buf[kChunk];
  const size_t per = kChunk / e;
  const auto* src = reinterpret_cast<const unsigned char*>(in.data());
  for (size_t i0 = 0; i0 < n; i0 += per) {
    const size_t count = std::min(per, n - i0);
    if (e == 2) UnshuffleRange<2>(src, n, i0, count, buf);
    if (e == 4) UnshuffleRange<4>(src, n, i0, count, buf);
    if (e == 8) UnshuffleRange<8>(src, n, i0, count, buf);
    out->append(reinterpret_cast<const char*>(buf), count * e);
  }
  out->append(in.size() - n * e, '\0');
}

// A tensor record's payload into tensor->data in the kFull layout the checks read (kShuffled and kFloatCoded
// decoded; `full_bytes` from TensorProblem); "" or why it cannot be used.
std::string DecodePayload(const RecordView& r, uint64_t full_bytes, Tensor* tensor) {
  const uint32_t e = format::DTypeSize(tensor->meta.dtype);
  if (tensor->meta.payload_kind == static_cast<uint8_t>(format::PayloadKind::kShuffled)) {
    UnshuffleInto(r.payload, e, &tensor->data);
  } else if (tensor->meta.payload_kind == static_cast<uint8_t>(format::PayloadKind::kFloatCoded)) {
    ReserveFresh(&tensor->data, full_bytes);
    tensor->data.resize(full_bytes);
    if (const char* err = store::FloatDecode(r.payload.data(), r.payload.size(), e, tensor->data.data(), full_bytes)) {
      tensor->data.clear();
      return absl::StrCat("float-coded payload: ", err);
    }
    tensor->meta.payload_bytes = full_bytes;
  } else {
    ReserveFresh(&tensor->data, r.payload.size());
    tensor->data.assign(r.payload.data(), r.payload.size());
  }
  tensor->meta.payload_kind = static_cast<uint8_t>(format::PayloadKind::kFull);
  return "";
}

// Decodes a tensor record's payload into `tensor`, counting its bytes against the load's budget (or, deferred,
// validates and indexes it).
// `keep` (deferred loads, may be null): the payload is decoded and kept when it fits LoadOptions::keep_tensor_bytes
// on top of *keep (which counts it).
absl::Status DecodeTensor(const RecordView& r, const LoadOptions& options, uint64_t* held, PendingTensor* out,
                          uint64_t* keep = nullptr) {
  auto tensor = std::make_unique<Tensor>();
  tensor->meta = r.Body<format::TensorRecord>();
  uint64_t full_bytes = 0;
  std::string problem = TensorProblem(tensor->meta, r.payload.data(), r.payload.size(), &full_bytes);
  tensor->payload_bytes = problem.empty() ? full_bytes : r.payload.size();
  if (options.defer_tensors) {
    tensor->deferred = true;
    if (keep != nullptr && problem.empty() && full_bytes <= options.keep_tensor_bytes - std::min(*keep, options.keep_tensor_bytes) &&
        full_bytes > 0) {
      const format::TensorRecord stored = tensor->meta;
      problem = DecodePayload(r, full_bytes, tensor.get());
      if (problem.empty()) {
        *keep += full_bytes;
      } else {  // left to the deferred read, which reports it
        problem.clear();
        tensor->meta = stored;
        std::string().swap(tensor->data);
      }
    }
  } else if (problem.empty()) {
    *held += full_bytes;
    if (options.max_tensor_bytes > 0 && *held > options.max_tensor_bytes)
      return absl::ResourceExhaustedError(absl::StrCat(
          "the tensors of this trace's ops need more than ", options.max_tensor_bytes >> 20,
          " MiB of memory (the analyzer's memory budget; --max-memory-mb raises it)"));
    problem = DecodePayload(r, full_bytes, tensor.get());
  }
  out->seq = tensor->meta.seq;
  out->tensor = std::move(tensor);
  out->problem = std::move(problem);
  return absl::OkStatus();
}

std::string MessageOf(const RecordView& r) { return Printable(absl::string_view(r.payload.data(), r.payload.size())); }

// The second pass: the tensors numbered in `wanted` (ascending ordinals among the stream's tensor records), whose
// op record came after them.
absl::Status LoadLateTensors(const std::string& path, const LoadOptions& options, const std::vector<uint64_t>& wanted,
                             uint64_t* held, std::vector<PendingTensor>* tensors) {
  ReaderOptions ro;
  ro.allow_truncated = options.allow_truncated;
  TTRACE_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path, ro));
  RecordView r;
  uint64_t ordinal = 0;
  size_t next = 0;
  while (next < wanted.size()) {
    TTRACE_ASSIGN_OR_RETURN(bool more, reader->Next(&r));
    if (!more) return absl::DataLossError(absl::StrCat(path, ": the stream changed while it was read"));
    if (r.type != RecordType::kTensor) continue;
    if (ordinal++ != wanted[next]) continue;
    ++next;
    PendingTensor p;
    TTRACE_RETURN_IF_ERROR(DecodeTensor(r, options, held, &p));
    tensors->push_back(std::move(p));
  }
  return absl::OkStatus();
}

}  // namespace

DeferredTensorReader::DeferredTensorReader(std::string path, bool allow_truncated)
    : path_(std::move(path)), allow_truncated_(allow_truncated) {}

DeferredTensorReader::~DeferredTensorReader() = default;

absl::Status DeferredTensorReader::Load(std::vector<Tensor*> wanted) {
  if (wanted.empty()) return absl::OkStatus();
  std::sort(wanted.begin(), wanted.end(), [](const Tensor* a, const Tensor* b) { return a->ordinal < b->ordinal; });
  if (reader_ == nullptr) {
    ReaderOptions ro;
    ro.allow_truncated = allow_truncated_;
    TTRACE_ASSIGN_OR_RETURN(reader_, TraceReader::Open(path_, ro));
    next_ordinal_ = 0;
  }
  RecordView r;
  size_t next = 0;
  while (next < wanted.size()) {
    // Behind the reader, or beyond the frame after the current one: seek instead of reading what lies between.
    const Tensor& target = *wanted[next];
    const bool positioned = reader_->frames_read() > 0;
    if (target.ordinal < next_ordinal_ ||
        (target.frame_index > (positioned ? reader_->current_frame() + 1 : 0) &&
         target.frame_first_ordinal >= next_ordinal_))
      TTRACE_RETURN_IF_ERROR(SeekToFrameOf(target));
    const uint32_t frames_before = reader_->frames_read();
    TTRACE_ASSIGN_OR_RETURN(bool more, reader_->Next(&r));
    frames_read_ += reader_->frames_read() - frames_before;
    if (!more) return absl::DataLossError(absl::StrCat(path_, ": the stream changed while it was read"));
    if (r.type != RecordType::kTensor) continue;
    const uint64_t ordinal = next_ordinal_++;
    if (ordinal != wanted[next]->ordinal) continue;
    Tensor* tensor = wanted[next];
    while (next < wanted.size() && wanted[next]->ordinal == ordinal) ++next;  // (a tensor listed twice)
    // The record as stored: a tensor read before (and released) has its meta rewritten to the kFull layout by
    // DecodePayload, so its payload kind and size come from the record again.
    const format::TensorRecord stored = r.Body<format::TensorRecord>();
    if (stored.seq != tensor->meta.seq || r.payload.size() != stored.payload_bytes)
      return absl::DataLossError(absl::StrCat(path_, ": the stream changed while it was read"));
    tensor->meta.payload_kind = stored.payload_kind;
    tensor->meta.payload_bytes = stored.payload_bytes;
    const std::string problem = DecodePayload(r, tensor->payload_bytes, tensor);
    if (!problem.empty())
      return absl::DataLossError(absl::StrCat(path_, ": tensor of seq ", tensor->meta.seq, ": ", problem));
  }
  return absl::OkStatus();
}

absl::Status DeferredTensorReader::SeekToFrameOf(const Tensor& tensor) {
  if (tensor.frame_offset == 0) {  // where its frame lies is not known: from the start
    ReaderOptions ro;
    ro.allow_truncated = allow_truncated_;
    TTRACE_ASSIGN_OR_RETURN(reader_, TraceReader::Open(path_, ro));
    next_ordinal_ = 0;
    return absl::OkStatus();
  }
  TTRACE_RETURN_IF_ERROR(reader_->SeekTo(tensor.frame_offset, tensor.frame_index));
  next_ordinal_ = tensor.frame_first_ordinal;
  return absl::OkStatus();
}

std::string Printable(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c >= 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(c, absl::kZeroPad2));
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

namespace {

// `kept`: the bytes of payloads kept so far by deferred loads of this trace (LoadOptions::keep_tensor_bytes).
absl::StatusOr<RankTrace> LoadRankTrace(const std::string& path, const LoadOptions& options, uint64_t* kept) {
  ReaderOptions ro;
  ro.allow_truncated = options.allow_truncated;
  TTRACE_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path, ro));
  RankTrace t;
  t.path = path;
  t.header = reader->header();
  std::map<uint64_t, Op> ops;
  std::vector<PendingTensor> tensors;
  std::vector<std::pair<uint64_t, uint64_t>> late;  // (ordinal, seq) of tensors read before any op of their seq
  std::map<uint64_t, std::string> dropped;          // seq -> first drop reason
  std::set<uint64_t> templates;                      // seqs of CUDA graph templates (kGraphCaptured)
  std::map<uint32_t, std::string> names;             // NameRecord id -> text (printable)
  std::map<uint64_t, ContextIds> contexts;           // seq -> its ContextRecord, names unresolved
  uint64_t held = 0;
  uint32_t frame = UINT32_MAX;       // the frame of the record last read
  uint64_t frame_first_ordinal = 0;  // the ordinal of that frame's first tensor record
  RecordView r;
  while (true) {
    TTRACE_ASSIGN_OR_RETURN(bool more, reader->Next(&r));
    if (!more) break;
    if (reader->current_frame() != frame) {
      frame = reader->current_frame();
      frame_first_ordinal = t.tensor_records;
    }
    ++t.records;
    t.ended = r.type == RecordType::kEnd;
    switch (r.type) {
      case RecordType::kGemm:
      case RecordType::kCollective:
      case RecordType::kLtMatmul:
      case RecordType::kConv:
      case RecordType::kBackendGraph: {
        Op op;
        if (r.type == RecordType::kBackendGraph) {
          op.kind = OpKind::kGraph;
          if (!ReadGraph(r, &op)) {
            Warn(&t, absl::StrCat("seq ", op.graph.seq, ": cuDNN graph record malformed (entries that do not match their counts, or a tensor of dims no graph has)"));
            op.tensor_problem = "graph record malformed";
          }
        } else if (r.type == RecordType::kConv) {
          op.kind = OpKind::kConv;
          op.conv = r.Body<format::ConvRecord>();
          op.seq = op.conv.seq;
          op.api = op.conv.api;
        } else if (r.type == RecordType::kLtMatmul) {
          op.kind = OpKind::kLtMatmul;
          op.lt = r.Body<format::LtMatmulRecord>();
          op.seq = op.lt.seq;
          op.api = op.lt.api;
        } else if (r.type == RecordType::kGemm) {
          op.kind = OpKind::kGemm;
          op.gemm = r.Body<format::GemmRecord>();
          op.seq = op.gemm.seq;
          op.api = op.gemm.api;
        } else {
          op.kind = OpKind::kCollective;
          op.coll = r.Body<format::CollectiveRecord>();
          op.seq = op.coll.seq;
          op.api = op.coll.api;
        }
        const uint64_t seq = op.seq;
        auto [it, added] = ops.emplace(seq, std::move(op));
        if (!added) {
          Warn(&t, absl::StrCat("duplicate op record for seq ", seq));
          it->second.tensor_problem = "duplicate op record: tensors cannot be attributed";
        }
        break;
      }
      case RecordType::kTensor: {
        const uint64_t ordinal = t.tensor_records++;
        const uint64_t seq = r.Body<format::TensorRecord>().seq;
        if (ops.count(seq) == 0 && !options.defer_tensors) {
          late.emplace_back(ordinal, seq);
          break;
        }
        PendingTensor p;
        TTRACE_RETURN_IF_ERROR(DecodeTensor(r, options, &held, &p, ops.count(seq) != 0 ? kept : nullptr));
        p.tensor->ordinal = ordinal;
        p.tensor->frame_offset = reader->current_frame_offset();
        p.tensor->frame_index = frame;
        p.tensor->frame_first_ordinal = frame_first_ordinal;
        tensors.push_back(std::move(p));
        break;
      }
      case RecordType::kCommInit:
        t.comm_inits.push_back(r.Body<format::CommInitRecord>());
        break;
      case RecordType::kNotice: {
        ++t.notices;
        const auto n = r.Body<format::NoticeRecord>();
        if (n.code == static_cast<uint32_t>(format::NoticeCode::kPayloadDropped)) {
          ++t.dropped_payloads;
          const std::string why = n.reason != 0 ? format::DropReasonName(n.reason) : MessageOf(r);
          dropped.emplace(n.seq, absl::StrCat("tensors dropped (", why, ")"));
        }
        if (n.code == static_cast<uint32_t>(format::NoticeCode::kGraphCaptured)) templates.insert(n.seq);
        if (n.code == static_cast<uint32_t>(format::NoticeCode::kCaptureDisabled))
          Warn(&t, absl::StrCat("capture disabled: ", MessageOf(r)));
        if (n.code == static_cast<uint32_t>(format::NoticeCode::kRecordDropped))
          Warn(&t, absl::StrCat(n.seq == UINT64_MAX ? std::string("a set-up call: ")
                                                    : absl::StrCat("op seq ", n.seq, ": "),
                                MessageOf(r)));
        break;
      }
      case RecordType::kEnd:
        t.end = r.Body<format::EndRecord>();
        break;
      case RecordType::kCommDestroy:
        t.comm_ends.push_back(r.Body<format::CommDestroyRecord>());
        break;
      case RecordType::kGroup:
        break;
      case RecordType::kName: {
        const auto n = r.Body<format::NameRecord>();
        if (n.id != 0 && !names.emplace(n.id, Printable(r.payload)).second)
          Warn(&t, absl::StrCat("name id ", n.id, " defined twice; the first is used"));
        break;
      }
      case RecordType::kContext: {
        ++t.contexts;
        ContextIds c;
        c.record = r.Body<format::ContextRecord>();
        const format::ContextRecord& cr = c.record;
        if (r.payload.size() != uint64_t{cr.kernel_entries} * sizeof(format::ContextKernel) +
                                    uint64_t{cr.nvtx_entries} * sizeof(uint32_t)) {
          Warn(&t, absl::StrCat("seq ", cr.seq, ": context record entries do not match their counts (skipped)"));
          break;
        }
        for (uint32_t i = 0; i < cr.kernel_entries; ++i) {
          format::ContextKernel k;
          memcpy(&k, r.payload.data() + i * sizeof k, sizeof k);
          c.kernels.push_back(k);
        }
        for (uint32_t i = 0; i < cr.nvtx_entries; ++i) {
          uint32_t id;
          memcpy(&id, r.payload.data() + cr.kernel_entries * sizeof(format::ContextKernel) + i * sizeof id, sizeof id);
          c.nvtx.push_back(id);
        }
        if (!contexts.emplace(cr.seq, std::move(c)).second)
          Warn(&t, absl::StrCat("seq ", cr.seq, ": context recorded twice; the first is used"));
        break;
      }
      default:
        ++t.unknown_records;
        break;
    }
  }
  t.truncated = reader->truncated();
  t.truncation = reader->truncation();
  t.frames = reader->frames_read();
  std::vector<uint64_t> wanted;
  for (const auto& [ordinal, seq] : late) {
    if (ops.count(seq) > 0) {
      wanted.push_back(ordinal);
    } else {
      ++t.orphan_tensors;
    }
  }
  if (!wanted.empty()) TTRACE_RETURN_IF_ERROR(LoadLateTensors(path, options, wanted, &held, &tensors));
  for (PendingTensor& p : tensors) {
    if (ops.count(p.seq) == 0) {  // deferred: a tensor of no op record (never decoded)
      ++t.orphan_tensors;
      continue;
    }
    Op& op = ops.at(p.seq);
    const uint8_t slot = p.tensor->meta.slot;
    if (slot >= op.tensors.size()) {
      Warn(&t, absl::StrCat("seq ", p.seq, ": tensor slot ", slot, " unknown"));
      continue;
    }
    if (!p.problem.empty()) {
      if (op.tensor_problem.empty()) op.tensor_problem = p.problem;
      Warn(&t, absl::StrCat("seq ", p.seq, ": tensor unusable: ", p.problem));
      continue;
    }
    if (op.tensors[slot] != nullptr) {
      Warn(&t, absl::StrCat("seq ", p.seq, ": tensor slot ", slot, " captured twice; the first is used"));
      continue;
    }
    if (slot == static_cast<uint8_t>(format::TensorSlot::kGraphIn) ||
        slot == static_cast<uint8_t>(format::TensorSlot::kGraphOut)) {
      auto& map = slot == static_cast<uint8_t>(format::TensorSlot::kGraphIn) ? op.graph_in : op.graph_out;
      const uint32_t index = p.tensor->meta.index;
      if (index >= op.graph_tensors.size() || map.count(index) != 0) {
        Warn(&t, absl::StrCat("seq ", p.seq, ": graph tensor ", index, " unknown or captured twice"));
        continue;
      }
      map[index] = std::move(p.tensor);
      continue;
    }
    op.tensors[slot] = std::move(p.tensor);
  }
  if (t.orphan_tensors > 0)
    Warn(&t, absl::StrCat(t.orphan_tensors, " tensors belong to no op record (skipped, not decoded)"));
  const bool meta = t.ended && t.end.mode == static_cast<uint32_t>(format::CaptureModeId::kMeta);
  const bool off = t.ended && (t.end.flags & format::kTensorsOff);
  t.ops.reserve(ops.size());
  for (auto& [seq, op] : ops) {
    if (templates.count(seq) != 0) {
      ++t.graph_templates;
      continue;
    }
    auto d = dropped.find(seq);
    if (d != dropped.end()) {
      op.missing_tensors = d->second;
    } else if (meta) {
      op.missing_tensors = "tensors not captured (TTRACE_MODE=meta)";
    } else if (off) {
      op.missing_tensors = "tensors not captured (tensor capture off)";
    }
    auto c = contexts.find(seq);
    if (c != contexts.end()) op.context = ResolveContext(c->second, names);
    t.ops.push_back(std::move(op));
  }
  return t;
}

}  // namespace

absl::StatusOr<RankTrace> LoadRankTrace(const std::string& path, const LoadOptions& options) {
  uint64_t kept = 0;
  return LoadRankTrace(path, options, &kept);
}

absl::StatusOr<std::vector<std::string>> ListStreams(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return absl::NotFoundError(absl::StrCat(dir, ": ", strerror(errno)));
  if (!S_ISDIR(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat(dir, ": not a directory"));
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return absl::PermissionDeniedError(absl::StrCat(dir, ": ", strerror(errno)));
  std::vector<std::string> paths;
  while (struct dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= 4 || name.compare(name.size() - 4, 4, ".ttr") != 0) continue;
    std::string path = dir + (dir.back() == '/' ? "" : "/") + name;
    if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) paths.push_back(path);
  }
  closedir(d);
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) return absl::NotFoundError(absl::StrCat(dir, ": no trace streams (*.ttr)"));
  return paths;
}

absl::StatusOr<TraceSet> LoadTraceDir(const std::string& dir, const LoadOptions& options) {
  TTRACE_ASSIGN_OR_RETURN(std::vector<std::string> paths, ListStreams(dir));
  TraceSet set;
  set.dir = dir;
  uint64_t kept = 0;
  for (const std::string& path : paths) {
    if (options.on_file) options.on_file(path);
    TTRACE_ASSIGN_OR_RETURN(RankTrace t, LoadRankTrace(path, options, &kept));
    set.ranks.push_back(std::move(t));
  }
  const RankTrace& first = set.ranks.front();
  set.job = Printable(first.header.job);
  set.world_size = first.header.world_size;
  for (const RankTrace& t : set.ranks) {
    if (set.job != Printable(t.header.job))
      return absl::FailedPreconditionError(absl::StrCat("streams of different jobs: ", BaseName(first.path),
                                                        " has job '", set.job, "', ", BaseName(t.path), " has '",
                                                        Printable(t.header.job), "'"));
    if (t.header.world_size != set.world_size)
      return absl::FailedPreconditionError(absl::StrCat("inconsistent world size: ", BaseName(first.path), " says ",
                                                        set.world_size, ", ", BaseName(t.path), " says ",
                                                        t.header.world_size));
    if (t.rank() < 0 && set.ranks.size() > 1)
      return absl::FailedPreconditionError(
          absl::StrCat(BaseName(t.path), ": rank unknown (RANK unset) in a directory of ", set.ranks.size(),
                       " streams: ranks cannot be told apart"));
    if (set.world_size >= 0 && t.rank() >= set.world_size)
      return absl::FailedPreconditionError(absl::StrCat(BaseName(t.path), ": rank ", t.rank(),
                                                        " outside world size ", set.world_size));
  }
  std::sort(set.ranks.begin(), set.ranks.end(),
            [](const RankTrace& a, const RankTrace& b) { return a.rank() < b.rank(); });
  for (size_t i = 1; i < set.ranks.size(); ++i) {
    if (set.ranks[i].rank() == set.ranks[i - 1].rank())
      return absl::FailedPreconditionError(absl::StrCat("rank ", set.ranks[i].rank(), " appears twice: ",
                                                        BaseName(set.ranks[i - 1].path), " and ",
                                                        BaseName(set.ranks[i].path)));
  }
  if (set.world_size > 0 && static_cast<int>(set.ranks.size()) < set.world_size) {
    std::string missing;
    size_t next = 0, listed = 0;
    for (int r = 0; r < set.world_size; ++r) {
      if (next < set.ranks.size() && set.ranks[next].rank() == r) {
        ++next;
      } else if (++listed > 16) {  // the world size comes from the trace: never list billions
        absl::StrAppend(&missing, ",...");
        break;
      } else {
        absl::StrAppend(&missing, missing.empty() ? "" : ",", r);
        set.missing_ranks.push_back(r);
      }
    }
    set.missing_rank_count = static_cast<uint64_t>(set.world_size) - set.ranks.size();
    set.warnings.push_back(absl::StrCat(set.ranks.size(), " of ", set.world_size,
                                        " ranks present (missing: ", missing,
                                        "); collectives that span missing ranks are not checked"));
  }
  for (const RankTrace& t : set.ranks) {
    set.warnings.insert(set.warnings.end(), t.warnings.begin(), t.warnings.end());
  }
  return set;
}

}  // namespace ttrace::analyzer
