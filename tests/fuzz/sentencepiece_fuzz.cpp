// Arbitrary bytes as a spiece.model (SigLIP v1's SentencePiece tokenizer;
// tokenizer/sentencepiece.h): the protobuf reader must return an error or a model, and a model it
// accepts must give a tokenizer.json that loads, and that tokenizer must encode a text without
// failing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tokenizer/sentencepiece.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto model = orchid::ReadSentencePieceModel(bytes, "spiece.model");
  if (!model.ok()) return 0;
  if (model->pieces.empty() || size_t(model->unk_id) >= model->pieces.size()) std::abort();
  orchid::SiglipTokenizerSettings settings;
  settings.eos_token = settings.pad_token = model->pieces.back().piece;
  settings.unk_token = model->pieces[size_t(model->unk_id)].piece;
  auto json = orchid::SiglipTokenizerJson(*model, settings, "spiece.model");
  if (!json.ok()) return 0;
  auto tok = orchid::Tokenizer::FromJson(*json, "spiece.model");
  if (!tok.ok()) return 0;  // e.g. a piece that is not UTF-8
  orchid::Encoding enc;
  orchid::EncodeOptions o;
  o.add_special_tokens = true;
  (void)(*tok)->Encode("A photo, of 2 CATS!", o, &enc);
  return 0;
}
