#include "backends/cuda/op_support.h"

#include <string>

namespace orchid::cuda {
namespace {

Status Unsupported(const ops::OpCall& call, const std::string& what) {
  return Status::Unimplemented(std::string("cuda backend: ") + ops::OpKindName(call.kind) + ": " +
                               what);
}

bool Bf16(const ops::BufferDecl* d) { return d->precision == ops::Precision::kActivation; }

Status RowWidth(const ops::OpCall& call, int width) {
  if (width <= kMaxRowWidth) return Status::Ok();
  return Unsupported(call, "rows of " + std::to_string(width) + " values (the row kernels take " +
                               std::to_string(kMaxRowWidth) + " at most)");
}

}  // namespace

bool AttentionHeadDimSupported(int head_dim) {
  return head_dim == 32 || head_dim == 64 || head_dim == 80 || head_dim == 96 || head_dim == 128;
}

Status Supports(const ops::OpCall& call) {
  using ops::OpKind;
  const ops::BufferDecl* a = call.buffers[0];
  const ops::BufferDecl* b = call.buffers[1];
  switch (call.kind) {
    case OpKind::kAddLinear:
      if (call.linear.n <= 0 || call.linear.k <= 0 || call.linear.k % 8 != 0) {
        return Unsupported(call, "a [" + std::to_string(call.linear.n) + ", " +
                                     std::to_string(call.linear.k) +
                                     "] weight: the input width must be a positive multiple of "
                                     "8 (cuBLASLt alignment)");
      }
      return Status::Ok();
    case OpKind::kAddNorm:
      return Status::Ok();
    case OpKind::kEmbed: {
      const ops::EmbedOp& e = *call.embed;
      if (!e.norm.valid()) {
        // A decoder's embedding: the word rows into its fp32 residual stream.
        if (e.position.valid() || e.type.valid() || Bf16(a)) {
          return Unsupported(call,
                             "embeddings without a norm are word embeddings alone into an "
                             "fp32 buffer");
        }
        return Status::Ok();
      }
      // An encoder's: word (+ position) (+ token type) rows and a LayerNorm into bf16.
      if (e.norm.kind != ops::NormKind::kLayerNorm || !Bf16(a)) {
        return Unsupported(call, "an embedding norm is a LayerNorm into a bf16 buffer");
      }
      return RowWidth(call, a->width);
    }
    case OpKind::kLinear:
      if (call.epilogue == ops::Epilogue::kResidualAdd && call.linear.n % 8 != 0) {
        return Unsupported(call, "a residual add into a buffer of width " +
                                     std::to_string(call.linear.n) + " (not a multiple of 8)");
      }
      return Status::Ok();
    case OpKind::kNorm:
      if (call.norm.kind == ops::NormKind::kLayerNorm && (!Bf16(a) || !Bf16(b))) {
        return Unsupported(call, "a LayerNorm on bf16 buffers only");
      }
      if (call.norm.kind == ops::NormKind::kRmsNorm && (Bf16(a) || !Bf16(b))) {
        return Unsupported(call, "an RMSNorm from an fp32 buffer into a bf16 buffer only");
      }
      return RowWidth(call, call.norm.width);
    case OpKind::kQkNormRope: {
      const ops::RopeOptions& r = *call.rope;
      if (!Bf16(a)) return Unsupported(call, "on a bf16 buffer only");
      if (r.head_dim > 256) return Unsupported(call, "head_dim above 256");
      if (r.scaling.type != RopeType::kDefault) {
        return Unsupported(call,
                           std::string("no ") + RopeTypeName(r.scaling.type) + " rotary scaling");
      }
      if (r.q_norm.valid() &&
          (r.q_norm.kind != ops::NormKind::kRmsNorm || r.k_norm.kind != ops::NormKind::kRmsNorm ||
           r.q_norm.eps != r.k_norm.eps)) {
        return Unsupported(call, "q and k norms are RMSNorms with one epsilon");
      }
      return Status::Ok();
    }
    case OpKind::kAttention: {
      const ops::AttentionOptions& o = *call.attention;
      if (!Bf16(a) || !Bf16(b)) return Unsupported(call, "on bf16 buffers only");
      if (o.relative_bias.valid()) return Unsupported(call, "no relative position bias (MPNet)");
      if (o.pos_key.valid() || o.pos_query.valid()) {
        return Unsupported(call, "no disentangled relative positions (DeBERTa-v2)");
      }
      if (o.window > 0) {
        return Unsupported(call, "no sliding window (" + std::to_string(o.window) + " tokens)");
      }
      if (o.scale > 0) return Unsupported(call, "no score scale but 1 / sqrt(head_dim)");
      if (!AttentionHeadDimSupported(o.head_dim)) {
        return Unsupported(call, "head_dim " + std::to_string(o.head_dim) +
                                     " (the kernel has 32, 64, 80, 96, 128)");
      }
      return Status::Ok();
    }
    case OpKind::kGlu:
      if (call.gate != ops::Gate::kSilu) return Unsupported(call, "a GeGLU gate (SwiGLU only)");
      if (!Bf16(a) || !Bf16(b)) return Unsupported(call, "on bf16 buffers only");
      return Status::Ok();
    case OpKind::kAdd:
      return Unsupported(call, "no residual add outside a linear layer (Gemma 3's sublayer norms)");
    case OpKind::kActivate:
      if (call.activation == ops::Activation::kLog1pRelu) {
        return Unsupported(call, "no log(1 + relu) (SPLADE)");
      }
      if (call.activation == ops::Activation::kQuickGelu ||
          call.activation == ops::Activation::kGeluTanh) {
        return Unsupported(call,
                           "no quick_gelu / tanh-approximated GELU activation (CLIP, SigLIP)");
      }
      return Status::Ok();
    case OpKind::kPixels:
      return Unsupported(call, "no pixel input (image towers: CLIP, SigLIP)");
    case OpKind::kGatherPooled:
      return Status::Ok();
    case OpKind::kPool:
      if (!Bf16(a)) return Unsupported(call, "from a bf16 buffer only");
      return Status::Ok();
    case OpKind::kVocabMaxPool:
      return Unsupported(call, "no vocabulary max-pooling (SPLADE)");
    case OpKind::kAddLora:
    case OpKind::kLoraAdd:
      return Unsupported(call,
                         "no task adapters (LoRA: jina-embeddings-v3's per-request tasks); "
                         "serve the model with --device cpu");
    case OpKind::kNormalize:
      return Unsupported(call,
                         "no normalisation after pooling (sentence-transformers Dense "
                         "modules)");
  }
  return Unsupported(call, "unknown op");
}

}  // namespace orchid::cuda
