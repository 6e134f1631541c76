// Numbers are printed as the record holds them (vendor enum values with their names where known), so that a
// dump can be compared with the calls of the program that produced it.
#include "analyzer/dump.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "analyzer/error_model.h"
#include "analyzer/json.h"
#include "analyzer/report.h"
#include "analyzer/status_macros.h"
#include "analyzer/tensor_data.h"
#include "analyzer/trace_model.h"
#include "store/manifest.h"
#include "store/stream_index.h"

namespace ttrace::analyzer {

using format::RecordType;
using store::ReaderOptions;
using store::RecordView;
using store::TraceReader;

namespace {


std::string GemmLine(const format::GemmRecord& g) {
  auto op = [](uint8_t t) { return t <= 2 ? std::string(1, "NTC"[t]) : std::to_string(t); };
  return absl::StrCat(
      "seq=", g.seq, " ", format::ApiName(g.api), " status=", g.status, " m=", g.m, " n=", g.n, " k=", g.k,
      " op=", op(g.transa), op(g.transb), " lda=", g.lda, " ldb=", g.ldb, " ldc=", g.ldc, " batch=", g.batch_count,
      (g.flags & format::kPointerArrays)
          ? absl::StrCat(" arrays=0x", absl::Hex(g.a_ptr), ",0x", absl::Hex(g.b_ptr), ",0x", absl::Hex(g.c_ptr))
          : absl::StrCat(" strides=", g.stride_a, ",", g.stride_b, ",", g.stride_c),
      " types=", CudaTypeName(g.a_type), ",",
      CudaTypeName(g.b_type), ",", CudaTypeName(g.c_type), " compute=", g.compute_type, " math=", g.math_mode,
      (g.flags & format::kScalarsUnknown) ? std::string(" alpha=? beta=?")
                                          : absl::StrCat(" alpha=", FormatNumber(g.alpha), " beta=",
                                                         FormatNumber(g.beta)),
      " stream=0x", absl::Hex(g.stream), " t_ns=", g.t_ns);
}

std::string LtLayoutText(const format::LtLayout& l) {
  return absl::StrCat(CudaTypeName(l.type), ":", l.order == 0 ? "col" : l.order == 1 ? "row" : std::to_string(l.order),
                      ":", l.rows, "x", l.cols, ":ld", l.ld, ":b", l.batch_count, ":s", l.batch_stride);
}

std::string LtMatmulLine(const format::LtMatmulRecord& r) {
  auto op = [](uint8_t t) { return t <= 2 ? std::string(1, "NTC"[t]) : std::to_string(t); };
  return absl::StrCat(
      "seq=", r.seq, " ", format::ApiName(r.api), " status=", r.status, " m=", r.m, " n=", r.n, " k=", r.k,
      " op=", op(r.transa), op(r.transb), " A=", LtLayoutText(r.a), " B=", LtLayoutText(r.b), " C=", LtLayoutText(r.c),
      " D=", LtLayoutText(r.d), " compute=", r.compute_type, " scale_type=", r.scale_type, " epilogue=", r.epilogue,
      " flags=", r.flags, " bias_type=", r.bias_type, " aux_type=", r.aux_type, " aux_ld=", r.aux_ld,
      " scale_modes=", r.a_scale_mode, ",", r.b_scale_mode,
      (r.flags & format::kLtScalarsUnknown) ? std::string(" alpha=? beta=?")
                                            : absl::StrCat(" alpha=", FormatNumber(r.alpha), " beta=", FormatNumber(r.beta)),
      " stream=0x", absl::Hex(r.stream), " t_ns=", r.t_ns);
}

std::string ConvDims(const int64_t* dims, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) absl::StrAppend(&s, i == 0 ? "" : "x", dims[i]);
  return s;
}

std::string ConvSpatial(const int32_t* v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) absl::StrAppend(&s, i == 0 ? "" : ",", v[i]);
  return s;
}

