// RecordingBackend: the op contract (ops/backend.h) implemented with no arithmetic, for tests
// of what a family's forward pass asks of a backend, without a GPU. It sees a batch the way the
// CUDA engine does: rows come from the bucket (tokens padded to a multiple of 64, sequences to a
// power of two), the pruned flag from the batch's pooling (every sequence CLS or last token),
// nothing else. It records each op (its buffers' extents in one arena planned for the largest
// bucket), reports reads of buffers the pass has not written and accesses outside the plan, and
// asks `support` (a backend's Supports(), e.g. CUDA's op_support.h) before every op.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "description/model_info.h"
#include "engine/ragged_batch.h"
#include "ops/backend.h"

namespace orchid::testing_util {

class RecordingBackend final : public ops::Backend {
 public:
  RecordingBackend() = default;
  explicit RecordingBackend(std::function<Status(const ops::OpCall&)> support)
      : support_(std::move(support)) {}
  const char* name() const override { return "recording"; }
  Status Supports(const ops::OpCall& call) const override {
    return support_ ? support_(call) : Status::Ok();
  }
  bool prune_last_layer() const override { return prune_; }

  // The arena for buckets up to max_tokens x max_seqs: each buffer at a fixed offset.
  void Plan(int max_tokens, int max_seqs) {
    size_t offset = 0;
    extents_.clear();
    for (const ops::BufferDecl& d : decls()) {
      const size_t rows = size_t(d.rows == ops::Rows::kTokens ? max_tokens : max_seqs);
      const size_t bytes =
          rows * size_t(d.width) * (d.precision == ops::Precision::kAccumulator ? 4 : 2);
      extents_.push_back({offset, bytes});
      offset += (bytes + 255) / 256 * 256;
    }
    arena_bytes_ = offset;
  }

  // One pass over `batch`, bucketed as the CUDA engine buckets it.
  void Begin(const RaggedBatch& batch) {
    const int T = batch.num_tokens(), S = batch.num_sequences();
    token_rows_ = (T + 63) / 64 * 64;
    seq_rows_ = 1;
    while (seq_rows_ < S) seq_rows_ *= 2;
    prune_ = true;
    for (Pooling p : batch.pooling)
      prune_ = prune_ && (p == Pooling::kCls || p == Pooling::kLastToken);
    ops_.clear();
    written_.clear();
    errors_.clear();
  }

  const std::vector<std::string>& ops() const { return ops_; }
  const std::vector<std::string>& errors() const { return errors_; }
  size_t arena_bytes() const { return arena_bytes_; }

 protected:
  Result<int> DoAddLinear(const Tensor& w, const Tensor* bias, ops::LinearOptions o) override {
    (void)w;
    (void)bias;
    (void)o;
    return linears_++;
  }
  Result<int> DoAddNorm(ops::NormKind kind, const Tensor& weight, const Tensor* bias,
                        float eps) override {
    (void)kind;
    (void)weight;
    (void)bias;
    (void)eps;
    return norms_++;
  }
  Result<int> DoAddTable(Tensor t) override {
    (void)t;
    return tables_++;
  }

  Status DoEmbed(const ops::EmbedOp& op, ops::Buffer out) override {
    Write(out);
    Record("Embed", {out}, "word " + std::to_string(op.word.id));
    return Status::Ok();
  }
  Status DoLinear(ops::Buffer in, ops::LinearWeight w, ops::Buffer out, ops::Epilogue e) override {
    Read(in);
    if (e == ops::Epilogue::kResidualAdd) Read(out);
    Write(out);
    Record("Linear", {in, out}, "w " + std::to_string(w.id) + " e " + std::to_string(int(e)));
    return Status::Ok();
  }
  Status DoNorm(ops::Buffer in, ops::NormWeight w, ops::Buffer out) override {
    Read(in);
    Write(out);
    Record("Norm", {in, out}, "w " + std::to_string(w.id));
    return Status::Ok();
  }
  Status DoQkNormRope(ops::Buffer qkv, const ops::RopeOptions& o) override {
    Read(qkv);
    Write(qkv);
    Record("QkNormRope", {qkv}, std::to_string(o.num_heads) + "/" + std::to_string(o.num_kv_heads));
    return Status::Ok();
  }
  Status DoAttention(ops::Buffer qkv, ops::Buffer out, const ops::AttentionOptions& o) override {
    Read(qkv);
    Write(out);
    Record("Attention", {qkv, out}, o.causal ? "causal" : "bidirectional");
    return Status::Ok();
  }
  Status DoGlu(ops::Buffer gate_up, ops::Buffer out, ops::Gate gate) override {
    Read(gate_up);
    Write(out);
    Record("Glu", {gate_up, out}, std::to_string(int(gate)));
    return Status::Ok();
  }
  Status DoAdd(ops::Buffer in, ops::Buffer out) override {
    Read(in);
    Read(out);
    Write(out);
    Record("Add", {in, out}, "");
    return Status::Ok();
  }
  Result<int> DoAddLora(const std::vector<ops::LoraPart>& parts, int n, int k,
                        ops::LoraInput input) override {
    (void)parts;
    (void)n;
    (void)k;
    (void)input;
    return loras_++;
  }
  Status DoLoraAdd(ops::Buffer in, ops::LoraWeight w, ops::Buffer out) override {
    if (in.valid()) Read(in);
    Read(out);
    Write(out);
    if (in.valid()) {
      Record("LoraAdd", {in, out}, "w " + std::to_string(w.id));
    } else {
      Record("LoraAdd", {out}, "table " + std::to_string(w.id));
    }
    return Status::Ok();
  }
  Status DoVocabMaxPool(ops::Buffer hidden, ops::LinearWeight w, ops::Buffer out) override {
    Read(hidden);
    Write(out);
    Record("VocabMaxPool", {hidden, out}, "w " + std::to_string(w.id));
    return Status::Ok();
  }
  Status DoNormalize(ops::Buffer x) override {
    Read(x);
    Write(x);
    Record("Normalize", {x}, "");
    return Status::Ok();
  }
  Status DoActivate(ops::Buffer x, ops::Activation a) override {
    Read(x);
    Write(x);
    Record("Activate", {x}, std::to_string(int(a)));
    return Status::Ok();
  }
  Status DoGatherPooled(ops::Buffer tokens, ops::Buffer pooled) override {
    Read(tokens);
    Write(pooled);
    Record("GatherPooled", {tokens, pooled}, "");
    return Status::Ok();
  }
  Status DoPool(ops::Buffer hidden, ops::Buffer out, bool normalize) override {
    Read(hidden);
    Write(out);
    Record("Pool", {hidden, out}, normalize ? "normalize" : "");
    return Status::Ok();
  }

