#include <algorithm>
#include <stdexcept>
#include <utility>

#include "gateway/json_writer.h"
#include "gateway/openapi_document.h"
#include "gateway/openapi_json.h"
#include "gateway/route_handlers.h"
#include "gateway/static_pages.h"

namespace orchid {
namespace {

// "dtype" (named `key`) and "fidelity" (int8_fidelity in openapi.json): how the engine
// multiplies and, for --dtype int8, the start-up check against float32.
void WriteDtype(const ModelInfo& info, const char* key, JsonWriter* w) {
  if (!info.dtype.empty()) w->Key(key).String(info.dtype);
  w->Key("fidelity");
  if (info.fidelity.samples <= 0) {
    w->Null();
    return;
  }
  w->BeginObject().Key("reference").String("float32");
  w->Key("samples").Int(info.fidelity.samples);
  w->Key("mean_cosine").Float(float(info.fidelity.mean_cosine));
  w->Key("min_cosine").Float(float(info.fidelity.min_cosine));
  w->EndObject();
}

// A model with task adapters: "tasks" (what a request's `task` may name) and the Matryoshka
// widths `dimensions` may take, when its config lists them.
void WriteTasks(const ModelInfo& info, JsonWriter* w) {
  if (info.tasks.empty()) return;
  w->Key("tasks").BeginArray();
  for (const std::string& t : info.tasks) w->String(t);
  w->EndArray();
  if (info.matryoshka_dimensions.empty()) return;
  w->Key("matryoshka_dimensions").BeginArray();
  for (int d : info.matryoshka_dimensions) w->Int(d);
  w->EndArray();
}

// One model as OpenAI's model object, with orchid's "task": embed, rerank (one label) or
// classify (several).
void WriteModel(const RoutedModel& m, int64_t created, JsonWriter* w) {
  w->BeginObject().Key("id").String(m.embed->model_name()).Key("object").String("model");
  w->Key("created").Int(created).Key("owned_by").String("orchid");
  const char* task = !m.embed->is_scorer()                   ? "embed"
                     : m.embed->model_info().num_labels == 1 ? "rerank"
                                                             : "classify";
  w->Key("task").String(task);
  const ModelInfo& info = m.embed->model_info();
  if (info.bge_m3)
    w->Key("outputs").BeginArray().String("dense").String("sparse").String("colbert").EndArray();
  // A dual encoder (CLIP, SigLIP) embeds images too, into the texts' space.
  if (m.embed->takes_images())
    w->Key("modalities").BeginArray().String("text").String("image").EndArray();
  w->Key("max_input_length").Int(m.embed->max_seq_length());
  w->Key("max_input_length_source").String(info.max_seq_length_source);
  WriteDtype(info, "dtype", w);
  WriteTasks(info, w);
  w->EndObject();
}

// One model: 200 {"status":"ok"}, or 503 when it cannot serve. Several: 503 only when none can
// ("degraded" when some can), and the body names each model's state, so that one model without
// workers does not take the others out of a load balancer.
HttpResponse HealthResponse(const std::vector<RoutedModel>& models) {
  std::vector<bool> healthy;  // read once: replicas come and go while this runs
  for (const RoutedModel& m : models) healthy.push_back(m.embed->healthy());
  const size_t up = size_t(std::count(healthy.begin(), healthy.end(), true));
  HttpResponse r;
  JsonWriter w(&r.body);
  w.BeginObject().Key("status").String(up == models.size() ? "ok"
                                       : up > 0            ? "degraded"
                                                           : "unavailable");
  if (up == 0) {
    r.status = 503;
    w.Key("error").String("no healthy worker replica");
  }
  if (models.size() > 1) {
    w.Key("models").BeginObject();
    for (size_t i = 0; i < models.size(); ++i) {
      w.Key(models[i].embed->model_name()).String(healthy[i] ? "ok" : "unavailable");
    }
    w.EndObject();
  }
  w.EndObject();
  return r;
}

HttpResponse PageResponse(std::string_view path) {
  const StaticPage* page = FindStaticPage(path);
  if (page == nullptr) throw std::logic_error("the route table names a page that does not exist");
  HttpResponse r;
  r.content_type = std::string(page->content_type);
  r.body = std::string(page->body);
  return r;
}

// What the served models answer, for the OpenAPI document (openapi_document.h).
ServedModelFacts FactsOf(const std::vector<RoutedModel>& models) {
  ServedModelFacts facts;
  bool all_images = true;  // every model takes images: image requests valid by the document
  for (size_t i = 0; i < models.size(); ++i) {
    const EmbeddingService& m = *models[i].embed;
    const ModelInfo& info = m.model_info();
    std::vector<std::string> kinds;
    if (info.bge_m3) {
      // Dense on the embedding routes, lexical weights on /embed_sparse, its own scores.
      kinds.insert(kinds.end(), {"embed", "sparse", "bge-m3"});
      facts.dimensions =
          facts.dimensions == 0 ? m.dim() : std::min<int64_t>(facts.dimensions, m.dim());
    } else if (info.late_interaction.enabled) {
      // Per-token vectors (/embed_all, /pooling) and MaxSim scores; no pooled vector.
      kinds.push_back("colbert");
      facts.dimensions =
          facts.dimensions == 0 ? m.dim() : std::min<int64_t>(facts.dimensions, m.dim());
    } else if (!m.is_scorer()) {
      kinds.push_back(info.sparse ? "sparse" : "embed");
      facts.dimensions =
          facts.dimensions == 0 ? m.dim() : std::min<int64_t>(facts.dimensions, m.dim());
    } else if (models[i].score != nullptr) {
      if (info.num_labels == 1) kinds.push_back("rerank");
      if (info.pair_format == PairFormat::kTokenizerPair) kinds.push_back("classify");
    }
    for (const std::string& k : kinds) {
      facts.kinds.insert(k);
      if (i == 0) facts.kinds.insert("default-" + k);
    }
    if (!m.takes_images()) all_images = false;
    facts.model_names.push_back(m.model_name());
    const int64_t last_id = int64_t(info.vocab_size) - 1;
    facts.max_token_id = i == 0 ? last_id : std::min(facts.max_token_id, last_id);
  }
  facts.kinds.insert(all_images ? "images" : "text-only");
  for (const auto& [name, text] : models.front().embed->prompts().prompts) {
    facts.prompt_names.push_back(name);
  }
  const ModelInfo& first = models.front().embed->model_info();
  facts.task_names = first.tasks;
  facts.matryoshka_dimensions = first.matryoshka_dimensions;
  return facts;
}

}  // namespace

void Models(const ServedModels& served, RouteCall call) {
  HttpResponse r;
  JsonWriter w(&r.body);
  w.BeginObject().Key("object").String("list").Key("data").BeginArray();
  for (const RoutedModel& m : served.all()) WriteModel(m, served.created(), &w);
  w.EndArray().EndObject();
  call.reply(std::move(r));
}

void Model(const ServedModels& served, RouteCall call) {
  ApiError not_found;
  const RoutedModel* m = served.Select(call.param, &not_found);
  if (m == nullptr) return call.Fail(not_found);
  HttpResponse r;
  JsonWriter w(&r.body);
  WriteModel(*m, served.created(), &w);
  call.reply(std::move(r));
}

// TEI's GET /info, for the default (first) model: the fields a TEI client reads, plus
// orchid's own (architecture, dimensions, normalize, the names of every model served).
void Info(const ServedModels& served, RouteCall call) {
  const EmbeddingService& m = served.default_model();
  const ModelInfo& info = m.model_info();
  HttpResponse r;
  JsonWriter w(&r.body);
  w.BeginObject().Key("model_id").String(m.model_name());
  w.Key("model_type").BeginObject();
  if (m.is_scorer()) {
    // TEI calls a one-label model a reranker, several labels a classifier.
    w.Key(info.num_labels == 1 ? "reranker" : "classifier").BeginObject();
    w.Key("id2label").BeginObject();
    for (int i = 0; i < info.num_labels; ++i) w.Key(std::to_string(i)).String(info.label(i));
    w.EndObject().Key("label2id").BeginObject();
    for (int i = 0; i < info.num_labels; ++i) w.Key(info.label(i)).Int(i);
    w.EndObject().EndObject();
  } else {
    w.Key("embedding").BeginObject().Key("pooling").String(PoolingName(m.pooling())).EndObject();
  }
  w.EndObject();
  w.Key("max_input_length").Int(m.max_seq_length());
  // Where that limit comes from (a model file and field, or --max-batch-tokens).
  w.Key("max_input_length_source").String(info.max_seq_length_source);
  WriteDtype(info, "model_dtype", &w);
  w.Key("max_client_batch_size").Int(int64_t(ServedModels::kMaxClientBatchSize));
  w.Key("auto_truncate").Bool(m.auto_truncate());
  w.Key("version").String(std::string("orchid ") + ORCHID_VERSION_STRING);
  w.Key("architecture").String(info.architecture);
  w.Key("dimensions").Int(info.late_interaction.enabled ? info.token_dim() : info.output_dim());
  w.Key("normalize").Bool(!m.is_scorer() && m.normalize());
  if (info.late_interaction.enabled) {
    w.Key("similarity").String("MaxSim");
  } else if (!m.is_scorer()) {
    w.Key("similarity").String(SimilarityName(m.prompts().similarity));
  }
  WriteTasks(info, &w);
  // What the engine runs its ops on (the CUDA engine's attention library and why).
  if (!info.engine_facts.empty()) {
    w.Key("engine").BeginObject();
    for (const ModelInfo::EngineFact& f : info.engine_facts) w.Key(f.name).String(f.value);
    w.EndObject();
  }
  w.Key("models").BeginArray();
  for (const RoutedModel& rm : served.all()) w.String(rm.embed->model_name());
  w.EndArray().EndObject();
  call.reply(std::move(r));
}

void Health(const ServedModels& served, RouteCall call) {
  call.reply(HealthResponse(served.all()));
}

void Metrics(const ServedModels& served, RouteCall call) {
  if (served.metrics() == nullptr) {
    ApiError e = ApiError::InvalidRequest("metrics are not enabled", {}, "not_found");
    e.http_status = 404;
    return call.Fail(e);
  }
  HttpResponse r;
  r.content_type = MetricsRegistry::kContentType;
  r.body = served.metrics()->Render();
  call.reply(std::move(r));
}

void OpenApi(const ServedModels& served, RouteCall call) {
  HttpResponse r;
  r.body = served.openapi();
  call.reply(std::move(r));
}

// GET / is the playground for a browser only: for anything else it stays TEI's health check.
void Root(const ServedModels& served, RouteCall call) {
  if (!AcceptsHtml(call.request.accept)) return call.reply(HealthResponse(served.all()));
  call.reply(PageResponse(call.route));
}

void Page(const ServedModels&, RouteCall call) { call.reply(PageResponse(call.route)); }

std::string ServedOpenApi(const std::vector<RoutedModel>& models,
                          std::set<std::string> operations) {
  ServedModelFacts facts = FactsOf(models);
  facts.operations = std::move(operations);
  return ServedOpenApiDocument(kOpenApiJson, facts);
}

}  // namespace orchid
