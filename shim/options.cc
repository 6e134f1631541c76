// Parsing is strict (a typo must not silently mean something else) but never fatal: the shim runs inside other
// people's training jobs, so a bad value is reported and replaced by its default.
#include "shim/options.h"

#include <strings.h>

#include <cstdlib>
#include <cstring>

namespace ttrace::shim {
namespace {

bool Parse(const char* text, OptionBool* out) {
  static constexpr const char* kTrue[] = {"1", "true", "yes", "on"};
  static constexpr const char* kFalse[] = {"0", "false", "no", "off"};
  for (const char* t : kTrue)
    if (strcasecmp(text, t) == 0) return *out = true, true;
  for (const char* f : kFalse)
    if (strcasecmp(text, f) == 0) return *out = false, true;
  return false;
}

bool Parse(const char* text, OptionInt* out) {
  if (*text == '\0') return false;
  int64_t v = 0;
  for (const char* p = text; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + (*p - '0');
    if (v > INT32_MAX) return false;
  }
  *out = v;
  return true;
}

bool Parse(const char* text, OptionString* out) {
  *out = text;
  return true;
}

bool Parse(const char* text, OptionMode* out) {
  if (strcmp(text, "meta") == 0) return *out = CaptureMode::kMeta, true;
  if (strcmp(text, "full") == 0) return *out = CaptureMode::kFull, true;
  return false;
}

const char* Expected(OptionBool*) { return "0/1, true/false, yes/no or on/off"; }
const char* Expected(OptionInt*) { return "a non-negative decimal integer below 2^31"; }
const char* Expected(OptionString*) { return "a string"; }
const char* Expected(OptionMode*) { return "meta or full"; }

std::string Show(OptionBool v) { return v ? "1" : "0"; }
std::string Show(OptionInt v) { return std::to_string(v); }
std::string Show(const OptionString& v) { return v; }
std::string Show(OptionMode v) { return CaptureModeName(v); }

template <typename T>
void Read(const EnvLookup& env, const char* name, T* value, std::vector<std::string>* warnings) {
  const char* text = env(name);
  if (text == nullptr || *text == '\0') return;
  T parsed = *value;
  if (Parse(text, &parsed)) {
    *value = parsed;
  } else if (warnings) {
    warnings->push_back(std::string("ignoring ") + name + "=" + text + " (expected " + Expected(value) +
                        "); using " + Show(*value));
  }
}

}  // namespace

const char* CaptureModeName(CaptureMode mode) { return mode == CaptureMode::kMeta ? "meta" : "full"; }

Options ParseOptions(const EnvLookup& env, std::vector<std::string>* warnings) {
  Options o;
#define TTRACE_OPTION(type, member, name, def, doc) Read(env, "TTRACE_" #name, &o.member, warnings);
#include "shim/options.inc"
#undef TTRACE_OPTION
  if (o.zstd_level < 1 || o.zstd_level > 19) {
    const Options defaults;
    if (warnings)
      warnings->push_back("ignoring TTRACE_ZSTD_LEVEL=" + std::to_string(o.zstd_level) +
                          " (expected a zstd level from 1 to 19); using " + std::to_string(defaults.zstd_level));
    o.zstd_level = defaults.zstd_level;
  }
  if (o.job.empty()) {
    const char* run_id = env("TORCHELASTIC_RUN_ID");
    o.job = run_id != nullptr && *run_id != '\0' ? run_id : "default";
  }
  for (char& c : o.job)
    if (c == '/') c = '_';
  if (o.dir.empty()) o.dir = "./ttrace-out/" + o.job;
  return o;
}

std::string OptionsMarkdown() {
  std::string table = "| Variable | Default | Description |\n|---|---|---|\n";
  const Options defaults;
#define TTRACE_OPTION(type, member, name, def, doc)                                                        \
  table += std::string("| `TTRACE_" #name "` | ") +                                                         \
           (Show(defaults.member).empty() ? std::string("(unset)") : "`" + Show(defaults.member) + "`") + \
           " | " + doc + " |\n";
#include "shim/options.inc"
#undef TTRACE_OPTION
  return table;
}

std::string OptionsDump(const Options& options) {
  std::string out;
#define TTRACE_OPTION(type, member, name, def, doc) out += "TTRACE_" #name "=" + Show(options.member) + "\n";
#include "shim/options.inc"
#undef TTRACE_OPTION
  return out;
}

void ParseOpsFilter(const std::string& text, bool selected[kApiCount], std::vector<std::string>* warnings) {
  static constexpr struct {
    const char* name;
    format::Library library;
  } kGroups[] = {{"gemm", format::Library::kCublas},
                 {"lt", format::Library::kCublasLt},
                 {"cudnn", format::Library::kCudnn},
                 {"nccl", format::Library::kNccl}};
  bool any = false;
  for (size_t i = 0; i < kApiCount; ++i) selected[i] = false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    size_t b = start, e = end;
    while (b < e && text[b] == ' ') ++b;
    while (e > b && text[e - 1] == ' ') --e;
    const std::string name = text.substr(b, e - b);
    start = end + 1;
    if (name.empty()) continue;
    bool known = false;
    for (const auto& g : kGroups) {
      if (strcasecmp(name.c_str(), g.name) != 0) continue;
      known = true;
      for (size_t i = 0; i < kApiCount; ++i)
        if (format::kApis[i].library == g.library && format::kApis[i].kind == format::ApiKind::kOp)
          selected[i] = any = true;
    }
    for (size_t i = 0; i < kApiCount && !known; ++i) {
      if (name != format::kApis[i].symbol) continue;
      known = true;
      if (format::kApis[i].kind == format::ApiKind::kOp) {
        selected[i] = any = true;
      } else if (warnings) {
        warnings->push_back("TTRACE_OPS: " + name + " is a set-up call, recorded with its library's ops; ignored");
      }
    }
    if (!known && warnings)
      warnings->push_back("TTRACE_OPS: ignoring " + name +
                          " (expected gemm, lt, cudnn, nccl or an intercepted op's exported name)");
  }
  if (!any) {
    if (!text.empty() && warnings) warnings->push_back("TTRACE_OPS=" + text + " selects no op; recording every call");
    for (size_t i = 0; i < kApiCount; ++i) selected[i] = true;
    return;
  }
  for (size_t i = 0; i < kApiCount; ++i) {
    if (!selected[i] || format::kApis[i].kind != format::ApiKind::kOp) continue;
    for (size_t j = 0; j < kApiCount; ++j)
      if (format::kApis[j].library == format::kApis[i].library && format::kApis[j].kind == format::ApiKind::kSetup)
        selected[j] = true;
  }
}

}  // namespace ttrace::shim
