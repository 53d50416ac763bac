#include "ops/backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace orchid::ops {

const char* RowsName(Rows r) {
  switch (r) {
    case Rows::kTokens:
      return "tokens";
    case Rows::kPooled:
      return "pooled";
    case Rows::kSequences:
      return "sequences";
  }
  return "?";
}

const char* OpKindName(OpKind k) {
  switch (k) {
    case OpKind::kAddLinear:
      return "AddLinear";
    case OpKind::kAddNorm:
      return "AddNorm";
    case OpKind::kEmbed:
      return "Embed";
    case OpKind::kLinear:
      return "Linear";
    case OpKind::kNorm:
      return "Norm";
    case OpKind::kQkNormRope:
      return "QkNormRope";
    case OpKind::kAttention:
      return "Attention";
    case OpKind::kGlu:
      return "Glu";
    case OpKind::kAdd:
      return "Add";
    case OpKind::kActivate:
      return "Activate";
    case OpKind::kGatherPooled:
      return "GatherPooled";
    case OpKind::kPool:
      return "Pool";
    case OpKind::kVocabMaxPool:
      return "VocabMaxPool";
    case OpKind::kNormalize:
      return "Normalize";
    case OpKind::kAddLora:
      return "AddLora";
    case OpKind::kLoraAdd:
      return "LoraAdd";
    case OpKind::kPixels:
      return "Pixels";
  }
  return "?";
}

Status Backend::Check(bool ok, const char* op, const std::string& what) const {
  if (ok) return Status::Ok();
  return Status::Internal(std::string(name()) + " backend, " + op + ": " + what);
}

// Checks `cond`; the message (string concatenation) is built only when it fails: these run on
// every op of every forward pass.
#define ORCHID_CONTRACT(cond, op, what)         \
  do {                                          \
    if (!(cond)) return Check(false, op, what); \
  } while (0)

Result<LinearWeight> Backend::AddLinear(const Tensor& w, const Tensor* bias, LinearOptions o) {
  ORCHID_CONTRACT(w.rank() == 2, "AddLinear", "weight is not a matrix");
  const int n = int(w.dim(0)), k = int(w.dim(1));
  ORCHID_CONTRACT(bias == nullptr || (bias->rank() == 1 && bias->dim(0) == n), "AddLinear",
                  "bias does not match the weight's rows");
  OpCall call;
  call.kind = OpKind::kAddLinear;
  call.linear = LinearWeight{-1, n, k};
  ORCHID_RETURN_IF_ERROR(Supports(call));
  ORCHID_ASSIGN_OR_RETURN(int id, DoAddLinear(w, bias, o));
  return LinearWeight{id, n, k};
}

Result<NormWeight> Backend::AddNorm(NormKind kind, const Tensor& weight, const Tensor* bias,
                                    float eps) {
  ORCHID_CONTRACT(weight.rank() == 1, "AddNorm", "weight is not a vector");
  ORCHID_CONTRACT((kind == NormKind::kLayerNorm) == (bias != nullptr), "AddNorm",
                  "a LayerNorm has a bias, an RMSNorm none");
  ORCHID_CONTRACT(bias == nullptr || bias->dim(0) == weight.dim(0), "AddNorm",
                  "bias and weight differ in width");
  OpCall call;
  call.kind = OpKind::kAddNorm;
  call.norm = NormWeight{-1, int(weight.dim(0)), kind, eps};
  ORCHID_RETURN_IF_ERROR(Supports(call));
  ORCHID_ASSIGN_OR_RETURN(int id, DoAddNorm(kind, weight, bias, eps));
  return NormWeight{id, int(weight.dim(0)), kind, eps};
}

Result<Table> Backend::AddTable(Tensor t) {
  ORCHID_CONTRACT(t.rank() == 2, "AddTable", "table is not a matrix");
  const Table table{-1, int(t.dim(0)), int(t.dim(1))};
  ORCHID_ASSIGN_OR_RETURN(int id, DoAddTable(std::move(t)));
  return Table{id, table.rows, table.width};
}

