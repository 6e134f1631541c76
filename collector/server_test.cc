// The collector over real sockets, with store::RemoteOutput (the shim's client) on the other side: a unix socket
// created 0600; 64 concurrent rank streams, nothing lost; TCP only with the right token (a wrong one: the client
// writes its local file, says why); a malformed client closed while another streams on; a collector that goes
// away mid-stream: the client fails over, and every record is in one store or the other; a collector that stops
// reading: the client's send gives up after its time-out (spliced or not) and every record is in its local file;
// a kernel refusing splice(2): the client goes on by send(2), says so once, loses nothing.
#include "collector/server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/scratch_dir.h"
#include "store/crc32c.h"
#include "store/manifest.h"
#include "store/remote_output.h"
#include "store/trace_reader.h"
#include "store/trace_writer.h"

// The kernel refusing splice(2), on demand: this program's own splice() (the store library is linked statically,
// so its call resolves to this definition, not libc's) fails with EINVAL while g_refuse_splice is set, else makes
// the system call. g_splice_calls counts the calls made while refusing.
std::atomic<bool> g_refuse_splice{false};
std::atomic<int> g_refused_splices{0};
extern "C" ssize_t splice(int fd_in, loff_t* off_in, int fd_out, loff_t* off_out, size_t len, unsigned int flags) {
  if (g_refuse_splice.load()) {
    g_refused_splices.fetch_add(1);
    errno = EINVAL;
    return -1;
  }
  return syscall(SYS_splice, fd_in, off_in, fd_out, off_out, len, flags);
}

namespace ttrace::collector {
namespace {

std::string TempDir(const std::string& name) { return ttrace::test_support::TestScratchPath(name); }

store::StreamIdentity Identity(int rank) {
  store::StreamIdentity id;
  id.rank = rank;
  id.world_size = 64;
  id.pid = 7000 + static_cast<uint32_t>(rank);
  id.start_unix_ns = 1700000000000000000ull + static_cast<uint64_t>(rank);
  id.job = "job-s";
  id.host = "node-2";
  return id;
}

void Op(store::TraceWriter* w, int i) {
  format::GemmRecord g{};
  g.seq = static_cast<uint64_t>(i);
  ASSERT_TRUE(w->Append(format::RecordType::kGemm, g));
  std::vector<float> data(256, static_cast<float>(i) * 0.5f);
  format::TensorRecord t{};
  t.seq = g.seq;
  t.slot = 3;
  t.dtype = static_cast<uint8_t>(format::DType::kF32);
  t.rows = 256;
  t.cols = t.batch = 1;
  t.payload_bytes = data.size() * 4;
  ASSERT_TRUE(w->Append(format::RecordType::kTensor, t, data.data(), t.payload_bytes));
}

void End(store::TraceWriter* w, int ops) {
  format::EndRecord e{};
  e.reason = 1;
  e.ops = static_cast<uint64_t>(ops);
  ASSERT_TRUE(w->Append(format::RecordType::kEnd, e));
}

// GEMM seqs in a stream (complete frames), and whether it has an end record and which header flags.
struct Read {
  std::multiset<uint64_t> gemms;
  bool ended = false;
  uint32_t flags = 0;
  bool ok = false;
};
Read ReadStream(const std::string& path) {
  Read out;
  store::ReaderOptions ro;
  ro.allow_truncated = true;
  auto reader = store::TraceReader::Open(path, ro);
  if (!reader.ok()) return out;
  out.flags = (*reader)->header().flags;
  store::RecordView r;
  while (true) {
    auto more = (*reader)->Next(&r);
    if (!more.ok()) return out;
    if (!*more) break;
    out.ended = r.type == format::RecordType::kEnd;
    if (r.type == format::RecordType::kGemm) out.gemms.insert(r.Body<format::GemmRecord>().seq);
  }
  out.ok = true;
  return out;
}

class Running {
 public:
  Running(const ServerOptions& options, std::string* error) {
    server_ = Server::Start(options, &metrics_, &log_, error);
    if (server_ != nullptr) thread_ = std::thread([this] { server_->Run(); });
  }
  ~Running() { Stop(); }
  void Stop() {
    if (server_ == nullptr) return;
    server_->Stop();
    thread_.join();
    server_.reset();
  }
  Server* server() { return server_.get(); }
  Metrics& metrics() { return metrics_; }
  std::string log() const { return log_.str(); }

