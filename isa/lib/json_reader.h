// Strict JSON for the SuperDSC reader (private to spyre_isa): text -> ojson with bounded depth
// and size, duplicate keys rejected, and every error naming the file and the JSON pointer of
// the value it is in; then typed field access with int64 range checks before any narrowing.
#pragma once
#include "spyre/isa/superdsc.h"
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace spyre::isa::detail {

constexpr int kMaxJsonDepth = 64;               ///< nesting of objects and arrays
constexpr size_t kMaxJsonValues = size_t{1} << 20; ///< values (scalars, objects, arrays) per file
constexpr size_t kMaxWarnings = 16;                ///< then one "further warnings not reported"

/// Parses `text`: errors are `<file>: <pointer>: malformed JSON: <reason>`, where pointer is
/// the JSON pointer of the value being read ("/" for the root), reason nlohmann's message or
/// one of "nesting deeper than 64", "more than 1048576 values", "duplicate key 'k'".
ojson parseJson(const std::string &text, const std::string &file);

/// A short, bounded rendering of a value for error messages (containers by kind, long strings cut).
std::string brief(const ojson &v);
/// `s` quoted, cut to 64 characters.
std::string inQuotes(const std::string &s);

struct Reader {
  const std::string &file;
  std::vector<std::string> *warnings = nullptr;

  [[noreturn]] void fail(const std::string &path, const std::string &what) const;
  void warn(const std::string &path, const std::string &what) const;
  const ojson &object(const ojson &v, const std::string &path) const;
  const ojson &field(const ojson &obj, const std::string &path, const std::string &key) const;
  /// A JSON integer or a string of decimal digits with an optional leading '-', in [lo, hi];
  /// otherwise `expected an integer in lo..hi, got X`.
  int64_t integer(const ojson &v, const std::string &path, int64_t lo, int64_t hi) const;
  std::string string(const ojson &v, const std::string &path) const;
  std::vector<std::string> strings(const ojson &v, const std::string &path) const;
  std::vector<int64_t> integers(const ojson &v, const std::string &path, int64_t lo, int64_t hi) const;
  /// Keys of `obj` other than `used` and `ignored` are a warning (`unknown field 'k' (ignored)`).
  void warnUnknown(const ojson &obj, const std::string &path, std::initializer_list<const char *> used,
                   std::initializer_list<const char *> ignored) const;
};

/// `-?[0-9]+` that fits int64 (no '+', no spaces, no other characters).
bool parseDecimal(const std::string &s, int64_t &out);
/// "/a/b~1c" from keys: escapes '~' and '/' (RFC 6901).
std::string pointerToken(const std::string &key);

} // namespace spyre::isa::detail
