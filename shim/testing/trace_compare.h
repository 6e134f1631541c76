// Reading a trace stream back as dump entries (dump.h) and comparing its tensors with what a test program saw:
// the shim's integration tests share these. gtest assertions report mismatches; nothing aborts.
#ifndef TTRACE_SHIM_TESTING_TRACE_COMPARE_H_
#define TTRACE_SHIM_TESTING_TRACE_COMPARE_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "shim/testing/dump.h"
#include "ttrace/format.h"

namespace ttrace::shim::testing {

// The payload kind the shim writes with its default options: floats (FP8 included) float-coded, integers wider than
// a byte shuffled, other bytes as they are.
format::PayloadKind ShimPayloadKind(uint8_t dtype);
// Every record of a stream, as dump entries; shuffled and float-coded tensor payloads are decoded (the program's
// layout; payload_bytes in the body is the decoded size, payload_kind the one written).
std::vector<DumpEntry> ReadTrace(const std::string& path, format::FileHeader* header = nullptr);
// The tensor records (tensors) or the other records but notices (!tensors), in order.
std::vector<DumpEntry> Select(const std::vector<DumpEntry>& all, bool tensors);
std::vector<DumpEntry> Notices(const std::vector<DumpEntry>& all);

using TensorKey = std::pair<uint64_t, uint8_t>;  // (seq, slot)
std::map<TensorKey, DumpEntry> TensorsByKey(const std::vector<DumpEntry>& all);
void ExpectSameTensor(const DumpEntry& want, const DumpEntry& got, const std::string& where);
// Every payload the program saw is in the trace, equal, and the trace has no other.
void ExpectSameTensors(const std::map<TensorKey, DumpEntry>& want, const std::map<TensorKey, DumpEntry>& got);

}  // namespace ttrace::shim::testing

#endif  // TTRACE_SHIM_TESTING_TRACE_COMPARE_H_