std::string ConvLine(const format::ConvRecord& r) {
  const int n = r.nb_dims <= format::kConvMaxDims ? r.nb_dims : 0;
  const int sp = n > 2 ? n - 2 : 0;
  return absl::StrCat(
      "seq=", r.seq, " ", format::ApiName(r.api), " status=", r.status, " algo=", r.algo, " x=", ConvDims(r.x_dims, n),
      ":s", ConvDims(r.x_strides, n), " w=", ConvDims(r.w_dims, n), ":f", r.w_format, " y=", ConvDims(r.y_dims, n),
      ":s", ConvDims(r.y_strides, n), " pad=", ConvSpatial(r.pad, sp), " stride=", ConvSpatial(r.stride, sp),
      " dilation=", ConvSpatial(r.dilation, sp), " mode=", r.mode == 0 ? "conv" : "xcorr", " groups=", r.groups,
      " types=", r.x_type, ",", r.w_type, ",", r.y_type, " compute=", r.compute_type, " math=", r.math_type,
      " flags=", r.flags,
      (r.flags & format::kConvScalarsUnknown) ? std::string(" alpha=? beta=?")
                                              : absl::StrCat(" alpha=", FormatNumber(r.alpha), " beta=", FormatNumber(r.beta)),
      " stream=0x", absl::Hex(r.stream), " t_ns=", r.t_ns);
}

std::string CollectiveLine(const format::CollectiveRecord& c) {
  return absl::StrCat("seq=", c.seq, " ", format::ApiName(c.api), " status=", c.status, " comm=0x",
                      absl::Hex(c.comm_hash), " comm_rank=", c.comm_rank, " comm_size=", c.comm_size,
                      " index=", c.comm_op_index, " op=",
                      c.red_op <= 4 ? ReduceOpName(static_cast<ReduceOp>(c.red_op)) : std::to_string(c.red_op),
                      " dtype=", NcclTypeName(c.nccl_dtype), " count=", c.count, " root_or_peer=", c.root_or_peer,
                      " in_group=", c.in_group, " send=0x", absl::Hex(c.sendbuff), " recv=0x", absl::Hex(c.recvbuff),
                      " stream=0x", absl::Hex(c.stream), " t_ns=", c.t_ns);
}

}  // namespace

const char* TensorSlotName(uint8_t slot) {
  static const char* const kNames[] = {"A",       "B",       "C_in",    "C_out",  "send",   "recv",   "alpha",
                                       "beta",    "bias",    "aux_in",  "aux_out", "bias_grad", "scale_a",
                                       "scale_b", "scale_c", "scale_d", "amax_d", "aux_scale", "aux_amax", "x",
                                       "w",       "dy",      "graph_in", "graph_out"};
  return slot < format::kTensorSlots ? kNames[slot] : "?";
}

