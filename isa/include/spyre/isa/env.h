// Options come from the environment only at the boundary (python/csrc, the tools, the bench):
// libraries take option structs as arguments and never read the process environment. A boundary
// builds an Env over `std::getenv` and hands it to `XOptions::fromEnv(env)`; tests build one
// over a map. Every typed getter validates and throws spyre::Error naming the variable, the
// value and the accepted values, so `SPYRE_ENGINE=gpu` is an error rather than a silent default.
#pragma once
#include "spyre/isa/error.h"
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>

namespace spyre {

class Env {
public:
  /// Returns the value of a variable, or nullptr when it is not set.
  using Lookup = std::function<const char *(const char *)>;

  /// No variable set (library defaults).
  Env() = default;
  /// The boundary's form: `Env env(&std::getenv);`
  explicit Env(Lookup lookup) : lookup_(std::move(lookup)) {}
  /// Tests' form: exactly these variables set.
  static Env fromMap(std::map<std::string, std::string> vars);

  /// The raw value; an empty value counts as unset (as `VAR= cmd` means "default" to users).
  std::optional<std::string> raw(const char *name) const;

  /// "1", "true", "on", "yes" -> true; "0", "false", "off", "no" -> false (case-insensitive);
  /// anything else throws `invalid NAME value 'x' (expected one of 1, 0, true, false, on, off)`.
  bool flag(const char *name, bool dflt) const;
  /// A decimal integer in [lo, hi] (no sign, no spaces); otherwise throws
  /// `invalid NAME value 'x' (expected an integer in lo..hi)`.
  int64_t integer(const char *name, int64_t dflt, int64_t lo, int64_t hi) const;
  /// One of `choices` (exact match); otherwise throws `invalid NAME value 'x' (expected one of a, b)`.
  std::string choice(const char *name, const std::string &dflt, std::initializer_list<const char *> choices) const;
  /// Any string (paths, free-form developer overrides).
  std::string string(const char *name, const std::string &dflt = "") const;

  /// The error every getter throws: `invalid NAME value 'value' (expected ...)`.
  [[noreturn]] static void invalid(const char *name, const std::string &value, const std::string &expected);

private:
  Lookup lookup_;
};

} // namespace spyre
