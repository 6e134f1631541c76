// The job manifest (format::ManifestEntry, docs/format.md "Manifest"): `manifest.ttm` in a store directory, a
// log of fixed-size entries that every writer of a stream in the directory appends to, one entry when the stream
// opens and one when it closes. Appends are single write(2) calls on an O_APPEND descriptor, so many processes
// (the ranks of a job on one file system, or the collector's connections) share it without locks; a torn entry
// (a writer killed mid-append) fails its checksum and is skipped by readers.
//
// Absl-free: the shim links it statically. Functions are thread-safe (no shared state).
#ifndef TTRACE_STORE_MANIFEST_H_
#define TTRACE_STORE_MANIFEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "ttrace/format.h"

namespace ttrace::store {

inline constexpr char kManifestName[] = "manifest.ttm";

// "ttrace <version>": the tool field of entries this build writes.
const char* ToolVersion();

// An entry for the stream `stream_name` whose header is `header`: identity fields filled, state kOpen, counts 0.
format::ManifestEntry MakeManifestEntry(const format::FileHeader& header, const std::string& stream_name,
                                        format::ManifestWriter writer, const std::string& libraries);

// Sets written_unix_ns and entry_crc, then appends the entry to `dir`/manifest.ttm in one write (creating it
// 0644, or `mode` where given), fsyncing it when `sync`. False + `error` on failure.
bool AppendManifestEntry(const std::string& dir, format::ManifestEntry* entry, bool sync, std::string* error,
                         unsigned mode = 0644);

struct Manifest {
  // The last intact entry of each stream name, in the order the names first appear.
  std::vector<format::ManifestEntry> streams;
  uint64_t skipped = 0;  // entries skipped: torn (bad magic or checksum) or of an unreadable size
};

// Reads `path` (a manifest.ttm). A missing file is an error (`error` says so); a torn or foreign entry is
// skipped and counted. Fields of entries written by a newer writer are read as far as this build knows them.
bool ReadManifest(const std::string& path, Manifest* out, std::string* error);

// One line of text for an entry: "rank-0.ttr closed rank=0 world=4 pid=123 host=h writer=shim frames=3
// records=77 bytes=187921 job=j tool=\"ttrace 0.1.0\" libraries=\"libcublas.so.13.1.0 ...\" ops=20 ..."; the
// counts of the EndRecord and the losses only where there are some.
std::string ManifestLine(const format::ManifestEntry& e);

// A NUL-padded char field as a string.
std::string FieldString(const char* field, size_t size);

}  // namespace ttrace::store

#endif  // TTRACE_STORE_MANIFEST_H_
