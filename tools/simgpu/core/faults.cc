// SIMGPU_FAULT: parsed strictly and once (grammar in simgpu.h). Every required field is checked and unknown or
// misplaced fields are errors, so that a typo never silently turns a fault into "no fault"; a fault that matches
// but cannot be applied stops the process for the same reason.
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

// The fields a spec may carry, in canonical order. kStale is the one field without "=value".
enum Key { kRank, kCall, kElem, kBit, kValue, kStale, kSwap, kDrop, kOp, kDelayMs, kNumKeys };
constexpr const char* kKeyNames[kNumKeys] = {"rank", "call", "elem", "bit", "value", "stale", "swap", "drop",
                                             "op", "delay_ms"};

bool ParseSite(const std::string& name, FaultSite* site) {
  static const std::pair<const char*, FaultSite> kSites[] = {{"gemm", FaultSite::kGemm},
                                                             {"conv", FaultSite::kConv},
                                                             {"attn", FaultSite::kAttention},
                                                             {"coll", FaultSite::kCollective},
                                                             {"stream", FaultSite::kStream}};
  for (const auto& [text, value] : kSites) {
    if (name == text) {
      *site = value;
      return true;
    }
  }
  return false;
}

bool ParseValue(const std::string& text, double* out) {
  if (text.empty() || isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  double v = strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return false;
  // strtod reports ERANGE for overflow (±HUGE_VAL, kept: it converts to the type's overflow result) and for
  // underflow (a correctly rounded tiny value or zero, also kept).
  *out = v;
  return true;
}

class SpecParser {
 public:
  explicit SpecParser(const std::string& spec) : spec_(spec) {}

  bool Parse(Fault* fault, std::string* error) {
    std::vector<std::string> fields = Split(spec_, ':');
    if (!ParseSite(fields[0], &fault->site)) {
      return Fail(error, "unknown fault kind \"" + fields[0] +
                             "\" (expected gemm, conv, attn, coll or stream)");
    }
    const bool stream = fault->site == FaultSite::kStream;
    for (size_t i = 1; i < fields.size(); ++i) {
      if (!ReadField(fields[i], stream, error)) return false;
    }
    return stream ? FinishStream(fault, error) : FinishCall(fault, error);
  }

 private:
  bool Fail(std::string* error, const std::string& what) {
    *error = what + " in \"" + spec_ + "\"";
    return false;
  }

  bool ReadField(const std::string& field, bool stream, std::string* error) {
    size_t eq = field.find('=');
    std::string key = field.substr(0, eq);
    int index = -1;
    for (int k = 0; k < kNumKeys; ++k) {
      if (key == kKeyNames[k]) index = k;
    }
    const bool stream_key = index == kRank || index == kOp || index == kDelayMs;
    const bool call_key = index >= 0 && index != kOp && index != kDelayMs;
    const bool has_value = eq != std::string::npos;
    if (index < 0 || (stream ? !stream_key : !call_key) || has_value == (index == kStale)) {
      return Fail(error, "bad field \"" + field + "\" (expected " +
                             (stream ? "rank=, op= and delay_ms=" : "rank=, call=, elem=, and one of bit=, value=, "
                                                                     "stale, swap= or drop=") +
                             ")");
    }
    if (seen_[index]) return Fail(error, "duplicate key \"" + key + "\"");
    seen_[index] = true;
    text_[index] = has_value ? field.substr(eq + 1) : "";
    return true;
  }

  bool Number(Key key, long max, long* out, std::string* error) {
    if (!ParseDecimal(text_[key], out)) {
      return Fail(error, std::string("value of ") + kKeyNames[key] + " is not a non-negative integer: \"" +
                             text_[key] + "\"");
    }
    if (*out > max) {
      return Fail(error, std::string(kKeyNames[key]) + "=" + text_[key] + " is out of range (at most " +
                             std::to_string(max) + ")");
    }
    return true;
  }

  bool Require(Key key, std::string* error) {
    if (seen_[key]) return true;
    return Fail(error, std::string("missing ") + kKeyNames[key] + "=");
  }

  bool FinishStream(Fault* fault, std::string* error) {
    long rank = 0, op = 0, delay = 0;
    if (!Require(kRank, error) || !Require(kOp, error) || !Require(kDelayMs, error)) return false;
    if (!Number(kRank, 1L << 30, &rank, error) || !Number(kOp, kMaxIndex, &op, error) ||
        !Number(kDelayMs, 3600 * 1000, &delay, error)) {
      return false;
    }
    fault->rank = static_cast<int>(rank);
    fault->call = op;
    fault->action = FaultAction::kDelay;
    fault->delay_ms = delay;
    return true;
  }

  bool FinishCall(Fault* fault, std::string* error) {
    const bool coll = fault->site == FaultSite::kCollective;
    if (!Require(kRank, error) || !Require(kCall, error)) return false;
    long rank = 0, call = 0;
    if (!Number(kRank, 1L << 30, &rank, error) || !Number(kCall, kMaxIndex, &call, error)) return false;
    fault->rank = static_cast<int>(rank);
    fault->call = call;
    int actions = 0;
    for (Key k : {kBit, kValue, kStale, kSwap, kDrop}) actions += seen_[k];
    if (actions == 0) {
      return Fail(error, coll ? "missing bit=, value=, stale, swap= or drop=" : "missing bit= or value=");
    }
    if (actions > 1) return Fail(error, "more than one action (a spec has exactly one)");
    for (Key k : {kStale, kSwap, kDrop}) {
      if (seen_[k] && !coll) {
        return Fail(error, std::string(kKeyNames[k]) + " applies to coll faults only, not to " +
                               FaultSiteName(fault->site));
      }
    }
    if (seen_[kBit] || seen_[kValue]) {
      long elem = 0;
      if (!Require(kElem, error) || !Number(kElem, kMaxIndex, &elem, error)) return false;
      fault->elem = elem;
      if (seen_[kBit]) {
        long bit = 0;
        if (!ParseDecimal(text_[kBit], &bit)) {
          return Fail(error, "value of bit is not a non-negative integer: \"" + text_[kBit] + "\"");
        }
        if (bit > 63) return Fail(error, "bit must be in [0, 63]");
        fault->action = FaultAction::kBitFlip;
        fault->bit = static_cast<int>(bit);
      } else {
        if (!ParseValue(text_[kValue], &fault->value)) {
          return Fail(error, "value=" + text_[kValue] + " is not a number (expected e.g. 1.5, -2e-3, inf, nan)");
        }
        fault->action = FaultAction::kValue;
      }
      return true;
    }
    if (seen_[kElem]) {
      return Fail(error, "elem= is not used by stale, swap= or drop= (they change the whole result)");
    }
    if (seen_[kStale]) {
      fault->action = FaultAction::kStale;
    } else if (seen_[kSwap]) {
      std::vector<std::string> pair = Split(text_[kSwap], ',');
      long i = 0, j = 0;
      if (pair.size() != 2 || !ParseDecimal(pair[0], &i) || !ParseDecimal(pair[1], &j) || i > (1L << 30) ||
          j > (1L << 30)) {
        return Fail(error, "swap=" + text_[kSwap] + " is not two rank indices I,J");
      }
      if (i == j) return Fail(error, "swap=" + text_[kSwap] + " names the same rank twice");
      fault->action = FaultAction::kSwap;
      fault->swap_i = static_cast<int>(i);
      fault->swap_j = static_cast<int>(j);
    } else {
      long drop = 0;
      if (!Number(kDrop, 1L << 30, &drop, error)) return false;
      fault->action = FaultAction::kDrop;
      fault->drop_rank = static_cast<int>(drop);
    }
    return true;
  }

  static constexpr long kMaxIndex = 999999999999999999L;  // 18 digits, what ParseDecimal accepts
  const std::string& spec_;
  bool seen_[kNumKeys] = {};
  std::string text_[kNumKeys];
};

}  // namespace

