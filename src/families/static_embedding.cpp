// The static embedding family (model2vec's StaticModel, sentence-transformers'
// StaticEmbedding): no transformer, each token's row of one table, then the embedding head.
//
//   h[t] = table[id_t]                        (the batch's tokens; the gateway already left out
//                                              what the model's encode rules drop)
//   out  = head(mean over each text's rows)   (any Dense modules, L2 normalisation where asked)
//
// Per-token output (/embed_all) is h: the table's rows.
#include <memory>
#include <utility>

#include "checkpoint/checkpoint.h"
#include "checkpoint/weight_reader.h"
#include "families/embedding_head.h"
#include "families/family_loaders.h"

namespace orchid {
namespace {

class StaticEmbedding final : public Family {
 public:
  Status Load(const ModelSpec& spec, const Checkpoint& file, ops::Backend& b) {
    const StaticEmbeddingConfig& c = spec.static_embedding;
    const WeightReader r(file, "");
    ORCHID_ASSIGN_OR_RETURN(Tensor table, r.Read(c.table, {c.vocab_size, c.dim}));
    ORCHID_ASSIGN_OR_RETURN(embed_.word, b.AddTable(std::move(table)));
    hidden_ = b.AddBuffer("rows", ops::Rows::kTokens, c.dim, ops::Precision::kAccumulator);
    ORCHID_RETURN_IF_ERROR(head_.Load(spec, b));
    output_ = head_.output();
    return Status::Ok();
  }

  Status Forward(ops::Backend& b) const override {
    ORCHID_RETURN_IF_ERROR(b.Embed(embed_, hidden_));
    return head_.Forward(b, hidden_);
  }

 private:
  ops::EmbedOp embed_;
  EmbeddingHead head_;
};

}  // namespace

Result<std::unique_ptr<Family>> LoadStaticEmbedding(const ModelSpec& spec, ops::Backend& backend) {
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> file,
                          Checkpoint::Open(spec.static_embedding.dir));
  return LoadAs<StaticEmbedding>(spec, *file, backend);
}

}  // namespace orchid
