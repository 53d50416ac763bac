// The plumbing of image inputs (issue 43) below the HTTP routes: image sources (data URIs, bare
// base64, URLs), the patches ImagePreparer cuts, the text rules of dual encoders, image requests
// in the worker (checks, one tower per batch) and over gRPC (pixels and model info).
#include "gateway/image_inputs.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <memory>

#include "engine/ragged_batch.h"
#include "gateway/base64.h"
#include "gateway/embedding_service.h"
#include "gateway/embeddings_request.h"
#include "gateway/image_fetch.h"
#include "image/decode.h"
#include "image/preprocess.h"
#include "image/processor_config.h"
#include "rpc/convert.h"
#include "worker/batch_filler.h"
#include "worker/embed_request.h"

namespace orchid {
namespace {

const std::string kPicture = ORCHID_SOURCE_DIR "/tests/fixtures/images/files/jpeg_420.jpg";
const std::string kClipDir = ORCHID_SOURCE_DIR "/tests/fixtures/clip/models/clip";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ImageSourceTest, DataUrisBareBase64AndUrls) {
  const std::string bytes = ReadFile(kPicture);
  const std::string b64 = Base64Encode(bytes);
  ImageSource s;
  ASSERT_FALSE(ParseImageSource("data:image/jpeg;base64," + b64, false, "input[0]", &s));
  EXPECT_EQ(s.bytes, bytes);
  EXPECT_TRUE(IsImageDataUri("DATA:Image/png;base64,AA=="));
  EXPECT_FALSE(IsImageDataUri("a photo of data:image/"));
  // Unpadded and wrapped base64, as clients send it.
  std::string wrapped = b64.substr(0, 76) + "\n" + b64.substr(76);
  while (!wrapped.empty() && wrapped.back() == '=') wrapped.pop_back();
  ASSERT_FALSE(ParseImageSource("data:image/jpeg;base64," + wrapped, false, "input[0]", &s));
  EXPECT_EQ(s.bytes, bytes);
  // Bare base64 only where the API allows it (Jina's {"image": ...}).
  EXPECT_FALSE(ParseImageSource(b64, true, "input[0]", &s));
  EXPECT_EQ(s.bytes, bytes);
  auto err = ParseImageSource(b64, false, "input[2]", &s);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->param, "input[2]");
  // URLs are recognised (and refused later, by Prepare); other URIs are errors.
  ASSERT_FALSE(ParseImageSource("https://example.com/a.jpg", false, "input[0]", &s));
  EXPECT_EQ(s.url, "https://example.com/a.jpg");
  EXPECT_TRUE(ParseImageSource("data:text/plain;base64,aGk=", true, "input[0]", &s));
  EXPECT_TRUE(ParseImageSource("data:image/png,rawbytes", true, "input[0]", &s));
  EXPECT_TRUE(ParseImageSource("data:image/png;base64,@@@@", true, "input[0]", &s));
}

