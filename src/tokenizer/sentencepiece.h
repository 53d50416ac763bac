// SentencePiece models (`spiece.model`) as the slow tokenizers of transformers use them, where a
// checkpoint ships no tokenizer.json: SigLIP (v1)'s SiglipTokenizer, which transformers has no
// fast converter for.
//
// ReadSentencePieceModel parses the model's protobuf (sentencepiece_model.proto's ModelProto: the
// pieces with their scores and types, the trainer's model type and special ids, the normalizer's
// precompiled character map and flags) with a minimal wire-format reader; every length and field
// is checked, and an unsupported model (BPE, byte fallback, a normalizer without a precompiled
// map) is refused by name.
//
// SiglipTokenizerJson writes the tokenizer.json that runs what SiglipTokenizer does (transformers
// 4.57): the text gets a leading "▁" (its own "▁" characters turned into spaces), is lowercased
// (do_lower_case), loses Python's string.punctuation, has every run of whitespace (Python's
// str.isspace) made one space and is stripped (canonicalize_text); then SentencePiece's
// normalizer (the precompiled map, extra whitespace removed, spaces escaped as "▁"; no dummy
// prefix: SiglipTokenizer turns it off), whitespace-split unigram pieces, and "</s>" appended.
// The special tokens (eos, unk, pad, as tokenizer_config.json names them) match as written, with
// the whitespace around them stripped. Known differences, for texts that write a special token
// out: the text after one gets a "▁" of its own here, not in the slow tokenizer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace orchid {

struct SentencePieceModel {
  enum class PieceType : int {
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6
  };
  struct Piece {
    std::string piece;
    float score = 0.0f;
    PieceType type = PieceType::kNormal;
  };
  std::vector<Piece> pieces;
  int model_type = 1;  // 1 unigram, 2 BPE, 3 word, 4 char
  bool byte_fallback = false;
  bool split_by_whitespace = true;
  bool treat_whitespace_as_suffix = false;
  int unk_id = 0;
  std::string normalizer_name;
  std::string precompiled_charsmap;  // raw bytes
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

// `bytes`: a spiece.model's contents; `origin` names it in errors.
Result<SentencePieceModel> ReadSentencePieceModel(std::string_view bytes,
                                                  const std::string& origin);

struct SiglipTokenizerSettings {
  bool do_lower_case = true;
  std::string eos_token = "</s>", unk_token = "<unk>", pad_token = "</s>";
};

// The tokenizer.json text (above) for a unigram model with whitespace splitting.
Result<std::string> SiglipTokenizerJson(const SentencePieceModel& model,
                                        const SiglipTokenizerSettings& settings,
                                        const std::string& origin);

// The tokenizer.json for the spiece.model at `path`, with the settings of tokenizer_config.json
// beside it, which must name SiglipTokenizer (other slow SentencePiece tokenizers are refused:
// save their fast version's tokenizer.json).
Result<std::string> SentencePieceFileTokenizerJson(const std::string& path);

}  // namespace orchid
