// The operand dump of the test programs that drive one library (lt_workload, cudnn_workload): per operand, u64 seq,
// u8 slot (format::TensorSlot), u64 bytes, the bytes as the program uploaded or downloaded them. Header-only.
#ifndef TTRACE_SHIM_TESTING_OPERANDS_H_
#define TTRACE_SHIM_TESTING_OPERANDS_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "shim/testing/process.h"

namespace ttrace::shim::testing {

struct Operand {
  uint64_t seq;
  uint8_t slot;
  std::string bytes;
};

inline std::vector<Operand> ReadOperands(const std::string& path) {
  std::vector<Operand> out;
  const std::string data = ReadFile(path);
  size_t at = 0;
  while (at + 17 <= data.size()) {
    Operand o;
    uint64_t bytes;
    memcpy(&o.seq, &data[at], 8);
    o.slot = static_cast<uint8_t>(data[at + 8]);
    memcpy(&bytes, &data[at + 9], 8);
    at += 17;
    o.bytes = data.substr(at, bytes);
    at += bytes;
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace ttrace::shim::testing

#endif  // TTRACE_SHIM_TESTING_OPERANDS_H_
