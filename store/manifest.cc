// Entries are appended, never rewritten in place: "rewritten at the close" is a later entry of the same stream
// name, so a writer killed at any point leaves every earlier entry intact.
#include "store/manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <map>

#include "store/crc32c.h"

#ifndef TTRACE_VERSION
#define TTRACE_VERSION "unknown"
#endif

namespace ttrace::store {
namespace {

void CopyPadded(char* dst, size_t n, const std::string& src) {
  memset(dst, 0, n);
  memcpy(dst, src.data(), std::min(src.size(), n - 1));
}

uint64_t UnixNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

constexpr size_t kCrcBytes = offsetof(format::ManifestEntry, entry_crc);

}  // namespace

const char* ToolVersion() { return "ttrace " TTRACE_VERSION; }

std::string FieldString(const char* field, size_t size) { return std::string(field, strnlen(field, size)); }

format::ManifestEntry MakeManifestEntry(const format::FileHeader& header, const std::string& stream_name,
                                        format::ManifestWriter writer, const std::string& libraries) {
  format::ManifestEntry e;
  memset(&e, 0, sizeof e);
  memcpy(e.magic, format::kManifestMagic, sizeof e.magic);
  e.version = format::kManifestVersion;
  e.entry_size = sizeof e;
  e.state = static_cast<uint32_t>(format::ManifestState::kOpen);
  e.writer = static_cast<uint32_t>(writer);
  e.rank = header.rank;
  e.world_size = header.world_size;
  e.local_rank = header.local_rank;
  e.pid = header.pid;
  e.start_unix_ns = header.start_unix_ns;
  CopyPadded(e.job, sizeof e.job, FieldString(header.job, sizeof header.job));
  CopyPadded(e.host, sizeof e.host, FieldString(header.host, sizeof header.host));
  CopyPadded(e.stream, sizeof e.stream, stream_name);
  CopyPadded(e.tool, sizeof e.tool, ToolVersion());
  CopyPadded(e.libraries, sizeof e.libraries, libraries);
  if (header.flags & format::kFileFailover) e.flags |= format::kManifestFailover;
  return e;
}

bool AppendManifestEntry(const std::string& dir, format::ManifestEntry* entry, bool sync, std::string* error,
                         unsigned mode) {
  entry->written_unix_ns = UnixNs();
  entry->entry_crc = Crc32c(entry, kCrcBytes);
  const std::string path = (dir.empty() ? std::string(".") : dir) + "/" + kManifestName;
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, mode);
  if (fd < 0) {
    if (error) *error = "cannot open " + path + ": " + strerror(errno);
    return false;
  }
  ssize_t w;
  do {
    w = ::write(fd, entry, sizeof *entry);  // one write: O_APPEND places it whole, after every earlier one
  } while (w < 0 && errno == EINTR);
  bool ok = w == static_cast<ssize_t>(sizeof *entry);
  if (!ok && error) *error = "cannot append to " + path + ": " + (w < 0 ? strerror(errno) : "short write");
  if (ok && sync && ::fsync(fd) != 0) {
    ok = false;
    if (error) *error = "cannot sync " + path + ": " + strerror(errno);
  }
  ::close(fd);
  return ok;
}

