#include "checkpoint/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "models/safetensors_writer.h"

namespace orchid {
namespace {

using testing_util::F32Bytes;
using testing_util::FileBytes;
using testing_util::HeaderFor;
using testing_util::RawTensor;
using testing_util::WriteFile;

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing_util::FreshDir(std::string("st_") +
                                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    path_ = dir_ + "/model.safetensors";
  }

  // Writes bytes, opens them, and expects failure with `code` and a message naming the file
  // and containing `needle`.
  void ExpectError(const std::vector<uint8_t>& bytes, const std::string& needle,
                   StatusCode code = StatusCode::kCorrupt) {
    WriteFile(path_, bytes);
    auto f = SafetensorsFile::Open(path_);
    ASSERT_FALSE(f.ok()) << "expected an error containing \"" << needle << "\"";
    EXPECT_EQ(f.status().code(), code) << f.status().ToString();
    EXPECT_NE(f.status().message().find(path_), std::string::npos) << f.status().message();
    EXPECT_NE(f.status().message().find(needle), std::string::npos) << f.status().message();
  }

  // A header with one tensor entry spelled out by hand, and `data_bytes` zero bytes of data.
  void ExpectHeaderError(const std::string& entry, size_t data_bytes, const std::string& needle) {
    ExpectError(FileBytes("{\"t\":" + entry + "}", std::vector<uint8_t>(data_bytes)), needle);
  }

  std::string dir_, path_;
};

std::vector<RawTensor> SampleTensors() {
  return {
      {"a", "F32", {2, 3}, F32Bytes({1, 2, 3, 4, 5, 6})},
      {"b.bias", "F32", {3}, F32Bytes({-1, 0.5f, 7})},
      {"ids", "I64", {1, 2}, std::vector<uint8_t>(16, 1)},
  };
}

TEST_F(SafetensorsTest, ReadsValidFile) {
  WriteFile(path_, FileBytes(SampleTensors()));
  auto f = SafetensorsFile::Open(path_);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->tensors().size(), 3u);
  const TensorInfo* a = (*f)->Find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->dtype, DType::kF32);
  auto t = (*f)->ReadF32("a");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t->data()[5], 6.0f);
  auto b = (*f)->ReadF32("b.bias");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->data()[0], -1.0f);
  EXPECT_EQ((*f)->Find("nope"), nullptr);
  EXPECT_EQ((*f)->ReadF32("nope").status().code(), StatusCode::kNotFound);
  // Integer tensors are valid in the file but are not weights.
  auto ids = (*f)->ReadF32("ids");
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(ids.status().message().find("I64"), std::string::npos);
}

TEST_F(SafetensorsTest, ConvertsHalfBFloatAndDoubleToFloat) {
  // F16: 1.0, -2.0, 65504 (max), smallest subnormal 2^-24, +inf, 0.
  const uint16_t f16[] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00, 0x0000};
  // BF16: 1.0, -3.5, 2^-128 (subnormal in fp32 too).
  const uint16_t bf16[] = {0x3f80, 0xc060, 0x0020};
  const double f64[] = {0.1, -1e10};
  std::vector<uint8_t> fb(sizeof f16), bb(sizeof bf16), db(sizeof f64);
  std::memcpy(fb.data(), f16, sizeof f16);
  std::memcpy(bb.data(), bf16, sizeof bf16);
  std::memcpy(db.data(), f64, sizeof f64);
  // A 1-byte tensor first, so the F16 data starts at an odd offset (unaligned reads).
  WriteFile(path_, FileBytes({{"pad", "U8", {1}, {7}},
                              {"h", "F16", {6}, fb},
                              {"b", "BF16", {3}, bb},
                              {"d", "F64", {2}, db}}));
  auto f = SafetensorsFile::Open(path_);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto h = (*f)->ReadF32("h");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->data()[0], 1.0f);
  EXPECT_EQ(h->data()[1], -2.0f);
  EXPECT_EQ(h->data()[2], 65504.0f);
  EXPECT_EQ(h->data()[3], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(h->data()[4]));
  EXPECT_EQ(h->data()[5], 0.0f);
  auto b = (*f)->ReadF32("b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->data()[0], 1.0f);
  EXPECT_EQ(b->data()[1], -3.5f);
  EXPECT_EQ(b->data()[2], std::ldexp(1.0f, -128));
  auto d = (*f)->ReadF32("d");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->data()[0], 0.1f);
  EXPECT_EQ(d->data()[1], -1e10f);
}

