// Both formats are written by hand, as the JSON report is (json.cc): the Chrome trace-event format and the .npy
// header are a few documented fields, not worth a dependency. Slices end at the next call on their stream because
// the trace records call times only; an op's device duration is unknown, and a slice that claimed one would lie.
#include "analyzer/export.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzer/check.h"
#include "analyzer/cli.h"
#include "analyzer/dump.h"
#include "analyzer/json.h"
#include "analyzer/tensor_data.h"

namespace ttrace::analyzer {

namespace {

using format::DType;

struct OpTime {
  uint64_t t_ns = 0;
  uint64_t stream = 0;
};

OpTime TimeOf(const Op& op) {
  switch (op.kind) {
    case OpKind::kGemm: return {op.gemm.t_ns, op.gemm.stream};
    case OpKind::kCollective: return {op.coll.t_ns, op.coll.stream};
    case OpKind::kLtMatmul: return {op.lt.t_ns, op.lt.stream};
    case OpKind::kConv: return {op.conv.t_ns, op.conv.stream};
    case OpKind::kGraph: return {op.graph.t_ns, op.graph.stream};
  }
  return {};
}

const char* KindName(OpKind k) {
  switch (k) {
    case OpKind::kGemm: return "gemm";
    case OpKind::kCollective: return "collective";
    case OpKind::kLtMatmul: return "ltmatmul";
    case OpKind::kConv: return "conv";
    case OpKind::kGraph: return "graph";
  }
  return "op";
}

// What a reader of the timeline wants to see of an op, as JSON members (after "seq" and "kind").
std::string OpArgs(const Op& op) {
  switch (op.kind) {
    case OpKind::kGemm:
      return absl::StrCat("\"m\": ", op.gemm.m, ", \"n\": ", op.gemm.n, ", \"k\": ", op.gemm.k,
                          ", \"batch\": ", op.gemm.batch_count, ", \"a_type\": ",
                          JsonString(CudaTypeName(op.gemm.a_type)), ", \"c_type\": ",
                          JsonString(CudaTypeName(op.gemm.c_type)));
    case OpKind::kLtMatmul:
      return absl::StrCat("\"m\": ", op.lt.m, ", \"n\": ", op.lt.n, ", \"k\": ", op.lt.k);
    case OpKind::kCollective:
      return absl::StrCat("\"count\": ", op.coll.count, ", \"dtype\": ", JsonString(NcclTypeName(op.coll.nccl_dtype)),
                          ", \"comm\": ", JsonString(absl::StrFormat("%016x", op.coll.comm_hash)),
                          ", \"comm_rank\": ", op.coll.comm_rank, ", \"comm_size\": ", op.coll.comm_size,
                          ", \"comm_op_index\": ", op.coll.comm_op_index);
    case OpKind::kConv:
    case OpKind::kGraph:
      break;
  }
  return "";
}

// Microseconds (the format's unit), with nanosecond resolution.
std::string Micros(uint64_t ns) { return absl::StrFormat("%.3f", static_cast<double>(ns) / 1000.0); }

const char* NpyDescr(DType d) {
  switch (d) {
    case DType::kF64: return "<f8";
    case DType::kF32: return "<f4";
    case DType::kF16: return "<f2";
    case DType::kI8: return "|i1";
    case DType::kU8: return "|u1";
    case DType::kI32: return "<i4";
    case DType::kU32: return "<u4";
    case DType::kI64: return "<i8";
    case DType::kU64: return "<u8";
    case DType::kBF16:
    case DType::kE4M3:
    case DType::kE5M2: return "<f4";  // widened
    case DType::kInvalid: break;
  }
  return nullptr;
}

absl::Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0777) == 0 || errno == EEXIST) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("cannot create ", path, ": ", strerror(errno)));
}

absl::Status WriteFile(const std::string& path, const std::string& bytes) {
  FILE* f = fopen(path.c_str(), "wb");
  if (f == nullptr) return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", strerror(errno)));
  const bool ok = fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const bool closed = fclose(f) == 0;
  if (!ok || !closed) return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", strerror(errno)));
  return absl::OkStatus();
}

bool ParseNumber(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoull(text);
  return true;
}

}  // namespace

