// The frame is compressed at zstd level 1: the harnesses spend their time in the reader, not in the encoder.
#include "fuzz/fuzz_stream.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "store/crc32c.h"
#include "ttrace/format.h"

namespace ttrace::fuzz {

using format::FileHeader;
using format::FrameHeader;
using format::RecordHeader;

namespace {

uint32_t CountRecords(const std::string& records) {
  uint32_t n = 0;
  size_t pos = 0;
  while (records.size() - pos >= sizeof(RecordHeader)) {
    RecordHeader rh;
    memcpy(&rh, records.data() + pos, sizeof rh);
    if (rh.size > records.size() - pos || rh.body_offset < sizeof rh || rh.body_offset > rh.size) break;
    pos += rh.size;
    ++n;
  }
  return n;
}

}  // namespace

void RemoveTree(const std::string& path) {
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::string child = path + "/" + name;
      struct stat st;
      if (lstat(child.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        RemoveTree(child);
      } else {
        unlink(child.c_str());
      }
    }
    closedir(d);
  }
  rmdir(path.c_str());
}

std::string WrapRecords(const std::string& records) {
  FileHeader h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, format::kFileMagic, sizeof h.magic);
  h.version = format::kFormatVersion;
  h.header_size = sizeof h;
  h.rank = 0;
  h.world_size = 1;
  h.local_rank = 0;
  h.pid = 1;
  strcpy(h.job, "fuzz");
  strcpy(h.host, "fuzz");
  h.header_crc = store::Crc32c(&h, offsetof(FileHeader, header_crc));
  std::string out(reinterpret_cast<const char*>(&h), sizeof h);
  if (records.empty()) return out;

  std::string compressed(ZSTD_compressBound(records.size()), '\0');
  size_t n = ZSTD_compress(compressed.data(), compressed.size(), records.data(), records.size(), 1);
  if (ZSTD_isError(n)) abort();  // cannot happen with a buffer of compressBound bytes
  compressed.resize(n);
  FrameHeader fh;
  fh.magic = format::kFrameMagic;
  fh.frame_index = 0;
  fh.compressed_size = static_cast<uint32_t>(n);
  fh.uncompressed_size = static_cast<uint32_t>(records.size());
  fh.record_count = CountRecords(records);
  fh.payload_crc = store::Crc32c(compressed.data(), n);
  fh.reserved = 0;
  fh.header_crc = store::Crc32c(&fh, offsetof(FrameHeader, header_crc));
  out.append(reinterpret_cast<const char*>(&fh), sizeof fh);
  out += compressed;
  return out;
}

std::string StreamFromInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  if (size >= sizeof format::kFileMagic && memcmp(data, format::kFileMagic, sizeof format::kFileMagic) == 0)
    return input;
  return WrapRecords(input);
}

std::string RecordsOf(const std::string& stream) {
  FileHeader h;
  if (stream.size() < sizeof h) return "";
  memcpy(&h, stream.data(), sizeof h);
  std::string records;
  size_t pos = h.header_size;
  while (pos < stream.size()) {
    FrameHeader fh;
    if (stream.size() - pos < sizeof fh) return "";
    memcpy(&fh, stream.data() + pos, sizeof fh);
    pos += sizeof fh;
    if (fh.magic != format::kFrameMagic || stream.size() - pos < fh.compressed_size) return "";
    std::string frame(fh.uncompressed_size, '\0');
    size_t n = ZSTD_decompress(frame.data(), frame.size(), stream.data() + pos, fh.compressed_size);
    if (ZSTD_isError(n) || n != frame.size()) return "";
    records += frame;
    pos += fh.compressed_size;
  }
  return records;
}

bool WriteFile(const std::string& path, const std::string& bytes) {
  FILE* f = fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  bool ok = fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return fclose(f) == 0 && ok;
}

const std::string& ScratchDir() {
  static const std::string* dir = [] {
    const char* tmp = getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/ttrace-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      perror("mkdtemp");
      abort();
    }
    atexit([] { RemoveTree(ScratchDir()); });
    return new std::string(pattern);
  }();
  return *dir;
}

}  // namespace ttrace::fuzz
