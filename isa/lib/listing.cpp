// Listing parser: the text form (docs/isa.md) -> Kernel; printing is in listing_print.cpp.
#include "spyre/isa/listing.h"
#include "spyre/isa/limits.h"
#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <sstream>

namespace spyre::isa {

// ---------------------------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------------------------
namespace {

class Parser {
public:
  Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  Kernel parse() {
    Kernel k;
    bool sawKernel = false;
    std::vector<std::vector<Instr> *> stack; // open loop bodies
    CoreProgram *cur = nullptr;
    while (nextLine()) {
      skipWs();
      if (atEnd() || peek() == ';') {
        // The header comment of a printed listing round-trips.
        // Trailing blanks and carriage returns are not kept: the printer would write them back
        // before a newline, where the next parse would strip one more (CRLF).
        if (!atEnd() && !sawKernel && k.comment.empty() && line_.size() > 2 && line_[1] == ' ') {
          std::string_view c = line_.substr(2);
          while (!c.empty() && (c.back() == ' ' || c.back() == '\t' || c.back() == '\r'))
            c.remove_suffix(1);
          k.comment = std::string(c);
        }
        continue;
      }
      if (peek() == '.') {
        std::string d = ident();
        if (d == ".kernel") {
          if (sawKernel)
            failAt(0, "a second .kernel directive (a listing holds one kernel)");
          skipWs();
          k.name = ident();
          if (k.name.empty())
            fail("kernel name");
          skipWs();
          expectWord("cores=");
          int64_t cores = integer();
          if (cores < 1 || cores > 32)
            fail("cores between 1 and 32", std::to_string(cores));
          k.numCores = static_cast<int>(cores);
          sawKernel = true;
        } else if (d == ".args") {
          for (skipWs(); !atEnd() && peek() != ';'; skipWs()) {
            std::string a = ident();
            if (a.empty())
              fail("an argument name");
            k.args.push_back(a);
          }
        } else if (d == ".scalars") {
          // .scalars $<index>:<dl16|f32> ...: the kernel's scalar-argument slots in order.
          for (skipWs(); !atEnd() && peek() != ';'; skipWs()) {
            expect('$');
            int64_t index = integer();
            if (index < 0 || index >= 65536)
              fail("a scalar argument number in 0..65535", std::to_string(index));
            expect(':');
            std::string f = ident();
            if (f != "dl16" && f != "f32")
              fail("a scalar argument format dl16 or f32", f);
            if (static_cast<int>(k.scalarArgs.size()) >= kMaxScalarArgs)
              fail("at most " + std::to_string(kMaxScalarArgs) + " scalar arguments");
            k.scalarArgs.push_back({static_cast<int>(index), f == "dl16" ? Format::DL16 : Format::F32});
          }
        } else if (d == ".core") {
          if (!stack.empty())
            fail("'}' closing the loop before .core");
          skipWs();
          CoreProgram p;
          int64_t first = integer(), last = first;
          if (match(".."))
            last = integer();
          if (first < 0 || last < first || last >= k.numCores)
            fail("core range inside 0.." + std::to_string(k.numCores - 1));
          p.firstCore = static_cast<int>(first);
          p.lastCore = static_cast<int>(last);
          k.programs.push_back(std::move(p));
          cur = &k.programs.back();
        } else {
          fail("directive .kernel, .args, .scalars or .core", d);
        }
        endOfLine();
        continue;
      }
      if (peek() == '}') {
        ++col_;
        if (stack.empty())
          fail("an instruction ('}' without an open loop)");
        stack.pop_back();
        endOfLine();
        continue;
      }
      if (!sawKernel)
        fail(".kernel directive before instructions");
      if (!cur)
        fail(".core directive before instructions");
      const size_t start = col_;
      Instr in = instruction(k);
      if (++instructions_ > limits_.maxInstructions)
        failAt(start, "more than " + std::to_string(limits_.maxInstructions) + " instructions in the kernel");
      std::vector<Instr> &dst = stack.empty() ? cur->body : *stack.back();
      if (in.op == Opcode::Loop) {
        if (static_cast<int>(stack.size()) >= limits_.maxLoopDepth)
          failAt(start, "loop nesting deeper than " + std::to_string(limits_.maxLoopDepth));
        int64_t outer = stack.empty() ? 1 : trips_[stack.size() - 1], trips = 0;
        if (__builtin_mul_overflow(outer, in.imm, &trips) || trips > limits_.maxTripProduct)
          failAt(start, "the trip counts of this loop and the loops around it multiply to more than " +
                            std::to_string(limits_.maxTripProduct) + " iterations");
        trips_.resize(stack.size());
        trips_.push_back(trips);
      }
      dst.push_back(std::move(in));
      if (dst.back().op == Opcode::Loop)
        stack.push_back(&dst.back().body);
    }
    if (!stack.empty())
      fail("'}' before end of input");
    if (!sawKernel) {
      // Point at the last line (line 1 of an empty listing), never at a line 0 that does not exist.
      lineNo_ = std::max(lineNo_, 1);
      failAt(0, text_.find_first_not_of(" \t\r\n") == std::string_view::npos
                    ? "expected .kernel directive, got an empty listing"
                    : "expected .kernel directive, got end of input");
    }
    return k;
  }

private:
  std::string_view text_, source_, line_;
  size_t next_ = 0, col_ = 0;
  int lineNo_ = 0;
  const KernelLimits &limits_ = kKernelLimits;
  int64_t instructions_ = 0;
  std::vector<int64_t> trips_; ///< per open loop: the product of its trip count and its parents'

