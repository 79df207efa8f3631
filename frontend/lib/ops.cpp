#include "spyre/frontend/ops.h"
#include "spyre/isa/error.h"
#include <array>
#include <map>
#include <string>

namespace spyre::frontend {

namespace {
constexpr std::array kOps = {
#define OP(Id, name, minIn, maxIn, cls, opFunc, attrs) OpInfo{OpId::Id, name, minIn, maxIn, OpClass::cls, opFunc, attrs},
#include "spyre/frontend/ops.def"
#undef OP
};
} // namespace

bool OpInfo::allowsAttr(std::string_view key) const {
  for (size_t b = 0; b < attrs.size();) {
    size_t e = attrs.find(' ', b);
    if (e == std::string_view::npos)
      e = attrs.size();
    if (attrs.substr(b, e - b) == key)
      return true;
    b = e + 1;
  }
  return false;
}

const OpInfo *findOp(std::string_view name) {
  static const std::map<std::string_view, const OpInfo *> byName = [] {
    std::map<std::string_view, const OpInfo *> m;
    for (const OpInfo &o : kOps)
      m[o.name] = &o;
    return m;
  }();
  auto it = byName.find(name);
  return it == byName.end() ? nullptr : it->second;
}

const OpInfo &opInfo(std::string_view name) {
  if (const OpInfo *o = findOp(name))
    return *o;
  throw Unsupported("op '" + std::string(name) + "'");
}

bool isOp(std::string_view name, OpId id) {
  const OpInfo *o = findOp(name);
  return o && o->id == id;
}

bool isOpClass(std::string_view name, OpClass cls) {
  const OpInfo *o = findOp(name);
  return o && o->cls == cls;
}

} // namespace spyre::frontend