std::string RecordLine(const RecordView& r) {
  switch (r.type) {
    case RecordType::kGemm:
      return GemmLine(r.Body<format::GemmRecord>());
    case RecordType::kCollective:
      return CollectiveLine(r.Body<format::CollectiveRecord>());
    case RecordType::kLtMatmul:
      return LtMatmulLine(r.Body<format::LtMatmulRecord>());
    case RecordType::kConv:
      return ConvLine(r.Body<format::ConvRecord>());
    case RecordType::kBackendGraph: {
      const auto g = r.Body<format::BackendGraphRecord>();
      return absl::StrCat("seq=", g.seq, " ", format::ApiName(g.api), " status=", g.status, " tensors=", g.tensor_count,
                          " ops=", g.op_count, " flags=", g.flags, " plan=0x", absl::Hex(g.plan), " stream=0x",
                          absl::Hex(g.stream), " t_ns=", g.t_ns);
    }
    case RecordType::kTensor: {
      const auto t = r.Body<format::TensorRecord>();
      const std::string kind = t.payload_kind == 0   ? std::string("full")
                               : t.payload_kind == 1 ? std::string("full-shuffled")
                               : t.payload_kind == 2 ? std::string("full-coded")
                                                     : std::to_string(t.payload_kind);
      return absl::StrCat("tensor seq=", t.seq, " slot=", TensorSlotName(t.slot), " kind=", kind,
                          " dtype=", DTypeName(t.dtype), " shape=", t.rows, "x", t.cols, "x", t.batch,
                          t.slot >= 22 ? absl::StrCat(" index=", t.index) : std::string(),
                          " bytes=", t.payload_bytes);
    }
    case RecordType::kCommInit: {
      const auto c = r.Body<format::CommInitRecord>();
      return absl::StrCat("setup ", format::ApiName(c.api), " status=", c.status, " comm=0x", absl::Hex(c.comm_hash),
                          " comm_rank=", c.comm_rank, " comm_size=", c.comm_size, " device=", c.cuda_device,
                          " handle=0x", absl::Hex(c.comm_handle), " t_ns=", c.t_ns);
    }
    case RecordType::kCommDestroy: {
      const auto c = r.Body<format::CommDestroyRecord>();
      return absl::StrCat("setup ", format::ApiName(c.api), " status=", c.status, " comm=0x", absl::Hex(c.comm_hash),
                          " handle=0x", absl::Hex(c.comm_handle), " t_ns=", c.t_ns);
    }
    case RecordType::kGroup: {
      const auto g = r.Body<format::GroupRecord>();
      return absl::StrCat("setup ", format::ApiName(g.api), " status=", g.status, " depth=", g.depth,
                          " t_ns=", g.t_ns);
    }
    case RecordType::kNotice: {
      const auto n = r.Body<format::NoticeRecord>();
      return absl::StrCat("notice code=", n.code, " seq=",
                          n.seq == UINT64_MAX ? std::string("none") : std::to_string(n.seq), " count=", n.count,
                          n.code == static_cast<uint32_t>(format::NoticeCode::kPayloadDropped)
                              ? absl::StrCat(" reason=", JsonString(format::DropReasonName(n.reason)))
                              : std::string(),
                          " message=", JsonString(r.payload));
    }
    case RecordType::kName: {
      const auto n = r.Body<format::NameRecord>();
      return absl::StrCat("name id=", n.id, " kind=",
                          n.kind == static_cast<uint16_t>(format::NameKind::kKernel)      ? std::string("kernel")
                          : n.kind == static_cast<uint16_t>(format::NameKind::kNvtxRange) ? std::string("nvtx")
                                                                                          : std::to_string(n.kind),
                          " text=", JsonString(r.payload));
    }
    case RecordType::kContext: {
      const auto c = r.Body<format::ContextRecord>();
      std::string kernels, nvtx;
      for (uint32_t i = 0; i < c.kernel_entries && (i + 1) * sizeof(format::ContextKernel) <= r.payload.size(); ++i) {
        format::ContextKernel k;
        memcpy(&k, r.payload.data() + i * sizeof k, sizeof k);
        absl::StrAppend(&kernels, i > 0 ? "," : "", k.name_id, "x", k.count);
      }
      const size_t base = size_t{c.kernel_entries} * sizeof(format::ContextKernel);
      for (uint32_t i = 0; i < c.nvtx_entries && base + (i + 1) * sizeof(uint32_t) <= r.payload.size(); ++i) {
        uint32_t id;
        memcpy(&id, r.payload.data() + base + i * sizeof id, sizeof id);
        absl::StrAppend(&nvtx, i > 0 ? "," : "", id);
      }
      return absl::StrCat("context seq=", c.seq, " kernels=", c.kernels, " unnamed=", c.unnamed_kernels,
                          " graph_launches=", c.graph_launches, " names=", kernels.empty() ? "-" : kernels,
                          " nvtx_depth=", c.nvtx_depth, " nvtx=", nvtx.empty() ? "-" : nvtx, " t_ns=", c.t_ns);
    }
    case RecordType::kEnd: {
      const auto e = r.Body<format::EndRecord>();
      std::string dropped;
      for (uint32_t i = 0; i < format::kDropReasons; ++i)
        if (e.dropped[i] > 0) absl::StrAppend(&dropped, " ", JsonString(format::DropReasonName(i)), "=", e.dropped[i]);
      return absl::StrCat("end reason=", e.reason == 2 ? "signal" : e.reason == 1 ? "exit" : std::to_string(e.reason),
                          " signal=", e.signal, " mode=", e.mode == 1 ? "meta" : e.mode == 2 ? "full" : "unknown",
                          " flags=", e.flags, " ops=", e.ops, " records=", e.records, " tensors=", e.tensors,
                          " tensor_bytes=", e.tensor_bytes, " records_dropped=", e.records_dropped,
                          " payloads_dropped=", e.payloads_dropped, dropped, " t_ns=", e.t_ns);
    }
  }
  return absl::StrCat("unknown type=", static_cast<uint16_t>(r.type), " bytes=", r.body.size() + r.payload.size());
}