 private:
  Metrics metrics_;
  std::ostringstream log_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

store::RemoteOptions Remote(const std::string& endpoint, const std::string& fallback, std::string* failover) {
  store::RemoteOptions o;
  o.endpoint = endpoint;
  o.timeout_ms = 5000;
  o.fallback_path = fallback;
  o.on_failover = [failover](const std::string& why) { *failover = why; };
  return o;
}

TEST(Server, UnixSocketIsOwnerOnlyAndSixtyFourStreamsArriveWhole) {
  const std::string dir = TempDir("sixtyfour");
  ServerOptions options;
  std::string error;
  ASSERT_TRUE(store::ParseEndpoint("unix:" + dir + "/c.sock", &options.listen, &error)) << error;
  options.dir = dir + "/store";
  Running running(options, &error);
  ASSERT_NE(running.server(), nullptr) << error;
  struct stat st;
  ASSERT_EQ(stat((dir + "/c.sock").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  constexpr int kClients = 64, kOps = 150;
  std::vector<std::string> failovers(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      store::WriterOptions wo;
      wo.frame_bytes = 8192;
      std::string err;
      auto w = store::TraceWriter::Create(
          std::make_unique<store::RemoteOutput>(Remote("unix:" + dir + "/c.sock",
                                                       dir + "/local/rank-" + std::to_string(c) + ".ttr",
                                                       &failovers[c])),
          Identity(c), wo, &err);
      ASSERT_NE(w, nullptr) << err;
      for (int i = 0; i < kOps; ++i) Op(w.get(), i);
      End(w.get(), kOps);
      EXPECT_TRUE(w->Close(&err)) << err;
    });
  }
  for (auto& t : clients) t.join();
  running.Stop();
  store::Manifest m;
  ASSERT_TRUE(store::ReadManifest(dir + "/store/job-s/manifest.ttm", &m, &error)) << error;
  EXPECT_EQ(m.streams.size(), static_cast<size_t>(kClients));
  uint64_t frames = 0;
  for (int c = 0; c < kClients; ++c) {
    EXPECT_EQ(failovers[c], "") << c;
    const Read r = ReadStream(dir + "/store/job-s/rank-" + std::to_string(c) + ".ttr");
    ASSERT_TRUE(r.ok) << c;
    EXPECT_TRUE(r.ended) << c;
    EXPECT_EQ(r.gemms.size(), static_cast<size_t>(kOps)) << c;
    EXPECT_EQ(std::set<uint64_t>(r.gemms.begin(), r.gemms.end()).size(), static_cast<size_t>(kOps)) << c;
  }
  for (const auto& e : m.streams) {
    EXPECT_EQ(e.state, static_cast<uint32_t>(format::ManifestState::kClosed));
    frames += e.frames;
  }
  EXPECT_EQ(running.metrics().frames.load(), frames);
  EXPECT_EQ(running.metrics().closed_clean.load(), static_cast<uint64_t>(kClients));
  EXPECT_EQ(running.metrics().connections.load(), static_cast<uint64_t>(kClients));
  EXPECT_EQ(running.metrics().records.load(), static_cast<uint64_t>(kClients) * (2 * kOps + 1));
  const std::string text = running.metrics().Render();
  EXPECT_NE(text.find("ttrace_collector_streams_closed_total{state=\"closed\"} 64"), std::string::npos) << text;
  struct stat gone;
  EXPECT_NE(stat((dir + "/local").c_str(), &gone), 0) << "no client fell back";
}

TEST(Server, TcpNeedsTheRightToken) {
  const std::string dir = TempDir("tcp");
  ServerOptions options;
  std::string error;
  ASSERT_TRUE(store::ParseEndpoint("tcp:127.0.0.1:0", &options.listen, &error));
  options.dir = dir + "/store";
  EXPECT_EQ(Server::Start(options, nullptr, nullptr, &error), nullptr);
  EXPECT_NE(error.find("TCP needs a token"), std::string::npos) << error;
  options.session.require_token = true;
  options.session.token = "0123456789abcdef";
  Running running(options, &error);
  ASSERT_NE(running.server(), nullptr) << error;
  const std::string endpoint = "tcp:127.0.0.1:" + std::to_string(running.server()->port());
  for (const std::string token : {"0123456789abcdeF", "", "0123456789abcdef"}) {
    std::string failover;
    store::RemoteOptions o = Remote(endpoint, dir + "/local/rank-1.ttr", &failover);
    o.token = token;
    std::string err;
    {
      auto output = std::make_unique<store::RemoteOutput>(o);
      store::RemoteOutput* remote = output.get();
      auto w = store::TraceWriter::Create(std::move(output), Identity(1), {}, &err);
      ASSERT_NE(w, nullptr) << err;
      for (int i = 0; i < 20; ++i) Op(w.get(), i);
      End(w.get(), 20);
      ASSERT_TRUE(w->Close(&err)) << err;
      EXPECT_EQ(remote->spliced_bytes(), 0u) << "TCP sends by send(2)";
    }
    const bool right = token == "0123456789abcdef";
    EXPECT_EQ(failover.empty(), right) << failover;
    if (!right) {
      EXPECT_NE(failover.find("refused the stream: bad token"), std::string::npos) << failover;
      const Read local = ReadStream(dir + "/local/rank-1.ttr");
      EXPECT_TRUE(local.ended);
      EXPECT_EQ(local.gemms.size(), 20u);
      EXPECT_EQ(local.flags & format::kFileFailover, 0u) << "the collector never had any of it";
    }
  }
  running.Stop();
  EXPECT_EQ(ReadStream(dir + "/store/job-s/rank-1.ttr").gemms.size(), 20u);
  EXPECT_EQ(running.metrics().refused[static_cast<uint32_t>(wire::RefuseReason::kBadToken)].load(), 2u);
}

int ConnectUnix(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.data(), path.size());
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

TEST(Server, MalformedClientIsClosedWhileAnotherStreamsOn) {
  const std::string dir = TempDir("malformed");
  ServerOptions options;
  std::string error;
  ASSERT_TRUE(store::ParseEndpoint("unix:" + dir + "/c.sock", &options.listen, &error));
  options.dir = dir + "/store";
  Running running(options, &error);
  ASSERT_NE(running.server(), nullptr) << error;
  std::string failover;
  store::WriterOptions wo;
  wo.frame_bytes = 4096;
  std::string err;
  auto good = store::TraceWriter::Create(
      std::make_unique<store::RemoteOutput>(Remote("unix:" + dir + "/c.sock", dir + "/local/rank-0.ttr", &failover)),
      Identity(0), wo, &err);
  ASSERT_NE(good, nullptr);
  for (int i = 0; i < 50; ++i) Op(good.get(), i);
  // A fake client: a valid hello and header, then an index entry and frame of garbage.
  int fd = ConnectUnix(dir + "/c.sock");
  wire::Hello h{};
  memcpy(h.magic, wire::kHelloMagic, sizeof h.magic);
  h.version = wire::kProtocolVersion;
  h.hello_size = sizeof h;
  format::FileHeader fh = store::MakeFileHeader(Identity(1));
  std::string bytes(reinterpret_cast<const char*>(&h), sizeof h);
  bytes.append(reinterpret_cast<const char*>(&fh), sizeof fh);
  ASSERT_EQ(send(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  wire::Reply reply{};
  ASSERT_EQ(recv(fd, &reply, sizeof reply, MSG_WAITALL), static_cast<ssize_t>(sizeof reply));
  EXPECT_EQ(reply.status, static_cast<uint32_t>(wire::ReplyStatus::kWelcome));
  std::string garbage(5000, '\x7f');
  send(fd, garbage.data(), garbage.size(), MSG_NOSIGNAL);
  char b;
  EXPECT_EQ(recv(fd, &b, 1, 0), 0) << "the collector closes the malformed connection";
  close(fd);
  for (int i = 50; i < 100; ++i) Op(good.get(), i);
  End(good.get(), 100);
  ASSERT_TRUE(good->Close(&err)) << err;
  running.Stop();
  EXPECT_EQ(failover, "");
  EXPECT_EQ(ReadStream(dir + "/store/job-s/rank-0.ttr").gemms.size(), 100u);
  EXPECT_NE(running.log().find("job-s/rank-1.ttr: malformed stream: index entry checksum mismatch before frame 0"),
            std::string::npos)
      << running.log();
  EXPECT_EQ(running.metrics().closed_cut.load(), 1u);
}

// The collector goes away while a client streams: the client's next send or acknowledgement read fails, it writes
// the frames not acknowledged and the rest to its local file (flagged failover), and every op is in one of the two
// stores (some maybe in both: at-least-once). Both ways a unix client sends: spliced (the next splice meets a closed
// peer: SIGPIPE, which must not reach the process) and by send(2), where splicing is refused.
TEST(Server, CollectorGoneMidStreamFailsOverWithTheFramesInFlight) {
  for (const bool splice : {true, false}) {
    SCOPED_TRACE(splice ? "splice" : "send");
    const std::string dir = TempDir(splice ? "gone-splice" : "gone-send");
    ServerOptions options;
    std::string error;
    ASSERT_TRUE(store::ParseEndpoint("unix:" + dir + "/c.sock", &options.listen, &error));
    options.dir = dir + "/store";
    auto running = std::make_unique<Running>(options, &error);
    ASSERT_NE(running->server(), nullptr) << error;
    std::string failover;
    store::WriterOptions wo;
    wo.frame_bytes = 4096;
    std::string err;
    store::RemoteOptions ro = Remote("unix:" + dir + "/c.sock", dir + "/local/rank-3.ttr", &failover);
    ro.splice = splice;  // false: send(2), also what a client falls back to where splicing is refused
    auto output = std::make_unique<store::RemoteOutput>(ro);
    store::RemoteOutput* remote = output.get();
    auto w = store::TraceWriter::Create(std::move(output), Identity(3), wo, &err);
    ASSERT_NE(w, nullptr) << err;
    constexpr int kOps = 400;
    for (int i = 0; i < kOps / 2; ++i) Op(w.get(), i);
    ASSERT_TRUE(w->Flush(&err));
    EXPECT_EQ(remote->spliced_bytes() > 0, splice) << "a unix socket's frames are spliced unless told not to";
    running.reset();  // the collector stops: its connections end; the next send meets a closed peer
    for (int i = kOps / 2; i < kOps; ++i) Op(w.get(), i);
    End(w.get(), kOps);
    ASSERT_TRUE(w->Close(&err)) << err;
    EXPECT_TRUE(remote->failed_over());
    EXPECT_NE(failover, "");
    sigset_t pending;
    sigpending(&pending);
    EXPECT_FALSE(sigismember(&pending, SIGPIPE)) << "the splice's SIGPIPE was taken back";
    const Read collected = ReadStream(dir + "/store/job-s/rank-3.ttr");
    const Read local = ReadStream(dir + "/local/rank-3.ttr");
    ASSERT_TRUE(collected.ok && local.ok);
    EXPECT_FALSE(collected.ended);
    EXPECT_TRUE(local.ended);
    EXPECT_EQ(local.flags & format::kFileFailover, format::kFileFailover);
    EXPECT_GT(collected.gemms.size(), 0u);
    std::set<uint64_t> all(collected.gemms.begin(), collected.gemms.end());
    all.insert(local.gemms.begin(), local.gemms.end());
    EXPECT_EQ(all.size(), static_cast<size_t>(kOps)) << "every op delivered";
    EXPECT_EQ(*all.rbegin(), static_cast<uint64_t>(kOps - 1));
    store::Manifest m;
    ASSERT_TRUE(store::ReadManifest(dir + "/local/manifest.ttm", &m, &error)) << error;
    ASSERT_EQ(m.streams.size(), 1u);
    EXPECT_TRUE(m.streams[0].flags & format::kManifestFailover);
    EXPECT_EQ(m.streams[0].state, static_cast<uint32_t>(format::ManifestState::kClosed));
  }
}

// Where the kernel refuses splice(2) (seccomp, an old kernel) the client falls back to send(2) without losing a
// frame: splicing works for the first half of the ops, then splice() fails with EINVAL; the refused frame and every
// later one go by send(2), splice is not tried again, the fallback is said once, and the collector has every op
// with no failover.
TEST(Server, RefusedSpliceFallsBackToSendOnceAndDeliversEveryOp) {
  const std::string dir = TempDir("refused-splice");
  ServerOptions options;
  std::string error;
  ASSERT_TRUE(store::ParseEndpoint("unix:" + dir + "/c.sock", &options.listen, &error));
  options.dir = dir + "/store";
  Running running(options, &error);
  ASSERT_NE(running.server(), nullptr) << error;
  std::string failover;
  std::vector<std::string> refusals;
  store::WriterOptions wo;
  wo.frame_bytes = 4096;
  std::string err;
  store::RemoteOptions ro = Remote("unix:" + dir + "/c.sock", dir + "/local/rank-6.ttr", &failover);
  ro.on_splice_refused = [&refusals](const std::string& why) { refusals.push_back(why); };
  auto output = std::make_unique<store::RemoteOutput>(ro);
  store::RemoteOutput* remote = output.get();
  auto w = store::TraceWriter::Create(std::move(output), Identity(6), wo, &err);
  ASSERT_NE(w, nullptr) << err;
  constexpr int kOps = 400;
  for (int i = 0; i < kOps / 2; ++i) Op(w.get(), i);
  ASSERT_TRUE(w->Flush(&err)) << err;
  const uint64_t spliced = remote->spliced_bytes();
  EXPECT_GT(spliced, 0u) << "frames were spliced before the refusal";
  EXPECT_TRUE(refusals.empty());
  g_refuse_splice.store(true);
  for (int i = kOps / 2; i < kOps; ++i) Op(w.get(), i);
  End(w.get(), kOps);
  const bool closed = w->Close(&err);
  g_refuse_splice.store(false);
  ASSERT_TRUE(closed) << err;
  running.Stop();
  EXPECT_EQ(g_refused_splices.load(), 1) << "one refusal, then send(2) without trying splice again";
  ASSERT_EQ(refusals.size(), 1u) << "the fallback is said once";
  EXPECT_NE(refusals[0].find("splice(2) refused"), std::string::npos) << refusals[0];
  EXPECT_NE(refusals[0].find("send(2)"), std::string::npos) << refusals[0];
  EXPECT_EQ(remote->spliced_bytes(), spliced) << "nothing spliced after the refusal";
  EXPECT_FALSE(remote->failed_over());
  EXPECT_EQ(failover, "");
  const Read r = ReadStream(dir + "/store/job-s/rank-6.ttr");
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.ended);
  EXPECT_EQ(std::set<uint64_t>(r.gemms.begin(), r.gemms.end()).size(), static_cast<size_t>(kOps))
      << "every op delivered";
  EXPECT_EQ(r.gemms.size(), static_cast<size_t>(kOps)) << "each once: the refused frame went whole by send(2)";
  struct stat gone;
  EXPECT_NE(stat((dir + "/local").c_str(), &gone), 0) << "no local fallback file";
}

// A collector that welcomes the stream and then never reads: the client's sends block until SO_SNDTIMEO (a splice
// into the socket as much as a send), it fails over after its time-out and the local file has every record (the
// collector acknowledged nothing). The application never waits without bound.
TEST(Server, StalledCollectorTheClientGivesUpAfterItsTimeOut) {
  const std::string dir = TempDir("stalled");
  const std::string path = dir + "/c.sock";
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.data(), path.size());
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  std::atomic<bool> client_done{false};
  std::thread fake([&] {
    const int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) return;
    std::string hello(sizeof(wire::Hello) + sizeof(format::FileHeader), '\0');
    for (size_t got = 0; got < hello.size();) {
      const ssize_t n = recv(fd, hello.data() + got, hello.size() - got, 0);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    wire::Reply r{};
    memcpy(r.magic, wire::kReplyMagic, sizeof r.magic);
    r.version = wire::kProtocolVersion;
    r.reply_size = sizeof r;
    r.status = static_cast<uint32_t>(wire::ReplyStatus::kWelcome);
    memcpy(r.message, "job-s/rank-5.ttr", 16);
    EXPECT_EQ(send(fd, &r, sizeof r, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof r));
    while (!client_done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // reads nothing
    close(fd);
  });
  std::string failover;
  store::RemoteOptions o = Remote("unix:" + path, dir + "/local/rank-5.ttr", &failover);
  o.timeout_ms = 300;
  auto output = std::make_unique<store::RemoteOutput>(o);
  store::RemoteOutput* remote = output.get();
  store::WriterOptions wo;
  wo.frame_bytes = 256 << 10;
  std::string err;
  auto w = store::TraceWriter::Create(std::move(output), Identity(5), wo, &err);
  ASSERT_NE(w, nullptr) << err;
  // 8 MiB of random floats (zstd keeps them near their size): more than the socket (2 MiB) and the pipe hold.
  constexpr int kOps = 128;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> data(16384);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kOps; ++i) {
    format::GemmRecord g{};
    g.seq = static_cast<uint64_t>(i);
    ASSERT_TRUE(w->Append(format::RecordType::kGemm, g));
    for (float& v : data) v = uniform(rng);
    format::TensorRecord t{};
    t.seq = g.seq;
    t.dtype = static_cast<uint8_t>(format::DType::kF32);
    t.rows = static_cast<uint32_t>(data.size());
    t.cols = t.batch = 1;
    t.payload_bytes = data.size() * 4;
    ASSERT_TRUE(w->Append(format::RecordType::kTensor, t, data.data(), t.payload_bytes));
  }
  End(w.get(), kOps);
  ASSERT_TRUE(w->Close(&err)) << err;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  client_done.store(true);
  fake.join();
  close(listener);
  EXPECT_TRUE(remote->failed_over());
  EXPECT_NE(failover.find("timed out"), std::string::npos) << failover;
  EXPECT_EQ(remote->acked(), 0u);
  EXPECT_GT(remote->spliced_bytes(), 0u) << "the blocked send was a splice";
  // One send waits 300 ms, then everything goes to the local file: far under 10 s even at a load of 20.
  EXPECT_LT(seconds, 10.0);
  const Read local = ReadStream(dir + "/local/rank-5.ttr");
  ASSERT_TRUE(local.ok);
  EXPECT_TRUE(local.ended);
  EXPECT_EQ(local.gemms.size(), static_cast<size_t>(kOps));
  EXPECT_EQ(local.flags & format::kFileFailover, format::kFileFailover) << "the collector had welcomed the stream";
}

}  // namespace
}  // namespace ttrace::collector
