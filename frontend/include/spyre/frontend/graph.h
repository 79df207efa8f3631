// The Spyre graph IR: a dataflow graph of ATen-level ops with static shapes. Text form:
//
//   graph(%a: f16[67, 256], %b: f16[67, 256]) {
//     %add = add(%a, %b) : f16[67, 256]
//     %relu = relu(%add) : f16[67, 256]
//     return (%relu)
//   }
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

struct Node {
  std::string op;                      ///< ATen-level name: add, sub, mul, relu, neg, abs, clone
  std::vector<int> inputs;             ///< value ids
  int output = -1;                     ///< value id
  std::map<std::string, double> attrs; ///< scalar attributes (e.g. alpha)
};

struct Graph {
  std::vector<Value> values;
  std::vector<int> inputs, outputs;
  std::vector<Node> nodes;

  int addValue(std::string name, std::vector<int64_t> shape, HostType t);
  int addInput(std::string name, std::vector<int64_t> shape, HostType t);
  int addNode(std::string op, std::vector<int> inputs, std::string outName, std::vector<int64_t> shape,
              HostType t, std::map<std::string, double> attrs = {});
  /// Throws spyre::Error naming the node when ids, arities or shapes are inconsistent.
  void verify() const;
};

std::string printGraph(const Graph &g);
Graph parseGraph(std::string_view text, std::string_view source = "<graph>");
std::string_view dtypeShortName(HostType t);

} // namespace spyre::frontend
