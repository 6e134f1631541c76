// Names come from the client's header, which is untrusted: the job and host are used only when every byte is
// in a small safe set, and the rank or pid only as numbers we format ourselves.
#include "collector/stream_store.h"

#include <cstring>

#include "store/manifest.h"

namespace ttrace::collector {

bool SafeName(const std::string& name, size_t max) {
  if (name.empty() || name.size() > max || name[0] == '.') return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
          c == '-'))
      return false;
  return true;
}

StreamStore::Opened StreamStore::Open(const format::FileHeader& header) {
  Opened out;
  const std::string job = store::FieldString(header.job, sizeof header.job);
  const std::string host = store::FieldString(header.host, sizeof header.host);
  if (!SafeName(job, sizeof header.job - 1)) {
    out.refused = wire::RefuseReason::kBadName;
    out.why = "job name not allowed";
    return out;
  }
  std::string name;
  if (header.rank >= 0) {
    name = "rank-" + std::to_string(header.rank) + ".ttr";
  } else {
    if (!SafeName(host, sizeof header.host - 1)) {
      out.refused = wire::RefuseReason::kBadName;
      out.why = "host name not allowed";
      return out;
    }
    name = "pid-" + std::to_string(header.pid) + "-" + host + ".ttr";
  }
  out.path = root_ + "/" + job + "/" + name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!active_.insert(out.path).second) {
      out.refused = wire::RefuseReason::kStreamBusy;
      out.why = job + "/" + name + " is being written";
      return out;
    }
  }
  store::StreamFileOptions options;
  options.sync_on_close = durable_;
  options.writer = format::ManifestWriter::kCollector;
  options.file_mode = file_mode_;
  std::string error;
  out.file = store::StreamFile::Create(out.path, options, &error);
  if (out.file == nullptr) {
    Release(out.path);
    out.refused = wire::RefuseReason::kStorage;
    out.why = error;
  }
  return out;
}

void StreamStore::Release(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  active_.erase(path);
}

}  // namespace ttrace::collector
