// Where a trace's bytes go: reads every stream (rank-*.ttr) of a trace directory, decodes each tensor payload to
// its elements, and
//  - per payload group (op kind, slot, dtype) sums the raw bytes and what each payload codes to alone: float-coded
//    (store/float_codec.h), byte-shuffled + zstd 3, and how many of its bytes repeat a payload seen earlier in the
//    same stream (bitwise equal: a weight read by a forward and a backward GEMM, a send buffer that is an earlier
//    GEMM's output), within 4 MiB of records before it (one writer frame) or anywhere before;
//  - rewrites each stream's records through TraceWriter into a byte counter, as the shim would have written them
//    with TTRACE_CODEC=0 (float payloads shuffled) and with TTRACE_CODEC=1 (float payloads coded), so a change of
//    the writer's frame policy is measured on the trace itself without running the workload again; the writer's
//    CPU time (Append and Close, not the coding) and its zstd trials over coded frames are printed per setting.
//    The rewrite closes a frame every 4 MiB only; the shim also closes one every TTRACE_FLUSH_MS, so a live run's
//    frames, and with them which repeats share a frame, differ, and its totals by a few percent.
//
// Usage: trace_size_bench DIR [--groups] [--codec-version 2]
// --codec-version 2 codes with the version 2 encoder (FloatEncodeVersion2: no delta planes), to compare with it.
#include <dirent.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <zstd.h>

#include "store/float_codec.h"
#include "store/trace_reader.h"
#include "store/trace_writer.h"
#include "ttrace/byte_shuffle.h"

namespace {

namespace format = ttrace::format;
namespace store = ttrace::store;

// The float encoder (--codec-version 2: the version 2 one).
size_t (*g_encode)(const void*, size_t, size_t, void*) = store::FloatEncode;

struct Record {
  format::RecordType type;
  std::string body;
  std::string payload;  // tensors: the kFull bytes; else as read
  bool is_float = false;
  size_t elem = 0;
};

// Counts what a writer hands to its output.
class CountingOutput : public store::StreamOutput {
 public:
  explicit CountingOutput(uint64_t* bytes, uint64_t* frames) : bytes_(bytes), frames_(frames) {}
  bool Begin(const format::FileHeader& h, std::string*) override {
    *bytes_ += sizeof h;
    return true;
  }
  bool WriteFrame(const char*, size_t n, const format::IndexEntry&, std::string*) override {
    *bytes_ += n;
    ++*frames_;
    return true;
  }
  bool Finish(const store::StreamSummary&, std::string*) override { return true; }

 private:
  uint64_t* bytes_;
  uint64_t* frames_;
};

bool IsFloat(uint8_t dtype) {
  switch (static_cast<format::DType>(dtype)) {
    case format::DType::kF32:
    case format::DType::kF16:
    case format::DType::kBF16:
    case format::DType::kF64:
      return true;
    default:
      return false;
  }
}

const char* DTypeLabel(uint8_t dtype) {
  switch (static_cast<format::DType>(dtype)) {
    case format::DType::kF32: return "fp32";
    case format::DType::kF16: return "fp16";
    case format::DType::kBF16: return "bf16";
    case format::DType::kF64: return "fp64";
    case format::DType::kE4M3: return "e4m3";
    case format::DType::kE5M2: return "e5m2";
    default: return "int";
  }
}

std::vector<Record> ReadStream(const std::string& path, std::map<uint64_t, std::string>* op_kind) {
  auto r = store::TraceReader::Open(path);
  if (!r.ok()) {
    fprintf(stderr, "%s\n", std::string(r.status().message()).c_str());
    exit(2);
  }
  std::vector<Record> out;
  store::RecordView v;
  while (true) {
    auto more = (*r)->Next(&v);
    if (!more.ok()) {
      fprintf(stderr, "%s\n", std::string(more.status().message()).c_str());
      exit(2);
    }
    if (!*more) break;
    Record rec;
    rec.type = v.type;
    rec.body.assign(v.body.data(), v.body.size());
    switch (v.type) {
      case format::RecordType::kGemm:
      case format::RecordType::kCollective:
      case format::RecordType::kLtMatmul:
      case format::RecordType::kConv:
      case format::RecordType::kBackendGraph: {
        uint64_t seq;
        uint16_t api;
        memcpy(&seq, v.body.data(), 8);
        memcpy(&api, v.body.data() + 8, 2);
        (*op_kind)[seq] = format::ApiName(api);
        break;
      }
      default:
        break;
    }
    if (v.type != format::RecordType::kTensor) {
      rec.payload.assign(v.payload.data(), v.payload.size());
      out.push_back(std::move(rec));
      continue;
    }
    auto t = v.Body<format::TensorRecord>();
    const size_t e = format::DTypeSize(t.dtype);
    const uint64_t full = static_cast<uint64_t>(t.rows) * t.cols * t.batch * e;
    rec.elem = e;
    rec.is_float = IsFloat(t.dtype);
    rec.payload.resize(full);
    if (t.payload_kind == static_cast<uint8_t>(format::PayloadKind::kShuffled)) {
      format::UnshuffleBytes(v.payload.data(), full / e, e, rec.payload.data());
    } else if (t.payload_kind == static_cast<uint8_t>(format::PayloadKind::kFloatCoded)) {
      if (const char* why = store::FloatDecode(v.payload.data(), v.payload.size(), e, rec.payload.data(), full)) {
        fprintf(stderr, "%s: %s\n", path.c_str(), why);
        exit(2);
      }
    } else {
      rec.payload.assign(v.payload.data(), v.payload.size());
    }
    t.payload_kind = static_cast<uint8_t>(format::PayloadKind::kFull);
    t.payload_bytes = rec.payload.size();
    rec.body.assign(reinterpret_cast<const char*>(&t), sizeof t);
    out.push_back(std::move(rec));
  }
  return out;
}

uint64_t Fnv(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  const size_t n = s.size();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < n; ++i) h = (h ^ static_cast<uint8_t>(s[i])) * 1099511628211ull;
  return h ^ n;
}

