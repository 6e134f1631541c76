// End to end with the daemon: tp_mlp ranks under libttrace.so stream to `ttrace-collector` (TTRACE_COLLECTOR) and
// the collector's store checks clean, with its manifest and Prometheus metrics; a collector killed with SIGKILL
// mid-run: the job finishes, each rank says once that it writes locally, and every op is in the collector's store
// or the local one; a collector whose disk fills (RLIMIT_FSIZE, SIGXFSZ ignored: writes fail with EFBIG as on a
// full disk): the stream is cut there with the reason in its manifest, and the ranks fall back. The metrics are
// served on the loopback interface unless --metrics-listen names another address.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "analyzer/trace_model.h"
#include "gtest/gtest.h"
#include "tests/e2e_util.h"

namespace ttrace::e2e {
namespace {

std::string Bin(const std::string& name) { return BuildDir() + "/bin/" + name; }

// Starts the collector in the background (its pid in DIR/collector.pid, its log in DIR/collector.log) and waits
// for its socket. `prefix` wraps the command (limits).
bool StartCollector(const std::string& dir, const std::string& args, const std::string& prefix = "") {
  std::string out;
  Shell("rm -rf " + dir + " && mkdir -p " + dir + " && (" + prefix + " " + Bin("ttrace-collector") + " --listen unix:" +
            dir + "/c.sock --dir " + dir + "/store " + args + (prefix.empty() ? "" : "\"") + " > " + dir +
            "/collector.log 2>&1 & echo $! > " + dir + "/collector.pid)",
        &out);
  return Shell("for i in $(seq 200); do [ -S " + dir + "/c.sock ] && exit 0; sleep 0.05; done; exit 1", &out) == 0;
}

std::string Log(const std::string& dir) {
  std::string out;
  Shell("cat " + dir + "/collector.log", &out);
  return out;
}

// TTRACE_CONTEXT=0 unless `context`: the machine's libcupti (the toolkit's refuses to subscribe without a GPU, said
// once) must not speak in a test that asserts the shim has nothing to say about its collector.
std::string Job(const std::string& dir, int steps, int ranks = 2, bool context = false) {
  const std::string b = BuildDir();
  return "env LD_LIBRARY_PATH=" + b + "/simgpu/lib LD_PRELOAD=" + b + "/lib/libttrace.so TTRACE_DIR=" + dir +
         "/local TTRACE_JOB=cj TTRACE_FLUSH_MS=50 TTRACE_CONTEXT=" + (context ? "1" : "0") +
         " TTRACE_COLLECTOR=unix:" + dir + "/c.sock " + b + "/bin/simrun -n " + std::to_string(ranks) + " -- " + b +
         "/bin/tp_mlp --tp 2 --steps " + std::to_string(steps) + " --rdzv " + dir + "/rdzv";
}

// The local address of the TCP socket listening on `port` as /proc/net/tcp writes it ("0100007F": 127.0.0.1,
// "00000000": every interface), or "" when none listens there yet; waits up to 5 s for one.
std::string ListeningAddress(int port) {
  char want[8];
  snprintf(want, sizeof want, ":%04X", port);
  for (int tries = 0; tries < 100; ++tries) {
    std::ifstream in("/proc/net/tcp");
    std::string line;
    std::getline(in, line);  // the column names
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      if (state == "0A" && local.size() == 13 && local.compare(8, 5, want) == 0) return local.substr(0, 8);
    }
    usleep(50000);
  }
  return "";
}

std::string Metrics(int port) {
  std::string out;
  Shell("bash -c \"exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(port) +
            " && printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3\"",
        &out);
  return out;
}

bool StopCollector(const std::string& dir) {
  std::string out;
  return Shell("kill -TERM $(cat " + dir + "/collector.pid); for i in $(seq 100); do kill -0 $(cat " + dir +
                   "/collector.pid) 2>/dev/null || exit 0; sleep 0.05; done; exit 1",
               &out) == 0;
}

// GEMM and collective seqs of each rank's stream in `dir` (complete frames).
std::map<int, std::set<uint64_t>> Ops(const std::string& dir) {
  std::map<int, std::set<uint64_t>> out;
  analyzer::LoadOptions lo;
  lo.allow_truncated = true;
  auto set = analyzer::LoadTraceDir(dir, lo);
  if (!set.ok()) return out;
  for (const auto& t : set->ranks) {
    std::set<uint64_t>& seqs = out[t.rank()];  // also a rank whose stream here holds tensors only
    for (const auto& op : t.ops) seqs.insert(op.seq);
  }
  return out;
}

TEST(CollectorE2e, RanksStreamToTheCollectorAndItsStoreChecksClean) {
  const std::string dir = TempDir() + "/collector_clean";
  const int port = 20000 + getpid() % 20000;
  ASSERT_TRUE(StartCollector(dir, "--metrics-port " + std::to_string(port))) << Log(dir);
  std::string out;
  ASSERT_EQ(Shell(Job(dir, 2), &out), 0) << out;
  EXPECT_EQ(out.find("ttrace["), std::string::npos) << "the shim has nothing to say: " << out;
  EXPECT_EQ(Shell(Bin("ttrace") + " check " + dir + "/store/cj", &out), 0) << out;
  EXPECT_NE(out.find("verdict:     CLEAN"), std::string::npos) << out;
  EXPECT_NE(Shell("ls " + dir + "/local/*.ttr", &out), 0) << "nothing written locally: " << out;
  EXPECT_EQ(Shell(Bin("ttrace") + " dump " + dir + "/store/cj --manifest", &out), 0) << out;
  EXPECT_NE(out.find("rank-0.ttr closed rank=0 world=2"), std::string::npos) << out;
  EXPECT_NE(out.find("writer=collector"), std::string::npos) << out;
  EXPECT_EQ(Shell("bash -c \"exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(port) +
                      " && printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3\"",
                  &out),
            0)
      << out;
  EXPECT_NE(out.find("ttrace_collector_streams_closed_total{state=\"closed\"} 2"), std::string::npos) << out;
  EXPECT_NE(out.find("ttrace_collector_connections_total 2"), std::string::npos) << out;
  EXPECT_NE(out.find("ttrace_collector_frames_lost_total{reason=\"malformed stream\"} 0"), std::string::npos) << out;
  EXPECT_EQ(ListeningAddress(port), "0100007F") << "--metrics-port serves this machine only";
  EXPECT_NE(Log(dir).find("metrics on http://127.0.0.1:" + std::to_string(port) + "/metrics"), std::string::npos)
      << Log(dir);
  EXPECT_EQ(Shell("kill -TERM $(cat " + dir + "/collector.pid); for i in $(seq 100); do kill -0 $(cat " + dir +
                      "/collector.pid) 2>/dev/null || exit 0; sleep 0.05; done; exit 1",
                  &out),
            0);
  EXPECT_NE(Log(dir).find("ttrace-collector: stopped"), std::string::npos) << Log(dir);
}

// Without a GPU the toolkit's libcupti refuses every rank's subscription. Streaming to the collector there is no
// trace directory to keep a marker in (nothing is written locally), so the ranks of the job on this host agree
// through an abstract unix socket named like the marker: one line for the job's four ranks (TP 2 x DP 2; the
// ranks meet the refusal before their communicator's set-up, which waits for all four, so none has exited yet).
// Before: one line per rank (4).
TEST(CollectorE2e, CuptiRefusalIsSaidOnceForAJobStreamingToTheCollector) {
  void* real = dlopen("libcupti.so.13", RTLD_LAZY | RTLD_LOCAL);
  if (real == nullptr) GTEST_SKIP() << "no libcupti.so.13 on this machine";
  if (access("/dev/nvidia0", F_OK) == 0) GTEST_SKIP() << "a GPU: CUPTI subscribes, nothing to say";
  const std::string dir = TempDir() + "/collector_cupti";
  ASSERT_TRUE(StartCollector(dir, "")) << Log(dir);
  std::string out;
  ASSERT_EQ(Shell(Job(dir, 2, 4, true), &out), 0) << out;
  size_t lines = 0;
  for (size_t at = out.find("cannot be used (cuptiSubscribe: "); at != std::string::npos;
       at = out.find("cannot be used (cuptiSubscribe: ", at + 1))
    ++lines;
  EXPECT_EQ(lines, 1u) << out;
  EXPECT_NE(out.find("(said once for the job on this host)"), std::string::npos) << out;
  EXPECT_NE(Shell("ls " + dir + "/local", &out), 0) << "nothing written locally: " << out;
  EXPECT_TRUE(StopCollector(dir));
  EXPECT_EQ(Shell(Bin("ttrace") + " check " + dir + "/store/cj", &out), 0) << out;
}

TEST(CollectorE2e, MetricsListenWhereTold) {
  const std::string dir = TempDir() + "/collector_metrics";
  const int port = 20000 + (getpid() + 1) % 20000;
  ASSERT_TRUE(StartCollector(dir, "--metrics-listen 0.0.0.0:" + std::to_string(port))) << Log(dir);
  EXPECT_EQ(ListeningAddress(port), "00000000") << Log(dir);
  EXPECT_NE(Metrics(port).find("ttrace_collector_connections_total 0"), std::string::npos) << Metrics(port);
  EXPECT_TRUE(StopCollector(dir));

  // Port 0: a free port, which the log names.
  ASSERT_TRUE(StartCollector(dir, "--metrics-listen 127.0.0.1:0")) << Log(dir);
  const std::string said = "metrics on http://127.0.0.1:";
  std::string log;
  for (int i = 0; i < 100 && (log = Log(dir)).find(said) == std::string::npos; ++i) usleep(50000);
  const size_t at = log.find(said);
  ASSERT_NE(at, std::string::npos) << log;
  const int any = atoi(log.c_str() + at + said.size());
  EXPECT_GT(any, 0) << log;
  EXPECT_EQ(ListeningAddress(any), "0100007F") << log;
  EXPECT_NE(Metrics(any).find("ttrace_collector_connections_total 0"), std::string::npos);
  EXPECT_TRUE(StopCollector(dir));

  std::string out;
  for (const char* bad : {"1.2.3.4", "localhost:70000", ":9464", "unix:/tmp/m"}) {
    EXPECT_EQ(Shell(Bin("ttrace-collector") + " --listen unix:" + dir + "/u.sock --dir " + dir +
                        "/store --metrics-listen " + bad,
                    &out),
              2)
        << bad;
    EXPECT_NE(out.find("bad --metrics-listen"), std::string::npos) << bad << ": " << out;
  }
}

TEST(CollectorE2e, KilledCollectorTheJobFinishesAndEveryOpIsSomewhere) {
  const std::string dir = TempDir() + "/collector_kill9";
  ASSERT_TRUE(StartCollector(dir, "")) << Log(dir);
  std::string out;
  // Kill it once rank 0's stream has a few frames in the collector's store, while both ranks still stream: 3,000
  // steps (the test took 7 s with them on a loaded machine, 0.8 s with 300). With 300, a loaded machine (CI, builds)
  // once let one rank finish its stream before the kill: one rank said the line, not two.
  const int rc = Shell(Job(dir, 3000) + " & J=$!; for i in $(seq 400); do [ $(stat -c %s " + dir +
                           "/store/cj/rank-0.ttr 2>/dev/null || echo 0) -gt 100000 ] && break; sleep 0.02; done; "
                           "kill -KILL $(cat " + dir + "/collector.pid); wait $J",
                       &out);
  EXPECT_EQ(rc, 0) << "the job is unaffected: " << out;
  size_t said = 0;
  for (size_t at = out.find("collector unix:"); at != std::string::npos; at = out.find("collector unix:", at + 1)) ++said;
  EXPECT_EQ(said, 2u) << "each rank says it once: " << out;
  EXPECT_NE(out.find("writing the stream to " + dir + "/local/rank-"), std::string::npos) << out;
  const auto collected = Ops(dir + "/store/cj");
  const auto local = Ops(dir + "/local");
  ASSERT_EQ(local.size(), 2u) << out;
  EXPECT_EQ(Shell(Bin("ttrace") + " dump " + dir + "/local --manifest", &out), 0) << out;
  EXPECT_NE(out.find("failover"), std::string::npos) << out;
  analyzer::LoadOptions lo;
  lo.allow_truncated = true;
  auto set = analyzer::LoadTraceDir(dir + "/local", lo);
  ASSERT_TRUE(set.ok()) << set.status();
  for (const auto& t : set->ranks) {
    ASSERT_TRUE(t.ended) << "rank " << t.rank() << ": the local stream ends with the end record";
    EXPECT_TRUE(t.header.flags & format::kFileFailover);
    std::set<uint64_t> all = local.at(t.rank());
    if (collected.count(t.rank())) all.insert(collected.at(t.rank()).begin(), collected.at(t.rank()).end());
    EXPECT_EQ(all.size(), t.end.ops) << "rank " << t.rank() << ": every op in one store or the other";
  }
  EXPECT_FALSE(collected.empty()) << "the collector had the start";
}

TEST(CollectorE2e, FullDiskAtTheCollectorCutsTheStreamAndTheRanksFallBack) {
  const std::string dir = TempDir() + "/collector_full";
  // 192 KiB per file: the index and manifest fit, each rank's stream does not.
  ASSERT_TRUE(StartCollector(dir, "", "bash -c \"trap '' XFSZ; ulimit -f 192; exec")) << Log(dir);
  std::string out;
  ASSERT_EQ(Shell(Job(dir, 8), &out), 0) << out;
  EXPECT_NE(out.find("writing the stream to " + dir + "/local/rank-"), std::string::npos) << out;
  Shell("kill -TERM $(cat " + dir + "/collector.pid)", &out);
  EXPECT_NE(Log(dir).find("write failed (disk full or I/O error)"), std::string::npos) << Log(dir);
  EXPECT_EQ(Shell(Bin("ttrace") + " dump " + dir + "/store/cj --manifest", &out), 0) << out;
  EXPECT_NE(out.find(" cut "), std::string::npos) << out;
  EXPECT_NE(out.find("lost=\"write failed (disk full or I/O error)\""), std::string::npos) << out;
  const auto collected = Ops(dir + "/store/cj");
  const auto local = Ops(dir + "/local");
  ASSERT_EQ(local.size(), 2u);
  for (const auto& [rank, ops] : local) {
    std::set<uint64_t> all = ops;
    if (collected.count(rank)) all.insert(collected.at(rank).begin(), collected.at(rank).end());
    EXPECT_EQ(*all.rbegin() + 1, all.size()) << "rank " << rank << ": no op missing";
  }
}

}  // namespace
}  // namespace ttrace::e2e
