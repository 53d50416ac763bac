#include "rpc/convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

namespace orchid::rpc {

grpc::Status ToGrpc(const Status& status) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (status.code()) {
    case StatusCode::kOk: return grpc::Status::OK;
    case StatusCode::kInvalidArgument: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case StatusCode::kNotFound: code = grpc::StatusCode::NOT_FOUND; break;
    case StatusCode::kOutOfRange: code = grpc::StatusCode::OUT_OF_RANGE; break;
    case StatusCode::kResourceExhausted: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case StatusCode::kUnavailable: code = grpc::StatusCode::UNAVAILABLE; break;
    case StatusCode::kDeadlineExceeded: code = grpc::StatusCode::DEADLINE_EXCEEDED; break;
    case StatusCode::kCancelled: code = grpc::StatusCode::CANCELLED; break;
    case StatusCode::kFailedPrecondition: code = grpc::StatusCode::FAILED_PRECONDITION; break;
    case StatusCode::kUnimplemented: code = grpc::StatusCode::UNIMPLEMENTED; break;
    case StatusCode::kCorrupt:
    case StatusCode::kIoError:
    case StatusCode::kInternal: code = grpc::StatusCode::INTERNAL; break;
  }
  return grpc::Status(code, status.message());
}

Status FromGrpc(const grpc::Status& status) {
  const std::string& m = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::OK: return Status::Ok();
    case grpc::StatusCode::INVALID_ARGUMENT: return Status::InvalidArgument(m);
    case grpc::StatusCode::NOT_FOUND: return Status::NotFound(m);
    case grpc::StatusCode::OUT_OF_RANGE: return Status::OutOfRange(m);
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return Status::ResourceExhausted(m);
    case grpc::StatusCode::UNAVAILABLE: return Status::Unavailable(m);
    case grpc::StatusCode::DEADLINE_EXCEEDED: return Status::DeadlineExceeded(m);
    case grpc::StatusCode::CANCELLED: return Status::Cancelled(m);
    case grpc::StatusCode::FAILED_PRECONDITION: return Status::FailedPrecondition(m);
    case grpc::StatusCode::UNIMPLEMENTED: return Status::Unimplemented(m);
    default: return Status::Internal("worker: " + m);
  }
}

v1::Pooling ToProto(Pooling p) {
  switch (p) {
    case Pooling::kMean: return v1::POOLING_MEAN;
    case Pooling::kCls: return v1::POOLING_CLS;
    case Pooling::kLastToken: return v1::POOLING_LAST_TOKEN;
    case Pooling::kMax: return v1::POOLING_MAX;
    case Pooling::kMeanSqrtLen: return v1::POOLING_MEAN_SQRT_LEN;
    case Pooling::kWeightedMean: return v1::POOLING_WEIGHTED_MEAN;
    case Pooling::kNone: return v1::POOLING_NONE;
  }
  return v1::POOLING_UNSPECIFIED;
}

Result<Pooling> FromProto(v1::Pooling p, Pooling fallback) {
  switch (p) {
    case v1::POOLING_UNSPECIFIED: return fallback;
    case v1::POOLING_MEAN: return Pooling::kMean;
    case v1::POOLING_CLS: return Pooling::kCls;
    case v1::POOLING_LAST_TOKEN: return Pooling::kLastToken;
    case v1::POOLING_MAX: return Pooling::kMax;
    case v1::POOLING_MEAN_SQRT_LEN: return Pooling::kMeanSqrtLen;
    case v1::POOLING_WEIGHTED_MEAN: return Pooling::kWeightedMean;
    case v1::POOLING_NONE: return Pooling::kNone;
    default: break;
  }
  return Status::InvalidArgument("unknown pooling " + std::to_string(int(p)));
}

