// Typed errors shared by every layer. User-facing failures throw one of these with a message
// that names what was wrong and where; nothing here is for internal invariants (use assert).
#pragma once
#include <stdexcept>
#include <string>

namespace spyre {

/// Bad input: malformed JSON/listing, wrong shapes, out-of-range addresses, ...
class Error : public std::runtime_error {
public:
  explicit Error(const std::string &msg) : std::runtime_error(msg) {}
};

/// A well-formed request that this simulator does not implement (yet). Message starts with
/// "Unsupported: " as torch-spyre's own Unsupported exceptions do.
class Unsupported : public Error {
public:
  explicit Unsupported(const std::string &what) : Error("Unsupported: " + what) {}
};

/// Device memory exhausted.
class OutOfMemory : public Error {
public:
  explicit OutOfMemory(const std::string &msg) : Error(msg) {}
};

} // namespace spyre
