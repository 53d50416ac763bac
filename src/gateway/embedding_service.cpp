#include "gateway/embedding_service.h"

#include <exception>
#include <memory>
#include <utility>

namespace orchid {
namespace {

std::string InputParam(size_t i) { return "input[" + std::to_string(i) + "]"; }

ApiError TooLong(size_t i, size_t n, int max) {
  return ApiError::InvalidRequest(
      InputParam(i) + " has " + std::to_string(n) + " tokens, more than the model's maximum of " +
          std::to_string(max) + "; shorten it or send \"truncate\": true",
      InputParam(i), "context_length_exceeded");
}

}  // namespace

EmbeddingService::EmbeddingService(const Tokenizer* tokenizer, TokenBudgetScheduler* scheduler,
                                   std::string served_model_name, Executor completions)
    : tokenizer_(tokenizer),
      scheduler_(scheduler),
      model_name_(std::move(served_model_name)),
      completions_(std::move(completions)) {
  const ModelInfo& info = scheduler_->model_info();
  dim_ = info.hidden_size;
  max_seq_length_ = info.max_seq_length > 0 ? info.max_seq_length : info.max_position_embeddings;
  vocab_size_ = info.vocab_size;
  pooling_ = info.default_pooling;
  normalize_ = info.default_normalize;
}

std::optional<ApiError> EmbeddingService::Tokenize(EmbeddingsRequest* request,
                                                   std::vector<std::vector<int32_t>>* sequences,
                                                   int64_t* tokens) const {
  const size_t max_len = size_t(max_seq_length_);
  *tokens = 0;
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
        if (!request->truncate) return TooLong(i, ids.size(), max_seq_length_);
        ids.resize(max_len);
      }
      *tokens += int64_t(ids.size());
    }
    return std::nullopt;
  }
  EncodeOptions options;
  options.add_special_tokens = true;
  options.max_length = request->truncate ? max_len : 0;
  Encoding encoding;
  sequences->reserve(request->texts.size());
  for (size_t i = 0; i < request->texts.size(); ++i) {
    encoding.clear();
    const Status st = tokenizer_->Encode(request->texts[i], options, &encoding);
    if (!st.ok()) {
      ApiError e = ApiError::FromStatus(st, InputParam(i));
      if (e.http_status == 400) e.message = InputParam(i) + ": " + e.message;
      return e;
    }
    if (encoding.ids.empty()) {
      return ApiError::InvalidRequest(InputParam(i) + " has no tokens", InputParam(i));
    }
    if (encoding.ids.size() > max_len) return TooLong(i, encoding.ids.size(), max_seq_length_);
    *tokens += int64_t(encoding.ids.size());
    sequences->push_back(std::move(encoding.ids));
  }
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
  }
  EmbedRequest job;
  int64_t tokens = 0;
  if (auto err = Tokenize(&request, &job.sequences, &tokens)) return fail(std::move(*err));
  job.pooling = pooling_;
  job.normalize = request.normalize.value_or(normalize_);
  const bool truncate_dims = request.dimensions.has_value();

  // Shared so that the callback stays copyable (std::function) while owning `done`.
  auto shared_done = std::make_shared<std::function<void(EmbeddingReply)>>(std::move(done));
  const Status st = scheduler_->Enqueue(
      std::move(job), [this, shared_done, tokens, dims, truncate_dims](Result<Embeddings> rows) {
        auto result = std::make_shared<Result<Embeddings>>(std::move(rows));
        completions_([shared_done, result, tokens, dims, truncate_dims] {
          EmbeddingReply reply;
          try {
            if (!result->ok()) {
              reply.error = ApiError::FromStatus(result->status());
            } else {
              Embeddings& e = result->value();
              reply.embeddings.rows = e.rows;
              reply.embeddings.dim = e.dim;
              reply.embeddings.data = std::move(e.data);
              reply.prompt_tokens = tokens;
              if (truncate_dims) TruncateDimensions(&reply.embeddings, dims);
            }
          } catch (const std::exception& ex) {
            reply = EmbeddingReply{};
            reply.error = ApiError::FromStatus(Status::Internal(ex.what()));
          }
          (*shared_done)(std::move(reply));
        });
      });
  if (!st.ok()) {
    EmbeddingReply reply;
    reply.error = ApiError::FromStatus(st);
    (*shared_done)(std::move(reply));
  }
}

}  // namespace orchid
