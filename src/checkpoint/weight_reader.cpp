#include "checkpoint/weight_reader.h"

#include <cstring>

namespace orchid {
namespace {

Result<Tensor> ReadChecked(const Checkpoint& file, const std::string& full,
                           const std::vector<int64_t>& shape) {
  ORCHID_ASSIGN_OR_RETURN(Tensor t, file.ReadF32(full));
  if (t.shape() != shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
      if (i) s += ", ";
      s += std::to_string(shape[i]);
    }
    std::string msg = file.FileOf(full);
    msg.append(": tensor \"").append(full).append("\" has shape ").append(t.ShapeString());
    msg.append(", config.json implies ").append(s).append("]");
    return Status::Corrupt(std::move(msg));
  }
  return t;
}

}  // namespace

Result<Tensor> WeightReader::Read(const std::string& name, std::vector<int64_t> shape) const {
  return ReadChecked(file_, prefix_ + name, shape);
}

std::string WeightReader::Outer(const std::string& name) const {
  // The prefix's leading parts, longest last: "new.gte." gives "", then "new.".
  if (file_.Find(name) != nullptr) return "";
  for (size_t dot = prefix_.find('.'); dot != std::string::npos && dot + 1 < prefix_.size();
       dot = prefix_.find('.', dot + 1)) {
    const std::string outer = prefix_.substr(0, dot + 1);
    if (file_.Find(outer + name) != nullptr) return outer;
  }
  return "";
}

Result<Tensor> WeightReader::ReadUnprefixed(const std::string& name,
                                            std::vector<int64_t> shape) const {
  return ReadChecked(file_, Outer(name) + name, shape);
}

Status WeightReader::ReadNorm(const std::string& base, int64_t dim, Tensor* gamma,
                              Tensor* beta) const {
  const bool old_names = !Has(base + ".weight") && Has(base + ".gamma");
  ORCHID_ASSIGN_OR_RETURN(*gamma, Read(base + (old_names ? ".gamma" : ".weight"), {dim}));
  ORCHID_ASSIGN_OR_RETURN(*beta, Read(base + (old_names ? ".beta" : ".bias"), {dim}));
  return Status::Ok();
}

Status WeightReader::ReadNormUnprefixed(const std::string& base, int64_t dim, Tensor* gamma,
                                        Tensor* beta) const {
  const std::string outer =
      Outer(base + ".weight").empty() ? Outer(base + ".gamma") : Outer(base + ".weight");
  return WeightReader(file_, outer).ReadNorm(base, dim, gamma, beta);
}

std::optional<std::string> FindWeightPrefix(const Checkpoint& file, const std::string& anchor) {
  std::optional<std::string> best;
  for (const TensorInfo* tp : file.tensors()) {
    const TensorInfo& t = *tp;
    if (t.name.size() < anchor.size() ||
        t.name.compare(t.name.size() - anchor.size(), anchor.size(), anchor) != 0) {
      continue;
    }
    std::string p = t.name.substr(0, t.name.size() - anchor.size());
    if (!p.empty() && p.back() != '.') continue;
    if (!best || p.size() < best->size()) best = std::move(p);
  }
  return best;
}

Tensor Concat0(const std::vector<const Tensor*>& parts) {
  std::vector<int64_t> shape = parts[0]->shape();
  shape[0] = 0;
  for (const Tensor* p : parts) shape[0] += p->dim(0);
  Tensor out(shape);
  float* dst = out.data();
  for (const Tensor* p : parts) {
    std::memcpy(dst, p->data(), p->numel() * sizeof(float));
    dst += p->numel();
  }
  return out;
}

}  // namespace orchid
