#include "spyre/frontend/graph.h"
#include "spyre/frontend/ops.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

namespace spyre::frontend {

std::string_view dtypeShortName(HostType t) {
  switch (t) {
  case HostType::F16: return "f16";
  case HostType::BF16: return "bf16";
  case HostType::F32: return "f32";
  case HostType::I32: return "i32";
  case HostType::I64: return "i64";
  case HostType::Bool: return "bool";
  case HostType::I8: return "i8";
  case HostType::I16: return "i16";
  case HostType::U8: return "u8";
  case HostType::F8E4M3: return "f8e4m3"; // storage only: graph text does not accept it
  }
  return "?";
}

static bool parseDtype(std::string_view s, HostType &t) {
  for (HostType c : {HostType::F16, HostType::BF16, HostType::F32, HostType::I32, HostType::I64, HostType::Bool,
                     HostType::I8, HostType::I16, HostType::U8})
    if (dtypeShortName(c) == s) {
      t = c;
      return true;
    }
  return false;
}

double Attr::scalar() const {
  if (param >= 0)
    throw Unsupported("runtime scalar $" + std::to_string(param) + " where a compile-time number is needed");
  return values.empty() ? 0.0 : values[0];
}

int numRuntimeScalars(const Graph &g) {
  int n = 0;
  for (const auto &node : g.nodes)
    for (const auto &[k, a] : node.attrs)
      n = std::max(n, a.param + 1);
  return n;
}

int Graph::addValue(std::string name, std::vector<int64_t> shape, HostType t) {
  values.push_back({std::move(name), std::move(shape), t});
  return static_cast<int>(values.size()) - 1;
}

int Graph::addInput(std::string name, std::vector<int64_t> shape, HostType t) {
  int id = addValue(std::move(name), std::move(shape), t);
  inputs.push_back(id);
  return id;
}

int Graph::addNode(std::string op, std::vector<int> ins, std::string outName, std::vector<int64_t> shape, HostType t,
                   std::map<std::string, Attr> attrs) {
  int id = addValue(std::move(outName), std::move(shape), t);
  nodes.push_back({std::move(op), std::move(ins), id, std::move(attrs)});
  return id;
}

std::string Graph::freshName(const std::string &base) const {
  std::set<std::string> taken;
  for (const auto &v : values)
    taken.insert(v.name);
  std::string n = base;
  for (int i = 1; taken.count(n); ++i)
    n = base + "_" + std::to_string(i);
  return n;
}

int Graph::producer(int v) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].output == v)
      return static_cast<int>(i);
  return -1;
}

/// The op-table checks of one node at `line` of `source`: a known op (else Unsupported) with a
/// tensor operand count within the op's bounds (else Error).
static std::string numText(double d);

static void checkNodeOp(const Node &n, const std::string &outName, std::string_view source, int line) {
  const std::string at = std::string(source) + ":" + std::to_string(line) + ": ";
  const std::string node = " (node %" + outName + " = " + n.op + ")";
  const OpInfo *op = findOp(n.op);
  if (!op)
    throw Unsupported(at + "op '" + n.op + "'" + node);
  const int got = static_cast<int>(n.inputs.size());
  if (got < op->minInputs || (op->maxInputs >= 0 && got > op->maxInputs)) {
    const std::string bounds = op->maxInputs < 0               ? "at least " + std::to_string(op->minInputs)
                               : op->minInputs == op->maxInputs ? std::to_string(op->minInputs)
                                                                : std::to_string(op->minInputs) + " to " +
                                                                      std::to_string(op->maxInputs);
    throw Error(at + n.op + " takes " + bounds + " tensor operand(s), got " + std::to_string(got) + node);
  }
  // Integer-valued attributes are read as int64 by the passes and kernel builders, every pass
  // note as int: a fraction or a value out of range (attributes: beyond +-2^53, where doubles
  // stop being exact) is an error.
  static const std::set<std::string> intKeys = {"dim", "dims", "start", "end", "step", "index", "keepdim",
                                                "pad", "offsets", "transb", "kvrep", "heads", "approximate"};
  auto checkInts = [&](const std::map<std::string, Attr> &attrs, bool notes) {
    const double bound = notes ? 2147483647.0 : 9007199254740992.0;
    for (const auto &[key, a] : attrs)
      if (notes || intKeys.count(key)) {
        if (a.isRuntime())
          throw Error(at + key + "=$" + std::to_string(a.param) + ": a runtime scalar where an integer is needed" +
                      node);
        for (double v : a.values)
          if (!(std::fabs(v) <= bound) || v != std::trunc(v))
            throw Error(at + key + "=" + numText(v) + ": expected an integer in " +
                        (notes ? "-2^31..2^31-1" : "-2^53..2^53") + node);
      }
  };
  checkInts(n.attrs, false);
  checkInts(n.notes, true);
}

