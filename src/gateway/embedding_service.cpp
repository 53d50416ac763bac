#include "gateway/embedding_service.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <utility>

#include "description/lora_adapters.h"
#include "gateway/parallel_slices.h"

namespace orchid {
namespace {

std::string InputParam(size_t i) { return "input[" + std::to_string(i) + "]"; }

// `requested`: the limit is the request's max_tokens, not the model's maximum.
ApiError TooLong(size_t i, size_t n, int max, bool requested) {
  return ApiError::InvalidRequest(
      InputParam(i) + " has " + std::to_string(n) + " tokens, more than " +
          (requested ? "max_tokens, " : "the model's maximum of ") + std::to_string(max) +
          "; shorten it or send \"truncate\": true",
      InputParam(i), "context_length_exceeded");
}

// `rows` (one per input of `inputs`, in order) spread over num_inputs rows, the others zero.
Embeddings WithZeroRows(const Embeddings& rows, const std::vector<size_t>& inputs,
                        size_t num_inputs, int dim) {
  Embeddings out;
  out.rows = int(num_inputs);
  out.dim = dim;
  out.data.assign(num_inputs * size_t(dim), 0.0f);
  for (size_t j = 0; j < inputs.size(); ++j) {
    std::copy_n(rows.row(int(j)), dim, out.data.begin() + std::ptrdiff_t(inputs[j] * size_t(dim)));
  }
  return out;
}

// Late interaction: the kept token rows of each input (keep[input][token]), L2-normalised, in
// place of all of them; counts become the kept numbers.
void KeepLateRows(const std::vector<std::vector<uint8_t>>& keep, Embeddings* m,
                  std::vector<int32_t>* counts) {
  const size_t dim = size_t(m->dim);
  size_t row = 0, kept = 0;
  for (size_t i = 0; i < keep.size() && i < counts->size(); ++i) {
    int32_t n = 0;
    for (size_t t = 0; t < keep[i].size() && row < size_t(m->rows); ++t, ++row) {
      if (!keep[i][t]) continue;
      if (kept != row) {
        std::copy_n(m->data.data() + row * dim, dim, m->data.data() + kept * dim);
      }
      ++kept;
      ++n;
    }
    (*counts)[i] = n;
  }
  m->rows = int(kept);
  m->data.resize(kept * dim);
  NormalizeRows(m->data.data(), m->rows, m->dim);
}

}  // namespace

void ApplyTextInput(const TextInput& rule, std::vector<int32_t>* ids) {
  if (ids->empty()) return;
  auto cut_after = [ids](std::vector<int32_t>::iterator it) {
    if (it != ids->end()) ids->erase(it + 1, ids->end());
  };
  if (rule.end == TextInput::End::kFirstEos) {
    cut_after(std::find(ids->begin(), ids->end(), rule.eos_id));
  } else if (rule.end == TextInput::End::kFirstMaxId) {
    cut_after(std::max_element(ids->begin(), ids->end()));  // the first of the largest
  }
  if (rule.pad_to > 0 && ids->size() < size_t(rule.pad_to)) {
    ids->resize(size_t(rule.pad_to), rule.pad_id);
  }
}

EmbeddingService::EmbeddingService(const Tokenizer* tokenizer, EmbedBackend* backend,
                                   std::string served_model_name, Executor completions,
                                   MetricsRegistry* metrics, int parallelism)
    : tokenizer_(tokenizer),
      backend_(backend),
      parallelism_(std::max(1, parallelism)),
      model_name_(std::move(served_model_name)),
      completions_(std::move(completions)) {
  if (metrics != nullptr) {
    tokenize_seconds_ = metrics->GetHistogram("orchid_gateway_tokenize_seconds",
                                              "Time to tokenize the inputs of one request",
                                              LatencyBuckets());
  }
  const ModelInfo& info = backend_->model_info();
  dim_ = info.output_dim();
  max_seq_length_ = info.max_seq_length > 0 ? info.max_seq_length : info.max_position_embeddings;
  vocab_size_ = info.vocab_size;
  pooling_ = info.default_pooling;
  normalize_ = info.default_normalize;
  if (info.bge_m3) m3_unused_ = BgeM3UnusedTokens(*tokenizer_);
  if (info.late_interaction.enabled) {
    Result<LateInteractionEncoder> late =
        LateInteractionEncoder::Make(info.late_interaction, *tokenizer_);
    if (late.ok()) {
      late_ = std::move(late.value());
    } else {
      late_status_ = late.status();
    }
  }
}

std::optional<ApiError> EmbeddingService::TokenizeLate(
    const EmbeddingsRequest& request, EmbedRequest* job, int64_t* tokens,
    std::vector<std::vector<uint8_t>>* keep) const {
  if (!late_) return ApiError::FromStatus(late_status_);
  if (request.pretokenized()) {
    return ApiError::InvalidRequest(
        "this late-interaction (ColBERT) model takes texts, not token ids: its query and "
        "document markers and query expansion are added to the text's tokens",
        "input");
  }
  const std::string& kind =
      request.prompt_name ? *request.prompt_name : request.input_type.value_or(std::string());
  if (request.prompt_name && kind != "query" && kind != "document") {
    return ApiError::InvalidRequest(
        "prompt_name `" + kind + "` is not one of this model's prompts (query, document)",
        "prompt_name", "invalid_prompt_name");
  }
  const size_t n = request.texts.size();
  const size_t queries = request.late_queries.value_or(kind == "query" ? n : 0);
  job->sequences.assign(n, {});
  job->attend_lens.assign(n, 0);
  keep->assign(n, {});
  *tokens = 0;
  LateInteractionEncoder::Encoded e;
  for (size_t i = 0; i < n; ++i) {
    // sentence-transformers strips each text before tokenizing it.
    std::string_view text = request.texts[i];
    constexpr std::string_view kSpace = " \t\n\r\f\v";
    const size_t first = text.find_first_not_of(kSpace);
    text = first == std::string_view::npos
               ? std::string_view()
               : text.substr(first, text.find_last_not_of(kSpace) - first + 1);
    const Status st = late_->Encode(text, i < queries, &e);
    if (!st.ok()) {
      ApiError err = ApiError::FromStatus(st, InputParam(i));
      if (err.http_status == 400) err.message = InputParam(i) + ": " + err.message;
      return err;
    }
    *tokens += int64_t(e.ids.size());
    job->sequences[i] = std::move(e.ids);
    job->attend_lens[i] = e.attend_len;
    (*keep)[i] = std::move(e.keep);
  }
  if (std::all_of(job->attend_lens.begin(), job->attend_lens.end(),
                  [](int32_t a) { return a == 0; })) {
    job->attend_lens.clear();
  }
  return std::nullopt;
}

void EmbeddingService::SetPrompts(EncodeConfig prompts, std::optional<std::string> default_prompt) {
  prompts_ = std::move(prompts);
  default_prompt_ = std::move(default_prompt);
}

std::optional<ApiError> EmbeddingService::SelectTask(const EmbeddingsRequest& request, int* adapter,
                                                     std::string* task) const {
  *adapter = 0;
  task->clear();
  const std::vector<std::string>& tasks = backend_->model_info().tasks;
  // A task's own name, or its adapter folder's (retrieval_query for retrieval.query).
  auto find = [&tasks](const std::string& name) -> int {
    const std::string canonical = TaskOfAdapterFolder(name);
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i] == name || tasks[i] == canonical) return int(i) + 1;
    }
    return 0;
  };
  if (request.task) {
    *adapter = find(*request.task);
    if (*adapter == 0) {
      std::string names;
      for (const std::string& t : tasks) names += (names.empty() ? "" : ", ") + t;
      return ApiError::InvalidRequest(
          "task `" + *request.task + "` is not one of this model's tasks (" +
              (names.empty() ? std::string("it has no task adapters: leave task out") : names) +
              ")",
          "task", "invalid_task");
    }
  } else if (tasks.empty()) {
    return std::nullopt;
  } else if (request.prompt_name && find(*request.prompt_name) != 0) {
    // sentence-transformers' usage of jina-embeddings-v3: encode(task=T, prompt_name=T).
    *adapter = find(*request.prompt_name);
  } else if (request.input_type) {
    // OpenAI-style query / document and Cohere's input types, as Jina's own integrations map
    // them (clustering runs the separation adapter).
    const std::string& type = *request.input_type;
    const char* mapped = type == "query"            ? "retrieval.query"
                         : type == "document"       ? "retrieval.passage"
                         : type == "classification" ? "classification"
                         : type == "clustering"     ? "separation"
                                                    : "";
    *adapter = find(mapped);
  }
  if (*adapter > 0) *task = tasks[size_t(*adapter) - 1];
  return std::nullopt;
}

