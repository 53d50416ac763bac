// MappedFile (checkpoint/mapped_file.h), the file mapping both checkpoint readers share.
#include "checkpoint/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

namespace orchid {
namespace {

class MappedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("orchid_mapped_file_" + std::to_string(::getpid())))
               .string();
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string dir_;
};

TEST_F(MappedFileTest, MapsTheWholeFile) {
  const std::string path = Write("a.bin", std::string("abc\0def", 7));
  auto f = MappedFile::Open(path, "prefix: ");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->size(), 7u);
  EXPECT_EQ(std::memcmp(f->data(), "abc\0def", 7), 0);
  // Moving keeps the mapping (the moved-from file holds none).
  MappedFile moved = std::move(*f);
  EXPECT_EQ(moved.size(), 7u);
  EXPECT_EQ(std::memcmp(moved.data(), "abc\0def", 7), 0);
  EXPECT_EQ(f->size(), 0u);
  EXPECT_EQ(f->data(), nullptr);
}

TEST_F(MappedFileTest, AnEmptyFileHasNoBytes) {
  auto f = MappedFile::Open(Write("empty.bin", ""), "prefix: ");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->size(), 0u);
  EXPECT_EQ(f->data(), nullptr);
}

TEST_F(MappedFileTest, ErrorsNameTheFileAndTheCause) {
  auto missing = MappedFile::Open(dir_ + "/absent.bin", "reader absent.bin: ");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message().rfind("reader absent.bin: cannot open: ", 0), 0u)
      << missing.status().message();
  auto directory = MappedFile::Open(dir_, "reader dir: ");
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.status().code(), StatusCode::kIoError);
  EXPECT_EQ(directory.status().message(), "reader dir: not a regular file");
}

}  // namespace
}  // namespace orchid
