// Listing printer: Kernel -> the text form that parseKernel (listing.cpp) reads back.
#include "spyre/isa/listing.h"
#include "spyre/isa/limits.h"
#include <charconv>
#include <cstring>
#include <sstream>

namespace spyre::isa {

// ---------------------------------------------------------------------------------------------
// Printer
// ---------------------------------------------------------------------------------------------
std::string hexText(int64_t v) {
  std::ostringstream os;
  if (v < 0)
    os << "-0x" << std::hex << -static_cast<uint64_t>(v);
  else
    os << "0x" << std::hex << v;
  return os.str();
}

namespace {

std::string floatText(float f) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, f);
  return std::string(buf, r.ptr);
}

} // namespace

std::string lxText(const LxAddr &a) {
  if (a.base < 0)
    return "lx[" + hexText(a.offset) + "]";
  std::string s = "lx[r" + std::to_string(a.base);
  if (a.offset != 0)
    s += (a.offset < 0 ? "" : "+") + hexText(a.offset); // "-0x.." for a negative offset
  return s + "]";
}

std::string ddrText(const DdrAddr &a, const Kernel &k) {
  std::string s = "ddr[" + (a.arg >= 0 && a.arg < static_cast<int>(k.args.size())
                                ? k.args[a.arg]
                                : "arg" + std::to_string(a.arg));
  if (a.base >= 0)
    s += "+r" + std::to_string(a.base);
  if (a.offset != 0)
    s += (a.offset < 0 ? "" : "+") + hexText(a.offset); // "-0x.." for a negative offset
  return s + "]";
}

std::string shapeText(const DmaShape &d) {
  std::string s = "shape=(" + std::to_string(d.n[0]) + "," + std::to_string(d.n[1]) + "," +
                  std::to_string(d.n[2]) + ")";
  auto dense = DmaShape::dense(d.n);
  if (d.ddrStride != dense)
    s += ", ddr.stride=(" + std::to_string(d.ddrStride[0]) + "," + std::to_string(d.ddrStride[1]) + ")";
  if (d.lxStride != dense)
    s += ", lx.stride=(" + std::to_string(d.lxStride[0]) + "," + std::to_string(d.lxStride[1]) + ")";
  return s;
}

namespace {

/// Appends `in`'s own line; a loop's ends in " N {" (printInstr adds its body and "}").
void appendLine(std::string &s, const Instr &in, const Kernel &k, int indent) {
  const OpInfo &info = opInfo(in.op);
  s.append(indent, ' ');
  std::string mn(info.mnemonic);
  if (in.fmt != Format::None)
    mn += "." + std::string(formatName(in.fmt));
  s += mn;
  std::string_view ops = info.operands;
  int vi = 0, ri = 0, fi = 0, ii = 0, li = 0;
  bool first = true;
  size_t pos = 0;
  while (pos < ops.size()) {
    char kind = ops[pos];
    pos += 2;
    std::string t;
    switch (kind) {
    case 'V': t = "v" + std::to_string(in.v[vi++]); break;
    case 'R': t = "r" + std::to_string(in.r[ri++]); break;
    case 'I': t = std::to_string(ii == 0 ? in.imm : in.imms[ii - 1]); ++ii; break;
    case 'F': t = floatText(fi++ == 0 ? in.fimm : in.fimm2); break;
    case 'L': t = lxText(li == 0 ? in.lx : li == 1 ? in.lx2 : in.lx3); ++li; break;
    case 'D': t = ddrText(in.ddr, k); break;
    case 'S': t = shapeText(in.dma); break;
    case 'C': t = "cohort=" + std::to_string(in.imm); break;
    case 'X': {
      t = "[";
      for (size_t i = 0; i < in.table.size(); ++i)
        t += (i ? ", " : "") + std::to_string(in.table[i]);
      t += "]";
      break;
    }
    case 'T':
      for (size_t i = 0; i < in.tokens.size(); ++i)
        t += (i ? ", t" : "t") + std::to_string(in.tokens[i]);
      break;
    case 'O':
      s += " -> t" + std::to_string(in.outToken);
      continue;
    case 'N': {
      s += " " + std::to_string(in.imm) + " {\n";
      return;
    }
    }
    if (first) {
      s.append(std::max<size_t>(1, 10 > mn.size() ? 10 - mn.size() : 1), ' ');
      first = false;
    } else {
      s += ", ";
    }
    s += t;
  }
  s += "\n";
}

/// Indentation grows 4 columns per loop up to the deepest nest the limits accept and stays there:
/// a deeper kernel built in memory still prints in linear size (the parser ignores indentation).
constexpr int kMaxIndent = 4 * (kKernelLimits.maxLoopDepth + 1);

} // namespace

std::string printInstr(const Instr &in, const Kernel &k, int indent) {
  std::string s;
  appendLine(s, in, k, indent);
  if (in.op != Opcode::Loop)
    return s;
  // Iterative (an explicit stack, like forEachNested): any depth.
  struct Frame {
    const std::vector<Instr> *body;
    size_t next;
    int indent; ///< of the loop that owns `body`
  };
  std::vector<Frame> stack{{&in.body, 0, indent}};
  while (!stack.empty()) {
    Frame &f = stack.back();
    if (f.next == f.body->size()) {
      s.append(f.indent, ' ');
      s += "}\n";
      stack.pop_back();
      continue;
    }
    const Instr &b = (*f.body)[f.next++];
    const int inner = std::min(f.indent + 4, std::max(kMaxIndent, indent + 4));
    appendLine(s, b, k, inner);
    if (b.op == Opcode::Loop)
      stack.push_back({&b.body, 0, inner}); // invalidates f
  }
  return s;
}

std::string printKernel(const Kernel &k) {
  std::string s;
  if (!k.comment.empty())
    s += "; " + k.comment + "\n";
  s += ".kernel " + k.name + " cores=" + std::to_string(k.numCores) + "\n";
  s += ".args";
  for (const auto &a : k.args)
    s += " " + a;
  s += "\n";
  if (!k.scalarArgs.empty()) {
    s += ".scalars";
    for (const auto &a : k.scalarArgs)
      s += " $" + std::to_string(a.index) + ":" + std::string(formatName(a.fmt));
    s += "\n";
  }
  for (const auto &p : k.programs) {
    s += ".core " + std::to_string(p.firstCore);
    if (p.lastCore != p.firstCore)
      s += ".." + std::to_string(p.lastCore);
    s += "\n";
    for (const auto &in : p.body)
      s += printInstr(in, k, 4);
  }
  return s;
}

} // namespace spyre::isa
