// The floor under the gateway→worker hop: bare round trips with no engine behind them, from C++
// clients on one connection each, alternated request by request.
//
//   orchid_rtt_bench --http HOST:PORT --grpc HOST:PORT [--requests N] [--warmup N]
//
// HTTP: GET /health over one keep-alive connection (Boost.Beast, synchronous). gRPC: the
// orchid.v1.Worker Health call on one channel (synchronous stub). Prints one JSON object with
// p50 / p90 / p99 in microseconds for each. bench/serving/hop.py runs it next to the hop.
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "orchid/v1/worker.grpc.pb.h"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double> v, double f) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(f * double(v.size())))];
}

std::string Summary(const char* name, const std::vector<double>& us) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "\"%s\":{\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f}", name,
                Percentile(us, 0.5), Percentile(us, 0.9), Percentile(us, 0.99));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bare HTTP and gRPC round trips (no engine): the floor under the hop"};
  std::string http_target, grpc_target;
  int requests = 2000, warmup = 200;
  app.add_option("--http", http_target, "HOST:PORT of an orchid HTTP server (GET /health)")
      ->required();
  app.add_option("--grpc", grpc_target, "HOST:PORT of an orchid worker (Health)")->required();
  app.add_option("--requests", requests, "round trips of each kind")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed round trips of each kind first");
  CLI11_PARSE(app, argc, argv);

  const size_t colon = http_target.rfind(':');
  if (colon == std::string::npos) {
    std::fprintf(stderr, "--http must be HOST:PORT\n");
    return 2;
  }
  const std::string host = http_target.substr(0, colon), port = http_target.substr(colon + 1);
  try {
    net::io_context io;
    net::ip::tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.connect(resolver.resolve(host, port));
    stream.socket().set_option(net::ip::tcp::no_delay(true));
    http::request<http::empty_body> req{http::verb::get, "/health", 11};
    req.set(http::field::host, host);
    req.keep_alive(true);
    beast::flat_buffer buffer;
    auto http_once = [&] {
      http::write(stream, req);
      http::response<http::string_body> res;
      http::read(stream, buffer, res);
      if (res.result() != http::status::ok) throw std::runtime_error("GET /health: not 200");
    };

    auto stub = orchid::v1::Worker::NewStub(
        grpc::CreateChannel(grpc_target, grpc::InsecureChannelCredentials()));
    auto grpc_once = [&] {
      grpc::ClientContext ctx;
      orchid::v1::HealthRequest hreq;
      orchid::v1::HealthResponse hres;
      const grpc::Status st = stub->Health(&ctx, hreq, &hres);
      if (!st.ok()) throw std::runtime_error("Health: " + st.error_message());
    };

    for (int i = 0; i < warmup; ++i) {
      http_once();
      grpc_once();
    }
    std::vector<double> http_us, grpc_us;
    auto timed = [](auto& fn, std::vector<double>* out) {
      const auto t0 = Clock::now();
      fn();
      out->push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    };
    for (int i = 0; i < requests; ++i) {
      if (i % 2 == 0) {
        timed(http_once, &http_us);
        timed(grpc_once, &grpc_us);
      } else {
        timed(grpc_once, &grpc_us);
        timed(http_once, &http_us);
      }
    }
    std::printf("{%s,%s,\"requests\":%d}\n", Summary("http_health_us", http_us).c_str(),
                Summary("grpc_health_us", grpc_us).c_str(), requests);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "orchid_rtt_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
