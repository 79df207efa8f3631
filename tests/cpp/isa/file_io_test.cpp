// The bounded file reader every tool and the JIT cache use: regular files only (a FIFO or a
// device is refused without blocking), a size limit, errors naming the path as given.
#include "spyre/isa/error.h"
#include "spyre/isa/file_io.h"
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace spyre;
using namespace spyre::isa;
namespace fs = std::filesystem;

namespace {

class TempDir {
public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "spyre-file-io-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

std::string errorOf(const std::string &path, uint64_t maxBytes = kMaxInputFileBytes) {
  try {
    readInputFile(path, maxBytes);
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST(FileIo, ReadsARegularFile) {
  TempDir d;
  std::ofstream(d / "a.txt") << "hello\n";
  EXPECT_EQ(readInputFile(d / "a.txt"), "hello\n");
  std::ofstream(d / "empty.txt").flush();
  EXPECT_EQ(readInputFile(d / "empty.txt"), "");
  // A symlink to a regular file is that file.
  fs::create_symlink(d / "a.txt", d / "link.txt");
  EXPECT_EQ(readInputFile(d / "link.txt"), "hello\n");
}

TEST(FileIo, RefusesWhatIsNotARegularFile) {
  TempDir d;
  fs::create_directory(d / "dir.json");
  ASSERT_EQ(::mkfifo((d / "fifo.json").c_str(), 0600), 0);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(errorOf(d / "dir.json"), d / "dir.json" + ": not a regular file (a directory)");
  EXPECT_EQ(errorOf(d / "fifo.json"), d / "fifo.json" + ": not a regular file (a FIFO)"); // no writer: must not block
  EXPECT_EQ(errorOf("/dev/zero"), "/dev/zero: not a regular file (a character device)");
  EXPECT_EQ(errorOf(d / "missing.json"), d / "missing.json" + ": cannot open: No such file or directory");
  EXPECT_EQ(errorOf(d / "dir.json/x"), d / "dir.json/x" + ": cannot open: No such file or directory");
  FileRead r = readRegularFile(d / "fifo.json");
  EXPECT_EQ(r.status, FileRead::Status::NotRegular);
  EXPECT_EQ(readRegularFile(d / "missing.json").status, FileRead::Status::Missing);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(FileIo, EnforcesTheSizeLimit) {
  TempDir d;
  std::ofstream(d / "eleven.txt") << "0123456789\n";
  EXPECT_EQ(readInputFile(d / "eleven.txt", 11), "0123456789\n");
  EXPECT_EQ(errorOf(d / "eleven.txt", 10), d / "eleven.txt" + ": 11 bytes, more than the limit of 10 bytes");
  EXPECT_EQ(readRegularFile(d / "eleven.txt", 10).status, FileRead::Status::TooLarge);
  // The default limit, on a sparse file (no 300 MiB are written or read).
  { std::ofstream(d / "big.json").flush(); }
  fs::resize_file(d / "big.json", uint64_t{300} << 20);
  EXPECT_EQ(errorOf(d / "big.json"), d / "big.json" + ": 314572800 bytes, more than the limit of 268435456 bytes (256 MiB)");
}

TEST(FileIo, UnreadableFileNamesTheReason) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "root reads files without read permission";
  TempDir d;
  std::ofstream(d / "secret.txt") << "x";
  fs::permissions(d / "secret.txt", fs::perms::none);
  EXPECT_EQ(errorOf(d / "secret.txt"), d / "secret.txt" + ": cannot open: Permission denied");
}
