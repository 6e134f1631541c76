// The file shim_workload writes: what it asked the libraries to do and the data it saw, as the records the
// shim should write. Entries back to back:
//   uint16 type (format::RecordType) | uint32 body bytes | body | uint64 payload bytes | payload
// Bodies are the format.h structs with the fields the program knows (t_ns, comm_hash and cuda_device are 0);
// tensor payloads are packed as TensorRecord says (rows x cols column-major, batch after batch).
// Header-only: used by the workload (writer) and by shim_integration_test (reader).
#ifndef TTRACE_SHIM_TESTING_DUMP_H_
#define TTRACE_SHIM_TESTING_DUMP_H_

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ttrace/format.h"

namespace ttrace::shim::testing {

struct DumpEntry {
  format::RecordType type;
  std::string body;
  std::string payload;
  template <typename T>
  T As() const {
    T t;
    memset(&t, 0, sizeof t);
    memcpy(&t, body.data(), body.size() < sizeof t ? body.size() : sizeof t);
    return t;
  }
};

inline void WriteEntry(FILE* f, format::RecordType type, const void* body, uint32_t body_bytes,
                       const void* payload = nullptr, uint64_t payload_bytes = 0) {
  const uint16_t t = static_cast<uint16_t>(type);
  fwrite(&t, sizeof t, 1, f);
  fwrite(&body_bytes, sizeof body_bytes, 1, f);
  fwrite(body, 1, body_bytes, f);
  fwrite(&payload_bytes, sizeof payload_bytes, 1, f);
  if (payload_bytes != 0 && payload != nullptr) fwrite(payload, 1, payload_bytes, f);
}

// Reads a whole dump; false on a short or malformed file.
inline bool ReadDump(const std::string& path, std::vector<DumpEntry>* out) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  bool ok = true;
  while (true) {
    uint16_t t;
    if (fread(&t, sizeof t, 1, f) != 1) break;
    uint32_t body_bytes;
    uint64_t payload_bytes;
    DumpEntry e;
    e.type = static_cast<format::RecordType>(t);
    if (fread(&body_bytes, sizeof body_bytes, 1, f) != 1 || body_bytes > 4096) {
      ok = false;
      break;
    }
    e.body.resize(body_bytes);
    if (fread(e.body.data(), 1, body_bytes, f) != body_bytes ||
        fread(&payload_bytes, sizeof payload_bytes, 1, f) != 1 || payload_bytes > (1ull << 32)) {
      ok = false;
      break;
    }
    e.payload.resize(payload_bytes);
    if (fread(e.payload.data(), 1, payload_bytes, f) != payload_bytes) {
      ok = false;
      break;
    }
    out->push_back(std::move(e));
  }
  fclose(f);
  return ok;
}

}  // namespace ttrace::shim::testing

#endif  // TTRACE_SHIM_TESTING_DUMP_H_