namespace {

// The optional model name and tokenizer fingerprint a request carries, against the worker's.
Status CheckModel(const std::string& name, uint64_t fingerprint, const WorkerModel& model) {
  if (!name.empty() && name != model.name) {
    return Status::NotFound("this worker serves `" + model.name + "`, not `" + name + "`");
  }
  if (fingerprint != 0 && model.tokenizer_fingerprint != 0 &&
      fingerprint != model.tokenizer_fingerprint) {
    return Status::FailedPrecondition(
        "the request was tokenized with another tokenizer than this worker's model uses");
  }
  return Status::Ok();
}

// Validates the sequences (non-empty, within the maximum, ids in the vocabulary, types as long
// as ids) and copies them into `out`, with their token types.
Status SequencesFromProto(const google::protobuf::RepeatedPtrField<v1::Sequence>& in,
                          const WorkerModel& model, EmbedRequest* out, int64_t* tokens) {
  if (in.empty()) return Status::InvalidArgument("request has no sequences");
  out->sequences.clear();
  out->sequences.reserve(size_t(in.size()));
  out->token_type_ids.clear();
  out->attend_lens.clear();
  out->pixels.clear();
  *tokens = 0;
  for (int i = 0; i < in.size(); ++i) {
    const v1::Sequence& s = in.Get(i);
    const int n = s.token_ids_size();
    const std::string where = "sequence " + std::to_string(i);
    if (n == 0) return Status::InvalidArgument(where + " is empty");
    // An image's length is the vision tower's (checked with its pixels by the scheduler).
    if (n > model.max_input_tokens && s.pixels().empty()) {
      return Status::OutOfRange(where + " has " + std::to_string(n) +
                                " tokens, more than the model's maximum of " +
                                std::to_string(model.max_input_tokens));
    }
    if (s.token_type_ids_size() != 0 && s.token_type_ids_size() != n) {
      return Status::InvalidArgument(where + ": token_type_ids and token_ids differ in length");
    }
    for (int v : s.token_type_ids()) {
      if (v < 0) return Status::InvalidArgument(where + ": negative token type id");
    }
    for (int j = 0; j < n; ++j) {
      const int32_t id = s.token_ids(j);
      if (id < 0 || id >= model.info.vocab_size) {
        return Status::InvalidArgument(where + ": token id " + std::to_string(id) +
                                       " is out of the vocabulary (size " +
                                       std::to_string(model.info.vocab_size) + ")");
      }
    }
    if (s.attend_len() != 0) {
      if (s.attend_len() > uint32_t(n)) {
        return Status::InvalidArgument(where + ": attend_len " + std::to_string(s.attend_len()) +
                                       " is more than its " + std::to_string(n) + " tokens");
      }
      if (model.info.causal) {
        return Status::InvalidArgument(
            where + ": attend_len needs bidirectional attention; this model is causal");
      }
      // Sequences before the first with a limit get 0 (all attended to).
      out->attend_lens.resize(size_t(i), 0);
      out->attend_lens.push_back(int32_t(s.attend_len()));
    } else if (!out->attend_lens.empty()) {
      out->attend_lens.push_back(0);
    }
    out->sequences.emplace_back(s.token_ids().begin(), s.token_ids().end());
    if (!s.pixels().empty()) {
      const std::string& bytes = s.pixels();
      if (bytes.size() % sizeof(float) != 0) {
        return Status::InvalidArgument(where + ": pixels are not whole float32 values");
      }
      // Sequences before the first image get empty entries (text), which validation refuses.
      out->pixels.resize(size_t(i));
      std::vector<float>& rows = out->pixels.emplace_back(bytes.size() / sizeof(float));
      std::memcpy(rows.data(), bytes.data(), bytes.size());  // little-endian hosts only
    } else if (!out->pixels.empty()) {
      out->pixels.emplace_back();
    }
    if (s.token_type_ids_size() != 0) {
      // Sequences before the first with types get empty (all zero) entries.
      out->token_type_ids.resize(size_t(i));
      out->token_type_ids.emplace_back(s.token_type_ids().begin(), s.token_type_ids().end());
    } else if (!out->token_type_ids.empty()) {
      out->token_type_ids.emplace_back();
    }
    *tokens += n;
  }
  return Status::Ok();
}

// Priority, class and flow (the deadline and cancellation come from the call, not the message).
Status SchedulingFromProto(int32_t priority, v1::RequestClass c, uint64_t flow, Scheduling* out) {
  out->priority = priority;
  out->flow = flow;
  switch (c) {
    case v1::REQUEST_CLASS_UNSPECIFIED:
      out->request_class = RequestClass::kAuto;
      return Status::Ok();
    case v1::REQUEST_CLASS_QUERY:
      out->request_class = RequestClass::kQuery;
      return Status::Ok();
    case v1::REQUEST_CLASS_BULK:
      out->request_class = RequestClass::kBulk;
      return Status::Ok();
    default:
      return Status::InvalidArgument("unknown request_class " + std::to_string(int(c)));
  }
}

// A late-interaction worker's settings (the gateway encodes texts with them) and the width of
// its token vectors, checked as a model directory's would be.
Status LateInteractionFromProto(const v1::InfoResponse& in, ModelInfo* info) {
  if (!in.has_late_interaction() || in.token_dim() == 0) {
    return Status::Corrupt("worker serves a late-interaction model without its settings");
  }
  const v1::LateInteraction& l = in.late_interaction();
  // The bounds a model directory's settings are read with (description/sentence_transformers).
  constexpr uint32_t kMaxLength = 1u << 16;
  if (l.query_length() < 3 || l.document_length() < 3 || l.query_length() > kMaxLength ||
      l.document_length() > kMaxLength || in.token_dim() > kMaxLength) {
    return Status::Corrupt("worker's late-interaction settings are out of range (query length " +
                           std::to_string(l.query_length()) + ", document length " +
                           std::to_string(l.document_length()) + ", token width " +
                           std::to_string(in.token_dim()) + ")");
  }
  LateInteraction& li = info->late_interaction;
  li.enabled = true;
  li.query_prefix = l.query_prefix();
  li.document_prefix = l.document_prefix();
  li.query_length = int(l.query_length());
  li.document_length = int(l.document_length());
  li.do_query_expansion = l.do_query_expansion();
  li.attend_to_expansion_tokens = l.attend_to_expansion_tokens();
  li.skiplist_words.assign(l.skiplist_words().begin(), l.skiplist_words().end());
  info->token_embedding_dim = int(in.token_dim());
  return Status::Ok();
}

}  // namespace

