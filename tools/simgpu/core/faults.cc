// SIMGPU_FAULT: parsed strictly and once. Every key is required so that a typo never silently turns a fault
// into "no fault"; a fault that matches but cannot be applied (element or bit out of range) stops the process
// for the same reason.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tools/simgpu/core/env.h"
#include "tools/simgpu/core/simgpu.h"

namespace simgpu {
namespace {

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

bool ParseOne(const std::string& spec, Fault* fault, std::string* error) {
  std::vector<std::string> fields = Split(spec, ':');
  if (fields[0] == "gemm") {
    fault->site = FaultSite::kGemm;
  } else if (fields[0] == "coll") {
    fault->site = FaultSite::kCollective;
  } else {
    *error = "unknown fault kind \"" + fields[0] + "\" in \"" + spec + "\" (expected gemm or coll)";
    return false;
  }
  const char* keys[] = {"rank", "call", "elem", "bit"};
  long values[4] = {};
  bool seen[4] = {};
  for (size_t i = 1; i < fields.size(); ++i) {
    size_t eq = fields[i].find('=');
    std::string key = fields[i].substr(0, eq);
    int index = -1;
    for (int k = 0; k < 4; ++k) {
      if (key == keys[k]) index = k;
    }
    if (eq == std::string::npos || index < 0) {
      *error = "bad field \"" + fields[i] + "\" in \"" + spec + "\" (expected rank=, call=, elem= or bit=)";
      return false;
    }
    if (seen[index]) {
      *error = "duplicate key \"" + key + "\" in \"" + spec + "\"";
      return false;
    }
    std::string value = fields[i].substr(eq + 1);
    if (!ParseDecimal(value, &values[index])) {
      *error = "value of " + key + " in \"" + spec + "\" is not a non-negative integer: \"" + value + "\"";
      return false;
    }
    seen[index] = true;
  }
  for (int k = 0; k < 4; ++k) {
    if (!seen[k]) {
      *error = std::string("missing ") + keys[k] + "= in \"" + spec + "\"";
      return false;
    }
  }
  if (values[0] > (1L << 30)) {
    *error = "rank out of range in \"" + spec + "\"";
    return false;
  }
  if (values[3] > 63) {
    *error = "bit must be in [0, 63] in \"" + spec + "\"";
    return false;
  }
  fault->rank = static_cast<int>(values[0]);
  fault->call = values[1];
  fault->elem = values[2];
  fault->bit = static_cast<int>(values[3]);
  return true;
}

}  // namespace

bool ParseFaults(const std::string& spec, std::vector<Fault>* out, std::string* error) {
  std::vector<Fault> faults;
  for (const std::string& item : Split(spec, ';')) {
    if (item.empty()) continue;
    Fault fault{};
    if (!ParseOne(item, &fault, error)) return false;
    faults.push_back(fault);
  }
  *out = std::move(faults);
  return true;
}

const std::vector<Fault>& Faults() {
  static const std::vector<Fault>* faults = [] {
    auto* parsed = new std::vector<Fault>;
    const char* spec = getenv("SIMGPU_FAULT");
    std::string error;
    if (spec != nullptr && !ParseFaults(spec, parsed, &error)) {
      Die("simgpu: malformed SIMGPU_FAULT=\"%s\": %s\n"
          "simgpu: grammar: SPEC[;SPEC...], SPEC = gemm|coll:rank=R:call=N:elem=E:bit=B\n",
          spec, error.c_str());
    }
    return parsed;
  }();
  return *faults;
}

std::vector<Fault> MatchingFaults(FaultSite site, int64_t call) {
  std::vector<Fault> matches;
  for (const Fault& f : Faults()) {
    if (f.site == site && f.call == call && f.rank == ProcessRank()) matches.push_back(f);
  }
  return matches;
}

void FlipBit(const Fault& fault, void* elem_ptr, size_t elem_bytes, size_t n_elems) {
  const char* kind = fault.site == FaultSite::kGemm ? "gemm" : "coll";
  if (fault.elem < 0 || static_cast<uint64_t>(fault.elem) >= n_elems) {
    Die("simgpu: SIMGPU_FAULT %s:call=%lld: elem=%lld is out of range (the output has %zu elements)\n", kind,
        static_cast<long long>(fault.call), static_cast<long long>(fault.elem), n_elems);
  }
  if (fault.bit < 0 || static_cast<size_t>(fault.bit) >= 8 * elem_bytes) {
    Die("simgpu: SIMGPU_FAULT %s:call=%lld: bit=%d does not fit a %zu-byte element\n", kind,
        static_cast<long long>(fault.call), fault.bit, elem_bytes);
  }
  // Element storage is little-endian: bit 0 is the least significant bit of the first byte.
  auto* bytes = static_cast<unsigned char*>(elem_ptr);
  bytes[fault.bit / 8] ^= static_cast<unsigned char>(1u << (fault.bit % 8));
}

void ApplyFaults(FaultSite site, int64_t call, void* out, size_t elem_bytes, size_t n_elems) {
  for (const Fault& f : MatchingFaults(site, call)) {
    size_t index = static_cast<uint64_t>(f.elem) < n_elems ? static_cast<size_t>(f.elem) : 0;
    FlipBit(f, static_cast<unsigned char*>(out) + index * elem_bytes, elem_bytes, n_elems);
  }
}

}  // namespace simgpu
