// EmbeddingService's image requests (dual encoders): see EmbedWithImages in embedding_service.h.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <utility>

#include "gateway/embedding_service.h"
#include "gateway/parallel_slices.h"

namespace orchid {
namespace {

std::string InputParam(size_t i) { return "input[" + std::to_string(i) + "]"; }

// The two halves of a request with texts and images, joined when both have answered.
struct ImageJoin {
  std::mutex mu;
  int pending = 2;
  size_t num_inputs = 0;
  std::vector<size_t> text_index, image_index;  // each half's rows' input indices
  EmbeddingReply text, image;
  std::function<void(EmbeddingReply)> done;

  // The texts went as a request of their own: an error naming its input[k] names the request's
  // input[text_index[k]].
  void RenumberInput(ApiError* e) const {
    const std::string prefix = "input[";
    if (e->param.rfind(prefix, 0) != 0) return;
    const size_t close = e->param.find(']');
    if (close == std::string::npos) return;
    const size_t k = std::strtoull(e->param.c_str() + prefix.size(), nullptr, 10);
    if (k >= text_index.size()) return;
    const std::string old_param = e->param.substr(0, close + 1);
    const std::string new_param = InputParam(text_index[k]);
    e->param = new_param + e->param.substr(close + 1);
    for (size_t at = e->message.find(old_param); at != std::string::npos;
         at = e->message.find(old_param, at + new_param.size())) {
      e->message.replace(at, old_param.size(), new_param);
    }
  }