TEST(ImagePreparerTest, PatchesAreTheConvolutionsInputsInOrder) {
  auto config = image::LoadImageProcessorConfig(kClipDir);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const ImageInput input{32, 8, true};
  auto preparer = ImagePreparer::Create(*config, input, {});
  ASSERT_TRUE(preparer.ok()) << preparer.status().ToString();
  ImageSource source;
  source.bytes = ReadFile(kPicture);
  std::vector<int32_t> ids;
  std::vector<float> rows;
  ASSERT_TRUE(preparer->Prepare(source, &ids, &rows).ok());
  ASSERT_EQ(ids.size(), 17u);
  EXPECT_EQ(ids[0], 1);
  for (size_t t = 1; t < ids.size(); ++t) EXPECT_EQ(ids[t], 0);
  ASSERT_EQ(rows.size(), 17u * 192u);
  for (size_t k = 0; k < 192; ++k) EXPECT_EQ(rows[k], 0.0f);  // the class token
  // Token 1 + py * 4 + px holds pixel_values[c][py * 8 + ky][px * 8 + kx] at c * 64 + ky * 8 + kx.
  const std::string& b = source.bytes;
  auto rgb = image::DecodeImage(std::span(reinterpret_cast<const uint8_t*>(b.data()), b.size()));
  ASSERT_TRUE(rgb.ok());
  auto values = image::Preprocess(*rgb, *config);
  ASSERT_TRUE(values.ok());
  for (int py = 0; py < 4; ++py) {
    for (int px = 0; px < 4; ++px) {
      for (int c = 0; c < 3; ++c) {
        for (int ky = 0; ky < 8; ++ky) {
          for (int kx = 0; kx < 8; ++kx) {
            const float want = values->data()[(c * 32 + py * 8 + ky) * 32 + px * 8 + kx];
            ASSERT_EQ(rows[size_t(1 + py * 4 + px) * 192 + size_t(c * 64 + ky * 8 + kx)], want);
          }
        }
      }
    }
  }
  // Limits and URLs.
  ImageLimits small;
  small.max_encoded_bytes = 100;
  auto strict = ImagePreparer::Create(*config, input, small);
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(strict->Prepare(source, &ids, &rows).code(), StatusCode::kOutOfRange);
  small = {};
  small.max_pixels = 1000;
  strict = ImagePreparer::Create(*config, input, small);
  EXPECT_EQ(strict->Prepare(source, &ids, &rows).code(), StatusCode::kOutOfRange);
  ImageSource url;
  url.url = "http://169.254.169.254/latest";
  const Status st = preparer->Prepare(url, &ids, &rows);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("not fetched"), std::string::npos);
  // A processor whose output is not the tower's input is refused at start-up.
  EXPECT_FALSE(ImagePreparer::Create(*config, ImageInput{48, 16, true}, {}).ok());
}

TEST(TextInputTest, ClipCutsAtItsPoolingTokenSiglipPads) {
  TextInput clip;
  clip.end = TextInput::End::kFirstEos;
  clip.eos_id = 9;
  std::vector<int32_t> ids = {8, 1, 9, 2, 9};
  ApplyTextInput(clip, &ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{8, 1, 9}));
  TextInput legacy;  // eos_token_id 2: transformers pools at argmax(ids), the first largest
  legacy.end = TextInput::End::kFirstMaxId;
  ids = {8, 1, 9, 2, 9};
  ApplyTextInput(legacy, &ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{8, 1, 9}));
  TextInput siglip;
  siglip.pad_to = 6;
  siglip.pad_id = 0;
  ids = {5, 4, 1};
  ApplyTextInput(siglip, &ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{5, 4, 1, 0, 0, 0}));
}

