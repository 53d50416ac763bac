// `orchid worker --model DIR --listen HOST:PORT`: one engine behind the orchid.v1.Worker gRPC
// service (proto/orchid/v1/worker.proto), with Prometheus /metrics on a side HTTP port.
// SIGINT/SIGTERM: Health turns NOT_SERVING, new calls are refused (gateways retry them on
// another replica), calls in flight finish (up to --shutdown-grace), then the process exits.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "cli/commands.h"
#include "cli/serving.h"
#include "gateway/http_server.h"
#include "rpc/worker_service.h"

namespace orchid::cli {
namespace {

struct WorkerOptions {
  std::string model_dir;
  std::string listen = "127.0.0.1:50051";
  // Port 0: any free port, logged at start-up, so that several workers on one host never clash
  // on their side port (give one to scrape at a fixed address).
  std::string metrics_listen = "127.0.0.1:0";
  std::string served_model_name;
  SchedulerFlags scheduler;
  double shutdown_grace_s = 30;
};

int RunWorker(const WorkerOptions& o) {
  const sigset_t stop_signals = BlockStopSignals();
  std::string metrics_host;
  uint16_t metrics_port = 0;
  if (!o.metrics_listen.empty() && !ParseHostPort(o.metrics_listen, &metrics_host, &metrics_port)) {
    spdlog::error("--metrics-listen `{}` is not HOST:PORT", o.metrics_listen);
    return 2;
  }
  MetricsRegistry metrics;
  auto serving = LoadServingModel(o.model_dir, o.served_model_name, o.scheduler, &metrics);
  if (!serving.ok()) {
    spdlog::error("{}", serving.status().ToString());
    return serving.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  if (serving->model.info.bge_m3) {
    // The worker protocol carries neither BGE-M3's flag nor a per-token pass's pooled rows,
    // which its dense output comes from: a gateway in front would answer as for another model.
    spdlog::error("{}: BGE-M3 models are served by `orchid serve` only, not by `orchid worker`",
                  o.model_dir);
    return 2;
  }
  rpc::WorkerServerOptions wo;
  wo.listen = o.listen;
  wo.model = serving->model;
  wo.metrics = &metrics;
  rpc::WorkerServer server(serving->scheduler.get(), wo);
  if (Status st = server.Start(); !st.ok()) {
    spdlog::error("{}", st.ToString());
    return 1;
  }
  std::unique_ptr<HttpServer> metrics_server;
  if (!o.metrics_listen.empty()) {
    HttpServerOptions ho;
    ho.host = metrics_host;
    ho.port = metrics_port;
    ho.io_threads = 1;
    ho.max_body_bytes = 1 << 16;
    metrics_server = std::make_unique<HttpServer>(ho, [&metrics](HttpRequest req, Reply reply) {
      HttpResponse r;
      const std::string path = req.target.substr(0, req.target.find('?'));
      if (req.method == "GET" && path == "/metrics") {
        r.content_type = MetricsRegistry::kContentType;
        r.body = metrics.Render();
      } else if (req.method == "GET" && path == "/health") {
        r.body = R"({"status":"ok"})";
      } else {
        r.status = 404;
        r.body = R"({"error":"not found: the worker serves GET /metrics and GET /health"})";
      }
      reply(std::move(r));
    });
    if (Status st = metrics_server->Start(); !st.ok()) {
      spdlog::error("metrics endpoint: {}", st.ToString());
      return 1;
    }
  }
  const ModelInfo& info = serving->model.info;
  const bool late = info.late_interaction.enabled;
  spdlog::info("orchid worker: {} ({}, {}dim {}, max {} tokens) on grpc {} (port {}){}{}",
               serving->model.name, info.architecture, late ? "late interaction, token " : "",
               late ? info.token_dim() : info.output_dim(), serving->model.max_input_tokens,
               o.listen, server.port(), metrics_server ? ", metrics on http port " : "",
               metrics_server ? std::to_string(metrics_server->port()) : "");

  spdlog::info("received {}, draining", WaitForStopSignal(stop_signals));
  // In-flight calls finish; new ones get UNAVAILABLE and are retried elsewhere by gateways.
  server.Shutdown(std::chrono::milliseconds(int64_t(o.shutdown_grace_s * 1000)));
  serving->scheduler->Shutdown(std::chrono::milliseconds(0));
  if (metrics_server) metrics_server->Stop();
  spdlog::info("stopped");
  return 0;
}

}  // namespace

void RegisterWorkerCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<WorkerOptions>();
  auto* cmd = app.add_subcommand(
      "worker", "Serve a model to gateways over gRPC (orchid.v1.Worker: pre-tokenized input)");
  cmd->add_option("--model", opts->model_dir, "Hugging Face model directory")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--listen", opts->listen, "gRPC address, HOST:PORT (port 0: any free port)")
      ->capture_default_str();
  cmd->add_option("--metrics-listen", opts->metrics_listen,
                  "HTTP address of GET /metrics, HOST:PORT (port 0: any free port, logged; "
                  "empty: none)")
      ->capture_default_str();
  cmd->add_option("--served-model-name", opts->served_model_name,
                  "model name reported to gateways (default: the model directory's name)");
  AddSchedulerFlags(cmd, &opts->scheduler);
  cmd->add_option("--shutdown-grace", opts->shutdown_grace_s,
                  "seconds that calls in flight get to finish on SIGINT/SIGTERM")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->callback([opts, exit_code] { *exit_code = RunWorker(*opts); });
}

}  // namespace orchid::cli