// The stream written as the shim writes it: float payloads coded (codec) or shuffled, the others shuffled when
// wider than a byte. Returns the stream's bytes.
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// CPU seconds spent in the writer (Append, Close: frames' zstd or raw blocks, CRCs) and the record bytes it took,
// per setting: what the shim's drain pays after coding or shuffling.
double writer_s[2] = {0, 0};
uint64_t writer_in[2] = {0, 0};
// Frames of mostly float-coded payloads, those the writer ran its zstd trial on, and those it kept compressed.
uint64_t coded_frames[2] = {0, 0}, trials[2] = {0, 0}, trials_kept[2] = {0, 0};

uint64_t Rewrite(const std::vector<Record>& records, bool codec, uint64_t* frames) {
  uint64_t bytes = 0;
  double in_writer = 0;
  std::string err;
  auto w = store::TraceWriter::Create(std::make_unique<CountingOutput>(&bytes, frames), {}, {}, &err);
  std::string buf;
  for (const Record& r : records) {
    if (r.type != format::RecordType::kTensor) {
      const double t0 = CpuSeconds();
      w->Append(r.type, r.body.data(), r.body.size(), r.payload.data(), r.payload.size());
      in_writer += CpuSeconds() - t0;
      writer_in[codec] += 8 + r.body.size() + r.payload.size();
      continue;
    }
    auto t = *reinterpret_cast<const format::TensorRecord*>(r.body.data());
    const size_t n = r.payload.size() / r.elem;
    if (codec && r.is_float && store::FloatCodecSupports(r.elem)) {
      buf.resize(store::FloatCodecMaxBytes(n, r.elem));
      buf.resize(g_encode(r.payload.data(), n, r.elem, buf.data()));
      t.payload_kind = static_cast<uint8_t>(format::PayloadKind::kFloatCoded);
    } else if (r.elem > 1) {
      buf.resize(r.payload.size());
      format::ShuffleBytes(r.payload.data(), n, r.elem, buf.data());
      t.payload_kind = static_cast<uint8_t>(format::PayloadKind::kShuffled);
    } else {
      buf = r.payload;
    }
    t.payload_bytes = buf.size();
    const double t0 = CpuSeconds();
    if (!w->Append(format::RecordType::kTensor, &t, sizeof t, buf.data(), buf.size(), &err)) {
      fprintf(stderr, "%s\n", err.c_str());
      exit(1);
    }
    in_writer += CpuSeconds() - t0;
    writer_in[codec] += 8 + sizeof t + buf.size();
  }
  const double t0 = CpuSeconds();
  if (!w->Close(&err)) {
    fprintf(stderr, "%s\n", err.c_str());
    exit(1);
  }
  writer_s[codec] += in_writer + CpuSeconds() - t0;
  coded_frames[codec] += w->coded_frames();
  trials[codec] += w->zstd_trials();
  trials_kept[codec] += w->zstd_trials_kept();
  return bytes;
}

struct Group {
  uint64_t count = 0, raw = 0, coded = 0, shuffled_zstd3 = 0, dup_in_frame = 0, dup_earlier = 0;
};


