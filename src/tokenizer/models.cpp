#include "tokenizer/models.h"

#include <string>

#include "tokenizer/bpe.h"
#include "tokenizer/unigram.h"
#include "tokenizer/wordpiece.h"

namespace orchid::tok {

Result<std::unique_ptr<Model>> MakeModel(JsonElement json, std::string_view where) {
  JsonObject o;
  if (json.get(o) != simdjson::SUCCESS) return JsonError(where, "expected an object");
  ORCHID_ASSIGN_OR_RETURN(std::string_view type, ComponentType(json, where));
  if (type == "WordPiece") return MakeWordPiece(o, StrCat({where, " (WordPiece)"}));
  if (type == "Unigram") return MakeUnigram(o, StrCat({where, " (Unigram)"}));
  if (type == "BPE") {
    ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<BpeModel> bpe, MakeBpe(o, StrCat({where, " (BPE)"})));
    return std::unique_ptr<Model>(std::move(bpe));
  }
  return UnsupportedType(where, "model", type);
}

}  // namespace orchid::tok