namespace {

void HeaderComment(const std::string& path, const format::FileHeader& h, std::ostream& out) {
  out << "# " << BaseName(path) << ": rank " << h.rank << " of " << h.world_size << ", job '" << Printable(h.job)
      << "', host " << Printable(h.host) << ", pid " << h.pid << ", format v" << h.version << "\n";
}

}  // namespace

absl::Status DumpStream(const std::string& path, const ReaderOptions& options, std::ostream& out,
                        std::string* warning) {
  TTRACE_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path, options));
  HeaderComment(path, reader->header(), out);
  RecordView r;
  while (true) {
    TTRACE_ASSIGN_OR_RETURN(bool more, reader->Next(&r));
    if (!more) break;
    out << RecordLine(r) << "\n";
  }
  if (reader->truncated() && warning != nullptr) *warning = reader->truncation();
  return absl::OkStatus();
}

absl::Status DumpSeq(const std::string& path, uint64_t seq, const ReaderOptions& options, std::ostream& out,
                     std::string* note, std::string* warning) {
  format::FileHeader header;
  {
    TTRACE_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path, options));
    header = reader->header();
  }
  TTRACE_ASSIGN_OR_RETURN(store::SeqRecords found, store::ReadSeq(path, seq, options));
  if (note != nullptr) *note = found.index_problem;
  if (found.truncated && warning != nullptr) *warning = found.truncation;
  if (found.records.empty())
    return absl::NotFoundError(absl::StrCat(BaseName(path), " (rank ", header.rank, ") holds no record of seq ", seq,
                                            " in its ", found.frames_total, " frames"));
  HeaderComment(path, header, out);
  for (const store::OwnedRecord& r : found.records) out << RecordLine(r.view()) << "\n";
  out << "# seq " << seq << ": " << found.records.size() << " records, read " << found.frames_read << " of "
      << found.frames_total << " frames (" << (found.used_index ? "index" : "scan") << ")\n";
  return absl::OkStatus();
}

absl::StatusOr<std::string> FindRankStream(const std::string& dir, int rank) {
  auto rank_of = [](const std::string& path) -> int {
    absl::StatusOr<std::unique_ptr<TraceReader>> r = TraceReader::Open(path);
    return r.ok() ? (*r)->header().rank : -1;
  };
  const std::string named = absl::StrCat(dir, dir.empty() || dir.back() == '/' ? "" : "/", "rank-", rank, ".ttr");
  if (rank_of(named) == rank) return named;
  TTRACE_ASSIGN_OR_RETURN(std::vector<std::string> paths, ListStreams(dir));
  for (const std::string& p : paths)
    if (rank_of(p) == rank) return p;
  return absl::NotFoundError(absl::StrCat(dir, ": no stream of rank ", rank));
}

absl::Status DumpManifest(const std::string& dir, std::ostream& out, std::string* warning) {
  const std::string path = absl::StrCat(dir, dir.empty() || dir.back() == '/' ? "" : "/", store::kManifestName);
  store::Manifest m;
  std::string error;
  if (!store::ReadManifest(path, &m, &error)) return absl::NotFoundError(error);
  for (const format::ManifestEntry& e : m.streams) out << store::ManifestLine(e) << "\n";
  if (m.skipped > 0 && warning != nullptr)
    *warning = absl::StrCat(path, ": ", m.skipped, " damaged entries skipped (a writer killed mid-append)");
  return absl::OkStatus();
}

}  // namespace ttrace::analyzer