TEST_F(SafetensorsTest, AcceptsScalarsEmptyTensorsPaddingAndNoMetadata) {
  std::vector<RawTensor> ts = {{"scalar", "F32", {}, F32Bytes({4.5f})},
                               {"empty", "F32", {0, 5}, {}},
                               {"v", "F32", {2}, F32Bytes({1, 2})}};
  std::vector<uint8_t> data;
  for (const auto& t : ts) data.insert(data.end(), t.bytes.begin(), t.bytes.end());
  // Writers pad the header with spaces to 8-byte alignment.
  WriteFile(path_, FileBytes(HeaderFor(ts, /*metadata=*/false) + "       ", data));
  auto f = SafetensorsFile::Open(path_);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto s = (*f)->ReadF32("scalar");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->numel(), 1u);
  EXPECT_EQ(s->data()[0], 4.5f);
  auto e = (*f)->ReadF32("empty");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->numel(), 0u);
}

TEST_F(SafetensorsTest, MissingFileIsNotFound) {
  auto f = SafetensorsFile::Open(dir_ + "/absent.safetensors");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find("absent.safetensors"), std::string::npos);
}

TEST_F(SafetensorsTest, RejectsFilesTooShortOrWithBadHeaderLength) {
  ExpectError({}, "too short");
  ExpectError({1, 0, 0}, "too short");
  const auto valid = FileBytes(SampleTensors());
  // Declared header longer than the file.
  ExpectError(FileBytes(HeaderFor(SampleTensors()), {}, 1000000), "exceeds the file size");
  // Absurd header length (beyond the 100 MB cap), and the largest uint64.
  ExpectError(FileBytes("{}", {}, uint64_t(1) << 40), "exceeds the limit");
  ExpectError(FileBytes("{}", {}, UINT64_MAX - 1), "exceeds the limit");
  // Truncated in the middle of the header, and in the middle of the data.
  ExpectError(std::vector<uint8_t>(valid.begin(), valid.begin() + 20), "exceeds the file size");
  ExpectError(std::vector<uint8_t>(valid.begin(), valid.end() - 5), "beyond the data section");
}

TEST_F(SafetensorsTest, RejectsHeadersThatAreNotJsonObjects) {
  ExpectError(FileBytes("{\"a\": [1, 2", {}), "not valid JSON");
  ExpectError(FileBytes("not json at all", {}), "does not start with '{'");
  ExpectError(FileBytes("[1, 2, 3]", {}), "does not start with '{'");
  ExpectError(FileBytes("{\"t\": 5}", {}), "not an object");
  ExpectError(FileBytes("{\"__metadata__\": 5}", {}), "__metadata__");
  ExpectError(FileBytes(std::string("{\"a\"\0:1}", 8), {}), "JSON");
  ExpectError(FileBytes("{}trailing", {}), "JSON");
}

TEST_F(SafetensorsTest, RejectsBadTensorEntries) {
  // dtype
  ExpectHeaderError(R"({"dtype":"F33","shape":[1],"data_offsets":[0,4]})", 4, "unknown dtype");
  ExpectHeaderError(R"({"dtype":"f32","shape":[1],"data_offsets":[0,4]})", 4, "unknown dtype");
  ExpectHeaderError(R"({"dtype":4,"shape":[1],"data_offsets":[0,4]})", 4, "dtype");
  ExpectHeaderError(R"({"shape":[1],"data_offsets":[0,4]})", 4, "dtype");
  // shape
  ExpectHeaderError(R"({"dtype":"F32","data_offsets":[0,4]})", 4, "shape");
  ExpectHeaderError(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})", 4, "non-negative");
  ExpectHeaderError(R"({"dtype":"F32","shape":[1.5],"data_offsets":[0,4]})", 4, "non-negative");
  ExpectHeaderError(R"({"dtype":"F32","shape":["1"],"data_offsets":[0,4]})", 4, "non-negative");
  ExpectHeaderError(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]})", 4,
                    "overflows");
  ExpectHeaderError(R"({"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,4]})", 4,
                    "overflows");
  ExpectHeaderError(R"({"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,4]})", 4,
                    "overflows");
  ExpectHeaderError(R"({"dtype":"F32","shape":[99999999999999999999999],"data_offsets":[0,4]})", 4,
                    "JSON");
  ExpectHeaderError(R"({"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]})", 4,
                    "rank");
  // data_offsets
  ExpectHeaderError(R"({"dtype":"F32","shape":[1]})", 4, "data_offsets");
  ExpectHeaderError(R"({"dtype":"F32","shape":[1],"data_offsets":[0]})", 4, "data_offsets");
  ExpectHeaderError(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4,8]})", 8, "data_offsets");
  ExpectHeaderError(R"({"dtype":"F32","shape":[1],"data_offsets":[-4,0]})", 4, "non-negative");
  ExpectHeaderError(R"({"dtype":"F32","shape":[1],"data_offsets":[4,0]})", 4, "begin 4 > end 0");
  ExpectHeaderError(R"({"dtype":"F32","shape":[1],"data_offsets":[0,8]})", 8, "does not match");
  ExpectHeaderError(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})", 4, "does not match");
  ExpectHeaderError(R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})", 4, "beyond");
  ExpectHeaderError(
      R"({"dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,18446744073709551615]})",
      4, "beyond");
  ExpectHeaderError(
      R"({"dtype":"F32","shape":[4611686018427387903],"data_offsets":[0,18446744073709551612]})", 4,
      "beyond");
}

