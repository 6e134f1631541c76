#include "shim/testing/trace_compare.h"

#include "store/trace_reader.h"
#include "gtest/gtest.h"
#include "store/float_codec.h"
#include "ttrace/byte_shuffle.h"

namespace ttrace::shim::testing {

using format::RecordType;

format::PayloadKind ShimPayloadKind(uint8_t dtype) {
  switch (static_cast<format::DType>(dtype)) {
    case format::DType::kF32: case format::DType::kF16: case format::DType::kBF16: case format::DType::kF64:
    case format::DType::kE4M3: case format::DType::kE5M2:
      return format::PayloadKind::kFloatCoded;
    default:
      return format::DTypeSize(dtype) > 1 ? format::PayloadKind::kShuffled : format::PayloadKind::kFull;
  }
}

std::vector<DumpEntry> ReadTrace(const std::string& path, format::FileHeader* header) {
  std::vector<DumpEntry> out;
  auto reader = store::TraceReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return out;
  if (header) *header = (*reader)->header();
  store::RecordView v;
  while (true) {
    auto more = (*reader)->Next(&v);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    out.push_back({v.type, std::string(v.body), std::string(v.payload)});
    if (v.type == RecordType::kTensor) {
      // Shuffled and float-coded payloads are compared in the program's (kFull) layout; the body keeps the kind
      // written, with payload_bytes the kFull size.
      auto t = out.back().As<format::TensorRecord>();
      const uint32_t e = format::DTypeSize(t.dtype);
      if (t.payload_kind == static_cast<uint8_t>(format::PayloadKind::kShuffled) && e > 0)
        format::UnshuffleBytes(v.payload.data(), v.payload.size() / e, e, out.back().payload.data());
      if (t.payload_kind == static_cast<uint8_t>(format::PayloadKind::kFloatCoded) && e > 0) {
        const uint64_t full = static_cast<uint64_t>(t.rows) * t.cols * t.batch * e;
        out.back().payload.resize(full);
        EXPECT_EQ(store::FloatDecode(v.payload.data(), v.payload.size(), e, out.back().payload.data(), full), nullptr)
            << "tensor seq " << t.seq;
        t.payload_bytes = full;
        memcpy(out.back().body.data(), &t, std::min(sizeof t, out.back().body.size()));
      }
    }
  }
  return out;
}

std::vector<DumpEntry> Select(const std::vector<DumpEntry>& all, bool tensors) {
  std::vector<DumpEntry> out;
  for (const DumpEntry& e : all)
    if ((e.type == RecordType::kTensor) == tensors && e.type != RecordType::kNotice && e.type != RecordType::kEnd)
      out.push_back(e);
  return out;
}

std::vector<DumpEntry> Notices(const std::vector<DumpEntry>& all) {
  std::vector<DumpEntry> out;
  for (const DumpEntry& e : all)
    if (e.type == RecordType::kNotice) out.push_back(e);
  return out;
}

std::map<TensorKey, DumpEntry> TensorsByKey(const std::vector<DumpEntry>& all) {
  std::map<TensorKey, DumpEntry> out;
  for (const DumpEntry& e : Select(all, true)) {
    const auto t = e.As<format::TensorRecord>();
    EXPECT_TRUE(out.emplace(TensorKey{t.seq, t.slot}, e).second) << "duplicate tensor seq " << t.seq;
  }
  return out;
}

void ExpectSameTensor(const DumpEntry& want, const DumpEntry& got, const std::string& where) {
  const auto w = want.As<format::TensorRecord>(), g = got.As<format::TensorRecord>();
  EXPECT_EQ(g.dtype, w.dtype) << where;
  EXPECT_EQ(g.rows, w.rows) << where;
  EXPECT_EQ(g.cols, w.cols) << where;
  EXPECT_EQ(g.batch, w.batch) << where;
  EXPECT_EQ(g.payload_kind, static_cast<uint8_t>(ShimPayloadKind(g.dtype))) << where;
  EXPECT_EQ(g.payload_bytes, w.payload_bytes) << where;
  EXPECT_TRUE(got.payload == want.payload) << where << ": payload differs from the program's data";
}

void ExpectSameTensors(const std::map<TensorKey, DumpEntry>& want, const std::map<TensorKey, DumpEntry>& got) {
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [key, entry] : want) {
    auto it = got.find(key);
    if (it == got.end()) {
      ADD_FAILURE() << "no payload for seq " << key.first << " slot " << int(key.second);
      continue;
    }
    ExpectSameTensor(entry, it->second, "seq " + std::to_string(key.first));
  }
}

}  // namespace ttrace::shim::testing