Result<LoraWeight> Backend::AddLora(const std::vector<LoraPart>& parts, int n, int k,
                                    LoraInput input) {
  if (parts.empty()) return LoraWeight{};
  for (const LoraPart& p : parts) {
    ORCHID_CONTRACT(
        p.a != nullptr && p.b != nullptr && p.a->rank() == 2 && p.b->rank() == 2 && p.adapter > 0,
        "AddLora", "a part without its two matrices or adapter");
    const int64_t r = p.a->dim(0);
    ORCHID_CONTRACT(r > 0 && p.a->dim(1) == k && p.b->dim(1) == r && p.row_offset >= 0 &&
                        p.row_offset + p.b->dim(0) <= n,
                    "AddLora",
                    "A [" + std::to_string(p.a->dim(0)) + ", " + std::to_string(p.a->dim(1)) +
                        "] and B [" + std::to_string(p.b->dim(0)) + ", " +
                        std::to_string(p.b->dim(1)) + "] at row " + std::to_string(p.row_offset) +
                        " do not fit a [" + std::to_string(n) + ", " + std::to_string(k) +
                        "] weight");
  }
  OpCall call;
  call.kind = OpKind::kAddLora;
  call.lora = LoraWeight{-1, n, k, input};
  ORCHID_RETURN_IF_ERROR(Supports(call));
  ORCHID_ASSIGN_OR_RETURN(int id, DoAddLora(parts, n, k, input));
  return LoraWeight{id, n, k, input};
}

Buffer Backend::AddBuffer(std::string name, Rows rows, int width, Precision precision) {
  decls_.push_back(BufferDecl{std::move(name), rows, width, precision});
  DoAddBuffer(decls_.back());
  return Buffer{int(decls_.size()) - 1};
}

namespace {
std::string Describe(const BufferDecl& d) {
  return "\"" + d.name + "\" [" + RowsName(d.rows) + ", " + std::to_string(d.width) + "]";
}
}  // namespace

// The call of `kind` on buffers a (and b), for Supports().
OpCall Backend::Call(OpKind kind, Buffer a, Buffer b) const {
  OpCall call;
  call.kind = kind;
  call.buffers[0] = &decl(a);
  if (b.valid()) call.buffers[1] = &decl(b);
  return call;
}

Status Backend::Embed(const EmbedOp& op, Buffer out) {
  const BufferDecl& o = decl(out);
  ORCHID_CONTRACT(op.word.valid(), "Embed", "no word table");
  ORCHID_CONTRACT(o.rows == Rows::kTokens && o.width == op.word.width, "Embed",
                  Describe(o) + " is not [tokens, table width]");
  ORCHID_CONTRACT(!op.position.valid() || op.position.width == o.width, "Embed",
                  "position table width");
  ORCHID_CONTRACT(!op.type.valid() || op.type.width == o.width, "Embed", "token type table width");
  ORCHID_CONTRACT(!op.norm.valid() || op.norm.width == o.width, "Embed", "norm width");
  OpCall call = Call(OpKind::kEmbed, out);
  call.embed = &op;
  ORCHID_RETURN_IF_ERROR(Supports(call));
  return DoEmbed(op, out);
}

Status Backend::Linear(Buffer in, LinearWeight w, Buffer out, Epilogue e) {
  const BufferDecl &i = decl(in), &o = decl(out);
  ORCHID_CONTRACT(in.id != out.id, "Linear", "in and out alias: " + Describe(i));
  ORCHID_CONTRACT(i.rows == o.rows, "Linear",
                  Describe(i) + " and " + Describe(o) + " differ in rows");
  ORCHID_CONTRACT(i.width == w.k && o.width == w.n, "Linear",
                  Describe(i) + " -> " + Describe(o) + " with a [" + std::to_string(w.n) + ", " +
                      std::to_string(w.k) + "] weight");
  OpCall call = Call(OpKind::kLinear, in, out);
  call.linear = w;
  call.epilogue = e;
  ORCHID_RETURN_IF_ERROR(Supports(call));
  return DoLinear(in, w, out, e);
}