TEST_F(SafetensorsTest, RejectsOverlapsAndDuplicates) {
  ExpectError(FileBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                        std::vector<uint8_t>(12)),
              "overlap");
  ExpectError(FileBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                        std::vector<uint8_t>(8)),
              "overlap");
  ExpectError(FileBytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                        R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                        std::vector<uint8_t>(8)),
              "twice");
  // Touching ranges and zero-length tensors anywhere are fine.
  WriteFile(path_, FileBytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("z":{"dtype":"F32","shape":[0],"data_offsets":[2,2]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                             std::vector<uint8_t>(8)));
  EXPECT_TRUE(SafetensorsFile::Open(path_).ok());
}

TEST_F(SafetensorsTest, RejectsDirectories) {
  auto f = SafetensorsFile::Open(dir_);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find(dir_), std::string::npos);
}

// Random damage to a valid file must give either a valid file (every tensor readable, within
// the mapping) or an error naming the file: never a crash or an out-of-bounds read (this test
// also runs under ASan+UBSan).
TEST_F(SafetensorsTest, SurvivesRandomMutations) {
  std::vector<RawTensor> ts = SampleTensors();
  std::vector<uint16_t> half(10, 0x3c00);
  std::vector<uint8_t> hb(half.size() * 2);
  std::memcpy(hb.data(), half.data(), hb.size());
  ts.push_back({"h", "F16", {2, 5}, hb});
  ts.push_back({"w", "BF16", {5}, std::vector<uint8_t>(10, 0x3f)});
  const std::vector<uint8_t> valid = FileBytes(ts);
  const size_t header_end = 8 + HeaderFor(ts).size();
  std::mt19937 rng(12345);
  int ok = 0, errors = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> bytes = valid;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      // Aim most edits at the length prefix and the header, where the parsing is.
      const size_t span = rng() % 4 == 0 ? bytes.size() : std::min(bytes.size(), header_end);
      const size_t pos = rng() % span;
      switch (rng() % 6) {
        case 0:
          bytes[pos] ^= uint8_t(1u << (rng() % 8));
          break;
        case 1:
          bytes[pos] = uint8_t(rng());
          break;
        case 2:
          bytes.resize(pos);
          break;  // truncate
        case 3:
          bytes[pos] = uint8_t("0123456789-.,:[]{}\"eE"[rng() % 21]);
          break;
        case 4:
          bytes.erase(bytes.begin() + long(pos));
          break;
        case 5:
          bytes.insert(bytes.begin() + long(pos), uint8_t("9,]}\" "[rng() % 6]));
          break;
      }
    }
    WriteFile(path_, bytes);
    auto f = SafetensorsFile::Open(path_);
    if (!f.ok()) {
      ++errors;
      ASSERT_NE(f.status().code(), StatusCode::kOk);
      ASSERT_NE(f.status().message().find(path_), std::string::npos)
          << "iteration " << iter << ": " << f.status().message();
      continue;
    }
    ++ok;
    for (const TensorInfo& t : (*f)->tensors()) {
      ASSERT_LE(t.end, bytes.size());
      auto r = (*f)->ReadF32(t.name);
      if (r.ok()) {
        ASSERT_EQ(r->numel(), t.numel);
        volatile float sink = 0;
        for (size_t i = 0; i < r->numel(); ++i) sink = sink + r->data()[i];
      }
    }
  }
  // Both outcomes must occur, or the loop is not testing what it claims.
  EXPECT_GT(ok, 50);
  EXPECT_GT(errors, 1000);
}

}  // namespace
}  // namespace orchid
