#include "families/classifier_head.h"

#include <vector>

namespace orchid {

Status ClassifierHead::Load(const ClassifierHeadLayout& layout, const WeightReader& r,
                            int64_t hidden, int64_t labels, ops::Backend& b) {
  const int64_t H = hidden;
  const ops::LinearOptions full{.full_precision = true};
  auto read_dense = [&](const std::string& name, std::vector<int64_t> shape) {
    return layout.dense_under_prefix ? r.Read(name, shape) : r.ReadUnprefixed(name, shape);
  };
  Tensor w, bias, wo, bo;
  ORCHID_ASSIGN_OR_RETURN(w, read_dense(layout.dense + ".weight", {H, H}));
  if (layout.dense_bias) {
    ORCHID_ASSIGN_OR_RETURN(bias, read_dense(layout.dense + ".bias", {H}));
  }
  ORCHID_ASSIGN_OR_RETURN(dense_, b.AddLinear(w, layout.dense_bias ? &bias : nullptr, full));
  activation_ = layout.activation;
  if (!layout.norm.empty()) {
    Tensor g, beta;
    ORCHID_ASSIGN_OR_RETURN(g, r.ReadUnprefixed(layout.norm + ".weight", {H}));
    if (layout.norm_bias) {
      ORCHID_ASSIGN_OR_RETURN(beta, r.ReadUnprefixed(layout.norm + ".bias", {H}));
    } else {
      beta = Tensor({H});  // zeros: the op contract's LayerNorm always has a bias
    }
    ORCHID_ASSIGN_OR_RETURN(norm_, b.AddNorm(ops::NormKind::kLayerNorm, g, &beta, layout.norm_eps));
    has_norm_ = true;
  }
  ORCHID_ASSIGN_OR_RETURN(wo, r.ReadUnprefixed(layout.out + ".weight", {labels, H}));
  ORCHID_ASSIGN_OR_RETURN(bo, r.ReadUnprefixed(layout.out + ".bias", {labels}));
  ORCHID_ASSIGN_OR_RETURN(out_, b.AddLinear(wo, &bo, full));

  pooled_ = b.AddBuffer("pooled", ops::Rows::kSequences, int(H), ops::Precision::kAccumulator);
  hidden_ = b.AddBuffer("head", ops::Rows::kSequences, int(H), ops::Precision::kAccumulator);
  logits_ = b.AddBuffer("logits", ops::Rows::kSequences, int(labels), ops::Precision::kAccumulator);
  return Status::Ok();
}

Status ClassifierHead::Forward(ops::Backend& b, ops::Buffer hidden) const {
  ORCHID_RETURN_IF_ERROR(b.Pool(hidden, pooled_, false));
  ORCHID_RETURN_IF_ERROR(b.Linear(pooled_, dense_, hidden_));
  ORCHID_RETURN_IF_ERROR(b.Activate(hidden_, activation_));
  if (has_norm_) ORCHID_RETURN_IF_ERROR(b.Norm(hidden_, norm_, hidden_));
  return b.Linear(hidden_, out_, logits_);
}

}  // namespace orchid