Status Backend::Norm(Buffer in, NormWeight w, Buffer out) {
  const BufferDecl &i = decl(in), &o = decl(out);
  ORCHID_CONTRACT(w.valid(), "Norm", "no norm weight");
  ORCHID_CONTRACT(i.rows == o.rows && i.width == w.width && o.width == w.width, "Norm",
                  Describe(i) + " -> " + Describe(o) + " with width " + std::to_string(w.width));
  OpCall call = Call(OpKind::kNorm, in, out);
  call.norm = w;
  ORCHID_RETURN_IF_ERROR(Supports(call));
  return DoNorm(in, w, out);
}

Status Backend::QkNormRope(Buffer qkv, const RopeOptions& r) {
  const BufferDecl& q = decl(qkv);
  ORCHID_CONTRACT(r.head_dim > 0 && r.head_dim % 2 == 0 && r.num_kv_heads > 0 &&
                      r.num_heads % r.num_kv_heads == 0,
                  "QkNormRope", "head shape");
  ORCHID_CONTRACT(
      q.rows == Rows::kTokens && q.width == (r.num_heads + 2 * r.num_kv_heads) * r.head_dim,
      "QkNormRope", Describe(q) + " is not [tokens, (q + 2 kv heads) x head_dim]");
  ORCHID_CONTRACT(
      r.q_norm.valid() == r.k_norm.valid() &&
          (!r.q_norm.valid() || (r.q_norm.width == r.head_dim && r.k_norm.width == r.head_dim)),
      "QkNormRope", "q/k norms must both be [head_dim] or absent");
  const RopeScaling& s = r.scaling;
  ORCHID_CONTRACT(s.type == RopeType::kDefault ||
                      (s.factor > 0 && r.inv_freq_divisor == 1.0 &&
                       (s.type != RopeType::kDynamic || s.max_positions > 0) &&
                       ((s.type != RopeType::kLlama3 && s.type != RopeType::kYarn) ||
                        s.original_max_positions > 0)),
                  "QkNormRope", std::string("rotary scaling ") + RopeTypeName(s.type));
  OpCall call = Call(OpKind::kQkNormRope, qkv);
  call.rope = &r;
  ORCHID_RETURN_IF_ERROR(Supports(call));
  return DoQkNormRope(qkv, r);
}

int RelativePositionBucket(int relative, int num_buckets, int max_distance) {
  const int half = num_buckets / 2;
  int bucket = relative > 0 ? half : 0;  // n = -relative < 0: the key is after the query
  const int n = relative < 0 ? -relative : relative;
  const int max_exact = half / 2;
  if (n < max_exact) return bucket + n;
  const float scaled = std::log(float(n) / float(max_exact)) /
                       float(std::log(double(max_distance) / double(max_exact))) *
                       float(half - max_exact);
  return bucket + std::min(max_exact + int(scaled), half - 1);
}

int DebertaRelativeIndex(int relative, int span, int position_buckets,
                         int max_relative_positions) {
  int bucket = relative;
  if (position_buckets > 0 && max_relative_positions > 0) {
    const int mid = position_buckets / 2;
    const int sign = relative > 0 ? 1 : relative < 0 ? -1 : 0;
    const int abs_pos = relative < mid && relative > -mid ? mid - 1 : std::abs(relative);
    if (abs_pos > mid) {
      // ceil(log(abs / mid) / log((max - 1) / mid) * (mid - 1)) + mid, each step in fp32.
      const float num = std::log(float(abs_pos) / float(mid));
      const float den = std::log(float(double(max_relative_positions - 1) / double(mid)));
      const float log_pos = std::ceil(num / den * float(mid - 1)) + float(mid);
      bucket = int(log_pos) * sign;
    }
  }
  return std::clamp(bucket + span, 0, 2 * span - 1);
}

