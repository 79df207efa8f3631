// Bounded reading of the files the tools and libraries are handed (SuperDSC JSON, bundle.mlir,
// listings, graph text, JIT cache entries): only regular files, at most a given size, errors
// naming the path as given. Opening never blocks (a FIFO or device is refused before any read:
// checked with stat, then opened O_NONBLOCK and checked again with fstat, so a file swapped for
// a FIFO in between is refused too). Limits are in docs/superdsc.md §8.
#pragma once
#include <cstdint>
#include <string>

namespace spyre::isa {

/// The size limit of every input file the tools read (JSON, .mlir, .lst, graph text, stdin).
constexpr uint64_t kMaxInputFileBytes = uint64_t{256} << 20;

/// The outcome of readRegularFile.
struct FileRead {
  enum class Status { Ok, Missing, NotRegular, TooLarge, IoError };
  Status status = Status::Ok;
  std::string data;  ///< the file's bytes when Ok
  std::string error; ///< otherwise "<path>: <reason>" (see readInputFile)
  bool ok() const { return status == Status::Ok; }
};

/// Reads the regular file `path` (symlinks followed) of at most `maxBytes` bytes; never throws
/// for I/O. Errors:
///   `<path>: cannot open: <strerror>` (Missing for ENOENT/ENOTDIR, else IoError)
///   `<path>: not a regular file (a directory)` (FIFO, character device, block device, socket)
///   `<path>: 300000000 bytes, more than the limit of 268435456 bytes (256 MiB)`
///   `<path>: read error: <strerror>`
FileRead readRegularFile(const std::string &path, uint64_t maxBytes = kMaxInputFileBytes);

/// readRegularFile, throwing spyre::Error with its message on any failure.
std::string readInputFile(const std::string &path, uint64_t maxBytes = kMaxInputFileBytes);

/// Standard input, at most `maxBytes` (else spyre::Error `<stdin>: more than the limit of …`).
std::string readStdin(uint64_t maxBytes = kMaxInputFileBytes);

} // namespace spyre::isa
