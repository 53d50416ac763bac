#include "gateway/score_service.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <utility>

#include "gateway/document_chunks.h"
#include "gateway/parallel_slices.h"

namespace orchid {
namespace {

std::string Param(const ScoreRequest& r, size_t i) {
  std::string s = r.documents_field;
  s.append("[").append(std::to_string(i)).append("]");
  return s;
}

ApiError TooLong(const std::string& param, size_t n, int max, const char* what = "pair") {
  std::string m = param;
  m.append(": the ")
      .append(what)
      .append(" has ")
      .append(std::to_string(n))
      .append(" tokens, more than the model's maximum of ")
      .append(std::to_string(max))
      .append("; shorten it or send \"truncate\": true");
  return ApiError::InvalidRequest(std::move(m), param, "context_length_exceeded");
}

ApiError FromTokenizer(const Status& st, const std::string& param) {
  ApiError e = ApiError::FromStatus(st, param);
  if (e.http_status == 400) e.message = param + ": " + e.message;
  return e;
}

// EncodeSequence's error: the tokenizer's names the document; a template too long for the
// model's window (kInternal) is the server's.
ApiError FromEncoding(const Status& st, const std::string& param) {
  return st.code() == StatusCode::kInternal ? ApiError::FromStatus(st) : FromTokenizer(st, param);
}

}  // namespace

ScoreService::ScoreService(const Tokenizer* tokenizer, EmbedBackend* backend,
                           std::string served_model_name, Executor completions, int parallelism)
    : tokenizer_(tokenizer),
      backend_(backend),
      model_name_(std::move(served_model_name)),
      completions_(std::move(completions)),
      parallelism_(std::max(1, parallelism)) {
  const ModelInfo& info = backend_->model_info();
  max_seq_length_ = info.max_seq_length > 0 ? info.max_seq_length : info.max_position_embeddings;
  if (info.task == ModelTask::kScore && info.pair_format == PairFormat::kQwen3RerankerChat) {
    EncodeOptions plain;
    plain.add_special_tokens = false;
    Encoding e;
    if (tokenizer_->Encode(kQwen3RerankerPrefix, plain, &e).ok()) prefix_ids_ = e.ids;
    if (tokenizer_->Encode(kQwen3RerankerSuffix, plain, &e).ok()) suffix_ids_ = e.ids;
  }
}

bool ScoreService::is_scorer() const { return backend_->model_info().task == ModelTask::kScore; }

Status ScoreService::EncodeSequence(const ScoreRequest& request, std::string_view query,
                                    std::string_view document, bool truncate, Encoding* out) const {
  const size_t max_len = size_t(max_seq_length_);
  EncodeOptions options;
  options.add_special_tokens = true;
  options.side = request.truncation_direction;
  options.strategy = TruncationStrategy::kLongestFirst;
  out->clear();
  if (backend_->model_info().pair_format == PairFormat::kQwen3RerankerChat) {
    const size_t fixed = prefix_ids_.size() + suffix_ids_.size();
    if (fixed >= max_len) {
      return Status::Internal("the model's maximum length does not hold Qwen3-Reranker's template");
    }
    std::string middle = "<Instruct>: ";
    middle.append(request.instruction ? *request.instruction : kQwen3RerankerDefaultInstruction)
        .append("\n<Query>: ")
        .append(query)
        .append("\n<Document>: ")
        .append(document);
    if (truncate) options.max_length = max_len - fixed;
    Encoding body;
    ORCHID_RETURN_IF_ERROR(tokenizer_->Encode(middle, options, &body));
    out->ids.reserve(fixed + body.ids.size());
    out->ids = prefix_ids_;
    out->ids.insert(out->ids.end(), body.ids.begin(), body.ids.end());
    out->ids.insert(out->ids.end(), suffix_ids_.begin(), suffix_ids_.end());
    return Status::Ok();  // one sequence: no token types
  }
  if (truncate) options.max_length = max_len;
  return tokenizer_->EncodePair(query, document, options, out);
}

std::optional<ApiError> ScoreService::EncodePair(const ScoreRequest& request, size_t i,
                                                 Encoding* out) const {
  const std::string param = Param(request, i);
  const bool qwen3 = backend_->model_info().pair_format == PairFormat::kQwen3RerankerChat;
  const Status st = EncodeSequence(request, request.query(i), request.documents[i],
                                   request.truncate.value_or(auto_truncate_), out);
  if (!st.ok()) return FromEncoding(st, param);
  if (!qwen3 && out->ids.empty()) return ApiError::InvalidRequest(param + " has no tokens", param);
  if (out->ids.size() > size_t(max_seq_length_)) {
    return TooLong(param, out->ids.size(), max_seq_length_);
  }
  return std::nullopt;
}

std::optional<ApiError> ScoreService::EncodeChunks(const ScoreRequest& request, size_t i,
                                                   size_t max_chunks, DocumentChunks* out) const {
  const std::string param = Param(request, i);
  const std::string_view document = request.documents[i];
  const size_t max_len = size_t(max_seq_length_);
  *out = DocumentChunks{};
  Encoding whole;
  if (Status st = EncodeSequence(request, request.query(i), document, false, &whole); !st.ok()) {
    return FromEncoding(st, param);
  }
  if (!whole.ids.empty() && whole.ids.size() <= max_len) {  // fits: the document is its chunk
    out->bytes.emplace_back(0, document.size());
    out->encodings.push_back(std::move(whole));
    return std::nullopt;
  }
  if (whole.ids.size() > max_len) {
    EncodeOptions plain;
    plain.add_special_tokens = false;
    Encoding alone;
    if (Status st = tokenizer_->Encode(document, plain, &alone); !st.ok()) {
      return FromTokenizer(st, param);
    }
    // The room beside the query and the special tokens (or the chat template).
    const size_t rest = whole.ids.size() - std::min(whole.ids.size(), alone.ids.size());
    const size_t budget = max_len > rest ? max_len - rest : 0;
    Encoding chunk;
    Result<std::vector<TokenRange>> plan = PlanChunks(
        document, alone.offsets, budget, max_chunks, [&](TokenRange range) -> Result<size_t> {
          const auto [begin, end] = ChunkBytes(document, alone.offsets, range);
          ORCHID_RETURN_IF_ERROR(EncodeSequence(
              request, request.query(i), document.substr(begin, end - begin), false, &chunk));
          if (chunk.ids.size() > max_len) return chunk.ids.size() - max_len;
          out->bytes.emplace_back(begin, end);
          out->encodings.push_back(std::move(chunk));
          return size_t(0);
        });
    if (!plan.ok()) return FromEncoding(plan.status(), param);
    if (!plan->empty()) return std::nullopt;
    *out = DocumentChunks{};
  }
  // No tokens, or a query that leaves no room for a chunk: as without chunking.
  Encoding encoding;
  if (auto err = EncodePair(request, i, &encoding)) return err;
  out->bytes.emplace_back(0, document.size());
  out->encodings.push_back(std::move(encoding));
  return std::nullopt;
}

std::optional<ApiError> ScoreService::EncodeInput(const PredictRequest& request, size_t i,
                                                  Encoding* out) const {
  const std::string param = request.batch ? "inputs[" + std::to_string(i) + "]" : "inputs";
  const size_t max_len = size_t(max_seq_length_);
  EncodeOptions options;
  options.add_special_tokens = true;
  options.side = request.truncation_direction;
  options.strategy = TruncationStrategy::kLongestFirst;
  if (request.truncate.value_or(auto_truncate_)) options.max_length = max_len;
  out->clear();
  const Status st = request.second[i].empty()
                        ? tokenizer_->Encode(request.first[i], options, out)
                        : tokenizer_->EncodePair(request.first[i], request.second[i], options, out);
  if (!st.ok()) return FromTokenizer(st, param);
  if (out->ids.empty()) return ApiError::InvalidRequest(param + " has no tokens", param);
  if (out->ids.size() > max_len) {
    return TooLong(param, out->ids.size(), max_seq_length_,
                   request.second[i].empty() ? "text" : "pair");
  }
  return std::nullopt;
}

void ScoreService::Run(size_t n, const EncodeFn& encode, Scheduling scheduling, RowsDone done) {
  EmbedRequest job;
  job.scheduling = std::move(scheduling);
  job.pooling = backend_->model_info().default_pooling;
  job.normalize = false;
  job.sequences.resize(n);
  std::vector<std::vector<int32_t>> types(n);  // empty where all are 0
  const bool typed = backend_->model_info().type_vocab_size > 1;
  int64_t tokens = 0;
  // Inputs [begin, end) into job.sequences / types; the first failing input's error.
  auto encode_range = [&](size_t begin, size_t end, int64_t* count) -> std::optional<ApiError> {
    Encoding encoding;
    for (size_t i = begin; i < end; ++i) {
      encoding.clear();
      if (auto err = encode(i, &encoding)) return err;
      if (encoding.ids.empty()) {  // the encoders refuse this first, naming the input
        return ApiError::InvalidRequest("input " + std::to_string(i) + " has no tokens");
      }
      *count += int64_t(encoding.ids.size());
      job.sequences[i] = std::move(encoding.ids);
      // Models without token-type embeddings (DistilBERT, MPNet, RoBERTa) take none, whatever
      // the tokenizer's pair template numbers the second text (as transformers' tokenizers for
      // them leave token_type_ids out of the model's inputs).
      if (typed && std::any_of(encoding.type_ids.begin(), encoding.type_ids.end(),
                               [](int32_t t) { return t != 0; })) {
        types[i] = std::move(encoding.type_ids);
      }
    }
    return std::nullopt;
  };
  if (auto err =
          RunSlices(completions_, parallelism_, n, kMinPairsPerSlice, encode_range, &tokens)) {
    return done(std::move(*err), Embeddings{}, 0);
  }
  if (std::any_of(types.begin(), types.end(), [](const auto& t) { return !t.empty(); })) {
    job.token_type_ids = std::move(types);
  }
  const int width = backend_->model_info().num_labels;
  auto shared_done = std::make_shared<RowsDone>(std::move(done));
  backend_->Embed(std::move(job), [this, shared_done, tokens, n, width](Result<Embeddings> rows) {
    auto result = std::make_shared<Result<Embeddings>>(std::move(rows));
    completions_([shared_done, result, tokens, n, width] {
      if (!result->ok()) {
        return (*shared_done)(ApiError::FromStatus(result->status()), Embeddings{}, tokens);
      }
      const Embeddings& m = result->value();
      if (m.rows != int(n) || m.dim != width) {
        return (*shared_done)(
            ApiError::FromStatus(Status::Internal("the backend returned " + std::to_string(m.rows) +
                                                  " rows of width " + std::to_string(m.dim) +
                                                  " for " + std::to_string(n) + " inputs of " +
                                                  std::to_string(width) + " labels")),
            Embeddings{}, tokens);
      }
      (*shared_done)(std::nullopt, std::move(*result).value(), tokens);
    });
  });
}

void ScoreService::Score(ScoreRequest request, std::function<void(ScoreReply)> done) {
  auto fail = [&done](ApiError e) {
    ScoreReply reply;
    reply.error = std::move(e);
    done(std::move(reply));
  };
  const ModelInfo& info = backend_->model_info();
  if (info.task != ModelTask::kScore) {
    return fail(ApiError::InvalidRequest(
        "The model `" + model_name_ +
            "` is an embedding model; rerank and score requests need a reranker "
            "(cross-encoder) model. Use /v1/embeddings for it.",
        "model", "model_not_a_reranker"));
  }
  if (info.num_labels != 1) {
    return fail(ApiError::InvalidRequest("The model `" + model_name_ + "` has " +
                                             std::to_string(info.num_labels) +
                                             " labels; rerank and score need a one-label model "
                                             "(use /predict for classifiers)",
                                         "model", "model_not_a_reranker"));
  }
  const int64_t max_chunks = request.max_chunks_per_doc.value_or(max_chunks_per_doc_);
  if (max_chunks > 0) return ScoreChunked(std::move(request), size_t(max_chunks), std::move(done));
  const size_t n = request.num_pairs();
  const bool raw = request.raw_scores || info.score_activation == ScoreActivation::kIdentity;
  auto shared = std::make_shared<ScoreRequest>(std::move(request));
  Run(
      n, [this, shared](size_t i, Encoding* e) { return EncodePair(*shared, i, e); },
      shared->scheduling,
      [shared, done = std::move(done), raw, n](std::optional<ApiError> error, Embeddings m,
                                               int64_t tokens) {
        ScoreReply reply;
        if (error) {
          reply.error = std::move(error);
          return done(std::move(reply));
        }
        reply.scores.resize(n);
        for (size_t i = 0; i < n; ++i) {
          const float logit = m.row(int(i))[0];
          reply.scores[i] = raw ? logit : 1.0f / (1.0f + std::exp(-logit));
        }
        reply.tokens = tokens;
        done(std::move(reply));
      });
}

void ScoreService::ScoreChunked(ScoreRequest request, size_t max_chunks,
                                std::function<void(ScoreReply)> done) {
  const ModelInfo& info = backend_->model_info();
  const size_t n = request.num_pairs();
  const bool raw = request.raw_scores || info.score_activation == ScoreActivation::kIdentity;
  auto shared = std::make_shared<ScoreRequest>(std::move(request));
  auto chunks = std::make_shared<std::vector<DocumentChunks>>(n);
  int64_t unused = 0;
  if (auto err = RunSlices(
          completions_, parallelism_, n, kMinPairsPerSlice,
          [&](size_t begin, size_t end, int64_t*) -> std::optional<ApiError> {
            for (size_t i = begin; i < end; ++i) {
              if (auto e = EncodeChunks(*shared, i, max_chunks, &(*chunks)[i])) return e;
            }
            return std::nullopt;
          },
          &unused)) {
    ScoreReply reply;
    reply.error = std::move(*err);
    return done(std::move(reply));
  }
  // Sequence j of the job is chunk j - first[i] of pair i, for first[i] <= j < first[i + 1].
  auto first = std::make_shared<std::vector<size_t>>(n + 1, 0);
  for (size_t i = 0; i < n; ++i) (*first)[i + 1] = (*first)[i] + (*chunks)[i].encodings.size();
  Run(
      first->back(),
      [chunks, first](size_t j, Encoding* e) -> std::optional<ApiError> {
        const size_t i =
            size_t(std::upper_bound(first->begin(), first->end(), j) - first->begin()) - 1;
        *e = std::move((*chunks)[i].encodings[j - (*first)[i]]);
        return std::nullopt;
      },
      shared->scheduling,
      [shared, chunks, first, done = std::move(done), raw, n](std::optional<ApiError> error,
                                                              Embeddings m, int64_t tokens) {
        ScoreReply reply;
        if (error) {
          reply.error = std::move(error);
          return done(std::move(reply));
        }
        reply.scores.resize(n);
        reply.chunks.resize(n);
        for (size_t i = 0; i < n; ++i) {
          size_t best = (*first)[i];
          for (size_t j = best + 1; j < (*first)[i + 1]; ++j) {
            if (m.row(int(j))[0] > m.row(int(best))[0]) best = j;
          }
          const float logit = m.row(int(best))[0];
          reply.scores[i] = raw ? logit : 1.0f / (1.0f + std::exp(-logit));
          const std::string_view document = shared->documents[i];
          const auto [begin, end] = (*chunks)[i].bytes[best - (*first)[i]];
          ChunkHit& hit = reply.chunks[i];
          hit.index = int64_t(best - (*first)[i]);
          hit.start = int64_t(CodePointOffset(document, begin));
          hit.end = hit.start + int64_t(CodePointOffset(document.substr(begin), end - begin));
          hit.count = int64_t((*first)[i + 1] - (*first)[i]);
        }
        reply.tokens = tokens;
        done(std::move(reply));
      });
}

void ScoreService::Predict(PredictRequest request, std::function<void(PredictReply)> done) {
  auto fail = [&done](ApiError e) {
    PredictReply reply;
    reply.error = std::move(e);
    done(std::move(reply));
  };
  const ModelInfo& info = backend_->model_info();
  if (info.task != ModelTask::kScore || info.pair_format != PairFormat::kTokenizerPair) {
    return fail(ApiError::InvalidRequest(
        "The model `" + model_name_ +
            (info.task != ModelTask::kScore
                 ? "` is an embedding model; /predict needs a sequence-classification model"
                 : "` scores (query, document) pairs through its chat template; use /rerank"),
        "model", "model_not_a_classifier"));
  }
  const size_t n = request.size();
  const int labels = info.num_labels;
  // Probabilities: the model's own activation for one label (as /rerank), a sigmoid per label
  // for independent labels, else a softmax over them (transformers' text-classification), unless
  // the request names the function.
  const ScoreFunction activation =
      request.function     ? *request.function
      : request.raw_scores ? ScoreFunction::kNone
      : labels == 1
          ? (info.score_activation == ScoreActivation::kIdentity ? ScoreFunction::kNone
                                                                 : ScoreFunction::kSigmoid)
      : info.multi_label ? ScoreFunction::kSigmoid
                         : ScoreFunction::kSoftmax;
  auto shared = std::make_shared<PredictRequest>(std::move(request));
  Run(
      n, [this, shared](size_t i, Encoding* e) { return EncodeInput(*shared, i, e); },
      shared->scheduling,
      [done = std::move(done), activation, n, labels](std::optional<ApiError> error, Embeddings m,
                                                      int64_t tokens) {
        PredictReply reply;
        if (error) {
          reply.error = std::move(error);
          return done(std::move(reply));
        }
        reply.scores = std::move(m.data);
        for (size_t i = 0; i < n; ++i) {
          float* row = reply.scores.data() + i * size_t(labels);
          if (activation == ScoreFunction::kSigmoid) {
            for (int k = 0; k < labels; ++k) row[k] = 1.0f / (1.0f + std::exp(-row[k]));
          } else if (activation == ScoreFunction::kSoftmax) {
            const float top = *std::max_element(row, row + labels);
            double sum = 0;
            for (int k = 0; k < labels; ++k) sum += std::exp(double(row[k] - top));
            for (int k = 0; k < labels; ++k) row[k] = float(std::exp(double(row[k] - top)) / sum);
          }
        }
        reply.tokens = tokens;
        done(std::move(reply));
      });
}

}  // namespace orchid