std::optional<ApiError> EmbeddingService::SelectPrompt(const EmbeddingsRequest& request,
                                                       const std::string& task,
                                                       std::string* prefix) const {
  prefix->clear();
  if (request.pretokenized()) {
    if (request.prompt_name || request.input_type) {
      return ApiError::InvalidRequest(
          "prompt_name and input_type apply to text inputs, not token ids", "input");
    }
    return std::nullopt;
  }
  if (!task.empty()) {
    // The task's prompt (jina-embeddings-v3: "Represent the query for retrieving evidence
    // documents: " for retrieval.query), unless prompt_name names one of its own.
    const std::string& name =
        request.prompt_name && prompts_.prompts.count(*request.prompt_name) != 0
            ? *request.prompt_name
            : task;
    if (auto it = prompts_.prompts.find(name); it != prompts_.prompts.end()) *prefix = it->second;
    return std::nullopt;
  }
  if (request.prompt_name) {
    auto it = prompts_.prompts.find(*request.prompt_name);
    if (it == prompts_.prompts.end()) {
      std::string names;
      for (const auto& [name, text] : prompts_.prompts) names += (names.empty() ? "" : ", ") + name;
      return ApiError::InvalidRequest(
          "prompt_name `" + *request.prompt_name + "` is not one of this model's prompts (" +
              (names.empty() ? std::string("it has none") : names) + ")",
          "prompt_name", "invalid_prompt_name");
    }
    *prefix = it->second;
  } else if (request.input_type) {
    // The request parsers checked the type's name. A model without a prompt for this type
    // embeds the text as it is (documents usually).
    if (auto it = prompts_.prompts.find(*request.input_type); it != prompts_.prompts.end()) {
      *prefix = it->second;
    }
  } else if (default_prompt_) {
    *prefix = *default_prompt_;
  } else if (!prompts_.default_prompt_name.empty()) {
    *prefix = prompts_.prompts.at(prompts_.default_prompt_name);
  }
  return std::nullopt;
}