const char* FaultSiteName(FaultSite site) {
  switch (site) {
    case FaultSite::kGemm: return "gemm";
    case FaultSite::kCollective: return "coll";
    case FaultSite::kConv: return "conv";
    case FaultSite::kAttention: return "attn";
    case FaultSite::kStream: return "stream";
  }
  return "?";
}

std::string DescribeFault(const Fault& f) {
  std::string s = std::string(FaultSiteName(f.site)) + ":rank=" + std::to_string(f.rank);
  if (f.action == FaultAction::kDelay) {
    return s + ":op=" + std::to_string(f.call) + ":delay_ms=" + std::to_string(f.delay_ms);
  }
  s += ":call=" + std::to_string(f.call);
  char value[40];
  switch (f.action) {
    case FaultAction::kBitFlip: return s + ":elem=" + std::to_string(f.elem) + ":bit=" + std::to_string(f.bit);
    case FaultAction::kValue:
      snprintf(value, sizeof value, "%.17g", f.value);
      return s + ":elem=" + std::to_string(f.elem) + ":value=" + value;
    case FaultAction::kStale: return s + ":stale";
    case FaultAction::kSwap: return s + ":swap=" + std::to_string(f.swap_i) + "," + std::to_string(f.swap_j);
    case FaultAction::kDrop: return s + ":drop=" + std::to_string(f.drop_rank);
    case FaultAction::kDelay: break;
  }
  return s;
}

