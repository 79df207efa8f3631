#include "spyre/isa/file_io.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace spyre::isa {

namespace {

const char *kindOf(mode_t m) {
  if (S_ISDIR(m))
    return "a directory";
  if (S_ISFIFO(m))
    return "a FIFO";
  if (S_ISCHR(m))
    return "a character device";
  if (S_ISBLK(m))
    return "a block device";
  if (S_ISSOCK(m))
    return "a socket";
  return "not a file";
}

std::string limitText(uint64_t maxBytes) {
  std::string s = "the limit of " + std::to_string(maxBytes) + " bytes";
  if (maxBytes >= (1u << 20) && maxBytes % (1u << 20) == 0)
    s += " (" + std::to_string(maxBytes >> 20) + " MiB)";
  return s;
}

/// Reads fd to its end, at most maxBytes + 1 bytes (one more tells that the limit is exceeded
/// even when the size stat reported was wrong, as for /proc files or a growing file).
bool readAll(int fd, uint64_t maxBytes, std::string &out, int &err) {
  out.clear();
  char buf[1 << 16];
  while (out.size() <= maxBytes) {
    size_t want = std::min<uint64_t>(sizeof buf, maxBytes + 1 - out.size());
    ssize_t r = ::read(fd, buf, want);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      err = errno;
      return false;
    }
    if (r == 0)
      break;
    out.append(buf, static_cast<size_t>(r));
  }
  return true;
}

} // namespace

FileRead readRegularFile(const std::string &path, uint64_t maxBytes) {
  FileRead res;
  auto fail = [&](FileRead::Status st, const std::string &why) {
    res.status = st;
    res.data.clear();
    res.error = path + ": " + why;
    return res;
  };
  auto openError = [&](int e) {
    return fail(e == ENOENT || e == ENOTDIR ? FileRead::Status::Missing : FileRead::Status::IoError,
                std::string("cannot open: ") + std::strerror(e));
  };
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return openError(errno);
  if (!S_ISREG(st.st_mode))
    return fail(FileRead::Status::NotRegular, std::string("not a regular file (") + kindOf(st.st_mode) + ")");
  if (static_cast<uint64_t>(st.st_size) > maxBytes)
    return fail(FileRead::Status::TooLarge, std::to_string(st.st_size) + " bytes, more than " + limitText(maxBytes));
  // O_NONBLOCK: should the path have become a FIFO since the stat, open must not wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return openError(errno);
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return fail(FileRead::Status::IoError, std::string("cannot stat: ") + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(FileRead::Status::NotRegular, std::string("not a regular file (") + kindOf(st.st_mode) + ")");
  }
  int err = 0;
  bool ok = readAll(fd, maxBytes, res.data, err);
  ::close(fd);
  if (!ok)
    return fail(FileRead::Status::IoError, std::string("read error: ") + std::strerror(err));
  if (res.data.size() > maxBytes) // it grew since the stat
    return fail(FileRead::Status::TooLarge, "more than " + limitText(maxBytes));
  return res;
}

std::string readInputFile(const std::string &path, uint64_t maxBytes) {
  FileRead r = readRegularFile(path, maxBytes);
  if (!r.ok())
    throw Error(r.error);
  return std::move(r.data);
}

std::string readStdin(uint64_t maxBytes) {
  std::string out;
  int err = 0;
  if (!readAll(STDIN_FILENO, maxBytes, out, err))
    throw Error(std::string("<stdin>: read error: ") + std::strerror(err));
  if (out.size() > maxBytes)
    throw Error("<stdin>: more than " + limitText(maxBytes));
  return out;
}

} // namespace spyre::isa