std::optional<ApiError> EmbeddingService::Tokenize(EmbeddingsRequest* request,
                                                   const std::string& task,
                                                   std::vector<std::vector<int32_t>>* sequences,
                                                   int64_t* tokens, int* pool_skip) const {
  // The model's maximum, or the request's own smaller one (Cohere's max_tokens, which counts a
  // text's own tokens: the special tokens the model adds to a text come on top).
  int64_t requested = request->max_tokens.value_or(max_seq_length_);
  if (request->max_tokens && !request->pretokenized()) {
    requested =
        std::min<int64_t>(requested, max_seq_length_) + int64_t(tokenizer_->num_special_tokens());
  }
  const int max_tokens = int(std::min<int64_t>(requested, max_seq_length_));
  const size_t max_len = size_t(max_tokens);
  *tokens = 0;
  std::string prefix;
  if (auto err = SelectPrompt(*request, task, &prefix)) return err;
  *pool_skip = 0;
  if (!prefix.empty() && !backend_->model_info().include_prompt) {
    // sentence-transformers' prompt length: the prompt tokenized alone, less a trailing special
    // token ([SEP], EOS), so that the template's leading tokens ([CLS]) count as prompt.
    Encoding prompt;
    EncodeOptions whole;
    whole.add_special_tokens = true;
    const Status st = tokenizer_->Encode(prefix, whole, &prompt);
    if (!st.ok()) return ApiError::FromStatus(st, "prompt_name");
    *pool_skip = int(prompt.ids.size());
    if (!prompt.special_tokens_mask.empty() && prompt.special_tokens_mask.back() != 0) {
      --*pool_skip;
    }
  }
  if (request->pretokenized()) {
    *sequences = std::move(request->token_ids);
    for (size_t i = 0; i < sequences->size(); ++i) {
      std::vector<int32_t>& ids = (*sequences)[i];
      for (size_t j = 0; j < ids.size(); ++j) {
        if (ids[j] >= vocab_size_) {
          const std::string param = InputParam(i) + "[" + std::to_string(j) + "]";
          return ApiError::InvalidRequest("token id " + std::to_string(ids[j]) +
                                              " is out of the vocabulary (size " +
                                              std::to_string(vocab_size_) + ")",
                                          param, "invalid_token_id");
        }
      }
      if (ids.size() > max_len) {
        if (!request->truncate.value_or(auto_truncate_)) {
          return TooLong(i, ids.size(), max_tokens, max_tokens < max_seq_length_);
        }
        if (request->truncation_direction == TruncationSide::kLeft) {
          ids.erase(ids.begin(), ids.end() - std::ptrdiff_t(max_len));
        } else {
          ids.resize(max_len);
        }
      }
      ApplyTextInput(backend_->model_info().text, &ids);
      *tokens += int64_t(ids.size());
    }
    return std::nullopt;
  }
  const TextInput text_input = backend_->model_info().text;
  EncodeOptions options;
  options.add_special_tokens = true;
  options.max_length = request->truncate.value_or(auto_truncate_) ? max_len : 0;
  options.side = request->truncation_direction;
  const size_t n = request->texts.size();
  sequences->assign(n, {});
  // Inputs [begin, end) into (*sequences)[begin, end); the first failing input's error.
  auto encode_range = [&](size_t begin, size_t end, int64_t* count) -> std::optional<ApiError> {
    Encoding encoding;
    std::string prompted;
    for (size_t i = begin; i < end; ++i) {
      encoding.clear();
      std::string_view text = request->texts[i];
      if (!prefix.empty()) {
        prompted.assign(prefix).append(text);
        text = prompted;
      }
      const Status st = tokenizer_->Encode(text, options, &encoding);
      if (!st.ok()) {
        ApiError e = ApiError::FromStatus(st, InputParam(i));
        if (e.http_status == 400) e.message = InputParam(i) + ": " + e.message;
        return e;
      }
      if (encoding.ids.empty() && !empty_text_is_zero_) {
        return ApiError::InvalidRequest(InputParam(i) + " has no tokens", InputParam(i));
      }
      if (encoding.ids.size() > max_len) {
        return TooLong(i, encoding.ids.size(), max_tokens, max_tokens < max_seq_length_);
      }
      ApplyTextInput(text_input, &encoding.ids);
      *count += int64_t(encoding.ids.size());
      (*sequences)[i] = std::move(encoding.ids);
    }
    return std::nullopt;
  };
  return RunSlices(completions_, parallelism_, n, kMinInputsPerSlice, encode_range, tokens);
}