TEST(ImageRequestParsingTest, EachClientsShape) {
  EmbeddingsRequest r;
  ASSERT_FALSE(ParseOpenAiEmbeddingsRequest(
      R"({"input": ["a", {"image": "QUJD"}, {"text": "b"}], "modality": "text"})", &r));
  EXPECT_EQ(r.texts, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(r.images.size(), 1u);
  EXPECT_EQ(r.images[0].index, 1u);
  EXPECT_TRUE(r.images[0].bare_base64);
  EXPECT_EQ(r.num_inputs(), 3u);
  ASSERT_FALSE(ParseOpenAiEmbeddingsRequest(R"({"input": "x", "modality": "image"})", &r));
  EXPECT_TRUE(r.image_modality);
  ASSERT_FALSE(ParseOpenAiEmbeddingsRequest(
      R"({"messages": [{"role": "user", "content": [{"type": "image_url",
          "image_url": {"url": "data:image/png;base64,AA=="}}]}]})",
      &r));
  ASSERT_EQ(r.images.size(), 1u);
  EXPECT_TRUE(r.texts.empty());
  EXPECT_TRUE(ParseOpenAiEmbeddingsRequest(R"({"input": "x", "messages": []})", &r));
  EXPECT_TRUE(ParseOpenAiEmbeddingsRequest(R"({"input": "x", "modality": "audio"})", &r));
  EXPECT_TRUE(ParseOpenAiEmbeddingsRequest(R"({"input": [1, 2], "modality": "image"})", &r));

  ASSERT_FALSE(ParseCohereEmbedRequest(R"({"images": ["a", "b"], "input_type": "image"})",
                                       CohereApiVersion::kV2, &r));
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_EQ(r.images[1].index, 1u);
  EXPECT_TRUE(ParseCohereEmbedRequest(R"({"images": ["a"]})", CohereApiVersion::kV2, &r));
  EXPECT_TRUE(ParseCohereEmbedRequest(R"({"images": ["a"], "texts": ["b"], "input_type": "image"})",
                                      CohereApiVersion::kV2, &r));
  ASSERT_FALSE(ParseCohereEmbedRequest(
      R"({"inputs": [{"content": [{"type": "text", "text": "t"}]},
                     {"content": [{"type": "image_url", "image_url": "u"}]},
                     {"content": [{"type": "image_url", "image_url": {"url": "v"}}]}]})",
      CohereApiVersion::kV2, &r));
  EXPECT_EQ(r.texts, (std::vector<std::string>{"t"}));
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_EQ(r.images[0].index, 1u);
  EXPECT_EQ(r.images[0].source, "u");
  EXPECT_EQ(r.images[1].source, "v");
  auto err = ParseCohereEmbedRequest(
      R"({"inputs": [{"content": [{"type": "text", "text": "t"},
                                  {"type": "image_url", "image_url": "u"}]}]})",
      CohereApiVersion::kV2, &r);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, "unsupported_input");
}

ModelInfo ClipLike() {
  ModelInfo m;
  m.vocab_size = 100;
  m.hidden_size = 8;
  m.image = ImageInput{4, 2, true};  // 4 patches of 12 values, and the class token
  return m;
}

EmbedRequest OneImage() {
  EmbedRequest r;
  r.sequences = {{1, 0, 0, 0, 0}};
  r.pixels = {std::vector<float>(5 * 12, 0.5f)};
  r.pooling = Pooling::kCls;
  return r;
}

TEST(ImageEmbedRequestTest, TheWorkerChecksImagesAgainstTheTower) {
  const RequestLimits limits{512, 4096};
  int64_t tokens = 0;
  EXPECT_TRUE(ValidateEmbedRequest(OneImage(), ClipLike(), limits, &tokens).ok());
  EXPECT_EQ(tokens, 5);
  ModelInfo text_only = ClipLike();
  text_only.image = {};
  EXPECT_EQ(ValidateEmbedRequest(OneImage(), text_only, limits, &tokens).code(),
            StatusCode::kInvalidArgument);
  EmbedRequest short_rows = OneImage();
  short_rows.pixels[0].pop_back();
  EXPECT_FALSE(ValidateEmbedRequest(short_rows, ClipLike(), limits, &tokens).ok());
  EmbedRequest wrong_ids = OneImage();
  wrong_ids.sequences[0][2] = 7;
  EXPECT_FALSE(ValidateEmbedRequest(wrong_ids, ClipLike(), limits, &tokens).ok());
  EmbedRequest typed = OneImage();
  typed.token_type_ids = {{0, 0, 0, 0, 0}};
  EXPECT_FALSE(CheckRequestShape(typed).ok());
}