bool ReadManifest(const std::string& path, Manifest* out, std::string* error) {
  *out = Manifest{};
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (error) *error = "cannot open " + path + ": " + strerror(errno);
    return false;
  }
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes.append(buf, static_cast<size_t>(n));
    if (bytes.size() > (256u << 20)) break;  // a manifest is a few KiB per stream: anything larger is not one
  }
  ::close(fd);
  std::map<std::string, size_t> slot;
  size_t pos = 0;
  while (pos + 16 <= bytes.size()) {
    const char* at = bytes.data() + pos;
    uint32_t size;
    memcpy(&size, at + offsetof(format::ManifestEntry, entry_size), sizeof size);
    if (memcmp(at, format::kManifestMagic, sizeof format::kManifestMagic) != 0 || size < sizeof(format::ManifestEntry) ||
        size > 65536 || pos + size > bytes.size()) {
      // Not an entry here (a torn append): resynchronize on the next magic.
      ++out->skipped;
      size_t next = bytes.find(std::string(format::kManifestMagic, sizeof format::kManifestMagic), pos + 1);
      if (next == std::string::npos) break;
      pos = next;
      continue;
    }
    format::ManifestEntry e;
    memcpy(&e, at, sizeof e);
    // A larger entry (a newer writer) checks its CRC over its own size, which this build cannot know to be the
    // same layout: its known prefix is trusted when the CRC over the whole entry matches at its end.
    uint32_t crc;
    memcpy(&crc, at + size - sizeof crc, sizeof crc);
    if (Crc32c(at, size - sizeof crc) != crc) {
      // A damaged entry, or a torn one followed by the next append: resynchronize on the next magic.
      ++out->skipped;
      size_t next = bytes.find(std::string(format::kManifestMagic, sizeof format::kManifestMagic), pos + 1);
      if (next == std::string::npos) break;
      pos = next;
      continue;
    }
    e.job[sizeof e.job - 1] = e.host[sizeof e.host - 1] = e.stream[sizeof e.stream - 1] = '\0';
    e.tool[sizeof e.tool - 1] = e.libraries[sizeof e.libraries - 1] = '\0';
    const std::string name = FieldString(e.stream, sizeof e.stream);
    auto [it, fresh] = slot.emplace(name, out->streams.size());
    if (fresh)
      out->streams.push_back(e);
    else
      out->streams[it->second] = e;
    pos += size;
  }
  if (pos < bytes.size() && pos + 16 > bytes.size()) ++out->skipped;
  return true;
}

std::string ManifestLine(const format::ManifestEntry& e) {
  const char* state = e.state == static_cast<uint32_t>(format::ManifestState::kOpen)     ? "open"
                      : e.state == static_cast<uint32_t>(format::ManifestState::kClosed) ? "closed"
                      : e.state == static_cast<uint32_t>(format::ManifestState::kCut)    ? "cut"
                                                                                          : "unknown";
  std::string s = FieldString(e.stream, sizeof e.stream) + " " + state + " rank=" + std::to_string(e.rank) +
                  " world=" + std::to_string(e.world_size) + " pid=" + std::to_string(e.pid) + " host=" +
                  FieldString(e.host, sizeof e.host) + " writer=" +
                  (e.writer == static_cast<uint32_t>(format::ManifestWriter::kCollector) ? "collector" : "shim") +
                  " frames=" + std::to_string(e.frames) + " records=" + std::to_string(e.records) +
                  " bytes=" + std::to_string(e.bytes) + " job=" + FieldString(e.job, sizeof e.job) + " tool=\"" +
                  FieldString(e.tool, sizeof e.tool) + "\" libraries=\"" + FieldString(e.libraries, sizeof e.libraries) +
                  "\"";
  if (e.flags & format::kManifestHasEnd) {
    s += " ops=" + std::to_string(e.ops) + " tensors=" + std::to_string(e.tensors) +
         " payloads_dropped=" + std::to_string(e.payloads_dropped);
    for (uint32_t r = 0; r < format::kDropReasons; ++r)
      if (e.dropped[r] != 0) s += std::string(" [") + format::DropReasonName(r) + "]=" + std::to_string(e.dropped[r]);
  }
  if (e.frames_lost != 0 || e.lost_reason != 0)
    s += " frames_lost=" + std::to_string(e.frames_lost) + " bytes_lost=" + std::to_string(e.bytes_lost) +
         " lost=\"" + format::LossReasonName(e.lost_reason) + "\"";
  if (e.flags & format::kManifestFailover) s += " failover";
  return s;
}

}  // namespace ttrace::store