v1::RequestClass ToProto(RequestClass c) {
  switch (c) {
    case RequestClass::kQuery:
      return v1::REQUEST_CLASS_QUERY;
    case RequestClass::kBulk:
      return v1::REQUEST_CLASS_BULK;
    case RequestClass::kAuto:
      break;
  }
  return v1::REQUEST_CLASS_UNSPECIFIED;
}

Status FromProto(const v1::EmbedRequest& in, const WorkerModel& model, EmbedRequest* out,
                 int64_t* tokens) {
  ORCHID_RETURN_IF_ERROR(CheckModel(in.model(), in.tokenizer_fingerprint(), model));
  if (in.dtype() != v1::OUTPUT_DTYPE_FLOAT32) {
    return Status::Unimplemented("only float32 output is implemented");
  }
  if (in.sequences_size() == 0) return Status::InvalidArgument("request has no sequences");
  if (in.dimensions() > uint32_t(model.info.output_dim())) {
    return Status::InvalidArgument("dimensions " + std::to_string(in.dimensions()) +
                                   " is more than the model's " +
                                   std::to_string(model.info.output_dim()));
  }
  ORCHID_ASSIGN_OR_RETURN(out->pooling, FromProto(in.pooling(), model.info.default_pooling));
  out->normalize = in.has_normalize() ? in.normalize() : model.info.default_normalize;
  out->dimensions = int(in.dimensions());
  if (in.pool_skip() > (1u << 24)) return Status::InvalidArgument("pool_skip is out of range");
  out->pool_skip = int(in.pool_skip());
  out->adapter = 0;
  if (!in.task().empty()) {
    const std::vector<std::string>& tasks = model.info.tasks;
    const auto it = std::find(tasks.begin(), tasks.end(), in.task());
    if (it == tasks.end()) {
      std::string names;
      for (const std::string& t : tasks) names += (names.empty() ? "" : ", ") + t;
      return Status::InvalidArgument("task `" + in.task() + "` is not one of the model's tasks (" +
                                     (names.empty() ? std::string("it has none") : names) + ")");
    }
    out->adapter = int(it - tasks.begin()) + 1;
  }
  ORCHID_RETURN_IF_ERROR(
      SchedulingFromProto(in.priority(), in.request_class(), in.flow(), &out->scheduling));
  return SequencesFromProto(in.sequences(), model, out, tokens);
}

