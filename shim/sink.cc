// The file sink is a thin adapter: TraceWriter already frames, compresses, checksums and writes whole frames, and
// StreamFile keeps the index and the manifest. The manifest's library list is taken when the stream opens and
// again when it closes (libraries loaded later, by dlopen, are named at the close).
#include "shim/sink.h"

#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <ctime>

#include "store/remote_output.h"
#include "store/stream_file.h"
#include "shim/log.h"

namespace ttrace::shim {
namespace {

// A TraceWriter into a local StreamFile (`file`) or a RemoteOutput (`file` null).
class FileSink : public Sink {
 public:
  FileSink(std::unique_ptr<store::TraceWriter> writer, store::StreamFile* file, std::string path)
      : writer_(std::move(writer)), file_(file), path_(std::move(path)) {}

  bool Append(format::RecordType type, const void* body, size_t body_bytes, const void* payload,
              size_t payload_bytes) override {
    return writer_->Append(type, body, body_bytes, payload, payload_bytes, &error_);
  }
  bool Flush() override { return writer_->Flush(&error_); }
  bool Close() override {
    // The last frame (the end record) first: what follows (the loader walk, the manifest) may be cut short when a
    // signal ends the process.
    if (!writer_->Flush(&error_)) {
      writer_->Close(nullptr);
      return false;
    }
    if (file_ != nullptr) file_->set_libraries(LoadedVendorLibraries());
    return writer_->Close(&error_);
  }
  std::string error() const override { return error_; }
  std::string name() const override { return path_; }

 private:
  std::unique_ptr<store::TraceWriter> writer_;
  store::StreamFile* file_;  // owned by writer_
  std::string path_;
  std::string error_;
};

// A non-negative decimal below 2^31, else -1.
int32_t EnvInt(const EnvLookup& env, const char* name) {
  const char* text = env(name);
  if (text == nullptr || *text == '\0') return -1;
  int64_t v = 0;
  for (const char* p = text; *p; ++p) {
    if (*p < '0' || *p > '9') return -1;
    v = v * 10 + (*p - '0');
    if (v > INT32_MAX) return -1;
  }
  return static_cast<int32_t>(v);
}

}  // namespace

std::unique_ptr<Sink> OpenFileSink(const std::string& path, const store::StreamIdentity& identity,
                                   std::string* error, const store::WriterOptions& options) {
  store::StreamFileOptions file_options;
  file_options.libraries = LoadedVendorLibraries();
  std::unique_ptr<store::StreamFile> file = store::StreamFile::Create(path, file_options, error);
  if (file == nullptr) return nullptr;
  store::StreamFile* raw = file.get();
  std::unique_ptr<store::TraceWriter> writer = store::TraceWriter::Create(std::move(file), identity, options, error);
  if (writer == nullptr) return nullptr;
  return std::make_unique<FileSink>(std::move(writer), raw, path);
}

std::unique_ptr<Sink> OpenCollectorSink(const std::string& endpoint, const std::string& token, int timeout_ms,
                                        const std::string& fallback_path, const store::StreamIdentity& identity,
                                        std::string* error, const store::WriterOptions& options) {
  store::RemoteOptions remote;
  remote.endpoint = endpoint;
  remote.token = token;
  remote.timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
  remote.fallback_path = fallback_path;
  remote.fallback_options.libraries = LoadedVendorLibraries();
  remote.on_failover = [endpoint, fallback_path](const std::string& reason) {
    Log("collector %s: %s; writing the stream to %s", endpoint.c_str(), reason.c_str(), fallback_path.c_str());
  };
  remote.on_splice_refused = [endpoint](const std::string& reason) {
    Log("collector %s: %s", endpoint.c_str(), reason.c_str());
  };
  std::unique_ptr<store::TraceWriter> writer =
      store::TraceWriter::Create(std::make_unique<store::RemoteOutput>(std::move(remote)), identity, options, error);
  if (writer == nullptr) return nullptr;
  return std::make_unique<FileSink>(std::move(writer), nullptr, "collector " + endpoint);
}

std::string ReadTokenFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[wire::kMaxTokenBytes + 2];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return "";
  std::string token(buf, static_cast<size_t>(n));
  const size_t end = token.find_first_of("\r\n");
  if (end != std::string::npos) token.resize(end);
  return token;
}

std::string LoadedVendorLibraries() {
  static constexpr const char* kSonames[] = {
#define TTRACE_VENDOR_NODE(library, index, soname, versioned) soname,
#include "shim/vendor_libraries.inc"
#undef TTRACE_VENDOR_NODE
      "libcuda.so.1", "libcudart.so."};
  std::string out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* arg) {
        const char* name = info->dlpi_name;
        if (name == nullptr || *name == '\0') return 0;
        const char* base = strrchr(name, '/');
        base = base != nullptr ? base + 1 : name;
        for (const char* soname : kSonames) {
          if (strncmp(base, soname, strlen(soname)) != 0) continue;
          char real[PATH_MAX];
          const char* file = realpath(name, real) != nullptr ? real : name;
          const char* file_base = strrchr(file, '/');
          std::string* list = static_cast<std::string*>(arg);
          const std::string entry = file_base != nullptr ? file_base + 1 : file;
          if ((" " + *list + " ").find(" " + entry + " ") == std::string::npos)
            *list += (list->empty() ? "" : " ") + entry;
          break;
        }
        return 0;
      },
      &out);
  return out;
}

std::string StreamPath(const Options& options, const EnvLookup& env, int pid) {
  const int32_t rank = EnvInt(env, "RANK");
  std::string dir = options.dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + "/" + (rank >= 0 ? "rank-" + std::to_string(rank) : "pid-" + std::to_string(pid)) + ".ttr";
}

store::StreamIdentity StreamIdentityFromEnv(const Options& options, const EnvLookup& env, int pid) {
  store::StreamIdentity id;
  id.rank = EnvInt(env, "RANK");
  id.world_size = EnvInt(env, "WORLD_SIZE");
  id.local_rank = EnvInt(env, "LOCAL_RANK");
  id.pid = static_cast<uint32_t>(pid);
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  id.start_unix_ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  id.job = options.job;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) id.host = host;
  return id;
}

}  // namespace ttrace::shim
