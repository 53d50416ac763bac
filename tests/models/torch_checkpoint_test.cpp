// The restricted PyTorch checkpoint reader (checkpoint/torch_checkpoint.h) against files that
// torch.save wrote (tests/fixtures/torch_pt, make_pt.py beside them) and what torch.load gave
// back for them (expected.json), and against broken archives.
#include "checkpoint/torch_checkpoint.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"

namespace orchid {
namespace {

const std::string kDir = std::string(ORCHID_SOURCE_DIR) + "/tests/fixtures/torch_pt/";

std::vector<uint8_t> Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

Status Parse(const std::vector<uint8_t>& bytes, std::vector<TensorInfo>* tensors) {
  return ParseTorchCheckpoint(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size(),
                              "test.pt", tensors);
}

// Every tensor of `file` as torch.load read it (expected.json).
void ExpectAsTorchLoads(const std::string& file) {
  auto f = TorchCheckpointFile::Open(kDir + file);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  simdjson::dom::parser parser;
  simdjson::dom::element all = parser.load(kDir + "expected.json");
  simdjson::dom::object want = all[file].get_object();
  size_t count = 0;
  for (auto [name, t] : want) {
    ++count;
    const TensorInfo* info = (*f)->Find(name);
    ASSERT_NE(info, nullptr) << name;
    std::vector<int64_t> shape;
    for (auto d : t["shape"].get_array()) shape.push_back(int64_t(d.get_int64()));
    EXPECT_EQ(info->shape, shape) << name;
    auto tensor = (*f)->ReadF32(name);
    ASSERT_TRUE(tensor.ok()) << tensor.status().ToString();
    size_t i = 0;
    for (auto v : t["values"].get_array()) {
      ASSERT_LT(i, tensor->numel()) << name;
      // float64 values are rounded to float as ReadF32 does; the others are exact.
      EXPECT_EQ(tensor->data()[i], float(double(v.get_double()))) << name << "[" << i << "]";
      ++i;
    }
    EXPECT_EQ(i, tensor->numel()) << name;
  }
  EXPECT_EQ((*f)->tensors().size(), count);
}

TEST(TorchCheckpointTest, ReadsALinearStateDictAsTorchLoads) { ExpectAsTorchLoads("linear.pt"); }

TEST(TorchCheckpointTest, ReadsHalvesBfloatsDoublesParametersAndSharedStorages) {
  ExpectAsTorchLoads("mixed.pt");
  auto f = TorchCheckpointFile::Open(kDir + "mixed.pt");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->Find("half")->dtype, DType::kF16);
  EXPECT_EQ((*f)->Find("bf16")->dtype, DType::kBF16);
  EXPECT_EQ((*f)->Find("scalar")->shape, std::vector<int64_t>{});
  // "row" is matrix[1]: the same storage, 4 floats in.
  EXPECT_EQ((*f)->Find("row")->begin, (*f)->Find("matrix")->begin + 16);
}

TEST(TorchCheckpointTest, AnIntegerTensorIsNotAFloatWeight) {
  auto f = TorchCheckpointFile::Open(kDir + "int64.pt");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->Find("ids")->dtype, DType::kI64);
  auto t = (*f)->ReadF32("ids");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("expected a float type"), std::string::npos);
  EXPECT_EQ((*f)->ReadF32("absent").status().code(), StatusCode::kNotFound);
}

void ExpectRefused(const std::string& file, const std::string& needle) {
  auto f = TorchCheckpointFile::Open(kDir + file);
  ASSERT_FALSE(f.ok()) << file;
  EXPECT_EQ(f.status().code(), StatusCode::kCorrupt) << f.status().ToString();
  EXPECT_NE(f.status().message().find(kDir + file), std::string::npos) << f.status().message();
  EXPECT_NE(f.status().message().find(needle), std::string::npos) << f.status().message();
}

TEST(TorchCheckpointTest, RefusesWhatIsNotAPlainStateDict) {
  ExpectRefused("view.pt", "not contiguous");
  ExpectRefused("legacy.pt", "legacy (pre-1.6, non-zip) format");
  ExpectRefused("legacy.pt", "st.save_file");
  ExpectRefused("not_a_dict.pt", "not a state dict");
  ExpectRefused("evil.pt", "\"os.system\"");
  ExpectRefused("evil.pt", "does not run pickle code");
  auto missing = TorchCheckpointFile::Open(kDir + "absent.pt");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(TorchCheckpointTest, EveryTruncationIsRefusedWithoutReadingPastTheEnd) {
  const std::vector<uint8_t> whole = Bytes(kDir + "linear.pt");
  ASSERT_GT(whole.size(), 100u);
  std::vector<TensorInfo> tensors;
  ASSERT_TRUE(Parse(whole, &tensors).ok());
  for (size_t n = 0; n < whole.size(); n += (n < 200 ? 1 : 13)) {
    // A copy of exactly n bytes: ASan sees any read past it.
    std::vector<uint8_t> cut(whole.begin(), whole.begin() + std::ptrdiff_t(n));
    cut.shrink_to_fit();
    tensors.clear();
    const Status st = Parse(cut, &tensors);
    EXPECT_FALSE(st.ok()) << n;
  }
}

TEST(TorchCheckpointTest, CorruptedBytesAreErrorsOrTensorsInsideTheFile) {
  const std::vector<uint8_t> whole = Bytes(kDir + "mixed.pt");
  for (size_t i = 0; i < whole.size(); ++i) {
    for (uint8_t flip : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xff)}) {
      std::vector<uint8_t> bad = whole;
      bad[i] ^= flip;
      std::vector<TensorInfo> tensors;
      if (!Parse(bad, &tensors).ok()) continue;
      for (const TensorInfo& t : tensors) {
        EXPECT_LE(t.begin, t.end);
        EXPECT_LE(t.end, bad.size()) << "byte " << i;
        EXPECT_EQ(t.end - t.begin, t.numel * DTypeSize(t.dtype));
      }
    }
  }
}

TEST(TorchCheckpointTest, RefusesCompressedEntries) {
  // A zip whose data.pkl is deflated (method 8): torch.save never writes that.
  std::vector<uint8_t> whole = Bytes(kDir + "linear.pt");
  // The central directory's method field of every entry.
  for (size_t p = 0; p + 46 <= whole.size(); ++p) {
    if (whole[p] == 0x50 && whole[p + 1] == 0x4b && whole[p + 2] == 0x01 && whole[p + 3] == 0x02) {
      whole[p + 10] = 8;
    }
  }
  std::vector<TensorInfo> tensors;
  const Status st = Parse(whole, &tensors);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("compressed"), std::string::npos) << st.message();
}

// Without model.safetensors, a directory's pytorch_model.bin is its checkpoint (as transformers
// falls back to it), read by the same reader.
TEST(TorchCheckpointTest, CheckpointFallsBackToPytorchModelBin) {
  const std::string dir = testing::TempDir() + "/torch_bin_dir";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kDir + "linear.pt", dir + "/pytorch_model.bin");
  auto c = Checkpoint::Open(dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->path(), dir + "/pytorch_model.bin");
  EXPECT_EQ((*c)->tensors().size(), 2u);
  ASSERT_NE((*c)->Find("weight"), nullptr);
  auto w = (*c)->ReadF32("weight");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->shape(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ((*c)->ReadF32("absent").status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*c)->FileOf("weight"), dir + "/pytorch_model.bin");
  std::filesystem::remove(dir + "/pytorch_model.bin");
  auto none = Checkpoint::Open(dir);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("pytorch_model.bin"), std::string::npos);
}

}  // namespace
}  // namespace orchid