Status FromProto(const v1::ScoreRequest& in, const WorkerModel& model, EmbedRequest* out,
                 int64_t* tokens) {
  ORCHID_RETURN_IF_ERROR(CheckModel(in.model(), in.tokenizer_fingerprint(), model));
  if (model.info.task != ModelTask::kScore) {
    return Status::FailedPrecondition("`" + model.name +
                                      "` is an embedder, not a reranker: call Embed for it");
  }
  out->pooling = model.info.default_pooling;
  out->normalize = false;
  out->dimensions = 0;
  ORCHID_RETURN_IF_ERROR(
      SchedulingFromProto(in.priority(), in.request_class(), in.flow(), &out->scheduling));
  return SequencesFromProto(in.pairs(), model, out, tokens);
}

void ToProto(EmbedRequest&& in, v1::EmbedRequest* out) {
  out->clear_sequences();
  for (size_t i = 0; i < in.sequences.size(); ++i) {
    std::vector<int32_t>& seq = in.sequences[i];
    v1::Sequence* s = out->add_sequences();
    s->mutable_token_ids()->Add(seq.begin(), seq.end());
    std::vector<int32_t>().swap(seq);
    if (i < in.attend_lens.size() && in.attend_lens[i] > 0) {
      s->set_attend_len(uint32_t(in.attend_lens[i]));
    }
    if (i < in.token_type_ids.size() && !in.token_type_ids[i].empty()) {
      std::vector<int32_t>& types = in.token_type_ids[i];
      s->mutable_token_type_ids()->Add(types.begin(), types.end());
      std::vector<int32_t>().swap(types);
    }
    if (i < in.pixels.size() && !in.pixels[i].empty()) {
      std::vector<float>& rows = in.pixels[i];
      s->set_pixels(reinterpret_cast<const char*>(rows.data()), rows.size() * sizeof(float));
      std::vector<float>().swap(rows);
    }
  }
  out->set_pooling(ToProto(in.pooling));
  out->set_normalize(in.normalize);
  out->set_dimensions(uint32_t(in.dimensions));
  out->set_pool_skip(uint32_t(std::max(0, in.pool_skip)));
  out->set_priority(in.scheduling.priority);
  out->set_request_class(ToProto(in.scheduling.request_class));
  out->set_flow(in.scheduling.flow);
}

void ToProto(const Embeddings& in, v1::EmbedResponse* out) {
  out->set_rows(uint32_t(in.rows));
  out->set_dim(uint32_t(in.dim));
  static_assert(sizeof(float) == 4, "float32 expected");
  // x86-64 and aarch64 are little-endian, which is the wire format.
  out->set_embeddings(reinterpret_cast<const char*>(in.data.data()), in.data.size() * 4);
}

void ToProto(const Embeddings& logits, ScoreActivation activation, v1::ScoreResponse* out) {
  out->set_num_labels(uint32_t(logits.dim));
  out->mutable_logits()->Assign(logits.data.begin(), logits.data.end());
  out->mutable_scores()->Reserve(logits.rows);
  for (int r = 0; r < logits.rows; ++r) {
    const float x = logits.dim > 0 ? logits.data[size_t(r) * size_t(logits.dim)] : 0.0f;
    out->add_scores(activation == ScoreActivation::kIdentity ? x : 1.0f / (1.0f + std::exp(-x)));
  }
}

