// The WordPiece (BERT) tokenizer against reference outputs of Hugging Face `tokenizers`
// (tests/fixtures/tokenizer/wordpiece_reference.jsonl, written by make_reference.py there).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tokenizer/components.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/pre_tokenizers.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace orchid {
namespace {

const std::string kModelJson =
    std::string(ORCHID_SOURCE_DIR) + "/models/all-MiniLM-L6-v2/tokenizer.json";
const std::string kFixture =
    std::string(ORCHID_SOURCE_DIR) + "/tests/fixtures/tokenizer/wordpiece_reference.jsonl";

std::unique_ptr<Tokenizer> LoadMiniLm() {
  auto t = Tokenizer::FromFile(kModelJson);
  if (!t.ok()) {
    ADD_FAILURE() << t.status().ToString() << " (run `make model` to fetch the default model)";
    return nullptr;
  }
  return std::move(t).value();
}

std::string Escape(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 100)) {
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

template <typename T>
std::string Join(const std::vector<T>& v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size() && i < 24; ++i) os << (i ? "," : "") << v[i];
  if (v.size() > 24) os << ",...(" << v.size() << ")";
  return os.str();
}

simdjson::dom::array Array(simdjson::dom::element e) {
  simdjson::dom::array arr;
  EXPECT_EQ(e.get(arr), simdjson::SUCCESS);
  return arr;
}

std::vector<int64_t> IntArray(simdjson::dom::element e) {
  std::vector<int64_t> out;
  const simdjson::dom::array arr = Array(e);
  for (simdjson::dom::element v : arr) out.push_back(v.get_int64().value());
  return out;
}

// Loads the fixture once: its records, as parsed JSON documents kept alive.
struct Fixture {
  simdjson::padded_string data;
  simdjson::dom::parser parser;
  std::vector<simdjson::dom::element> records;
  std::vector<std::unique_ptr<simdjson::dom::parser>> parsers;
};

const Fixture& GetFixture() {
  static Fixture* f = [] {
    auto* fx = new Fixture;
    if (simdjson::padded_string::load(kFixture).get(fx->data) != simdjson::SUCCESS) {
      ADD_FAILURE() << "cannot read " << kFixture;
      return fx;
    }
    std::string_view all(fx->data.data(), fx->data.size());
    size_t pos = 0;
    while (pos < all.size()) {
      size_t nl = all.find('\n', pos);
      if (nl == std::string_view::npos) nl = all.size();
      if (nl > pos) {
        fx->parsers.push_back(std::make_unique<simdjson::dom::parser>());
        simdjson::dom::element e;
        auto err = fx->parsers.back()->parse(all.data() + pos, nl - pos).get(e);
        EXPECT_EQ(err, simdjson::SUCCESS) << "fixture line at byte " << pos;
        if (err == simdjson::SUCCESS) fx->records.push_back(e);
      }
      pos = nl + 1;
    }
    return fx;
  }();
  return *f;
}