  bool nextLine() {
    if (next_ >= text_.size())
      return false;
    size_t e = text_.find('\n', next_);
    if (e == std::string_view::npos)
      e = text_.size();
    line_ = text_.substr(next_, e - next_);
    if (!line_.empty() && line_.back() == '\r') // CRLF line endings
      line_.remove_suffix(1);
    next_ = e + 1;
    col_ = 0;
    ++lineNo_;
    if (line_.size() > limits_.maxListingLineBytes)
      failAt(0, "line longer than " + std::to_string(limits_.maxListingLineBytes) + " bytes");
    return true;
  }
  [[noreturn]] void failAt(size_t col, const std::string &what) const {
    throw Error(std::string(source_) + ":" + std::to_string(lineNo_) + ":" + std::to_string(col + 1) + ": " + what);
  }
  bool atEnd() const { return col_ >= line_.size(); }
  char peek() const { return atEnd() ? '\0' : line_[col_]; }
  void skipWs() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\r'))
      ++col_;
  }
  [[noreturn]] void fail(const std::string &expected, std::string got = "") const {
    if (got.empty()) {
      size_t e = col_;
      while (e < line_.size() && line_[e] != ' ' && line_[e] != ',')
        ++e;
      got = atEnd() ? "end of line" : "'" + std::string(line_.substr(col_, e - col_)) + "'";
    } else {
      got = "'" + got + "'";
    }
    throw Error(std::string(source_) + ":" + std::to_string(lineNo_) + ":" +
                std::to_string(col_ + 1) + ": expected " + expected + ", got " + got);
  }
  bool match(std::string_view s) {
    if (line_.substr(col_, s.size()) == s) {
      col_ += s.size();
      return true;
    }
    return false;
  }
  void expect(char c) {
    skipWs();
    if (peek() != c)
      fail(std::string("'") + c + "'");
    ++col_;
  }
  void expectWord(std::string_view w) {
    skipWs();
    if (!match(w))
      fail("'" + std::string(w) + "'");
  }
  void endOfLine() {
    skipWs();
    if (!atEnd() && peek() != ';')
      fail("end of line");
  }
  std::string ident() {
    size_t s = col_;
    while (!atEnd() && (isalnum(static_cast<unsigned char>(peek())) || peek() == '_' ||
                        peek() == '.' || peek() == '-'))
      ++col_;
    return std::string(line_.substr(s, col_ - s));
  }
  int64_t integer() {
    skipWs();
    size_t s = col_;
    bool neg = match("-");
    int base = 10;
    if (match("0x") || match("0X"))
      base = 16;
    size_t ds = col_;
    while (!atEnd() && isxdigit(static_cast<unsigned char>(peek())))
      ++col_;
    int64_t v = 0;
    auto r = std::from_chars(line_.data() + ds, line_.data() + col_, v, base);
    if (r.ec != std::errc() || r.ptr != line_.data() + col_ || ds == col_) {
      col_ = s;
      fail("an integer");
    }
    return neg ? -v : v;
  }
  float floating() {
    skipWs();
    size_t s = col_;
    while (!atEnd() && peek() != ',' && peek() != ' ' && peek() != ';')
      ++col_;
    float f = 0;
    auto tok = line_.substr(s, col_ - s);
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), f);
    if (r.ec != std::errc() || r.ptr != tok.data() + tok.size()) {
      col_ = s;
      fail("a float immediate");
    }
    return f;
  }
  int reg(char prefix, int count, const char *what) {
    skipWs();
    if (peek() != prefix)
      fail(std::string(what) + " " + prefix + "0.." + prefix + std::to_string(count - 1));
    size_t s = col_++;
    int64_t n = 0;
    size_t ds = col_;
    while (!atEnd() && isdigit(static_cast<unsigned char>(peek()))) {
      const int digit = line_[col_++] - '0';
      n = n < count ? n * 10 + digit : n; // saturates past count: r99999999999999999999 is no overflow
    }
    if (ds == col_ || n >= count) {
      col_ = s;
      fail(std::string(what) + " " + prefix + "0.." + prefix + std::to_string(count - 1));
    }
    return static_cast<int>(n);
  }
  // +0x10 / -16 / nothing
  int64_t optOffset() {
    skipWs();
    if (peek() == '+') {
      ++col_;
      return integer();
    }
    if (peek() == '-')
      return integer();
    return 0;
  }
  LxAddr lxAddr() {
    skipWs();
    if (!match("lx["))
      fail("an LX address lx[...]");
    LxAddr a;
    skipWs();
    if (peek() == 'r') {
      a.base = reg('r', kNumSRegs, "a scalar register");
      a.offset = optOffset();
    } else {
      a.offset = integer();
    }
    expect(']');
    return a;
  }
  DdrAddr ddrAddr(const Kernel &k) {
    skipWs();
    if (!match("ddr["))
      fail("a DDR address ddr[arg+...]");
    skipWs();
    size_t s = col_;
    std::string name;
    while (!atEnd() && (isalnum(static_cast<unsigned char>(peek())) || peek() == '_'))
      name += line_[col_++];
    DdrAddr a;
    a.arg = -1;
    for (size_t i = 0; i < k.args.size(); ++i)
      if (k.args[i] == name)
        a.arg = static_cast<int>(i);
    if (a.arg < 0) {
      col_ = s;
      fail("a kernel argument name declared by .args");
    }
    skipWs();
    if (line_.substr(col_, 2) == "+r") {
      ++col_;
      a.base = reg('r', kNumSRegs, "a scalar register");
    }
    a.offset = optOffset();
    expect(']');
    return a;
  }
  std::array<int64_t, 2> pair() {
    expect('(');
    std::array<int64_t, 2> p{};
    p[0] = integer();
    expect(',');
    p[1] = integer();
    expect(')');
    return p;
  }
  DmaShape shape() {
    DmaShape d;
    expectWord("shape=");
    expect('(');
    for (int i = 0; i < 3; ++i) {
      if (i)
        expect(',');
      d.n[i] = integer();
    }
    expect(')');
    d.ddrStride = d.lxStride = DmaShape::dense(d.n);
    skipWs();
    size_t save = col_;
    if (match(",")) {
      skipWs();
      if (match("ddr.stride=")) {
        d.ddrStride = pair();
        save = col_;
        skipWs();
        if (!match(","))
          return d;
        skipWs();
      }
      if (match("lx.stride=")) {
        d.lxStride = pair();
        return d;
      }
      col_ = save;
    }
    return d;
  }

  Instr instruction(const Kernel &k) {
    size_t start = col_;
    std::string word = ident();
    Instr in;
    in.line = lineNo_;
    const OpInfo *info = nullptr;
    std::string fmtName;
    for (const auto &o : allOps())
      if (o.mnemonic == word)
        info = &o;
    if (!info) {
      size_t dot = word.rfind('.');
      if (dot != std::string::npos) {
        std::string base = word.substr(0, dot);
        for (const auto &o : allOps())
          if (o.mnemonic == base)
            info = &o;
        fmtName = word.substr(dot + 1);
      }
    }
    if (!info) {
      col_ = start;
      fail("an instruction mnemonic");
    }
    in.op = info->op;
    if (info->formats == FMT_NONE) {
      if (!fmtName.empty()) {
        col_ = start;
        fail("'" + std::string(info->mnemonic) + "' without a format suffix", word);
      }
    } else {
      if (fmtName == "dl16" && (info->formats & FMT_DL16))
        in.fmt = Format::DL16;
      else if (fmtName == "f32" && (info->formats & FMT_F32))
        in.fmt = Format::F32;
      else if (fmtName == "i32" && (info->formats & FMT_I32))
        in.fmt = Format::I32;
      else {
        col_ = start;
        std::string allowed;
        if (info->formats & FMT_DL16) allowed += " " + std::string(info->mnemonic) + ".dl16";
        if (info->formats & FMT_F32) allowed += " " + std::string(info->mnemonic) + ".f32";
        if (info->formats & FMT_I32) allowed += " " + std::string(info->mnemonic) + ".i32";
        fail("a format suffix, one of" + allowed, word);
      }
    }
    std::string_view ops = info->operands;
    int vi = 0, ri = 0, fi = 0, ii = 0, li = 0;
    bool first = true;
    for (size_t pos = 0; pos < ops.size(); pos += 2) {
      char kind = ops[pos];
      if (kind == 'O') {
        expectWord("->");
        skipWs();
        in.outToken = reg('t', kNumTokens, "a token");
        continue;
      }
      if (kind == 'N') {
        in.imm = integer();
        if (in.imm < 0)
          fail("a non-negative loop count", std::to_string(in.imm));
        expect('{');
        endOfLine();
        return in;
      }
      if (!first)
        expect(',');
      first = false;
      switch (kind) {
      case 'V': in.v[vi++] = reg('v', kNumVRegs, "a vector register"); break;
      case 'R': in.r[ri++] = reg('r', kNumSRegs, "a scalar register"); break;
      case 'I': (ii == 0 ? in.imm : in.imms[ii - 1]) = integer(); ++ii; break;
      case 'F': (fi++ == 0 ? in.fimm : in.fimm2) = floating(); break;
      case 'L': (li == 0 ? in.lx : li == 1 ? in.lx2 : in.lx3) = lxAddr(); ++li; break;
      case 'D': in.ddr = ddrAddr(k); break;
      case 'S': in.dma = shape(); break;
      case 'C':
        expectWord("cohort=");
        in.imm = integer();
        break;
      case 'X': {
        expect('[');
        skipWs();
        if (peek() != ']') {
          in.table.push_back(integer());
          for (skipWs(); peek() == ','; skipWs()) {
            ++col_;
            in.table.push_back(integer());
          }
        }
        expect(']');
        break;
      }
      case 'T': {
        skipWs();
        in.tokens.push_back(reg('t', kNumTokens, "a token"));
        for (skipWs(); peek() == ','; skipWs()) {
          ++col_;
          in.tokens.push_back(reg('t', kNumTokens, "a token"));
        }
        break;
      }
      }
    }
    endOfLine();
    return in;
  }
};

} // namespace

Kernel parseKernel(std::string_view text, std::string_view source) {
  return Parser(text, source).parse();
}

} // namespace spyre::isa
