// `orchid serve --model DIR | --model NAME=DIR ...`: gateway and worker in one process, no
// network hop — the HTTP API in front of one TokenBudgetScheduler and CPU engine per model
// (requests select a model by name). Runs until SIGINT or SIGTERM.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/serving.h"
#include "gateway/embed_backend.h"
#include "gateway/gateway.h"
#include "description/registry.h"
#include "tokenizer/tokenizer.h"

namespace orchid::cli {
namespace {

struct ServeOptions {
  std::vector<std::string> models;  // DIR or NAME=DIR, in order; the first is the default
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::string served_model_name;
  SchedulerFlags scheduler;
  HttpFrontFlags http;
};

// One hosted model: its engine and scheduler, tokenizer and in-process backend.
struct HostedModel {
  ModelSpec spec;
  ServingModel serving;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<LocalBackend> backend;
};

int RunServe(const ServeOptions& o) {
  const sigset_t stop_signals = BlockStopSignals();
  MetricsRegistry metrics;
  std::vector<ModelSpec> specs;
  for (const std::string& m : o.models) specs.push_back(ParseModelSpec(m));
  if (specs.size() > 1 && !o.served_model_name.empty()) {
    spdlog::error(
        "--served-model-name names a single model; with several --model, use "
        "--model NAME=DIR");
    return 2;
  }
  std::vector<std::unique_ptr<HostedModel>> hosted;
  std::set<std::string> names;
  auto shutdown_all = [&hosted] {
    for (auto& h : hosted) h->serving.scheduler->Shutdown();
  };
  for (const ModelSpec& spec : specs) {
    if (!std::filesystem::is_directory(spec.dir)) {
      spdlog::error("--model {}: {} is not a directory", spec.name.empty() ? spec.dir : spec.name,
                    spec.dir);
      shutdown_all();
      return 2;
    }
    auto h = std::make_unique<HostedModel>();
    h->spec = spec;
    std::string name = spec.name.empty() ? o.served_model_name : spec.name;
    if (name.empty()) name = DefaultModelName(spec.dir);
    if (!names.insert(name).second) {
      spdlog::error("two models are named `{}`; name them with --model NAME=DIR", name);
      shutdown_all();
      return 2;
    }
    auto serving =
        LoadServingModel(spec.dir, name, o.scheduler, &metrics, /*label_model=*/specs.size() > 1);
    if (!serving.ok()) {
      spdlog::error("{}: {}", spec.dir, serving.status().ToString());
      shutdown_all();
      return serving.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
    }
    h->serving = std::move(*serving);
    auto tokenizer = LoadModelTokenizer(spec.dir);
    if (!tokenizer.ok()) {
      spdlog::error("cannot load tokenizer: {}", tokenizer.status().ToString());
      h->serving.scheduler->Shutdown();
      shutdown_all();
      return 1;
    }
    h->tokenizer = std::move(*tokenizer);
    h->backend = std::make_unique<LocalBackend>(h->serving.scheduler.get());
    hosted.push_back(std::move(h));
  }

  GatewayOptions gw;
  gw.host = o.host;
  gw.port = o.port;
  gw.served_model_name = hosted.front()->serving.model.name;
  if (Status st = ApplyHttpFrontFlags(o.http, "", &gw); !st.ok()) {
    spdlog::error("{}", st.ToString());
    shutdown_all();
    return 1;
  }
  gw.metrics = &metrics;
  std::vector<GatewayModel> models;
  for (const auto& h : hosted) {
    auto m = FrontModel(h->serving.model.name, h->tokenizer.get(), h->backend.get(), h->spec.dir,
                        o.http);
    if (!m.ok()) {
      spdlog::error("{}", m.status().ToString());
      shutdown_all();
      return 1;
    }
    models.push_back(std::move(*m));
  }
  Gateway gateway(std::move(models), gw);
  if (Status st = gateway.Start(); !st.ok()) {
    spdlog::error("{}", st.ToString());
    shutdown_all();
    return 1;
  }
  const bool v6 = o.host.find(':') != std::string::npos;
  for (const auto& h : hosted) {
    const ModelInfo& info = h->serving.model.info;
    const bool late = info.late_interaction.enabled;
    spdlog::info("orchid serving {} ({}, {} dim {}, max {} tokens, {}{}) on http://{}{}{}:{}",
                 h->serving.model.name, info.architecture,
                 late ? "late-interaction embedder"
                      : (info.bge_m3 ? "BGE-M3 dense + sparse + ColBERT embedder"
                                     : (info.task == ModelTask::kScore ? "reranker" : "embedder")),
                 late ? info.token_dim() : info.output_dim(), h->serving.model.max_input_tokens,
                 late ? "per token, MaxSim" : PoolingName(info.default_pooling),
                 late ? "" : (info.default_normalize ? " pooling, normalized" : " pooling"),
                 v6 ? "[" : "", o.host, v6 ? "]" : "", gateway.port());
  }

  spdlog::info("received {}, shutting down", WaitForStopSignal(stop_signals));
  gateway.Stop();  // drains the schedulers too
  spdlog::info("stopped");
  return 0;
}

}  // namespace

void RegisterServeCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<ServeOptions>();
  auto* cmd = app.add_subcommand(
      "serve",
      "Serve models over HTTP (gateway and worker in one process): OpenAI POST /v1/embeddings, "
      "TEI POST /embed /similarity /predict /tokenize /decode, rerank POST /rerank /v1/rerank "
      "/v1/score, GET /info /health /metrics");
  cmd->add_option("--model", opts->models,
                  "Hugging Face model directory, or NAME=DIR; repeat to host several models "
                  "(requests pick one with `model`; the first is the default)")
      ->required();
  cmd->add_option("--host", opts->host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", opts->port, "port to listen on (0: any free port)")
      ->capture_default_str();
  cmd->add_option("--served-model-name", opts->served_model_name,
                  "model name in the API of a single --model DIR (default: the directory's "
                  "name)");
  AddSchedulerFlags(cmd, &opts->scheduler);
  AddHttpFrontFlags(cmd, &opts->http);
  cmd->callback([opts, exit_code] { *exit_code = RunServe(*opts); });
}

}  // namespace orchid::cli
