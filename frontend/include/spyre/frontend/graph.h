// The Spyre graph IR: a dataflow graph of ATen-level ops with static shapes.
//
// Ops: the table in ops.def (name, operand bounds, attributes, kernel class, SuperDSC opFunc,
// and each op's semantics); ops.h queries it.
// Text form:
//
//   graph(%a: f16[67, 256], %b: f16[67, 256]) {
//     %add = add(%a, %b) : f16[67, 256]
//     %relu = relu(%add) : f16[67, 256]
//     return (%relu)
//   }
//
// After the frontend's passes a node may carry their decisions after its type, e.g.
//   %add = add(%a, %b) : f16[67, 256] {buffer=3, cores=4, splits=[1, 4]}
#pragma once
#include "spyre/isa/data_format.h"
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace spyre::frontend {

struct Value {
  std::string name;
  std::vector<int64_t> shape;
  HostType dtype = HostType::F16;
};

/// A node attribute: a number (`key=1.5`), a list of numbers (`key=[0, 2]`), or a runtime
/// scalar (`key=$k`: the graph's scalar argument k, a number every run passes; compiled code
/// reads it at run time, so one compile serves every value). Only the attributes the kernel
/// builders read as SuperDSC constants take `$k`: a pointwise op's `scalar`, where's `a`/`b`,
/// clamp's `min`/`max`.
struct Attr {
  std::vector<double> values;
  bool isList = false;
  int param = -1; ///< >= 0: the runtime scalar $param (values empty)
  Attr() = default;
  Attr(double v) : values{v} {}
  Attr(std::vector<double> v) : values(std::move(v)), isList(true) {}
  static Attr runtime(int k) {
    Attr a;
    a.param = k;
    return a;
  }
  bool isRuntime() const { return param >= 0; }
  /// The number; Unsupported("runtime scalar $k where a compile-time number is needed") for a
  /// runtime scalar (a builder that cannot take one).
  double scalar() const;
  bool operator==(const Attr &) const = default;
};


struct Node {
  std::string op;                    ///< a name in ops.def
  std::vector<int> inputs;           ///< value ids (tensor operands in order)
  int output = -1;                   ///< value id
  std::map<std::string, Attr> attrs; ///< scalar / list attributes
  /// Decisions of the frontend passes about this node (not semantics): `cores`/`splits` (work
  /// division), `alias` (zero-copy), `lx` (LX address), `buffer` (DDR buffer of the output),
  /// `layout` (the output's device dim map, passes.h DimMap), `relabel` (a transpose / permute
  /// layout propagation made a zero-copy reshape) and `restickify` (a copy it inserted).
  /// Printed after the type as `{key=value, ..}`; parsed back so a pass can be tested alone.
  std::map<std::string, Attr> notes;
};

struct Graph {
  std::vector<Value> values;
  std::vector<int> inputs, outputs;
  std::vector<Node> nodes;

  int addValue(std::string name, std::vector<int64_t> shape, HostType t);
  int addInput(std::string name, std::vector<int64_t> shape, HostType t);
  int addNode(std::string op, std::vector<int> inputs, std::string outName, std::vector<int64_t> shape,
              HostType t, std::map<std::string, Attr> attrs = {});
  /// `base`, or `base_1`, `base_2`, .. : the first name no value has yet.
  std::string freshName(const std::string &base) const;
  /// Index of the node producing value v, or -1 (a graph input or a dead value).
  int producer(int v) const;
  /// Throws spyre::Error naming the node when ids, arities or shapes are inconsistent:
  /// Unsupported("<graph>:L: op 'x' (node %v = x)") for an op ops.def does not have, Error for a
  /// tensor operand count outside the op's bounds (L: the node's line in printGraph's text;
  /// parseGraph reports the line of its own input).
  void verify() const;
};

std::string printGraph(const Graph &g);
/// Runtime scalars of a graph: 1 + the largest $k any node attribute uses (0 without any).
int numRuntimeScalars(const Graph &g);
Graph parseGraph(std::string_view text, std::string_view source = "<graph>");
std::string_view dtypeShortName(HostType t);

} // namespace spyre::frontend