TEST(ImageEmbedRequestTest, ABatchIsOneTowers) {
  auto image = std::make_shared<PendingRequest>();
  image->request = OneImage();
  auto text = std::make_shared<PendingRequest>();
  text->request.sequences = {{3, 4}, {5}};
  BatchFiller filler(100, 100, 0, false);
  EXPECT_TRUE(filler.Take(text));
  EXPECT_FALSE(filler.Take(image));  // another tower: the next batch's
  EXPECT_TRUE(filler.Take(text));
  RaggedBatch batch = MakeRaggedBatch(filler.TakeSlices());
  EXPECT_FALSE(batch.image_batch());
  BatchFiller images(100, 100, 0, false);
  EXPECT_TRUE(images.Take(image));
  RaggedBatch b = MakeRaggedBatch(images.TakeSlices());
  ASSERT_TRUE(b.image_batch());
  EXPECT_EQ(b.pixel_width, 12);
  EXPECT_EQ(b.pooling, (std::vector<Pooling>{Pooling::kCls}));
  EXPECT_TRUE(b.Validate(ClipLike()).ok());
  b.pixels[7] = std::nanf("");
  EXPECT_FALSE(b.Validate(ClipLike()).ok());
}

TEST(ImageEmbedRequestTest, PixelsAndTheTowersTravelOverGrpc) {
  v1::EmbedRequest msg;
  rpc::ToProto(OneImage(), &msg);
  ASSERT_EQ(msg.sequences_size(), 1);
  EXPECT_EQ(msg.sequences(0).pixels().size(), 5u * 12u * sizeof(float));
  rpc::WorkerModel model;
  model.name = "clip";
  model.info = ClipLike();
  model.max_input_tokens = 3;  // a text limit: an image is as long as its tower says
  EmbedRequest out;
  int64_t tokens = 0;
  ASSERT_TRUE(rpc::FromProto(msg, model, &out, &tokens).ok());
  ASSERT_EQ(out.pixels.size(), 1u);
  EXPECT_EQ(out.pixels[0], OneImage().pixels[0]);
  msg.mutable_sequences(0)->mutable_pixels()->push_back('x');
  EXPECT_FALSE(rpc::FromProto(msg, model, &out, &tokens).ok());

  model.info.text.end = TextInput::End::kFirstEos;
  model.info.text.eos_id = 99;
  model.info.text.pad_to = 0;
  v1::InfoResponse info;
  rpc::ToProto(model, 1024, &info);
  Result<rpc::WorkerModel> back = rpc::FromProto(info);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->info.image, model.info.image);
  EXPECT_EQ(back->info.text, model.info.text);
  info.mutable_image()->set_patch_size(3);  // 4 is not a multiple of 3
  EXPECT_FALSE(rpc::FromProto(info).ok());
}

}  // namespace
}  // namespace orchid

namespace orchid {
namespace {

TEST(ImageFetchTest, UrlsAndTheAllowList) {
  auto u = ParseFetchUrl("HTTPS://Images.Example.com/a/b.jpg?x=1#frag");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_TRUE(u->https);
  EXPECT_EQ(u->host, "images.example.com");
  EXPECT_EQ(u->port, "443");
  EXPECT_EQ(u->target, "/a/b.jpg?x=1");
  u = ParseFetchUrl("http://10.0.0.7:8080");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->port, "8080");
  EXPECT_EQ(u->target, "/");
  EXPECT_TRUE(HostAllowed(*u, {"10.0.0.7"}));
  EXPECT_TRUE(HostAllowed(*u, {"10.0.0.7:8080"}));
  EXPECT_FALSE(HostAllowed(*u, {"10.0.0.7:80"}));
  EXPECT_FALSE(HostAllowed(*u, {"10.0.0.70"}));
  for (const char* bad :
       {"ftp://x/a.jpg", "http://", "http://user:pw@host/a.jpg", "http://host:99999999/a",
        "http://host:/a", "http://ho st/a", "http://host/a b", "file:///etc/passwd"}) {
    EXPECT_FALSE(ParseFetchUrl(bad).ok()) << bad;
  }
  // A host off the list is refused before any connection is tried.
  ImageFetchOptions o;
  o.hosts = {"images.example.com"};
  auto r = FetchImage("http://169.254.169.254/latest/meta-data", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not one this server fetches"), std::string::npos);
}

}  // namespace
}  // namespace orchid
