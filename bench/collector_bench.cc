// Collector ingest: aggregate MB/s of frames from N concurrent clients (store::RemoteOutput, the shim's client)
// through loopback TCP (or a unix socket) into an in-process collector writing its store under DIR (default
// /dev/shm, so the disk is not what is measured). Each client sends the same prebuilt frames (1 MiB of random
// bytes each, stored incompressible as real compressed frames are), numbered for its own stream. Reports wall
// time, aggregate rate, the process's CPU time (clients and collector together) and MB per CPU second, and losses
// (frames not acknowledged, frames the collector lost).
// Usage: collector_bench [MiB per run] [unix|tcp] [DIR] [CLIENTS,...] [OPTION,...]
//   (default 1024 tcp /dev/shm 1,8,64). Options: `send`: unix clients send by send(2), not splice(2);
//   `split`: clients on CPU 0 and the collector on CPU 1, where an idle machine's scheduler puts them (on a loaded
//   one they often share a CPU, which hides what crossing CPUs costs).
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collector/server.h"
#include "store/crc32c.h"
#include "store/remote_output.h"
#include "store/trace_writer.h"

namespace {

using namespace ttrace;

struct Frame {
  format::FrameHeader header;
  format::IndexEntry entry;
};

// CPU seconds and context switches (voluntary: the thread slept, waiting; involuntary: preempted) of this process
// (clients and collector, user and system) or of the calling thread: what a run costs whatever else the machine
// runs; wall-clock MB/s on a shared machine measures the other load as much as the collector.
struct Usage {
  double cpu = 0;
  uint64_t waits = 0, preempted = 0;
  Usage& operator-=(const Usage& o) {
    cpu -= o.cpu;
    waits -= o.waits;
    preempted -= o.preempted;
    return *this;
  }
  Usage& operator+=(const Usage& o) {
    cpu += o.cpu;
    waits += o.waits;
    preempted += o.preempted;
    return *this;
  }
};

Usage GetUsage(int who) {
  rusage u{};
  getrusage(who, &u);
  Usage out;
  out.cpu = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
            1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  out.waits = static_cast<uint64_t>(u.ru_nvcsw);
  out.preempted = static_cast<uint64_t>(u.ru_nivcsw);
  return out;
}

// Headers of `count` frames over `payload`, numbered 0..count-1 (every frame carries the same payload).
std::vector<Frame> MakeFrames(int count, const std::string& payload) {
  std::vector<Frame> frames(static_cast<size_t>(count));
  const uint32_t crc = store::Crc32c(payload.data(), payload.size());
  for (int i = 0; i < count; ++i) {
    format::FrameHeader fh{};
    fh.magic = format::kFrameMagic;
    fh.frame_index = static_cast<uint32_t>(i);
    fh.compressed_size = static_cast<uint32_t>(payload.size());
    fh.uncompressed_size = static_cast<uint32_t>(payload.size());
    fh.record_count = 1;
    fh.payload_crc = crc;
    fh.header_crc = store::Crc32c(&fh, offsetof(format::FrameHeader, header_crc));
    Frame& f = frames[static_cast<size_t>(i)];
    f.header = fh;
    f.entry = format::IndexEntry{};
    f.entry.frame_index = fh.frame_index;
    f.entry.record_count = 1;
    f.entry.min_seq = format::kNoSeq;
    f.entry.compressed_size = fh.compressed_size;
    f.entry.frame_header_crc = fh.header_crc;
  }
  return frames;
}

void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) perror("sched_setaffinity");
}

