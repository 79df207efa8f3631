#include "json_reader.h"
#include "spyre/isa/error.h"
#include <charconv>
#include <unordered_set>

namespace spyre::isa::detail {

namespace {

/// Cuts a message part that echoes input (nlohmann's "last read: '…'" can hold a whole token).
std::string cut(const std::string &s, size_t n = 200) { return s.size() <= n ? s : s.substr(0, n) + "..."; }

/// nlohmann's message without its "[json.exception.parse_error.101] " tag.
std::string untagged(const std::string &what) {
  if (what.rfind("[json.exception.", 0) == 0)
    if (auto p = what.find("] "); p != std::string::npos)
      return what.substr(p + 2);
  return what;
}

/// A SAX consumer that builds the ojson itself (so it knows the JSON pointer of the value being
/// read when anything fails, and appends object members without ordered_map's linear lookup).
class Builder {
public:
  Builder(ojson &root, const std::string &file) : root_(root), file_(file) {}

  bool null() { return put(nullptr); }
  bool boolean(bool b) { return put(b); }
  bool number_integer(int64_t v) { return put(v); }
  bool number_unsigned(uint64_t v) { return put(v); }
  bool number_float(double v, const std::string &) { return put(v); }
  bool string(std::string &s) { return put(std::move(s)); }
  bool binary(ojson::binary_t &b) { return put(ojson::binary(std::move(b))); }
  bool start_object(size_t) { return open(ojson::object(), false); }
  bool start_array(size_t) { return open(ojson::array(), true); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string &k) {
    Frame &f = stack_.back();
    if (!f.keys.insert(k).second) {
      f.key = k;
      f.hasKey = true;
      fail("duplicate key " + inQuotes(k));
    }
    f.key = std::move(k);
    f.hasKey = true;
    return true;
  }
  bool parse_error(size_t, const std::string &, const nlohmann::detail::exception &ex) {
    std::string reason = cut(untagged(ex.what()), 300);
    if (ex.id == 406) // out_of_range.406: a number beyond a double
      reason += " (a JSON number must fit a double)";
    fail(reason);
  }

private:
  struct Frame {
    ojson *value;
    bool isArray;
    size_t count = 0;        ///< array: elements completed
    std::string key;         ///< object: the key of the member being read
    bool hasKey = false;
    std::unordered_set<std::string> keys;
  };

  [[noreturn]] void fail(const std::string &reason) const {
    std::string p;
    for (const Frame &f : stack_) {
      if (f.isArray)
        p += "/" + std::to_string(f.count);
      else if (f.hasKey)
        p += "/" + pointerToken(f.key);
      else
        break;
    }
    throw Error(file_ + ": " + (p.empty() ? "/" : cut(p)) + ": malformed JSON: " + reason);
  }

  /// Stores `v` at the current position; returns where it went.
  template <typename V> ojson *store(V &&v) {
    if (++values_ > kMaxJsonValues)
      fail("more than " + std::to_string(kMaxJsonValues) + " values (the SuperDSC limit)");
    if (stack_.empty()) {
      root_ = ojson(std::forward<V>(v));
      return &root_;
    }
    Frame &f = stack_.back();
    if (f.isArray) {
      auto &arr = f.value->get_ref<ojson::array_t &>();
      arr.emplace_back(std::forward<V>(v));
      return &arr.back();
    }
    auto &obj = f.value->get_ref<ojson::object_t &>();
    obj.emplace_back(f.key, ojson(std::forward<V>(v))); // keys are unique (key() checked)
    return &obj.back().second;
  }
  /// A completed member / element of the innermost container.
  void advance() {
    if (stack_.empty())
      return;
    Frame &f = stack_.back();
    if (f.isArray)
      ++f.count;
    else
      f.hasKey = false;
  }
  template <typename V> bool put(V &&v) {
    store(std::forward<V>(v));
    advance();
    return true;
  }
  bool open(ojson v, bool isArray) {
    if (static_cast<int>(stack_.size()) >= kMaxJsonDepth)
      fail("nesting deeper than " + std::to_string(kMaxJsonDepth) + " (the SuperDSC limit)");
    ojson *where = store(std::move(v));
    stack_.push_back(Frame{where, isArray});
    return true;
  }
  bool close() {
    stack_.pop_back();
    advance();
    return true;
  }