  // Called once per half; the last one answers.
  void Finish(bool is_text, EmbeddingReply reply) {
    {
      std::lock_guard<std::mutex> lock(mu);
      (is_text ? text : image) = std::move(reply);
      if (--pending > 0) return;
    }
    EmbeddingReply out;
    if (text.error) RenumberInput(&*text.error);
    if (image.error || text.error) {
      out.error = image.error ? std::move(image.error) : std::move(text.error);
      return done(std::move(out));
    }
    const int dim = std::max(image.embeddings.dim, text.embeddings.dim);
    out.embeddings.rows = int(num_inputs);
    out.embeddings.dim = dim;
    out.embeddings.data.assign(num_inputs * size_t(dim), 0.0f);
    for (const auto* half : {&text, &image}) {
      const std::vector<size_t>& index = half == &text ? text_index : image_index;
      for (size_t r = 0; r < index.size() && int(r) < half->embeddings.rows; ++r) {
        std::copy_n(half->embeddings.row(int(r)), dim,
                    out.embeddings.data.begin() + std::ptrdiff_t(index[r] * size_t(dim)));
      }
    }
    out.prompt_tokens = text.prompt_tokens + image.prompt_tokens;
    done(std::move(out));
  }
};

}  // namespace

void EmbeddingService::EmbedWithImages(EmbeddingsRequest request, int dims,
                                       std::function<void(EmbeddingReply)> done) {
  auto fail = [&done](ApiError e) {
    EmbeddingReply reply;
    reply.error = std::move(e);
    done(std::move(reply));
  };
  if (!images_ && backend_->model_info().image.enabled()) {
    return fail(ApiError::InvalidRequest(
        "The model `" + model_name_ +
            "` has a vision tower, but this gateway has no image processor for it (start it "
            "with the model's directory)",
        "input", "unsupported_input"));
  }
  if (!images_) {
    return fail(ApiError::InvalidRequest(
        "The model `" + model_name_ + "` embeds text only; it takes no images" +
            (request.image_modality ? " (modality \"image\")" : "") +
            ". Serve a CLIP or SigLIP model for images.",
        "input", "unsupported_input"));
  }
  if (request.per_token || request.pretokenized() || late_interaction()) {
    return fail(ApiError::InvalidRequest(
        "images are embedded one vector each: not with token ids or per-token output", "input"));
  }
  // Every input's place: the images where the parser put them, the texts in the others.
  const size_t num_inputs = request.num_inputs();
  std::vector<uint8_t> is_image(num_inputs, 0);
  for (const EmbeddingsRequest::Image& im : request.images) {
    if (im.index >= num_inputs || is_image[im.index]) {
      return fail(ApiError::InvalidRequest("image inputs overlap", "input"));
    }
    is_image[im.index] = 1;
  }
  std::vector<EmbeddingsRequest::Image> images = std::move(request.images);
  std::vector<std::string> texts;
  std::vector<size_t> text_index;
  size_t t = 0;
  for (size_t i = 0; i < num_inputs; ++i) {
    if (is_image[i]) continue;
    std::string& text = request.texts[t++];
    if (request.image_modality || IsImageDataUri(text)) {
      images.push_back({i, std::move(text), false, {}});
    } else {
      texts.push_back(std::move(text));
      text_index.push_back(i);
    }
  }
  std::sort(images.begin(), images.end(),
            [](const auto& a, const auto& b) { return a.index < b.index; });
  if (images.size() > images_->limits().max_images) {
    ApiError e = ApiError::InvalidRequest(
        std::to_string(images.size()) + " images, more than the " +
            std::to_string(images_->limits().max_images) + " this server takes per request",
        "input", "too_many_inputs");
    e.http_status = 413;
    return fail(std::move(e));
  }
  // Decoded and preprocessed side by side (a picture takes milliseconds: slices of one), on
  // this thread and the completions executor's, as texts are tokenized.
  const size_t n = images.size();
  EmbedRequest job;
  job.sequences.resize(n);
  job.pixels.resize(n);
  std::vector<size_t> image_index(n);
  auto prepare = [&](size_t begin, size_t end, int64_t* count) -> std::optional<ApiError> {
    for (size_t i = begin; i < end; ++i) {
      EmbeddingsRequest::Image& im = images[i];
      const std::string param = InputParam(im.index);
      ImageSource source;
      if (!im.bytes.empty()) {
        source.bytes = std::move(im.bytes);
      } else if (auto err = ParseImageSource(im.source, im.bare_base64, param, &source)) {
        return err;
      }
      const Status st = images_->Prepare(source, &job.sequences[i], &job.pixels[i]);
      if (!st.ok()) {
        ApiError e = ApiError::FromStatus(st, param);
        e.message = param + ": " + e.message;
        if (e.code.empty() || e.code == "invalid_request_error") e.code = "invalid_image";
        return e;
      }
      *count += int64_t(job.sequences[i].size());
      image_index[i] = im.index;
    }
    return std::nullopt;
  };
  int64_t tokens = 0;
  if (auto err = RunSlices(completions_, parallelism_, n, 1, prepare, &tokens)) {
    return fail(std::move(*err));
  }
  job.pooling = Pooling::kCls;
  job.normalize = request.normalize.value_or(normalize_);
  job.dimensions = request.dimensions ? dims : 0;
  job.scheduling = request.scheduling;

  auto join = std::make_shared<ImageJoin>();
  join->num_inputs = num_inputs;
  join->text_index = std::move(text_index);
  join->image_index = std::move(image_index);
  join->done = std::move(done);
  if (texts.empty()) {
    join->pending = 1;
  } else {
    EmbeddingsRequest text_request = request;  // the options; its inputs are the texts
    text_request.texts = std::move(texts);
    text_request.images.clear();
    text_request.image_modality = false;
    // A text that merely looks like an image URI is not one here: the texts are final.
    Embed(std::move(text_request), [join](EmbeddingReply r) { join->Finish(true, std::move(r)); });
  }
  backend_->Embed(std::move(job), [this, join, tokens](Result<Embeddings> rows) {
    auto result = std::make_shared<Result<Embeddings>>(std::move(rows));
    completions_([join, result, tokens] {
      EmbeddingReply reply;
      if (!result->ok()) {
        reply.error = ApiError::FromStatus(result->status());
      } else {
        reply.embeddings = std::move(result->value());
        reply.prompt_tokens = tokens;
      }
      join->Finish(false, std::move(reply));
    });
  });
}

}  // namespace orchid
