// The floor under the gateway→worker hop: bare round trips with no engine behind them, from C++
// clients on one connection each, alternated request by request.
//
//   orchid_rtt_bench --http HOST:PORT --grpc HOST:PORT [--gateway HOST:PORT] [--length N]
//                    [--requests N] [--warmup N]
//
// HTTP: GET /health over one keep-alive connection (Boost.Beast, synchronous). gRPC: the
// orchid.v1.Worker Health call on one channel (synchronous stub). With --gateway it also times,
// in the same rotation, one batch-1 request of --length token ids three ways: POST
// /v1/embeddings to the --http server (`orchid serve`), the worker's Embed over gRPC directly,
// and POST /v1/embeddings to the gateway in front of that worker: the hop taken apart into its
// gRPC leg and the gateway's own part. Prints one JSON object with p50 / p90 / p99 in
// microseconds for each, and the medians of the per-round differences. bench/serving/hop.py runs
// it next to the hop.
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
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

// One keep-alive HTTP/1.1 connection (Beast, synchronous).
class HttpConnection {
 public:
  explicit HttpConnection(const std::string& target) : stream_(io_) {
    const size_t colon = target.rfind(':');
    if (colon == std::string::npos) throw std::runtime_error("`" + target + "` is not HOST:PORT");
    host_ = target.substr(0, colon);
    net::ip::tcp::resolver resolver(io_);
    stream_.connect(resolver.resolve(host_, target.substr(colon + 1)));
    stream_.socket().set_option(net::ip::tcp::no_delay(true));
  }

  // Returns the response body; throws unless the status is 200.
  std::string Call(http::verb verb, const std::string& path, const std::string& body) {
    http::request<http::string_body> req{verb, path, 11};
    req.set(http::field::host, host_);
    req.keep_alive(true);
    if (!body.empty()) {
      req.set(http::field::content_type, "application/json");
      req.body() = body;
      req.prepare_payload();
    }
    http::write(stream_, req);
    http::response<http::string_body> res;
    http::read(stream_, buffer_, res);
    if (res.result() != http::status::ok) {
      throw std::runtime_error(path + ": HTTP " + std::to_string(res.result_int()) + " " +
                               res.body().substr(0, 200));
    }
    return std::move(res.body());
  }

 private:
  net::io_context io_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::string host_;
};

struct Probe {
  std::string name;
  std::function<void()> once;
  std::vector<double> us;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bare HTTP and gRPC round trips, and the hop taken apart"};
  std::string http_target, grpc_target, gateway_target;
  int requests = 2000, warmup = 200, length = 16;
  app.add_option("--http", http_target, "HOST:PORT of `orchid serve` (GET /health)")->required();
  app.add_option("--grpc", grpc_target, "HOST:PORT of an orchid worker (Health)")->required();
  app.add_option("--gateway", gateway_target,
                 "HOST:PORT of a gateway in front of --grpc: also time Embed three ways");
  app.add_option("--length", length, "token ids per Embed request (with --gateway)")
      ->check(CLI::Range(3, 512));
  app.add_option("--requests", requests, "round trips of each kind")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed round trips of each kind first");
  CLI11_PARSE(app, argc, argv);

  try {
    HttpConnection serve(http_target);
    std::unique_ptr<HttpConnection> gateway;
    auto stub = orchid::v1::Worker::NewStub(
        grpc::CreateChannel(grpc_target, grpc::InsecureChannelCredentials()));
    std::vector<Probe> probes;
    probes.push_back({"http_health_us", [&] { serve.Call(http::verb::get, "/health", ""); }, {}});
    probes.push_back({"grpc_health_us",
                      [&] {
                        grpc::ClientContext ctx;
                        orchid::v1::HealthRequest hreq;
                        orchid::v1::HealthResponse hres;
                        const grpc::Status st = stub->Health(&ctx, hreq, &hres);
                        if (!st.ok()) throw std::runtime_error("Health: " + st.error_message());
                      },
                      {}});
    // [CLS] + ordinary word-piece ids + [SEP], as hop.py sends; used only with --gateway.
    std::string body;
    orchid::v1::EmbedRequest ereq;
    if (!gateway_target.empty()) {
      std::vector<int32_t> ids{101};
      for (int i = 0; i < length - 2; ++i) ids.push_back(2000 + 37 * i);
      ids.push_back(102);
      body = "{\"input\":[[";
      for (size_t i = 0; i < ids.size(); ++i) body += (i ? "," : "") + std::to_string(ids[i]);
      body += "]]}";
      auto* seq = ereq.add_sequences();
      for (int32_t id : ids) seq->add_token_ids(id);
      gateway = std::make_unique<HttpConnection>(gateway_target);
      probes.push_back(
          {"serve_embed_us", [&] { serve.Call(http::verb::post, "/v1/embeddings", body); }, {}});
      probes.push_back({"worker_embed_grpc_us",
                        [&] {
                          grpc::ClientContext ctx;
                          orchid::v1::EmbedResponse eres;
                          const grpc::Status st = stub->Embed(&ctx, ereq, &eres);
                          if (!st.ok()) throw std::runtime_error("Embed: " + st.error_message());
                          if (eres.rows() != 1) throw std::runtime_error("Embed: not one row");
                        },
                        {}});
      probes.push_back({"gateway_embed_us",
                        [&] { gateway->Call(http::verb::post, "/v1/embeddings", body); },
                        {}});
    }

    for (int i = 0; i < warmup; ++i) {
      for (Probe& p : probes) p.once();
    }
    // Round by round, each probe once, starting at a different one each round.
    for (int i = 0; i < requests; ++i) {
      for (size_t k = 0; k < probes.size(); ++k) {
        Probe& p = probes[(size_t(i) + k) % probes.size()];
        const auto t0 = Clock::now();
        p.once();
        p.us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    }
    std::string out = "{";
    for (const Probe& p : probes) out += Summary(p.name.c_str(), p.us) + ",";
    if (gateway) {
      // Medians of same-round differences: the hop, its gRPC leg, and the rest.
      auto paired = [&](const char* a, const char* b) {
        auto us = [&](const char* name) -> const std::vector<double>& {
          return std::find_if(probes.begin(), probes.end(),
                              [&](const Probe& p) { return p.name == name; })
              ->us;
        };
        const std::vector<double>&ua = us(a), &ub = us(b);
        std::vector<double> d;
        for (size_t i = 0; i < ua.size(); ++i) d.push_back(ua[i] - ub[i]);
        return Percentile(d, 0.5);
      };
      char buf[256];
      std::snprintf(buf, sizeof(buf),
                    "\"gateway_minus_serve_us\":%.1f,\"worker_grpc_minus_serve_us\":%.1f,"
                    "\"gateway_minus_worker_grpc_us\":%.1f,",
                    paired("gateway_embed_us", "serve_embed_us"),
                    paired("worker_embed_grpc_us", "serve_embed_us"),
                    paired("gateway_embed_us", "worker_embed_grpc_us"));
      out += buf;
    }
    std::printf("%s\"requests\":%d,\"length\":%d}\n", out.c_str(), requests, length);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "orchid_rtt_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
