// libFuzzer harness: the store's TraceReader over hostile bytes (fuzz_stream.h says how an input becomes a
// stream). Besides "no crash, no read out of bounds" (the sanitizers), it asserts what the reader promises:
// - errors are DataLoss (corrupt or truncated) or FailedPrecondition (another format version), nothing else;
// - allow_truncated changes only how a cut stream ends: the same records, then a clean end with truncated() set
//   where the strict reader reports "truncated stream"; on a corrupt stream both report the same error;
// - every record's body and payload are views inside the frame (each byte is read here).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "fuzz/fuzz_assert.h"
#include "fuzz/fuzz_stream.h"
#include "store/trace_reader.h"
#include "ttrace/format.h"

namespace {

using ttrace::store::RecordView;
using ttrace::store::ReaderOptions;
using ttrace::store::TraceReader;
namespace format = ttrace::format;

struct Outcome {
  absl::Status status;  // of Open, or of the Next that failed
  uint64_t records = 0;
  uint32_t sum = 0;     // of every byte of every body and payload
  bool truncated = false;
};

uint32_t Touch(const RecordView& r) {
  uint32_t sum = static_cast<uint16_t>(r.type);
  for (char c : r.body) sum = sum * 31 + static_cast<unsigned char>(c);
  for (char c : r.payload) sum = sum * 31 + static_cast<unsigned char>(c);
  switch (r.type) {  // each body as its struct, the way the analyzer reads it
#define TTRACE_FUZZ_BODY(name, id, body)         \
  case format::RecordType::name: {               \
    format::body b = r.Body<format::body>();     \
    const unsigned char* p = reinterpret_cast<const unsigned char*>(&b); \
    for (size_t i = 0; i < sizeof b; ++i) sum += p[i]; \
    break;                                       \
  }
    TTRACE_RECORD_TYPES(TTRACE_FUZZ_BODY)
#undef TTRACE_FUZZ_BODY
  }
  return sum;
}

Outcome Read(const std::string& path, bool allow_truncated) {
  Outcome o;
  ReaderOptions options;
  options.allow_truncated = allow_truncated;
  auto reader = TraceReader::Open(path, options);
  if (!reader.ok()) {
    o.status = reader.status();
    return o;
  }
  RecordView r;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&r);
    if (!more.ok()) {
      o.status = more.status();
      break;
    }
    if (!*more) break;
    ++o.records;
    o.sum += Touch(r);
  }
  o.truncated = (*reader)->truncated();
  return o;
}

bool IsTruncation(const absl::Status& s) {
  return s.code() == absl::StatusCode::kDataLoss && s.message().find("truncated stream") == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = ttrace::fuzz::ScratchDir() + "/stream.ttr";
  FUZZ_ASSERT(ttrace::fuzz::WriteFile(path, ttrace::fuzz::StreamFromInput(data, size)));
  Outcome strict = Read(path, false);
  Outcome lenient = Read(path, true);
  for (const Outcome* o : {&strict, &lenient})
    FUZZ_ASSERT(o->status.ok() || o->status.code() == absl::StatusCode::kDataLoss ||
                o->status.code() == absl::StatusCode::kFailedPrecondition);
  FUZZ_ASSERT(!strict.truncated);
  if (strict.status.ok()) {
    FUZZ_ASSERT(lenient.status.ok() && !lenient.truncated);
  } else if (IsTruncation(strict.status)) {
    FUZZ_ASSERT(lenient.status.ok() && lenient.truncated);
  } else {
    FUZZ_ASSERT(lenient.status == strict.status);
  }
  FUZZ_ASSERT(lenient.records == strict.records && lenient.sum == strict.sum);
  return 0;
}