void Graph::verify() const {
  std::set<std::string> names;
  std::vector<bool> defined(values.size(), false);
  for (int i : inputs) {
    if (i < 0 || i >= static_cast<int>(values.size()))
      throw Error("graph input id " + std::to_string(i) + " out of range");
    defined[i] = true;
  }
  for (const auto &v : values) {
    if (!names.insert(v.name).second)
      throw Error("graph value %" + v.name + " is defined twice");
    for (int64_t d : v.shape)
      if (d < 0)
        throw Error("graph value %" + v.name + " has a negative dimension");
  }
  for (const auto &n : nodes) {
    for (int i : n.inputs)
      if (i < 0 || i >= static_cast<int>(values.size()) || !defined[i])
        throw Error("node " + n.op + " -> %" + (n.output >= 0 ? values[n.output].name : "?") +
                    " uses a value that is not defined before it");
    if (n.output < 0 || n.output >= static_cast<int>(values.size()) || defined[n.output])
      throw Error("node " + n.op + " has an invalid or redefined output");
    defined[n.output] = true;
  }
  // Lines of printGraph's text: the header is line 1, node i line i + 2.
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node &n = nodes[i];
    checkNodeOp(n, values[n.output].name, "<graph>", static_cast<int>(i) + 2);
    // A reshape keeps the element count (its kernels copy by the output's extent).
    auto count = [&](int v) {
      unsigned __int128 c = 1; // saturates at 2^64 (far beyond the card)
      for (int64_t d : values[v].shape)
        c = std::min<unsigned __int128>(c * static_cast<uint64_t>(d), static_cast<unsigned __int128>(1) << 64);
      return c;
    };
    if (n.op == "reshape" && n.inputs.size() == 1 && count(n.inputs[0]) != count(n.output))
      throw Error("<graph>:" + std::to_string(i + 2) + ": reshape of %" + values[n.inputs[0]].name + " to %" +
                  values[n.output].name + " changes the element count");
  }
  for (int o : outputs)
    if (o < 0 || o >= static_cast<int>(values.size()) || !defined[o])
      throw Error("graph output id " + std::to_string(o) + " is not defined");
}

static std::string typeText(const Value &v) {
  std::string s = std::string(dtypeShortName(v.dtype)) + "[";
  for (size_t i = 0; i < v.shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v.shape[i]);
  return s + "]";
}

static std::string numText(double d) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

static std::string attrText(const Attr &v) {
  if (v.isRuntime())
    return "$" + std::to_string(v.param);
  if (!v.isList)
    return numText(v.scalar());
  std::string t = "[";
  for (size_t i = 0; i < v.values.size(); ++i)
    t += (i ? ", " : "") + numText(v.values[i]);
  return t + "]";
}