std::string PerfettoJson(const TraceSet& set, const CheckReport* report) {
  uint64_t t0 = std::numeric_limits<uint64_t>::max();
  for (const RankTrace& r : set.ranks)
    for (const Op& op : r.ops) t0 = std::min(t0, TimeOf(op).t_ns);
  std::map<std::pair<int, uint64_t>, std::vector<const Finding*>> findings;  // by (rank, seq)
  if (report != nullptr)
    for (const Finding& f : report->findings()) findings[{f.rank, f.seq}].push_back(&f);

  std::string out = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  bool first = true;
  auto event = [&](const std::string& e) {
    absl::StrAppend(&out, first ? "" : ",\n", e);
    first = false;
  };
  for (const RankTrace& r : set.ranks) {
    const int rank = r.rank();
    event(absl::StrCat("{\"ph\": \"M\", \"pid\": ", rank, ", \"name\": \"process_name\", \"args\": {\"name\": \"rank ",
                       rank, "\"}}"));
    event(absl::StrCat("{\"ph\": \"M\", \"pid\": ", rank,
                       ", \"name\": \"process_sort_index\", \"args\": {\"sort_index\": ", rank, "}}"));
    // Threads: the rank's streams in order of first use.
    std::map<uint64_t, int> tids;
    std::vector<std::vector<size_t>> by_tid;
    for (size_t i = 0; i < r.ops.size(); ++i) {
      const uint64_t stream = TimeOf(r.ops[i]).stream;
      auto [it, added] = tids.emplace(stream, static_cast<int>(tids.size()) + 1);
      if (added) {
        by_tid.emplace_back();
        event(absl::StrCat("{\"ph\": \"M\", \"pid\": ", rank, ", \"tid\": ", it->second,
                           ", \"name\": \"thread_name\", \"args\": {\"name\": ",
                           JsonString(stream == 0 ? std::string("default stream")
                                                  : absl::StrFormat("stream 0x%x", stream)),
                           "}}"));
      }
      by_tid[static_cast<size_t>(it->second - 1)].push_back(i);
    }
    for (size_t t = 0; t < by_tid.size(); ++t) {
      const std::vector<size_t>& idx = by_tid[t];
      for (size_t j = 0; j < idx.size(); ++j) {
        const Op& op = r.ops[idx[j]];
        const uint64_t start = TimeOf(op).t_ns - t0;
        const uint64_t next = j + 1 < idx.size() ? TimeOf(r.ops[idx[j + 1]]).t_ns - t0 : start + 1000;
        const uint64_t dur = std::max<uint64_t>(next > start ? next - start : 0, 1);
        auto fit = findings.find({rank, op.seq});
        std::string args = absl::StrCat("\"seq\": ", op.seq, ", \"kind\": \"", KindName(op.kind), "\"");
        const std::string more = OpArgs(op);
        if (!more.empty()) absl::StrAppend(&args, ", ", more);
        std::string colour;
        if (fit != findings.end()) {
          colour = ", \"cname\": \"terrible\"";
          absl::StrAppend(&args, ", \"findings\": [");
          for (size_t k = 0; k < fit->second.size(); ++k)
            absl::StrAppend(&args, k == 0 ? "" : ", ", JsonString(absl::StrCat(fit->second[k]->check, ": ",
                                                                                fit->second[k]->message)));
          absl::StrAppend(&args, "]");
        }
        event(absl::StrCat("{\"ph\": \"X\", \"pid\": ", rank, ", \"tid\": ", t + 1, ", \"ts\": ", Micros(start),
                           ", \"dur\": ", Micros(dur), ", \"name\": ", JsonString(op.api_name()), ", \"cat\": \"",
                           KindName(op.kind), "\"", colour, ", \"args\": {", args, "}}"));
        if (fit != findings.end())
          for (const Finding* f : fit->second)
            event(absl::StrCat("{\"ph\": \"i\", \"s\": \"p\", \"pid\": ", rank, ", \"tid\": ", t + 1,
                               ", \"ts\": ", Micros(start), ", \"name\": ", JsonString("finding: " + f->check),
                               ", \"cname\": \"terrible\", \"args\": {\"seq\": ", op.seq,
                               ", \"message\": ", JsonString(f->message), "}}"));
      }
    }
  }
  absl::StrAppend(&out, "\n]}\n");
  return out;
}

std::string NpyBytes(const Tensor& tensor) {
  const auto dtype = static_cast<DType>(tensor.meta.dtype);
  const char* descr = NpyDescr(dtype);
  const uint32_t esize = format::DTypeSize(tensor.meta.dtype);
  const uint64_t n = esize == 0 ? 0 : tensor.data.size() / esize;
  const int64_t rows = tensor.meta.rows, cols = tensor.meta.cols, batch = tensor.meta.batch;
  const std::string shape = batch > 1 ? absl::StrCat("(", rows, ", ", cols, ", ", batch, ")")
                                      : absl::StrCat("(", rows, ", ", cols, ")");
  std::string header = absl::StrCat("{'descr': '", descr == nullptr ? "|u1" : descr,
                                    "', 'fortran_order': True, 'shape': ", shape, ", }");
  // Magic (6) + version (2) + length (2) + header, padded with spaces and a newline to a multiple of 64.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  if (dtype == DType::kBF16 || dtype == DType::kE4M3 || dtype == DType::kE5M2) {
    for (uint64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(DecodeElement(dtype, tensor.data.data(), i));  // exact
      out.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
  } else {
    out += tensor.data;
  }
  return out;
}