Status Backend::Attention(Buffer qkv, Buffer out, const AttentionOptions& a) {
  const BufferDecl &q = decl(qkv), &o = decl(out);
  ORCHID_CONTRACT(a.scale >= 0 && a.window >= 0, "Attention", "scale or window");
  ORCHID_CONTRACT(
      !a.relative_bias.valid() ||
          (a.relative_bias.width == a.num_heads && a.relative_num_buckets >= 2 &&
           a.relative_bias.rows >= a.relative_num_buckets && a.relative_max_distance > 0),
      "Attention", "relative bias table is not [buckets, heads]");
  ORCHID_CONTRACT(a.head_dim > 0 && a.num_kv_heads > 0 && a.num_heads % a.num_kv_heads == 0,
                  "Attention", "head shape");
  for (const Table* t : {&a.pos_key, &a.pos_query}) {
    ORCHID_CONTRACT(!t->valid() || (t->width == a.num_heads * a.head_dim && t->rows >= 2 &&
                                    t->rows % 2 == 0 && a.num_kv_heads == a.num_heads),
                    "Attention", "relative position keys / queries are not [2 span, heads x dim]");
  }
  ORCHID_CONTRACT(!a.causal || (!a.pos_key.valid() && !a.pos_query.valid()), "Attention",
                  "relative position keys / queries with causal attention");
  ORCHID_CONTRACT(!a.pos_key.valid() || !a.pos_query.valid() ||
                      a.pos_key.rows == a.pos_query.rows,
                  "Attention", "relative position keys and queries of different spans");
  ORCHID_CONTRACT(
      q.rows == Rows::kTokens && q.width == (a.num_heads + 2 * a.num_kv_heads) * a.head_dim,
      "Attention", Describe(q) + " is not [tokens, (q + 2 kv heads) x head_dim]");
  ORCHID_CONTRACT(
      (o.rows == Rows::kTokens || o.rows == Rows::kPooled) && o.width == a.num_heads * a.head_dim,
      "Attention", Describe(o) + " is not [tokens or pooled, heads]");
  ORCHID_CONTRACT(o.rows == Rows::kTokens || prune_last_layer(), "Attention",
                  "pooled rows asked for on a batch that is not pruned");
  OpCall call = Call(OpKind::kAttention, qkv, out);
  call.attention = &a;
  ORCHID_RETURN_IF_ERROR(Supports(call));
  return DoAttention(qkv, out, a);
}

Status Backend::Glu(Buffer gate_up, Buffer out, Gate gate) {
  const BufferDecl &g = decl(gate_up), &o = decl(out);
  ORCHID_CONTRACT(g.rows == o.rows && g.width == 2 * o.width, "Glu",
                  Describe(g) + " -> " + Describe(o));
  OpCall call = Call(OpKind::kGlu, gate_up, out);
  call.gate = gate;
  ORCHID_RETURN_IF_ERROR(Supports(call));
  return DoGlu(gate_up, out, gate);
}

Status Backend::Add(Buffer in, Buffer out) {
  const BufferDecl &i = decl(in), &o = decl(out);
  ORCHID_CONTRACT(i.rows == o.rows && i.width == o.width, "Add", Describe(i) + " + " + Describe(o));
  ORCHID_RETURN_IF_ERROR(Supports(Call(OpKind::kAdd, in, out)));
  return DoAdd(in, out);
}