std::string printGraph(const Graph &g) {
  std::string s = "graph(";
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Value &v = g.values[g.inputs[i]];
    s += (i ? ", %" : "%") + v.name + ": " + typeText(v);
  }
  s += ") {\n";
  for (const auto &n : g.nodes) {
    s += "  %" + g.values[n.output].name + " = " + n.op + "(";
    bool first = true;
    for (int i : n.inputs) {
      s += (first ? "%" : ", %") + g.values[i].name;
      first = false;
    }
    for (const auto &[k, v] : n.attrs) {
      s += (first ? "" : ", ") + k + "=" + attrText(v);
      first = false;
    }
    s += ") : " + typeText(g.values[n.output]);
    if (!n.notes.empty()) {
      s += " {";
      first = true;
      for (const auto &[k, v] : n.notes) {
        s += (first ? "" : ", ") + k + "=" + attrText(v);
        first = false;
      }
      s += "}";
    }
    s += "\n";
  }
  s += "  return (";
  for (size_t i = 0; i < g.outputs.size(); ++i)
    s += (i ? ", %" : "%") + g.values[g.outputs[i]].name;
  return s + ")\n}\n";
}

namespace {
class GraphParser {
public:
  GraphParser(std::string_view t, std::string_view src) : t_(t), src_(src) {}
  Graph parse() {
    Graph g;
    word("graph");
    expect('(');
    if (!peekIs(')')) {
      do {
        std::string name = valueName();
        expect(':');
        auto [dt, shape] = type();
        if (names_.count(name))
          fail("a new value name", "%" + name);
        names_[name] = g.addInput(name, shape, dt);
      } while (accept(','));
    }
    expect(')');
    expect('{');
    while (true) {
      skip();
      if (t_.substr(pos_, 6) == "return") {
        pos_ += 6;
        expect('(');
        if (!peekIs(')')) {
          do {
            g.outputs.push_back(lookup(valueName()));
          } while (accept(','));
        }
        expect(')');
        expect('}');
        break;
      }
      std::string out = valueName();
      if (names_.count(out))
        fail("a new value name", "%" + out);
      expect('=');
      skip();
      const int opLine = currentLine();
      std::string op = ident();
      if (op.empty())
        fail("an op name");
      expect('(');
      std::vector<int> ins;
      std::map<std::string, Attr> attrs;
      if (!peekIs(')')) {
        do {
          skip();
          if (peekIs('%')) {
            ins.push_back(lookup(valueName()));
          } else {
            keyValue(attrs, "an operand %name or attribute key=value");
          }
        } while (accept(','));
      }
      expect(')');
      expect(':');
      auto [dt, shape] = type();
      names_[out] = g.addNode(op, ins, out, shape, dt, attrs);
      if (accept('{')) { // pass decisions
        if (!peekIs('}')) {
          do {
            keyValue(g.nodes.back().notes, "a note key=value");
          } while (accept(','));
        }
        expect('}');
      }
      checkNodeOp(g.nodes.back(), out, src_, opLine);
    }
    skip();
    if (pos_ != t_.size())
      fail("end of input");
    g.verify();
    return g;
  }

private:
  std::string_view t_, src_;
  size_t pos_ = 0;
  std::map<std::string, int> names_;

