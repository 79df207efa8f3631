#include "spyre/isa/env.h"
#include <algorithm>
#include <cctype>
#include <charconv>
#include <memory>

namespace spyre {

Env Env::fromMap(std::map<std::string, std::string> vars) {
  auto m = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return Env([m](const char *name) -> const char * {
    auto it = m->find(name);
    return it == m->end() ? nullptr : it->second.c_str();
  });
}

std::optional<std::string> Env::raw(const char *name) const {
  if (!lookup_)
    return std::nullopt;
  const char *v = lookup_(name);
  if (!v || !*v)
    return std::nullopt;
  return std::string(v);
}

void Env::invalid(const char *name, const std::string &value, const std::string &expected) {
  throw Error(std::string("invalid ") + name + " value '" + value + "' (expected " + expected + ")");
}

bool Env::flag(const char *name, bool dflt) const {
  auto v = raw(name);
  if (!v)
    return dflt;
  std::string s = *v;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "1" || s == "true" || s == "on" || s == "yes")
    return true;
  if (s == "0" || s == "false" || s == "off" || s == "no")
    return false;
  invalid(name, *v, "one of 1, 0, true, false, on, off");
}

int64_t Env::integer(const char *name, int64_t dflt, int64_t lo, int64_t hi) const {
  auto v = raw(name);
  if (!v)
    return dflt;
  int64_t x = 0;
  const char *b = v->data(), *e = v->data() + v->size();
  auto r = std::from_chars(b, e, x);
  if (!std::isdigit(static_cast<unsigned char>((*v)[0])) && (*v)[0] != '-')
    r.ec = std::errc::invalid_argument;
  if (r.ec != std::errc() || r.ptr != e || x < lo || x > hi)
    invalid(name, *v, "an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  return x;
}

std::string Env::choice(const char *name, const std::string &dflt, std::initializer_list<const char *> choices) const {
  auto v = raw(name);
  if (!v)
    return dflt;
  std::string list;
  for (const char *c : choices) {
    if (*v == c)
      return *v;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  invalid(name, *v, "one of " + list);
}

std::string Env::string(const char *name, const std::string &dflt) const { return raw(name).value_or(dflt); }

} // namespace spyre