Status Backend::VocabMaxPool(Buffer hidden, LinearWeight w, Buffer out) {
  const BufferDecl &h = decl(hidden), &o = decl(out);
  ORCHID_CONTRACT(
      h.rows == Rows::kTokens && h.width == w.k && o.rows == Rows::kSequences && o.width == w.n,
      "VocabMaxPool",
      Describe(h) + " x [" + std::to_string(w.n) + ", " + std::to_string(w.k) + "] -> " +
          Describe(o));
  OpCall call = Call(OpKind::kVocabMaxPool, hidden, out);
  call.linear = w;
  ORCHID_RETURN_IF_ERROR(Supports(call));
  return DoVocabMaxPool(hidden, w, out);
}

Status Backend::Pixels(Buffer out) {
  ORCHID_CONTRACT(decl(out).rows == Rows::kTokens, "Pixels",
                  Describe(decl(out)) + " is not [tokens, patch]");
  ORCHID_CONTRACT(image_batch(), "Pixels", "pixels asked for on a text batch");
  ORCHID_RETURN_IF_ERROR(Supports(Call(OpKind::kPixels, out)));
  return DoPixels(out);
}

Status Backend::Normalize(Buffer x) {
  ORCHID_CONTRACT(decl(x).rows == Rows::kSequences, "Normalize",
                  Describe(decl(x)) + " is not [sequences, width]");
  ORCHID_RETURN_IF_ERROR(Supports(Call(OpKind::kNormalize, x)));
  return DoNormalize(x);
}

Status Backend::LoraAdd(Buffer in, LoraWeight w, Buffer out) {
  const BufferDecl& o = decl(out);
  ORCHID_CONTRACT(w.valid(), "LoraAdd", "no adapter weights");
  ORCHID_CONTRACT(o.width == w.n && o.rows != Rows::kSequences, "LoraAdd",
                  Describe(o) + " is not [tokens or pooled, " + std::to_string(w.n) + "]");
  ORCHID_CONTRACT(w.table() ? (!in.valid() && o.rows == Rows::kTokens)
                            : (in.valid() && in.id != out.id && decl(in).rows == o.rows &&
                               decl(in).width == w.k),
                  "LoraAdd",
                  "input does not match a [" + std::to_string(w.n) + ", " + std::to_string(w.k) +
                      "] delta into " + Describe(o));
  OpCall call = w.table() ? Call(OpKind::kLoraAdd, out) : Call(OpKind::kLoraAdd, in, out);
  call.lora = w;
  ORCHID_RETURN_IF_ERROR(Supports(call));
  return DoLoraAdd(in, w, out);
}

Status Backend::Activate(Buffer x, Activation a) {
  OpCall call = Call(OpKind::kActivate, x);
  call.activation = a;
  ORCHID_RETURN_IF_ERROR(Supports(call));
  return DoActivate(x, a);
}

Status Backend::GatherPooled(Buffer tokens, Buffer pooled) {
  const BufferDecl &t = decl(tokens), &p = decl(pooled);
  ORCHID_CONTRACT(t.rows == Rows::kTokens && p.rows == Rows::kPooled && t.width == p.width &&
                      t.precision == p.precision,
                  "GatherPooled", Describe(t) + " -> " + Describe(p));
  ORCHID_CONTRACT(prune_last_layer(), "GatherPooled", "the batch is not pruned");
  ORCHID_RETURN_IF_ERROR(Supports(Call(OpKind::kGatherPooled, tokens, pooled)));
  return DoGatherPooled(tokens, pooled);
}

Status Backend::Pool(Buffer hidden, Buffer out, bool normalize) {
  const BufferDecl &h = decl(hidden), &o = decl(out);
  ORCHID_CONTRACT(h.rows != Rows::kSequences && o.rows == Rows::kSequences && h.width == o.width &&
                      o.precision == Precision::kAccumulator,
                  "Pool", Describe(h) + " -> " + Describe(o));
  OpCall call = Call(OpKind::kPool, hidden, out);
  call.normalize = normalize;
  ORCHID_RETURN_IF_ERROR(Supports(call));
  return DoPool(hidden, out, normalize);
}

}  // namespace orchid::ops