bool ParseFaults(const std::string& spec, std::vector<Fault>* out, std::string* error) {
  std::vector<Fault> faults;
  for (const std::string& item : Split(spec, ';')) {
    if (item.empty()) continue;
    Fault fault;
    if (!SpecParser(item).Parse(&fault, error)) return false;
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
          "simgpu: grammar: SPEC[;SPEC...] with SPEC one of\n"
          "simgpu:   gemm|conv|attn|coll:rank=R:call=N:elem=E:bit=B\n"
          "simgpu:   gemm|conv|attn|coll:rank=R:call=N:elem=E:value=V\n"
          "simgpu:   coll:rank=R:call=N:stale | coll:rank=R:call=N:swap=I,J | coll:rank=R:call=N:drop=S\n"
          "simgpu:   stream:rank=R:op=N:delay_ms=T\n",
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

void CheckFaultElement(const Fault& fault, uint64_t n_elems) {
  if (fault.elem < 0 || static_cast<uint64_t>(fault.elem) >= n_elems) {
    Die("simgpu: SIMGPU_FAULT %s:call=%lld: elem=%lld is out of range (the output has %llu elements; fault %s)\n",
        FaultSiteName(fault.site), static_cast<long long>(fault.call), static_cast<long long>(fault.elem),
        static_cast<unsigned long long>(n_elems), DescribeFault(fault).c_str());
  }
}

void FlipBit(const Fault& fault, void* elem_ptr, size_t elem_bytes, size_t n_elems) {
  CheckFaultElement(fault, n_elems);
  if (fault.action != FaultAction::kBitFlip) {
    Die("simgpu: SIMGPU_FAULT %s: this output takes bit= faults only\n", DescribeFault(fault).c_str());
  }
  if (fault.bit < 0 || static_cast<size_t>(fault.bit) >= 8 * elem_bytes) {
    Die("simgpu: SIMGPU_FAULT %s:call=%lld: bit=%d does not fit a %zu-byte element (fault %s)\n",
        FaultSiteName(fault.site), static_cast<long long>(fault.call), fault.bit, elem_bytes,
        DescribeFault(fault).c_str());
  }
  // Element storage is little-endian: bit 0 is the least significant bit of the first byte.
  auto* bytes = static_cast<unsigned char*>(elem_ptr);
  bytes[fault.bit / 8] ^= static_cast<unsigned char>(1u << (fault.bit % 8));
}

void ApplyFaults(FaultSite site, int64_t call, void* out, size_t elem_bytes, size_t n_elems) {
  for (const Fault& f : MatchingFaults(site, call)) {
    if (f.action != FaultAction::kBitFlip && f.action != FaultAction::kValue) continue;
    size_t index = static_cast<uint64_t>(f.elem) < n_elems ? static_cast<size_t>(f.elem) : 0;
    FlipBit(f, static_cast<unsigned char*>(out) + index * elem_bytes, elem_bytes, n_elems);
  }
}

int64_t NextCallIndex(FaultSite site) {
  static std::atomic<int64_t> counters[static_cast<int>(FaultSite::kStream) + 1];
  return counters[static_cast<int>(site)].fetch_add(1);
}

int64_t StreamDelayMs(int64_t op) {
  int64_t total = 0;
  for (const Fault& f : Faults()) {
    if (f.site == FaultSite::kStream && f.call == op && f.rank == ProcessRank()) total += f.delay_ms;
  }
  return total;
}

}  // namespace simgpu
