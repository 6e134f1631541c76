// Flags by hand, as in the analyzer's CLI. Signals reach the server through its stop pipe (Stop() is one write).
#include "collector/collector_main.h"

#include <signal.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <httplib.h>

#include "collector/metrics.h"
#include "collector/server.h"

namespace ttrace::collector {
namespace {

constexpr char kUsage[] =
    "usage: ttrace-collector --listen unix:PATH|tcp:HOST:PORT --dir DIR [--token-file F] [--metrics-port P]\n"
    "                        [--max-frame-mb N] [--max-stream-gb N] [--max-connections N]\n"
    "  Receives rank streams from libttrace.so (TTRACE_COLLECTOR=unix:PATH|tcp:HOST:PORT) and writes them to\n"
    "  DIR/<job>/rank-<R>.ttr with their index and the job's manifest. A unix socket is created 0600; TCP needs\n"
    "  --token-file (the shim reads the same token from TTRACE_COLLECTOR_TOKEN_FILE). --metrics-port serves\n"
    "  Prometheus text at http://HOST:P/metrics. Limits per connection: --max-frame-mb (64) compressed bytes of\n"
    "  one frame, --max-stream-gb (1024) bytes in all; --max-connections (1024) at once.\n";

Server* g_server = nullptr;

void OnSignal(int) {
  if (g_server != nullptr) g_server->Stop();
}

bool ParsePositive(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 12 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoull(s);
  return *out > 0;
}

int Usage(std::ostream& err, const std::string& why) {
  err << "ttrace-collector: " << why << "\n" << kUsage;
  return 2;
}

}  // namespace

int CollectorMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  ServerOptions options;
  std::string listen, token_file;
  uint64_t metrics_port = 0, max_frame_mb = 64, max_stream_gb = 1024, max_connections = 1024;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      out << kUsage;
      return 0;
    }
    if (i + 1 >= argc) return Usage(err, a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--listen") {
      listen = v;
    } else if (a == "--dir") {
      options.dir = v;
    } else if (a == "--token-file") {
      token_file = v;
    } else if (a == "--metrics-port") {
      if (!ParsePositive(v, &metrics_port) || metrics_port > 65535) return Usage(err, "bad --metrics-port");
    } else if (a == "--max-frame-mb") {
      if (!ParsePositive(v, &max_frame_mb) || max_frame_mb > 256) return Usage(err, "--max-frame-mb needs 1..256");
    } else if (a == "--max-stream-gb") {
      if (!ParsePositive(v, &max_stream_gb)) return Usage(err, "bad --max-stream-gb");
    } else if (a == "--max-connections") {
      if (!ParsePositive(v, &max_connections) || max_connections > 1000000) return Usage(err, "bad --max-connections");
    } else {
      return Usage(err, "unknown option " + a);
    }
  }
  std::string error;
  if (listen.empty() || options.dir.empty()) return Usage(err, "--listen and --dir are required");
  if (!store::ParseEndpoint(listen, &options.listen, &error)) return Usage(err, error);
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string token = ss.str();
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
    if (!in || token.empty()) return Usage(err, "cannot read a token from " + token_file);
    options.session.require_token = true;
    options.session.token = token;
  }
  options.session.limits.max_frame_bytes = static_cast<uint32_t>(max_frame_mb << 20);
  options.session.limits.max_stream_bytes = max_stream_gb << 30;
  options.max_connections = static_cast<int>(max_connections);

  Metrics metrics;
  std::unique_ptr<Server> server = Server::Start(options, &metrics, &err, &error);
  if (server == nullptr) {
    err << "ttrace-collector: " << error << "\n";
    return 2;
  }
  store::Endpoint bound = options.listen;
  if (bound.kind == store::Endpoint::Kind::kTcp) bound.port = server->port();
  err << "ttrace-collector: listening on " << bound.text() << ", writing to " << options.dir << "\n";

  std::unique_ptr<httplib::Server> http;
  std::thread http_thread;
  if (metrics_port > 0) {
    http = std::make_unique<httplib::Server>();
    http->Get("/metrics", [&metrics](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics.Render(), "text/plain; version=0.0.4");
    });
    if (!http->bind_to_port("0.0.0.0", static_cast<int>(metrics_port))) {
      err << "ttrace-collector: cannot serve metrics on port " << metrics_port << "\n";
      return 2;
    }
    http_thread = std::thread([&] { http->listen_after_bind(); });
    err << "ttrace-collector: metrics on port " << metrics_port << "\n";
  }
  err.flush();

  g_server = server.get();
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  server->Run();
  g_server = nullptr;
  server.reset();  // ends the connections: their streams are finished
  if (http != nullptr) {
    http->stop();
    http_thread.join();
  }
  err << "ttrace-collector: stopped\n";
  return 0;
}

}  // namespace ttrace::collector