Status FromProto(const v1::ScoreResponse& in, Embeddings* out) {
  const size_t labels = in.num_labels();
  if (labels == 0 || in.logits_size() % labels != 0) {
    return Status::Internal("worker sent " + std::to_string(in.logits_size()) + " logits for " +
                            std::to_string(labels) + " labels per pair");
  }
  out->rows = int(size_t(in.logits_size()) / labels);
  out->dim = int(labels);
  out->data.assign(in.logits().begin(), in.logits().end());
  return Status::Ok();
}

Status FromProto(const v1::EmbedResponse& in, Embeddings* out) {
  const size_t n = size_t(in.rows()) * size_t(in.dim());
  if (in.embeddings().size() != n * 4) {
    return Status::Internal("worker sent " + std::to_string(in.embeddings().size()) +
                            " bytes for " + std::to_string(in.rows()) + " x " +
                            std::to_string(in.dim()) + " float32 values");
  }
  out->rows = int(in.rows());
  out->dim = int(in.dim());
  out->data.resize(n);
  if (n > 0) std::memcpy(out->data.data(), in.embeddings().data(), n * 4);
  return Status::Ok();
}

void ToProto(const WorkerModel& model, int max_batch_tokens, v1::InfoResponse* out) {
  out->set_model(model.name);
  out->set_architecture(model.info.architecture);
  out->set_dim(uint32_t(model.info.output_dim()));
  out->set_hidden_size(uint32_t(model.info.hidden_size));
  out->set_task(model.info.task == ModelTask::kScore  ? v1::MODEL_TASK_SCORE
                : model.info.late_interaction.enabled ? v1::MODEL_TASK_LATE_INTERACTION
                                                      : v1::MODEL_TASK_EMBED);
  if (const LateInteraction& li = model.info.late_interaction; li.enabled) {
    v1::LateInteraction* l = out->mutable_late_interaction();
    l->set_query_prefix(li.query_prefix);
    l->set_document_prefix(li.document_prefix);
    l->set_query_length(uint32_t(std::max(0, li.query_length)));
    l->set_document_length(uint32_t(std::max(0, li.document_length)));
    l->set_do_query_expansion(li.do_query_expansion);
    l->set_attend_to_expansion_tokens(li.attend_to_expansion_tokens);
    for (const std::string& w : li.skiplist_words) l->add_skiplist_words(w);
  }
  out->set_token_dim(uint32_t(std::max(0, model.info.token_embedding_dim)));
  out->set_num_labels(uint32_t(std::max(0, model.info.num_labels)));
  out->set_score_activation(model.info.score_activation == ScoreActivation::kIdentity
                                ? v1::SCORE_ACTIVATION_IDENTITY
                                : v1::SCORE_ACTIVATION_SIGMOID);
  out->set_pair_format(model.info.pair_format == PairFormat::kQwen3RerankerChat
                           ? v1::PAIR_FORMAT_QWEN3_RERANKER_CHAT
                           : v1::PAIR_FORMAT_TOKENIZER_PAIR);
  out->set_native_quantization(model.info.native_quantization == NativeQuantization::kTanhInt8
                                   ? v1::NATIVE_QUANTIZATION_TANH_INT8
                                   : v1::NATIVE_QUANTIZATION_NONE);
  out->set_causal(model.info.causal);
  for (const std::string& label : model.info.labels) out->add_labels(label);
  out->set_multi_label(model.info.multi_label);
  // 0 on the wire means "not told" (older workers): a model without token types says 1.
  out->set_type_vocab_size(uint32_t(std::max(1, model.info.type_vocab_size)));
  out->set_sparse(model.info.sparse);
  out->set_exclude_prompt(!model.info.include_prompt);
  out->set_max_input_tokens(uint32_t(model.max_input_tokens));
  out->set_max_input_length_source(model.info.max_seq_length_source);
  out->set_dtype(model.info.dtype);
  out->set_fidelity_samples(uint32_t(std::max(0, model.info.fidelity.samples)));
  out->set_fidelity_mean_cosine(model.info.fidelity.mean_cosine);
  out->set_fidelity_min_cosine(model.info.fidelity.min_cosine);
  for (const std::string& t : model.info.tasks) out->add_tasks(t);
  for (int d : model.info.matryoshka_dimensions) out->add_matryoshka_dimensions(uint32_t(d));
  for (const ModelInfo::EngineFact& f : model.info.engine_facts) {
    v1::EngineFact* e = out->add_engine_facts();
    e->set_name(f.name);
    e->set_value(f.value);
  }
  if (model.info.image.enabled()) {
    v1::ImageInput* im = out->mutable_image();
    im->set_image_size(uint32_t(model.info.image.image_size));
    im->set_patch_size(uint32_t(model.info.image.patch_size));
    im->set_class_token(model.info.image.class_token);
  }
  const TextInput& text = model.info.text;
  if (!(text == TextInput{})) {
    v1::TextInput* t = out->mutable_text();
    t->set_end(text.end == TextInput::End::kFirstEos     ? v1::TextInput::END_FIRST_EOS
               : text.end == TextInput::End::kFirstMaxId ? v1::TextInput::END_FIRST_MAX_ID
                                                         : v1::TextInput::END_AS_TOKENIZED);
    t->set_eos_id(text.eos_id);
    t->set_pad_to(uint32_t(text.pad_to));
    t->set_pad_id(text.pad_id);
  }
  out->set_vocab_size(model.info.vocab_size);
  out->set_default_pooling(ToProto(model.info.default_pooling));
  out->set_default_normalize(model.info.default_normalize);
  out->set_tokenizer_fingerprint(model.tokenizer_fingerprint);
  out->set_max_batch_tokens(uint32_t(max_batch_tokens));
  out->set_version(ORCHID_VERSION_STRING);
}