 private:
  struct Extent {
    size_t offset, bytes;
  };
  int rows(ops::Buffer b) const {
    return decl(b).rows == ops::Rows::kTokens ? token_rows_ : seq_rows_;
  }
  // The bytes an op touches in `b` (all rows of its domain in this bucket), checked against the
  // buffer's planned extent and the arena.
  std::string Access(ops::Buffer b) {
    const ops::BufferDecl& d = decl(b);
    const size_t bytes =
        size_t(rows(b)) * size_t(d.width) * (d.precision == ops::Precision::kAccumulator ? 4 : 2);
    const Extent& e = extents_[size_t(b.id)];
    if (bytes > e.bytes || e.offset + bytes > arena_bytes_) {
      errors_.push_back("\"" + d.name + "\": " + std::to_string(bytes) + " bytes at " +
                        std::to_string(e.offset) + " outside its " + std::to_string(e.bytes));
    }
    return "[" + std::to_string(e.offset) + ", +" + std::to_string(bytes) + ")";
  }
  void Read(ops::Buffer b) {
    if (written_.count(b.id) == 0) {
      errors_.push_back("\"" + decl(b).name + "\" (" + ops::RowsName(decl(b).rows) +
                        ") read before this pass wrote it (op " + std::to_string(ops_.size()) +
                        ")");
    }
  }
  void Write(ops::Buffer b) { written_.insert(b.id); }
  void Record(const char* op, std::vector<ops::Buffer> buffers, const std::string& args) {
    std::string s = op;
    for (ops::Buffer b : buffers) s += " " + decl(b).name + Access(b);
    ops_.push_back(s + " " + args);
  }

  std::function<Status(const ops::OpCall&)> support_;
  int linears_ = 0, norms_ = 0, tables_ = 0, loras_ = 0;
  std::vector<Extent> extents_;
  size_t arena_bytes_ = 0;
  int token_rows_ = 0, seq_rows_ = 0;
  bool prune_ = false;
  std::vector<std::string> ops_, errors_;
  std::set<int> written_;
};

// A batch of sequences of these lengths (token ids spread over the vocabulary; the second half of
// each in token type 1 when the model has types).
inline RaggedBatch MakeBatch(const std::vector<int>& lengths, Pooling pooling, int vocab,
                             int types) {
  RaggedBatch b;
  int seed = 1;
  for (int n : lengths) {
    std::vector<int32_t> ids(static_cast<size_t>(n)), tt(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      ids[size_t(i)] = (seed++ * 7919) % vocab;
      tt[size_t(i)] = types > 1 && i > n / 2 ? 1 : 0;
    }
    b.Add(ids.data(), n, pooling, true, tt.data());
  }
  return b;
}

// Two batches of one bucket (128 token rows, 4 sequence rows) with other lengths, token ids
// and token types.
inline std::pair<RaggedBatch, RaggedBatch> SameBucket(Pooling pooling, const ModelInfo& info) {
  return {MakeBatch({70, 3, 20}, pooling, info.vocab_size, info.type_vocab_size),
          MakeBatch({5, 40, 31, 39}, pooling, info.vocab_size, info.type_vocab_size)};
}

}  // namespace orchid::testing_util