TEST(WordPieceReference, EncodeMatchesTokenizers) {
  const Fixture& fx = GetFixture();
  std::map<std::string, std::unique_ptr<Tokenizer>> tokenizers;
  tokenizers["minilm"] = LoadMiniLm();
  ASSERT_NE(tokenizers["minilm"], nullptr);
  size_t compared = 0, failures = 0;
  Encoding enc;
  for (simdjson::dom::element r : fx.records) {
    const std::string_view kind = r["kind"].get_string().value();
    if (kind == "tokenizer") {
      auto t = Tokenizer::FromJson(r["json"].get_string().value(), "tiny tokenizer");
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      tokenizers[std::string(r["name"].get_string().value())] = std::move(t).value();
      continue;
    }
    if (kind != "encode") continue;
    const std::string name(r["tokenizer"].get_string().value());
    ASSERT_TRUE(tokenizers.count(name)) << name;
    const std::string_view text = r["text"].get_string().value();
    EncodeOptions opt;
    opt.add_special_tokens = r["add_special_tokens"].get_bool().value();
    opt.max_length = r["max_length"].get_uint64().value();
    opt.side = r["side"].get_string().value() == "left" ? TruncationSide::kLeft
                                                       : TruncationSide::kRight;
    const Status st = tokenizers[name]->Encode(text, opt, &enc);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ++compared;
    std::vector<int64_t> ids(enc.ids.begin(), enc.ids.end());
    std::vector<int64_t> type_ids(enc.type_ids.begin(), enc.type_ids.end());
    const auto want_ids = IntArray(r["ids"].value());
    const auto want_types = IntArray(r["type_ids"].value());
    bool ok = ids == want_ids && type_ids == want_types;
    std::string offsets_msg;
    simdjson::dom::element offsets;
    if (ok && r["offsets"].get(offsets) == simdjson::SUCCESS) {
      size_t i = 0;
      const simdjson::dom::array pairs = Array(offsets);
      for (simdjson::dom::element pair : pairs) {
        const auto be = IntArray(pair);
        if (i >= enc.offsets.size() || be[0] != enc.offsets[i].first ||
            be[1] != enc.offsets[i].second) {
          ok = false;
          std::ostringstream os;
          os << " offset #" << i << ": want (" << be[0] << "," << be[1] << ")";
          if (i < enc.offsets.size()) {
            os << " got (" << enc.offsets[i].first << "," << enc.offsets[i].second << ")";
          }
          offsets_msg = os.str();
          break;
        }
        ++i;
      }
    }
    if (!ok && ++failures <= 10) {
      ADD_FAILURE() << "[" << name << " special=" << opt.add_special_tokens
                    << " max_length=" << opt.max_length << "] \"" << Escape(text) << "\"\n"
                    << "  ids      " << Join(ids) << "\n  expected " << Join(want_ids)
                    << "\n  types " << Join(type_ids) << " expected " << Join(want_types)
                    << offsets_msg;
    }
  }
  EXPECT_EQ(failures, 0u) << failures << " of " << compared << " encodings differ";
  EXPECT_GT(compared, 800u);
}

TEST(WordPieceReference, BertNormalizerMatchesTokenizers) {
  size_t compared = 0, failures = 0;
  tok::NormalizedText out;
  for (simdjson::dom::element r : GetFixture().records) {
    if (r["kind"].get_string().value() != "normalize") continue;
    tok::BertNormalizerOptions o;
    o.clean_text = r["clean_text"].get_bool().value();
    o.handle_chinese_chars = r["handle_chinese_chars"].get_bool().value();
    o.strip_accents = r["strip_accents"].get_bool().value();
    o.lowercase = r["lowercase"].get_bool().value();
    const std::string_view text = r["text"].get_string().value();
    const std::string_view want = r["expected"].get_string().value();
    tok::MakeBertNormalizer(o)->NormalizeRaw(text, 0, &out);
    ++compared;
    EXPECT_EQ(out.begin.size(), out.text.size());
    if (out.text != want && ++failures <= 10) {
      ADD_FAILURE() << "options clean=" << o.clean_text << " chinese=" << o.handle_chinese_chars
                    << " strip=" << o.strip_accents << " lower=" << o.lowercase << "\n  input "
                    << Escape(text) << "\n  got   " << Escape(out.text) << "\n  want  "
                    << Escape(want);
    }
  }
  EXPECT_EQ(failures, 0u) << failures << " of " << compared << " normalizations differ";
  EXPECT_GT(compared, 100u);
}

TEST(WordPieceReference, BertPreTokenizerMatchesTokenizers) {
  size_t compared = 0;
  auto pre = tok::MakeBertPreTokenizer();
  tok::NormalizedText text;
  std::vector<tok::Span> words;
  for (simdjson::dom::element r : GetFixture().records) {
    if (r["kind"].get_string().value() != "pretokenize") continue;
    const std::string_view raw = r["text"].get_string().value();
    text.AssignIdentity(raw, 0);
    words.clear();
    pre->PreTokenize(text, {0, static_cast<uint32_t>(text.size())}, &words);
    std::vector<int64_t> got, want;
    for (const tok::Span& w : words) {
      got.push_back(w.begin);
      got.push_back(w.end);
    }
    const simdjson::dom::array pairs = Array(r["expected"].value());
    for (simdjson::dom::element pair : pairs) {
      for (int64_t v : IntArray(pair)) want.push_back(v);
    }
    ++compared;
    EXPECT_EQ(got, want) << Escape(raw);
  }
  EXPECT_GT(compared, 50u);
}