  ojson &root_;
  const std::string &file_;
  std::vector<Frame> stack_;
  size_t values_ = 0;
};

} // namespace

std::string pointerToken(const std::string &key) {
  std::string out;
  for (char c : key)
    out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return out;
}

ojson parseJson(const std::string &text, const std::string &file) {
  ojson root;
  Builder b(root, file);
  ojson::sax_parse(text, &b, ojson::input_format_t::json, /*strict=*/true);
  return root;
}

std::string inQuotes(const std::string &s) { return "'" + (s.size() <= 64 ? s : s.substr(0, 64) + "...") + "'"; }

std::string brief(const ojson &v) {
  if (v.is_object())
    return "an object";
  if (v.is_array())
    return "an array";
  if (v.is_string()) {
    const auto &s = v.get_ref<const std::string &>();
    return s.size() <= 64 ? ojson(s).dump() : ojson(s.substr(0, 64)).dump() + "...";
  }
  return v.dump();
}

bool parseDecimal(const std::string &s, int64_t &out) {
  size_t i = !s.empty() && s[0] == '-' ? 1 : 0;
  if (i == s.size())
    return false;
  for (size_t k = i; k < s.size(); ++k)
    if (s[k] < '0' || s[k] > '9')
      return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Paths and reasons can echo keys and strings of any length: both are cut.
void Reader::fail(const std::string &path, const std::string &what) const {
  throw Error(file + ": " + cut(path, 300) + ": " + cut(what, 500));
}

void Reader::warn(const std::string &path, const std::string &what) const {
  if (!warnings || warnings->size() > kMaxWarnings)
    return;
  if (warnings->size() == kMaxWarnings)
    warnings->push_back(file + ": further warnings not reported");
  else
    warnings->push_back(file + ": " + cut(path, 300) + ": " + what);
}

const ojson &Reader::object(const ojson &v, const std::string &path) const {
  if (!v.is_object())
    fail(path, "expected an object, got " + brief(v));
  return v;
}

const ojson &Reader::field(const ojson &obj, const std::string &path, const std::string &key) const {
  if (!obj.is_object())
    fail(path, "expected an object");
  auto it = obj.find(key);
  if (it == obj.end())
    fail(path, "missing field " + inQuotes(key));
  return *it;
}

int64_t Reader::integer(const ojson &v, const std::string &path, int64_t lo, int64_t hi) const {
  auto range = [&] { return "expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got "; };
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX) || static_cast<int64_t>(u) > hi || static_cast<int64_t>(u) < lo)
      fail(path, range() + std::to_string(u));
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer())
    x = v.get<int64_t>();
  else if (!v.is_string() || !parseDecimal(v.get_ref<const std::string &>(), x)) {
    if (v.is_string() && !v.get_ref<const std::string &>().empty() &&
        v.get_ref<const std::string &>().find_first_not_of("-0123456789") == std::string::npos)
      fail(path, range() + brief(v)); // digits beyond int64
    fail(path, "expected an integer, got " + brief(v));
  }
  if (x < lo || x > hi)
    fail(path, range() + (v.is_string() ? brief(v) : std::to_string(x)));
  return x;
}

std::string Reader::string(const ojson &v, const std::string &path) const {
  if (!v.is_string())
    fail(path, "expected a string, got " + brief(v));
  return v.get<std::string>();
}

std::vector<std::string> Reader::strings(const ojson &v, const std::string &path) const {
  if (!v.is_array())
    fail(path, "expected an array of strings, got " + brief(v));
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i)
    out.push_back(string(v[i], path + "/" + std::to_string(i)));
  return out;
}

std::vector<int64_t> Reader::integers(const ojson &v, const std::string &path, int64_t lo, int64_t hi) const {
  if (!v.is_array())
    fail(path, "expected an array of integers, got " + brief(v));
  std::vector<int64_t> out;
  for (size_t i = 0; i < v.size(); ++i)
    out.push_back(integer(v[i], path + "/" + std::to_string(i), lo, hi));
  return out;
}

void Reader::warnUnknown(const ojson &obj, const std::string &path, std::initializer_list<const char *> used,
                         std::initializer_list<const char *> ignored) const {
  if (!warnings || !obj.is_object())
    return;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool known = false;
    for (const char *k : used)
      known |= it.key() == k;
    for (const char *k : ignored)
      known |= it.key() == k;
    if (!known)
      warn(path + "/" + pointerToken(it.key()), "unknown field (ignored)");
  }
}

} // namespace spyre::isa::detail