std::optional<ApiError> EmbeddingService::SplitBgeM3(Embeddings rows,
                                                     const std::vector<std::vector<int32_t>>& ids,
                                                     EmbeddingReply* reply) const {
  const ModelInfo& info = backend_->model_info();
  const int dim = info.token_dim() - 1;
  size_t total = 0;
  for (const auto& seq : ids) total += seq.size();
  if (rows.dim != dim + 1 || size_t(rows.rows) != total ||
      rows.pooled.size() != ids.size() * size_t(dim_)) {
    return ApiError::FromStatus(Status::Internal("BGE-M3 rows of the wrong shape"));
  }
  reply->dense.rows = int(ids.size());
  reply->dense.dim = dim_;
  reply->dense.data = std::move(rows.pooled);
  reply->lexical.assign(ids.size(), {});
  EmbeddingMatrix& colbert = reply->embeddings;
  colbert.dim = dim;
  colbert.data.reserve(total * size_t(dim));
  reply->token_counts.clear();
  size_t first = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int n = int(ids[i].size());
    SplitBgeM3Rows(ids[i].data(), rows.row(int(first)), n, dim, m3_unused_, &reply->lexical[i],
                   &colbert.data);
    reply->token_counts.push_back(std::max(n - 1, 0));
    first += size_t(n);
  }
  colbert.rows = int(colbert.data.size() / size_t(dim));
  return std::nullopt;
}

