// Shared by the libFuzzer harnesses (docs/fuzzing.md). The libraries' documented failure on bad
// input is a spyre::Error (Unsupported and OutOfMemory are Errors too): that is a normal outcome
// of a fuzz input. Anything else — another exception, a crash, a sanitizer report, a timeout, a
// broken round trip — is a finding: report it and abort, so libFuzzer saves the input.
#pragma once
#include "spyre/isa/error.h"
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

namespace spyre::fuzz {

[[noreturn]] inline void finding(const std::string &what) {
  std::fprintf(stderr, "==spyre-fuzz== FINDING: %s\n", what.c_str());
  std::abort();
}

/// Runs `f`; true when it returned, false when it threw spyre::Error (a rejected input).
template <typename F> bool accepted(F &&f) {
  try {
    f();
    return true;
  } catch (const spyre::Error &) {
    return false;
  } catch (const std::exception &e) {
    finding(std::string("undocumented exception ") + typeid(e).name() + ": " + e.what());
  } catch (...) {
    finding("a non-std exception");
  }
}

/// The printer and the parser agree: `reprint(printed)` (parse the printed text, print it
/// again) gives `printed` back. `what` names the value in the finding ("g", "k").
template <typename Reprint> void checkRoundTrip(const std::string &printed, const char *what, Reprint &&reprint) {
  try {
    if (reprint(printed) != printed)
      finding(std::string("print(parse(print(") + what + "))) != print(" + what + "):\n" + printed);
  } catch (const spyre::Error &e) {
    finding(std::string("the printed form does not parse back: ") + e.what() + "\n" + printed);
  }
}

} // namespace spyre::fuzz