void Groups(const std::vector<Record>& records, const std::map<uint64_t, std::string>& op_kind,
            std::map<std::string, Group>* groups) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  std::string buf, z;
  // payload hash -> (stream position in record bytes, payload) last seen
  std::unordered_map<uint64_t, std::pair<uint64_t, const std::string*>> last_seen;
  uint64_t pos = 0;
  for (const Record& r : records) {
    pos += 8 + r.body.size() + r.payload.size();
    if (r.type != format::RecordType::kTensor) continue;
    auto t = *reinterpret_cast<const format::TensorRecord*>(r.body.data());
    auto k = op_kind.find(t.seq);
    const std::string key = std::string(k == op_kind.end() ? "?" : k->second) + " slot " + std::to_string(t.slot) +
                            " " + DTypeLabel(t.dtype);
    Group& g = (*groups)[key];
    ++g.count;
    g.raw += r.payload.size();
    const size_t n = r.elem ? r.payload.size() / r.elem : 0;
    if (r.is_float && store::FloatCodecSupports(r.elem)) {
      buf.resize(store::FloatCodecMaxBytes(n, r.elem));
      g.coded += g_encode(r.payload.data(), n, r.elem, buf.data());
    } else {
      g.coded += r.payload.size();
    }
    buf.resize(r.payload.size());
    if (r.elem > 1) {
      format::ShuffleBytes(r.payload.data(), n, r.elem, buf.data());
    } else {
      buf = r.payload;
    }
    z.resize(ZSTD_compressBound(buf.size()));
    g.shuffled_zstd3 += ZSTD_compressCCtx(cctx, z.data(), z.size(), buf.data(), buf.size(), 3);
    const uint64_t h = Fnv(r.payload);
    auto it = last_seen.find(h);
    if (it != last_seen.end() && r.payload.size() >= 64 && *it->second.second == r.payload) {
      g.dup_earlier += r.payload.size();
      if (pos - it->second.first <= (4u << 20) + r.payload.size()) g.dup_in_frame += r.payload.size();
    }
    last_seen[h] = {pos, &r.payload};
  }
  ZSTD_freeCCtx(cctx);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: trace_size_bench DIR [--groups] [--codec-version 2]\n");
    return 2;
  }
  const std::string dir = argv[1];
  bool groups_wanted = false;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--groups") groups_wanted = true;
    if (std::string(argv[i]) == "--codec-version" && i + 1 < argc && std::string(argv[++i]) == "2")
      g_encode = store::FloatEncodeVersion2;
  }
  std::vector<std::string> files;
  if (DIR* dp = opendir(dir.c_str())) {
    while (dirent* e = readdir(dp)) {
      const std::string name = e->d_name;
      if (name.size() > 4 && name.substr(name.size() - 4) == ".ttr") files.push_back(dir + "/" + name);
    }
    closedir(dp);
  }
  std::sort(files.begin(), files.end());
  uint64_t total[2] = {0, 0}, frames[2] = {0, 0};
  std::map<std::string, Group> groups;
  for (const std::string& f : files) {
    std::map<uint64_t, std::string> op_kind;
    const std::vector<Record> records = ReadStream(f, &op_kind);
    uint64_t b[2];
    for (int codec = 0; codec < 2; ++codec) total[codec] += b[codec] = Rewrite(records, codec == 1, &frames[codec]);
    printf("%s: %zu records; TTRACE_CODEC=0 %.1f MB, TTRACE_CODEC=1 %.1f MB\n", f.c_str(), records.size(),
           b[0] / 1e6, b[1] / 1e6);
    if (groups_wanted) Groups(records, op_kind, &groups);
  }
  printf("total: TTRACE_CODEC=0 %.2f MB (%llu frames), TTRACE_CODEC=1 %.2f MB (%llu frames): %+.2f%%\n",
         total[0] / 1e6, static_cast<unsigned long long>(frames[0]), total[1] / 1e6,
         static_cast<unsigned long long>(frames[1]), 100.0 * (double(total[1]) / double(total[0]) - 1));
  for (int codec = 0; codec < 2; ++codec)
    printf("writer, TTRACE_CODEC=%d: %.2f CPU s over %.1f MB of records: %.0f MB/s; %llu coded frames, zstd "
           "trial on %llu, kept %llu\n", codec, writer_s[codec], writer_in[codec] / 1e6,
           writer_in[codec] / 1e6 / writer_s[codec], static_cast<unsigned long long>(coded_frames[codec]),
           static_cast<unsigned long long>(trials[codec]), static_cast<unsigned long long>(trials_kept[codec]));
  if (!groups_wanted) return 0;
  printf("\n| group | payloads | raw MB | coded alone MB | shuffle+zstd3 alone MB | repeats in frame MB | repeats "
         "earlier MB |\n|---|---|---|---|---|---|---|\n");
  for (const auto& [k, g] : groups)
    printf("| %s | %llu | %.2f | %.2f | %.2f | %.2f | %.2f |\n", k.c_str(), static_cast<unsigned long long>(g.count),
           g.raw / 1e6, g.coded / 1e6, g.shuffled_zstd3 / 1e6, g.dup_in_frame / 1e6, g.dup_earlier / 1e6);
  return 0;
}
