// What makes a CUDA graph of a family's forward pass safe to replay, checked without a GPU:
// each family's Forward() runs on a recording backend (ops/backend.h implemented with no
// arithmetic) for two different batches of the same bucket, and must issue the same op
// sequence on the same buffers, every access inside its buffer's planned extent of one arena
// sized for the largest bucket, and no buffer read before the pass has written it.
//
// The recording backend sees the batch the way the CUDA engine does: rows come from the bucket
// (tokens padded to a multiple of 64, sequences to a power of two), the pruned flag from the
// batch's pooling (every sequence CLS or last token), nothing else.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "description/registry.h"
#include "engine/ragged_batch.h"
#include "families/family.h"
#include "ops/backend.h"

namespace orchid {
namespace {

const std::string kModels = ORCHID_SOURCE_DIR "/models/fixtures";

class RecordingBackend final : public ops::Backend {
 public:
  const char* name() const override { return "recording"; }
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

  int linears_ = 0, norms_ = 0, tables_ = 0;
  std::vector<Extent> extents_;
  size_t arena_bytes_ = 0;
  int token_rows_ = 0, seq_rows_ = 0;
  bool prune_ = false;
  std::vector<std::string> ops_, errors_;
  std::set<int> written_;
};

RaggedBatch MakeBatch(const std::vector<int>& lengths, Pooling pooling, int vocab, int types) {
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
std::pair<RaggedBatch, RaggedBatch> SameBucket(Pooling pooling, const ModelInfo& info) {
  return {MakeBatch({70, 3, 20}, pooling, info.vocab_size, info.type_vocab_size),
          MakeBatch({5, 40, 31, 39}, pooling, info.vocab_size, info.type_vocab_size)};
}

TEST(RecordingBackendTest, EachFamilyIssuesTheSameOpsInsideItsArenaForOneBucket) {
  // Every fixture model (tests/fixtures/models/build.py): each family and head.
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(kModels)) {
    if (std::filesystem::exists(e.path() / "config.json")) names.push_back(e.path().filename());
  }
  std::sort(names.begin(), names.end());
  ASSERT_GE(names.size(), 10u) << "run `make fixtures`";
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    auto spec = DescribeModel(kModels + "/" + name);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    RecordingBackend b;
    auto family = LoadFamily(*spec, b);
    ASSERT_TRUE(family.ok()) << family.status().ToString();
    b.Plan(/*max_tokens=*/256, /*max_seqs=*/8);
    // Pruned (the model's own pooling when CLS / last token) and unpruned (mean) passes.
    std::set<bool> pruned_seen;
    for (Pooling pooling : {spec->info.default_pooling, Pooling::kMean}) {
      SCOPED_TRACE(PoolingName(pooling));
      const auto [first, second] = SameBucket(pooling, spec->info);
      b.Begin(first);
      ASSERT_TRUE((*family)->Forward(b).ok());
      const std::vector<std::string> ops = b.ops();
      EXPECT_TRUE(b.errors().empty()) << b.errors().front();
      pruned_seen.insert(b.prune_last_layer());
      b.Begin(second);
      ASSERT_TRUE((*family)->Forward(b).ok());
      EXPECT_TRUE(b.errors().empty()) << b.errors().front();
      ASSERT_EQ(ops, b.ops());
      // Every layer attends once; the pass ends by writing the output rows.
      size_t attention = 0;
      for (const std::string& op : ops) attention += op.rfind("Attention", 0) == 0;
      const int layers = spec->family == FamilyKind::kBert ? spec->bert.num_hidden_layers
                         : spec->family == FamilyKind::kModernBert
                             ? spec->modernbert.num_hidden_layers
                         : spec->family == FamilyKind::kRopeEncoder
                             ? spec->rope_encoder.num_hidden_layers
                         : spec->family == FamilyKind::kDeberta ? spec->deberta.num_hidden_layers
                             : spec->decoder.num_hidden_layers;
      EXPECT_EQ(attention, size_t(layers));
      const std::string out = b.decl((*family)->output()).name;
      EXPECT_NE(ops.back().find(" " + out + "["), std::string::npos) << ops.back();
    }
    // CLS and last-token pooling read one row per sequence: those passes prune.
    if (spec->info.default_pooling == Pooling::kCls ||
        spec->info.default_pooling == Pooling::kLastToken) {
      EXPECT_EQ(pruned_seen, (std::set<bool>{false, true}));
    }
  }
}

// The recording backend's own checks have teeth: a read of a buffer nothing wrote, and a
// bucket larger than the planned arena, are reported.
TEST(RecordingBackendTest, ReportsReadsBeforeWritesAndAccessesOutsideThePlan) {
  auto spec = DescribeModel(kModels + "/xlmr-embed");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  RecordingBackend b;
  auto family = LoadFamily(*spec, b);
  ASSERT_TRUE(family.ok()) << family.status().ToString();
  b.Plan(64, 2);  // smaller than the batches' bucket
  const auto [first, second] = SameBucket(Pooling::kMean, spec->info);
  (void)second;
  b.Begin(first);
  ASSERT_TRUE((*family)->Forward(b).ok());
  ASSERT_FALSE(b.errors().empty());
  EXPECT_NE(b.errors().front().find("outside"), std::string::npos) << b.errors().front();

  b.Plan(256, 8);
  b.Begin(first);
  const ops::Buffer unwritten = b.AddBuffer("never written", ops::Rows::kTokens, 4);
  b.Plan(256, 8);
  ASSERT_TRUE(b.Activate(unwritten, ops::Activation::kTanh).ok());
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors().front().find("read before"), std::string::npos) << b.errors().front();
}

// Shapes are checked in the contract itself, for every backend: a family bug is an error
// naming the op and the buffers, not a wrong answer.
TEST(RecordingBackendTest, TheContractRefusesMismatchedShapes) {
  RecordingBackend b;
  Tensor w({8, 4});
  auto linear = b.AddLinear(w, nullptr);
  ASSERT_TRUE(linear.ok());
  const ops::Buffer in = b.AddBuffer("in", ops::Rows::kTokens, 5);
  const ops::Buffer out = b.AddBuffer("out", ops::Rows::kTokens, 8);
  const ops::Buffer seqs = b.AddBuffer("seqs", ops::Rows::kSequences, 8);
  const Status st = b.Linear(in, *linear, out);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("\"in\""), std::string::npos) << st.ToString();
  EXPECT_EQ(b.Linear(out, *linear, out).code(), StatusCode::kInternal);  // aliasing
  EXPECT_EQ(b.Pool(out, seqs, true).code(), StatusCode::kInternal);      // not an accumulator
  ops::AttentionOptions a{2, 2, 2, false};
  const ops::Buffer qkv = b.AddBuffer("qkv", ops::Rows::kTokens, 12);
  const ops::Buffer pooled = b.AddBuffer("ctx", ops::Rows::kPooled, 4);
  RaggedBatch mean = MakeBatch({3}, Pooling::kMean, 10, 1);
  b.Begin(mean);
  EXPECT_EQ(b.Attention(qkv, pooled, a).code(), StatusCode::kInternal);  // not pruned
}

}  // namespace
}  // namespace orchid