TEST(WordPieceTokenizer, BasicsOfTheDefaultModel) {
  auto t = LoadMiniLm();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->vocab_size(), 30522);
  EXPECT_EQ(t->num_special_tokens(), 2u);
  EXPECT_EQ(t->TokenToId("[CLS]"), 101);
  EXPECT_EQ(t->TokenToId("##s"), 2015);
  EXPECT_EQ(t->TokenToId("not-a-token"), std::nullopt);
  EXPECT_EQ(t->IdToToken(102), "[SEP]");
  EXPECT_EQ(t->IdToToken(7592), "hello");
  EXPECT_EQ(t->IdToToken(-1), std::nullopt);
  EXPECT_EQ(t->IdToToken(30522), std::nullopt);

  Encoding enc;
  ASSERT_TRUE(t->Encode("Hello, [SEP]world!", {}, &enc).ok());
  EXPECT_EQ(enc.ids, (std::vector<int32_t>{101, 7592, 1010, 102, 2088, 999, 102}));
  EXPECT_EQ(enc.type_ids, std::vector<int32_t>(7, 0));
  const std::vector<std::pair<uint32_t, uint32_t>> offsets = {{0, 0},  {0, 5},   {5, 6}, {7, 12},
                                                              {12, 17}, {17, 18}, {0, 0}};
  EXPECT_EQ(enc.offsets, offsets);
}

TEST(WordPieceTokenizer, ReusesTheCallersEncoding) {
  auto t = LoadMiniLm();
  ASSERT_NE(t, nullptr);
  Encoding enc;
  ASSERT_TRUE(t->Encode("a fairly long sentence with quite a few words in it", {}, &enc).ok());
  const int32_t* data = enc.ids.data();
  ASSERT_TRUE(t->Encode("short", {}, &enc).ok());
  EXPECT_EQ(enc.ids.data(), data);
  EXPECT_EQ(enc.ids, (std::vector<int32_t>{101, 2460, 102}));
}

TEST(WordPieceTokenizer, RejectsInvalidUtf8) {
  auto t = LoadMiniLm();
  ASSERT_NE(t, nullptr);
  Encoding enc;
  for (std::string bad : {std::string("caf\xc3"), std::string("\xff"), std::string("\xc0\xaf"),
                          std::string("\xe0\x80\xaf"), std::string("\xed\xa0\x80"),
                          std::string("\xf4\x90\x80\x80"), std::string("ok \x80 no"),
                          std::string("\xf0\x9f\x98")}) {
    const Status st = t->Encode(bad, {}, &enc);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << Escape(bad);
    EXPECT_NE(st.message().find("UTF-8"), std::string::npos) << st.message();
  }
  EXPECT_TRUE(t->Encode("\xf4\x8f\xbf\xbf \xef\xbf\xbf \xc2\x80", {}, &enc).ok());
}