Result<WorkerModel> FromProto(const v1::InfoResponse& in) {
  WorkerModel m;
  m.name = in.model();
  m.info.architecture = in.architecture();
  m.info.hidden_size = in.hidden_size() != 0 ? int(in.hidden_size()) : int(in.dim());
  // Unknown (an older worker): assume token types, as before the field (the worker checks them).
  m.info.type_vocab_size = in.type_vocab_size() != 0 ? int(in.type_vocab_size()) : 2;
  m.info.sparse = in.sparse();
  m.info.include_prompt = !in.exclude_prompt();
  // An embedder whose output is narrower or wider than its transformer (Dense modules).
  if (in.task() != v1::MODEL_TASK_SCORE && int(in.dim()) != m.info.hidden_size) {
    m.info.embedding_dim = int(in.dim());
  }
  m.info.vocab_size = in.vocab_size();
  switch (in.task()) {
    case v1::MODEL_TASK_EMBED:
      m.info.task = ModelTask::kEmbed;
      break;
    case v1::MODEL_TASK_SCORE:
      m.info.task = ModelTask::kScore;
      break;
    case v1::MODEL_TASK_LATE_INTERACTION:
      m.info.task = ModelTask::kEmbed;
      ORCHID_RETURN_IF_ERROR(LateInteractionFromProto(in, &m.info));
      break;
    default:
      return Status::Corrupt("worker serves a model task this gateway does not know");
  }
  m.info.num_labels = int(in.num_labels());
  switch (in.score_activation()) {
    case v1::SCORE_ACTIVATION_SIGMOID:
      m.info.score_activation = ScoreActivation::kSigmoid;
      break;
    case v1::SCORE_ACTIVATION_IDENTITY:
      m.info.score_activation = ScoreActivation::kIdentity;
      break;
    default:
      return Status::Corrupt("worker uses a score activation this gateway does not know");
  }
  switch (in.pair_format()) {
    case v1::PAIR_FORMAT_TOKENIZER_PAIR:
      m.info.pair_format = PairFormat::kTokenizerPair;
      break;
    case v1::PAIR_FORMAT_QWEN3_RERANKER_CHAT:
      m.info.pair_format = PairFormat::kQwen3RerankerChat;
      break;
    default:
      return Status::Corrupt("worker uses a pair format this gateway does not know");
  }
  m.info.native_quantization = in.native_quantization() == v1::NATIVE_QUANTIZATION_TANH_INT8
                                   ? NativeQuantization::kTanhInt8
                                   : NativeQuantization::kNone;
  m.info.causal = in.causal();
  if (in.labels_size() != 0 && in.labels_size() != int(in.num_labels())) {
    return Status::Corrupt("worker info names " + std::to_string(in.labels_size()) +
                           " labels for " + std::to_string(in.num_labels()) + " logits");
  }
  m.info.labels.assign(in.labels().begin(), in.labels().end());
  m.info.multi_label = in.multi_label();
  if (m.info.output_dim() != int(in.dim())) {
    return Status::Corrupt("worker info: dim " + std::to_string(in.dim()) +
                           " does not match its task's output width");
  }
  m.max_input_tokens = int(in.max_input_tokens());
  m.info.max_seq_length = m.max_input_tokens;
  m.info.max_seq_length_source = in.max_input_length_source();
  m.info.dtype = in.dtype();
  m.info.fidelity.samples = int(std::min<uint32_t>(in.fidelity_samples(), 1u << 30));
  m.info.fidelity.mean_cosine = in.fidelity_mean_cosine();
  m.info.fidelity.min_cosine = in.fidelity_min_cosine();
  m.info.tasks.assign(in.tasks().begin(), in.tasks().end());
  for (uint32_t d : in.matryoshka_dimensions()) {
    if (d == 0 || d > in.dim()) {
      return Status::Corrupt("worker info: Matryoshka dimension " + std::to_string(d) +
                             " outside [1, " + std::to_string(in.dim()) + "]");
    }
    m.info.matryoshka_dimensions.push_back(int(d));
  }
  for (const v1::EngineFact& f : in.engine_facts())
    m.info.engine_facts.push_back({f.name(), f.value()});
  if (in.has_image() && in.image().image_size() > 0) {
    const v1::ImageInput& im = in.image();
    if (im.image_size() > (1u << 14) || im.patch_size() == 0 || im.patch_size() > (1u << 10) ||
        im.image_size() % im.patch_size() != 0) {
      return Status::Corrupt("worker info: image size " + std::to_string(im.image_size()) +
                             " and patch size " + std::to_string(im.patch_size()) + " do not tile");
    }
    m.info.image = ImageInput{int(im.image_size()), int(im.patch_size()), im.class_token()};
  }
  if (in.has_text()) {
    const v1::TextInput& t = in.text();
    TextInput& text = m.info.text;
    text.end = t.end() == v1::TextInput::END_FIRST_EOS      ? TextInput::End::kFirstEos
               : t.end() == v1::TextInput::END_FIRST_MAX_ID ? TextInput::End::kFirstMaxId
                                                            : TextInput::End::kAsTokenized;
    text.eos_id = t.eos_id();
    text.pad_to = int(t.pad_to());
    text.pad_id = t.pad_id();
    if (text.pad_to < 0 || text.pad_to > (1 << 16) || text.pad_id < 0 ||
        text.pad_id >= in.vocab_size()) {
      return Status::Corrupt("worker info: text padding out of range");
    }
  }
  m.info.max_position_embeddings = m.max_input_tokens;
  ORCHID_ASSIGN_OR_RETURN(m.info.default_pooling, FromProto(in.default_pooling(), Pooling::kMean));
  m.info.default_normalize = in.default_normalize();
  m.tokenizer_fingerprint = in.tokenizer_fingerprint();
  if (m.info.hidden_size <= 0 || m.max_input_tokens <= 0 || m.info.vocab_size <= 0) {
    return Status::Corrupt("worker info has no dimension, maximum length or vocabulary");
  }
  return m;
}

Result<uint64_t> FingerprintFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::IoError("cannot open " + path);
  uint64_t h = 1469598103934665603ULL;
  std::vector<char> buf(1 << 16);
  while (f) {
    f.read(buf.data(), std::streamsize(buf.size()));
    const std::streamsize got = f.gcount();
    for (std::streamsize i = 0; i < got; ++i) {
      h ^= uint8_t(buf[size_t(i)]);
      h *= 1099511628211ULL;
    }
  }
  if (f.bad()) return Status::IoError("cannot read " + path);
  return h;
}

}  // namespace orchid::rpc