void Run(int clients, size_t total_mib, const std::string& kind, const std::string& dir, bool splice, bool split) {
  constexpr size_t kFrame = 1u << 20;
  const int per_client = std::max<int>(1, static_cast<int>(total_mib / static_cast<size_t>(clients)));
  std::string payload(kFrame, '\0');
  std::mt19937_64 rng(1);
  for (size_t i = 0; i + 8 <= kFrame; i += 8) {
    const uint64_t v = rng();
    memcpy(&payload[i], &v, 8);
  }
  const std::vector<Frame> frames = MakeFrames(per_client, payload);
  const std::string root = dir + "/ttrace_collector_bench_" + std::to_string(getpid());
  collector::ServerOptions options;
  std::string error;
  const std::string listen = kind == "unix" ? "unix:" + root + ".sock" : "tcp:127.0.0.1:0";
  if (!store::ParseEndpoint(listen, &options.listen, &error)) {
    fprintf(stderr, "%s\n", error.c_str());
    exit(1);
  }
  options.dir = root;
  options.session.require_token = true;
  options.session.token = "bench-token";
  collector::Metrics metrics;
  auto server = collector::Server::Start(options, &metrics, nullptr, &error);
  if (server == nullptr) {
    fprintf(stderr, "%s\n", error.c_str());
    exit(1);
  }
  std::thread serve([&] {
    if (split) PinTo(1);  // the connection threads it starts inherit it
    server->Run();
  });
  const std::string endpoint =
      kind == "unix" ? listen : "tcp:127.0.0.1:" + std::to_string(server->port());
  std::vector<uint64_t> acked(static_cast<size_t>(clients));
  std::vector<int> failed(static_cast<size_t>(clients));
  const auto t0 = std::chrono::steady_clock::now();
  const Usage process0 = GetUsage(RUSAGE_SELF);
  std::vector<Usage> client_usage(static_cast<size_t>(clients));
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      if (split) PinTo(0);
      const Usage start = GetUsage(RUSAGE_THREAD);
      store::RemoteOptions ro;
      ro.endpoint = endpoint;
      ro.token = "bench-token";
      ro.timeout_ms = 30000;
      ro.splice = splice;
      ro.fallback_path = root + "_fallback/rank-" + std::to_string(c) + ".ttr";
      store::RemoteOutput out(ro);
      store::StreamIdentity id;
      id.rank = c;
      id.job = "bench";
      id.host = "local";
      std::string err;
      out.Begin(store::MakeFileHeader(id), &err);
      std::string scratch(sizeof(format::FrameHeader), '\0');
      scratch += payload;
      for (const Frame& f : frames) {
        memcpy(&scratch[0], &f.header, sizeof f.header);
        out.WriteFrame(scratch.data(), scratch.size(), f.entry, &err);
      }
      store::StreamSummary summary;
      summary.frames = frames.size();
      out.Finish(summary, &err);
      acked[static_cast<size_t>(c)] = out.acked();
      failed[static_cast<size_t>(c)] = out.failed_over();
      client_usage[static_cast<size_t>(c)] = GetUsage(RUSAGE_THREAD);
      client_usage[static_cast<size_t>(c)] -= start;
    });
  }
  for (auto& t : threads) t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Usage process = GetUsage(RUSAGE_SELF);
  process -= process0;
  Usage client;
  for (const Usage& u : client_usage) client += u;
  Usage collector = process;  // the collector's threads: the process less the clients
  collector -= client;
  const double cpu = process.cpu;
  server->Stop();
  serve.join();
  server.reset();
  uint64_t acks = 0, fails = 0, lost = 0;
  for (int c = 0; c < clients; ++c) {
    acks += acked[static_cast<size_t>(c)];
    fails += failed[static_cast<size_t>(c)] != 0;
  }
  for (const auto& l : metrics.frames_lost) lost += l.load();
  const double mib = static_cast<double>(clients) * per_client * (kFrame + 80) / (1 << 20);
  const double gib = mib / 1024;
  const std::string label = kind + (kind == "unix" && !splice ? "/send" : "") + (split ? "/split" : "");
  printf("%-15s clients %3d  frames %6d  %8.0f MiB  %6.2f s  %7.0f MB/s  %5.2f CPU s  %6.0f MB/CPU s  acked %llu/%llu  "
         "failovers %llu  lost %llu\n",
         label.c_str(), clients, clients * per_client, mib, s, mib * 1.048576 / s, cpu, mib * 1.048576 / cpu,
         static_cast<unsigned long long>(acks),
         static_cast<unsigned long long>(clients) * per_client, static_cast<unsigned long long>(fails),
         static_cast<unsigned long long>(lost));
  printf("                per GiB: clients %.2f CPU s, %.0f waits, %.0f preempted; collector %.2f CPU s, %.0f waits, %.0f preempted\n",
         client.cpu / gib, static_cast<double>(client.waits) / gib, static_cast<double>(client.preempted) / gib,
         collector.cpu / gib, static_cast<double>(collector.waits) / gib,
         static_cast<double>(collector.preempted) / gib);
  const std::string rm = "rm -rf '" + root + "' '" + root + "_fallback'";
  if (system(rm.c_str()) != 0) fprintf(stderr, "cannot remove %s\n", root.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? static_cast<size_t>(atol(argv[1])) : 1024;
  const std::string kind = argc > 2 ? argv[2] : "tcp";
  const std::string dir = argc > 3 ? argv[3] : "/dev/shm";
  std::vector<int> counts = {1, 8, 64};
  if (argc > 4) {
    counts.clear();
    std::stringstream list(argv[4]);
    for (std::string c; std::getline(list, c, ',');) counts.push_back(std::max(1, atoi(c.c_str())));
  }
  bool splice = true, split = false;
  if (argc > 5) {
    std::stringstream list(argv[5]);
    for (std::string o; std::getline(list, o, ',');) {
      if (o == "send") splice = false;
      else if (o == "split") split = true;
      else fprintf(stderr, "unknown option %s\n", o.c_str());
    }
  }
  for (int clients : counts) Run(clients, mib, kind, dir, splice, split);
  return 0;
}