TEST(WordPieceTokenizer, ConcurrentEncodesAgree) {
  auto t = LoadMiniLm();
  ASSERT_NE(t, nullptr);
  const std::vector<std::string> texts = {"Hello world", "Ünïcödé naïve café", "日本語テキスト",
                                          "[CLS] x [SEP] y", std::string(300, 'z')};
  std::vector<std::vector<int32_t>> want;
  for (const auto& s : texts) {
    Encoding e;
    ASSERT_TRUE(t->Encode(s, {}, &e).ok());
    want.push_back(e.ids);
  }
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      Encoding e;
      for (int iter = 0; iter < 200; ++iter) {
        const size_t i = static_cast<size_t>(iter + k) % texts.size();
        if (!t->Encode(texts[i], {}, &e).ok() || e.ids != want[i]) ++bad[static_cast<size_t>(k)];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
}

// A minimal tokenizer.json around a given component, to check load errors.
std::string TinyJson(const std::string& normalizer, const std::string& pre_tokenizer,
                     const std::string& model, const std::string& post) {
  return R"({"version":"1.0","added_tokens":[],"normalizer":)" + normalizer +
         R"(,"pre_tokenizer":)" + pre_tokenizer + R"(,"post_processor":)" + post +
         R"(,"decoder":null,"model":)" + model + "}";
}
const std::string kWordPiece =
    R"({"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##",)"
    R"("max_input_chars_per_word":100,"vocab":{"[UNK]":0,"a":1,"##b":2}})";

TEST(WordPieceTokenizer, UnsupportedComponentsAreNamed) {
  struct Case {
    std::string json;
    std::string must_mention;
  };
  const std::vector<Case> cases = {
      {TinyJson(R"({"type":"Nmt"})", "null", kWordPiece, "null"), "unsupported normalizer type \"Nmt\""},
      {TinyJson("null", R"({"type":"UnicodeScripts"})", kWordPiece, "null"),
       "unsupported pre-tokenizer type \"UnicodeScripts\""},
      {TinyJson("null", "null", R"({"type":"WordLevel","vocab":{}})", "null"),
       "unsupported model type \"WordLevel\""},
      {TinyJson("null", "null", kWordPiece, R"({"type":"BogusProcessing"})"),
       "unsupported post-processor type \"BogusProcessing\""},
      {TinyJson("null", "null", R"({"vocab":{}})", "null"), "model: missing or non-string \"type\""},
      {"{not json", "invalid JSON"},
  };
  for (const Case& c : cases) {
    auto t = Tokenizer::FromJson(c.json, "tiny.json");
    ASSERT_FALSE(t.ok()) << c.json;
    EXPECT_EQ(t.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(t.status().message().find(c.must_mention), std::string::npos)
        << t.status().message();
    EXPECT_NE(t.status().message().find("tiny.json"), std::string::npos) << t.status().message();
  }
  auto missing = Tokenizer::FromFile("/nonexistent/tokenizer.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
}

TEST(WordPieceTokenizer, NoNormalizerPreTokenizerOrPostProcessor) {
  auto t = Tokenizer::FromJson(TinyJson("null", "null", kWordPiece, "null"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Encoding enc;
  ASSERT_TRUE((*t)->Encode("abb", {}, &enc).ok());
  EXPECT_EQ(enc.ids, (std::vector<int32_t>{1, 2, 2}));
  ASSERT_TRUE((*t)->Encode("a c", {}, &enc).ok());
  EXPECT_EQ(enc.ids, (std::vector<int32_t>{0}));  // one word, with an unknown part → [UNK]
  EXPECT_EQ((*t)->num_special_tokens(), 0u);
}

TEST(WordPieceUnicode, TablesMatchTheLinkedUtf8proc) {
  // The NFD / combining class / lowercase exception lists are relative to one utf8proc
  // version; on another, rerun src/tokenizer/gen_unicode_tables.py.
  EXPECT_STREQ(tok::TablesUtf8procVersion(), tok::LinkedUtf8procVersion());
}

TEST(WordPieceUnicode, Properties) {
  EXPECT_TRUE(tok::IsOther(0x00AD));        // soft hyphen, Cf
  EXPECT_TRUE(tok::IsOther(0xE000));        // private use
  EXPECT_FALSE(tok::IsOther(0x0890));       // Cf since Unicode 14; unassigned for the reference
  EXPECT_TRUE(tok::IsBertPunctuation('$'));  // ASCII punctuation, though Sc
  EXPECT_TRUE(tok::IsBertPunctuation(0x3002));
  EXPECT_FALSE(tok::IsBertPunctuation(0x061D));  // Po since Unicode 14
  EXPECT_TRUE(tok::IsWhiteSpace(0x3000));
  EXPECT_FALSE(tok::IsWhiteSpace(0x200B));
  EXPECT_TRUE(tok::IsChineseChar(0x4E2D));
  EXPECT_FALSE(tok::IsChineseChar(0x3042));  // hiragana
  char32_t out[4];
  ASSERT_EQ(tok::ToLowercase(0x130, out), 2);  // İ → i + combining dot above
  EXPECT_EQ(out[0], U'i');
  EXPECT_EQ(out[1], 0x307u);
  ASSERT_EQ(tok::ToLowercase(0x3A3, out), 1);  // Σ → σ, never final ς
  EXPECT_EQ(out[0], 0x3C3u);
  EXPECT_EQ(tok::DecomposeCanonical(0x1E09, out), 3);  // ḉ → c, cedilla, acute
  EXPECT_EQ(tok::DecomposeCanonical(0xAC00, out), 2);  // Hangul 가 → ᄀ ᅡ
}

}  // namespace
}  // namespace orchid
