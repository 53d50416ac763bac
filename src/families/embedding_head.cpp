#include "families/embedding_head.h"

#include <memory>
#include <string>

#include "checkpoint/checkpoint.h"
#include "checkpoint/torch_checkpoint.h"
#include "checkpoint/weight_reader.h"

namespace orchid {
namespace {

// One PyTorch state dict's "weight" [rows, in] and "bias" [rows].
Status ReadTorchLinear(const std::string& path, int rows, int in, Tensor* w, Tensor* bias) {
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<TorchCheckpointFile> file,
                          TorchCheckpointFile::Open(path));
  auto read = [&](const char* name, std::vector<int64_t> shape, Tensor* out) -> Status {
    ORCHID_ASSIGN_OR_RETURN(*out, file->ReadF32(name));
    if (out->shape() != shape) {
      return Status::Corrupt(path + ": tensor \"" + name + "\" has shape " + out->ShapeString() +
                             ", expected " + Tensor(shape).ShapeString());
    }
    return Status::Ok();
  };
  ORCHID_RETURN_IF_ERROR(read("weight", {rows, in}, w));
  return read("bias", {rows}, bias);
}

// A sentence-transformers / PyLate Dense module's linear layer, onto the backend.
Result<ops::LinearWeight> LoadDense(const DenseModule& m, ops::Backend& b) {
  if (!m.torch_parts.empty()) {
    std::vector<Tensor> ws(m.torch_parts.size()), bs(m.torch_parts.size());
    std::vector<const Tensor*> wp, bp;
    for (size_t i = 0; i < m.torch_parts.size(); ++i) {
      ORCHID_RETURN_IF_ERROR(ReadTorchLinear(m.torch_parts[i].first, m.torch_parts[i].second,
                                             m.in_features, &ws[i], &bs[i]));
      wp.push_back(&ws[i]);
      bp.push_back(&bs[i]);
    }
    Tensor w = Concat0(wp), bias = Concat0(bp);
    return b.AddLinear(w, &bias);
  }
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> file, Checkpoint::Open(m.dir));
  const WeightReader r(*file, "");
  Tensor w, bias;
  ORCHID_ASSIGN_OR_RETURN(w, r.Read("linear.weight", {m.out_features, m.in_features}));
  if (m.bias) {
    ORCHID_ASSIGN_OR_RETURN(bias, r.Read("linear.bias", {m.out_features}));
  }
  return b.AddLinear(w, m.bias ? &bias : nullptr);
}

}  // namespace

Status EmbeddingHead::Load(const ModelSpec& spec, ops::Backend& b) {
  const int H = spec.info.hidden_size;
  pooled_ = b.AddBuffer(spec.dense.empty() ? "embeddings" : "pooled", ops::Rows::kSequences, H,
                        ops::Precision::kAccumulator);
  for (size_t i = 0; i < spec.dense.size(); ++i) {
    const DenseModule& m = spec.dense[i];
    Dense d;
    d.tanh = m.tanh;
    ORCHID_ASSIGN_OR_RETURN(d.linear, LoadDense(m, b));
    dense_.push_back(d);
    out_.push_back(
        b.AddBuffer(i + 1 == spec.dense.size() ? "embeddings" : "dense" + std::to_string(i),
                    ops::Rows::kSequences, m.out_features, ops::Precision::kAccumulator));
  }
  for (size_t i = 0; i < spec.token_dense.size(); ++i) {
    const DenseModule& m = spec.token_dense[i];
    ORCHID_ASSIGN_OR_RETURN(ops::LinearWeight lw, LoadDense(m, b));
    token_dense_.push_back(lw);
    token_out_.push_back(b.AddBuffer("token_vectors" + std::to_string(i), ops::Rows::kTokens,
                                     m.out_features, ops::Precision::kAccumulator));
  }
  return Status::Ok();
}

Status EmbeddingHead::Forward(ops::Backend& b, ops::Buffer hidden) const {
  if (!token_dense_.empty() && b.decl(hidden).rows == ops::Rows::kTokens) {
    ops::Buffer in = hidden;
    for (size_t i = 0; i < token_dense_.size(); ++i) {
      ORCHID_RETURN_IF_ERROR(b.Linear(in, token_dense_[i], token_out_[i]));
      in = token_out_[i];
    }
  }
  if (dense_.empty()) return b.Pool(hidden, pooled_, true);
  ORCHID_RETURN_IF_ERROR(b.Pool(hidden, pooled_, false));
  ops::Buffer in = pooled_;
  for (size_t i = 0; i < dense_.size(); ++i) {
    ORCHID_RETURN_IF_ERROR(b.Linear(in, dense_[i].linear, out_[i]));
    if (dense_[i].tanh) ORCHID_RETURN_IF_ERROR(b.Activate(out_[i], ops::Activation::kTanh));
    in = out_[i];
  }
  return b.Normalize(in);
}

}  // namespace orchid
