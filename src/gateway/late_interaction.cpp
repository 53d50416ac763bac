#include "gateway/late_interaction.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace orchid {

Result<LateInteractionEncoder> LateInteractionEncoder::Make(const LateInteraction& config,
                                                            const Tokenizer& tokenizer) {
  LateInteractionEncoder e;
  e.config_ = config;
  e.tokenizer_ = &tokenizer;
  auto prefix = [&](const std::string& token, const char* what) -> Result<int32_t> {
    if (token.empty()) return -1;
    std::optional<int32_t> id = tokenizer.TokenToId(token);
    if (!id) {
      return Status::InvalidArgument(std::string("the ") + what + " \"" + token +
                                     "\" is not a token of the tokenizer");
    }
    return *id;
  };
  ORCHID_ASSIGN_OR_RETURN(e.query_prefix_, prefix(config.query_prefix, "query prefix"));
  ORCHID_ASSIGN_OR_RETURN(e.document_prefix_, prefix(config.document_prefix, "document prefix"));
  // PyLate pads expanded queries with the tokenizer's mask token.
  for (const char* mask : {"[MASK]", "<mask>"}) {
    if (std::optional<int32_t> id = tokenizer.TokenToId(mask)) {
      e.mask_ = *id;
      break;
    }
  }
  if (config.do_query_expansion && e.mask_ < 0) {
    return Status::InvalidArgument(
        "query expansion (do_query_expansion) needs a mask token ([MASK] or <mask>), which the "
        "tokenizer does not have");
  }
  std::optional<int32_t> unk;
  for (const char* u : {"[UNK]", "<unk>"}) {
    if ((unk = tokenizer.TokenToId(u))) break;
  }
  for (const std::string& w : config.skiplist_words) {
    if (std::optional<int32_t> id = tokenizer.TokenToId(w)) {
      e.skiplist_.insert(*id);
    } else if (unk) {
      e.skiplist_.insert(*unk);
    }
  }
  return e;
}

Status LateInteractionEncoder::Encode(std::string_view text, bool is_query, Encoded* out) const {
  const int32_t prefix = is_query ? query_prefix_ : document_prefix_;
  const int length = is_query ? config_.query_length : config_.document_length;
  EncodeOptions options;
  options.add_special_tokens = true;
  options.max_length = size_t(prefix >= 0 ? length - 1 : length);
  Encoding encoding;
  ORCHID_RETURN_IF_ERROR(tokenizer_->Encode(text, options, &encoding));
  std::vector<int32_t>& ids = out->ids;
  ids = std::move(encoding.ids);
  const bool expand = is_query && config_.do_query_expansion;
  size_t attended = ids.size();
  if (expand) ids.resize(options.max_length, mask_);
  if (prefix >= 0) {
    ids.insert(ids.begin() + (ids.empty() ? 0 : 1), prefix);
    ++attended;
  }
  out->attend_len =
      expand && !config_.attend_to_expansion_tokens && attended < ids.size() ? int(attended) : 0;
  out->keep.assign(ids.size(), 1);
  if (!is_query) {
    for (size_t i = 0; i < ids.size(); ++i) out->keep[i] = skiplist_.count(ids[i]) ? 0 : 1;
  }
  return Status::Ok();
}

void NormalizeRows(float* data, int rows, int dim) {
  for (int r = 0; r < rows; ++r) {
    float* x = data + size_t(r) * size_t(dim);
    double ss = 0;
    for (int i = 0; i < dim; ++i) ss += double(x[i]) * double(x[i]);
    const float inv = float(1.0 / std::max(std::sqrt(ss), 1e-12));
    for (int i = 0; i < dim; ++i) x[i] *= inv;
  }
}

double MaxSim(const float* q, int nq, const float* d, int nd, int dim) {
  double total = 0;
  for (int i = 0; i < nq; ++i) {
    const float* qi = q + size_t(i) * size_t(dim);
    float best = -INFINITY;
    for (int j = 0; j < nd; ++j) {
      const float* dj = d + size_t(j) * size_t(dim);
      float dot = 0;
      for (int k = 0; k < dim; ++k) dot += qi[k] * dj[k];
      best = std::max(best, dot);
    }
    if (nd > 0) total += double(best);
  }
  return total;
}

}  // namespace orchid