absl::StatusOr<uint64_t> ExportNpy(const TraceSet& set, const std::string& dir, std::optional<int> rank,
                                   std::optional<uint64_t> seq) {
  if (absl::Status s = MakeDir(dir); !s.ok()) return s;
  uint64_t written = 0;
  for (const RankTrace& r : set.ranks) {
    if (rank.has_value() && r.rank() != *rank) continue;
    const std::string rank_dir = absl::StrCat(dir, "/rank", r.rank());
    bool made = false;
    for (const Op& op : r.ops) {
      if (seq.has_value() && op.seq != *seq) continue;
      auto write = [&](const Tensor& t, const std::string& slot) -> absl::Status {
        if (NpyDescr(static_cast<DType>(t.meta.dtype)) == nullptr) return absl::OkStatus();  // unknown type
        if (!made) {
          if (absl::Status s = MakeDir(rank_dir); !s.ok()) return s;
          made = true;
        }
        ++written;
        return WriteFile(absl::StrCat(rank_dir, "/seq", op.seq, "-", op.api_name(), "-", slot, ".npy"),
                         NpyBytes(t));
      };
      for (size_t s = 0; s < op.tensors.size(); ++s)
        if (op.tensors[s] != nullptr)
          if (absl::Status st = write(*op.tensors[s], TensorSlotName(static_cast<uint8_t>(s))); !st.ok()) return st;
      for (const auto& [index, t] : op.graph_in)
        if (absl::Status st = write(*t, absl::StrCat("graph_in", index)); !st.ok()) return st;
      for (const auto& [index, t] : op.graph_out)
        if (absl::Status st = write(*t, absl::StrCat("graph_out", index)); !st.ok()) return st;
    }
  }
  return written;
}

int RunExportCommand(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  std::string dir, perfetto, npy;
  std::optional<int> rank;
  std::optional<uint64_t> seq;
  auto usage = [&](const std::string& message) {
    err << "ttrace: export: " << message << "\nusage:\n" << TTRACE_EXPORT_USAGE;
    return kExitError;
  };
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--perfetto" || a == "--npy" || a == "--rank" || a == "--seq") {
      if (i + 1 >= argc) return usage(a + " needs a value");
      const std::string v = argv[++i];
      uint64_t n = 0;
      if (a == "--perfetto") {
        perfetto = v;
      } else if (a == "--npy") {
        npy = v;
      } else if (!ParseNumber(v, &n) || (a == "--rank" && n > static_cast<uint64_t>(INT32_MAX))) {
        return usage(a + " needs a non-negative integer");
      } else if (a == "--rank") {
        rank = static_cast<int>(n);
      } else {
        seq = n;
      }
    } else if (a.size() > 1 && a[0] == '-') {
      return usage("unknown option " + a);
    } else if (dir.empty()) {
      dir = a;
    } else {
      return usage("expected exactly one trace directory");
    }
  }
  if (dir.empty()) return usage("expected a trace directory");
  if (perfetto.empty() && npy.empty()) return usage("nothing to export: give --perfetto FILE and/or --npy DIR");
  if ((rank.has_value() || seq.has_value()) && npy.empty()) return usage("--rank and --seq select tensors for --npy");
  LoadOptions lo;
  lo.allow_truncated = true;
  absl::StatusOr<TraceSet> set = LoadTraceDir(dir, lo);
  if (!set.ok()) {
    err << "ttrace: error: " << set.status().message() << "\n";
    return kExitError;
  }
  for (const RankTrace& t : set->ranks)
    if (t.truncated) err << "ttrace: warning: " << t.truncation << "; exporting the complete frames\n";
  if (!perfetto.empty()) {
    const CheckReport report = RunChecks(*set);
    if (absl::Status s = WriteFile(perfetto, PerfettoJson(*set, &report)); !s.ok()) {
      err << "ttrace: error: " << s.message() << "\n";
      return kExitError;
    }
    out << "ttrace: wrote " << perfetto << " (" << set->ranks.size() << " ranks, " << report.findings().size()
        << (report.findings().size() == 1 ? " finding" : " findings") << "; open it in the Perfetto UI)\n";
  }
  if (!npy.empty()) {
    absl::StatusOr<uint64_t> n = ExportNpy(*set, npy, rank, seq);
    if (!n.ok()) {
      err << "ttrace: error: " << n.status().message() << "\n";
      return kExitError;
    }
    out << "ttrace: wrote " << *n << " .npy file" << (*n == 1 ? "" : "s") << " under " << npy << "\n";
  }
  return kExitClean;
}

}  // namespace ttrace::analyzer