  void skip() {
    while (pos_ < t_.size() && isspace(static_cast<unsigned char>(t_[pos_])))
      ++pos_;
  }
  int currentLine() const {
    int l = 1;
    for (size_t i = 0; i < pos_ && i < t_.size(); ++i)
      l += t_[i] == '\n';
    return l;
  }
  [[noreturn]] void fail(const std::string &exp, std::string got = "") {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < t_.size(); ++i) {
      if (t_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    if (got.empty())
      got = pos_ < t_.size() ? "'" + std::string(t_.substr(pos_, std::min<size_t>(12, t_.size() - pos_))) + "'" : "end of input";
    else
      got = "'" + got + "'";
    throw Error(std::string(src_) + ":" + std::to_string(line) + ":" + std::to_string(col) + ": expected " + exp +
                ", got " + got);
  }
  bool peekIs(char c) {
    skip();
    return pos_ < t_.size() && t_[pos_] == c;
  }
  bool accept(char c) {
    if (peekIs(c)) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c))
      fail(std::string("'") + c + "'");
  }
  void word(std::string_view w) {
    skip();
    if (t_.substr(pos_, w.size()) != w)
      fail("'" + std::string(w) + "'");
    pos_ += w.size();
  }
  std::string ident() {
    skip();
    size_t s = pos_;
    while (pos_ < t_.size() && (isalnum(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '_' || t_[pos_] == '.'))
      ++pos_;
    return std::string(t_.substr(s, pos_ - s));
  }
  std::string valueName() {
    skip();
    if (!peekIs('%'))
      fail("a value name %name");
    ++pos_;
    std::string n = ident();
    if (n.empty())
      fail("a value name after '%'");
    return n;
  }
  /// The rest of a `[a, b, ...]` list whose '[' has been read: items by `item`, then ']'.
  template <class Item> auto listRest(Item item) {
    std::vector<decltype(item())> list;
    if (!peekIs(']')) {
      do {
        list.push_back(item());
      } while (accept(','));
    }
    expect(']');
    return list;
  }
  void keyValue(std::map<std::string, Attr> &into, const char *what) {
    std::string key = ident();
    if (key.empty())
      fail(what);
    expect('=');
    if (accept('[')) {
      into[key] = Attr(listRest([this] { return number(); }));
    } else if (accept('$')) {
      // A runtime scalar: $k, k a small non-negative integer.
      double k = number();
      if (!(k >= 0 && k < 65536 && k == std::trunc(k)))
        fail("a runtime scalar number $0..$65535", "$" + numText(k));
      into[key] = Attr::runtime(static_cast<int>(k));
    } else {
      into[key] = Attr(number());
    }
  }
  int lookup(const std::string &n) {
    auto it = names_.find(n);
    if (it == names_.end())
      fail("a defined value", "%" + n);
    return it->second;
  }
  /// The characters a number may be made of (alphanumerics, '.', '+', '-'), from the next
  /// non-blank on; the number readers check what they hold.
  std::string_view numberToken() {
    skip();
    size_t s = pos_;
    while (pos_ < t_.size() && (isalnum(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '.' || t_[pos_] == '-' ||
                                t_[pos_] == '+'))
      ++pos_;
    return t_.substr(s, pos_ - s);
  }
  double number() {
    std::string_view tok = numberToken();
    double d = 0;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), d);
    if (r.ec != std::errc() || r.ptr != tok.data() + tok.size()) {
      pos_ -= tok.size();
      fail("a number");
    }
    return d;
  }
  /// A dimension: decimal digits only, as int64 (no exponent, no fraction, no rounding).
  int64_t dimension() {
    std::string_view tok = numberToken();
    int64_t d = 0;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), d);
    if (r.ec != std::errc() || r.ptr != tok.data() + tok.size() || d < 0)
      fail("a non-negative integer dimension");
    return d;
  }
  std::pair<HostType, std::vector<int64_t>> type() {
    std::string dt = ident();
    HostType t;
    if (!parseDtype(dt, t))
      fail("a dtype (f16 bf16 f32 i32 i64 bool i8 i16 u8)", dt);
    expect('[');
    const size_t start = pos_ - 1; // the '['
    std::vector<int64_t> shape = listRest([this] { return dimension(); });
    // Every pass counts elements in int64: a shape whose product overflows it is an error here.
    int64_t elements = 1;
    if (std::find(shape.begin(), shape.end(), 0) == shape.end())
      for (int64_t d : shape)
        if (__builtin_mul_overflow(elements, d, &elements)) {
          std::string got(t_.substr(start, pos_ - start));
          pos_ = start;
          fail("a shape of at most 9223372036854775807 elements", got);
        }
    return {t, std::move(shape)};
  }
};
} // namespace

Graph parseGraph(std::string_view text, std::string_view source) { return GraphParser(text, source).parse(); }

} // namespace spyre::frontend