void EmbeddingService::Embed(EmbeddingsRequest request, std::function<void(EmbeddingReply)> done) {
  auto fail = [&done](ApiError e) {
    EmbeddingReply reply;
    reply.error = std::move(e);
    done(std::move(reply));
  };
  if (request.model && *request.model != model_name_) {
    ApiError e =
        ApiError::InvalidRequest("The model `" + *request.model +
                                     "` does not exist; this server serves `" + model_name_ + "`",
                                 "model", "model_not_found");
    e.http_status = 404;
    return fail(std::move(e));
  }
  int dims = dim_;
  if (request.dimensions) {
    if (*request.dimensions < 1 || *request.dimensions > dim_) {
      return fail(ApiError::InvalidRequest(
          "dimensions must be between 1 and " + std::to_string(dim_) + " for this model",
          "dimensions"));
    }
    dims = int(*request.dimensions);
    const std::vector<int>& allowed = backend_->model_info().matryoshka_dimensions;
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), dims) == allowed.end()) {
      std::string list;
      for (int d : allowed) list += (list.empty() ? "" : ", ") + std::to_string(d);
      return fail(ApiError::InvalidRequest(
          "dimensions must be one of this model's Matryoshka dimensions (" + list + ")",
          "dimensions"));
    }
  }
  if (request.per_token && backend_->model_info().image.enabled()) {
    // Its towers' per-token states are not what either reference returns as last_hidden_state
    // (CLIP's text tower normalises them, SigLIP's vision tower pools them by its head).
    return fail(ApiError::InvalidRequest(
        "The model `" + model_name_ +
            "` is a dual encoder (CLIP / SigLIP): it gives one vector per text or picture, not "
            "one per token. Use /v1/embeddings or /embed.",
        "model", "model_not_per_token"));
  }
  // Images, or what a model with a vision tower reads as images.
  const bool image_strings = std::any_of(request.texts.begin(), request.texts.end(),
                                         [](const std::string& t) { return IsImageDataUri(t); });
  if (!request.images.empty() || request.image_modality || image_strings) {
    return EmbedWithImages(std::move(request), dims, std::move(done));
  }
  // Per-token output has no pooled vector to truncate: a valid `dimensions` is ignored there.
  if (request.per_token) request.dimensions.reset();
  EmbedRequest job;
  std::string task;
  if (auto err = SelectTask(request, &job.adapter, &task)) return fail(std::move(*err));
  int64_t tokens = 0;
  const auto tokenize_start = std::chrono::steady_clock::now();
  // Late interaction: which token vectors each input keeps (empty: not such a model).
  auto keep = std::make_shared<std::vector<std::vector<uint8_t>>>();
  if (late_interaction()) {
    if (!request.per_token) {
      return fail(ApiError::InvalidRequest(
          "The model `" + model_name_ +
              "` is a late-interaction (ColBERT) model: it gives one vector per token, not one "
              "per input. Use /embed_all or /pooling (task \"token_embed\") for its vectors, "
              "and /rerank, /v1/rerank or /v1/score for its MaxSim scores.",
          "model", "model_is_multi_vector"));
    }
    if (auto err = TokenizeLate(request, &job, &tokens, keep.get())) return fail(std::move(*err));
  } else if (auto err = Tokenize(&request, task, &job.sequences, &tokens, &job.pool_skip)) {
    return fail(std::move(*err));
  }
  if (tokenize_seconds_ != nullptr && !request.pretokenized()) {
    tokenize_seconds_->Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - tokenize_start).count());
  }
  job.pooling = pooling_;
  job.normalize = request.normalize.value_or(normalize_);
  std::vector<int32_t> token_counts;
  if (request.per_token) {
    // Every token's hidden state, as the model computes it (no pooling, no normalisation).
    job.pooling = Pooling::kNone;
    job.normalize = false;
    job.pool_skip = 0;
    token_counts.reserve(job.sequences.size());
    for (const auto& seq : job.sequences) token_counts.push_back(int32_t(seq.size()));
  }
  job.scheduling = std::move(request.scheduling);
  // A search query a person waits for, whatever its size; other requests are classed by size.
  if (request.input_type == "query" && job.scheduling.request_class == RequestClass::kAuto) {
    job.scheduling.request_class = RequestClass::kQuery;
  }
  job.dimensions = request.dimensions ? dims : 0;
  // Texts without a token (set_empty_text_is_zero): left out of the job, zero rows in the reply.
  auto inputs = std::make_shared<std::vector<size_t>>();  // each sequence's input; empty: same
  const size_t num_inputs = job.sequences.size();
  if (empty_text_is_zero_ && std::any_of(job.sequences.begin(), job.sequences.end(),
                                         [](const std::vector<int32_t>& s) { return s.empty(); })) {
    size_t kept = 0;
    for (size_t i = 0; i < num_inputs; ++i) {
      if (job.sequences[i].empty()) continue;
      inputs->push_back(i);
      if (kept != i) job.sequences[kept] = std::move(job.sequences[i]);
      ++kept;
    }
    job.sequences.resize(kept);
  }
  const bool per_token = request.per_token;
  // BGE-M3's lexical weights need each sequence's token ids after the pass.
  auto m3_ids = std::make_shared<std::vector<std::vector<int32_t>>>();
  if (per_token && bge_m3()) *m3_ids = job.sequences;
  if (job.sequences.empty()) {
    EmbeddingReply reply;
    if (per_token) {  // no token rows; token_counts says so
      reply.embeddings.dim = backend_->model_info().hidden_size;
    } else {
      reply.embeddings = WithZeroRows(Embeddings(), *inputs, num_inputs, dims);
    }
    reply.token_counts = std::move(token_counts);
    return done(std::move(reply));
  }

  // Shared so that the callback stays copyable (std::function) while owning `done`.
  auto shared_done = std::make_shared<std::function<void(EmbeddingReply)>>(std::move(done));
  // The backend may answer inline (refused at once) or from its own thread; either way the
  // reply is built on the completions executor.
  auto counts = std::make_shared<std::vector<int32_t>>(std::move(token_counts));
  backend_->Embed(std::move(job), [this, shared_done, tokens, counts, inputs, num_inputs, per_token,
                                   keep, m3_ids](Result<Embeddings> rows) {
    auto result = std::make_shared<Result<Embeddings>>(std::move(rows));
    completions_([this, shared_done, result, tokens, counts, inputs, num_inputs, per_token, keep,
                  m3_ids] {
      EmbeddingReply reply;
      if (!result->ok()) {
        reply.error = ApiError::FromStatus(result->status());
      } else if (!m3_ids->empty()) {
        reply.prompt_tokens = tokens;
        if (auto err = SplitBgeM3(std::move(result->value()), *m3_ids, &reply)) {
          reply.error = std::move(err);
        }
      } else if (!inputs->empty() && !per_token) {
        // (Per-token rows need nothing: the inputs without a token own none in token_counts.)
        reply.embeddings = WithZeroRows(result->value(), *inputs, num_inputs, result->value().dim);
        reply.prompt_tokens = tokens;
        reply.token_counts = std::move(*counts);
      } else {
        reply.embeddings = std::move(result->value());
        reply.prompt_tokens = tokens;
        reply.token_counts = std::move(*counts);
        if (!keep->empty()) KeepLateRows(*keep, &reply.embeddings, &reply.token_counts);
      }
      (*shared_done)(std::move(reply));
    });
  });
}

}  // namespace orchid
