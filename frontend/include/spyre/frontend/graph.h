// The Spyre graph IR: a dataflow graph of ATen-level ops with static shapes.
//
// Ops (the contract with python/torch_spyre/_compile.py; the frontend raises Unsupported with
// the node named for anything it cannot compile yet):
//   elementwise binary, numpy broadcasting between tensor operands; `scalar=v` replaces the
//   second operand by a constant:  add sub mul div maximum minimum
//   comparisons (output dtype bool): eq ne lt le gt ge
//   where(%cond, %a, %b); `a=v` / `b=v` replace a missing tensor operand by a constant
//   unary: neg abs relu floor sqrt rsqrt reciprocal exp log tanh sigmoid silu clone
//   expand(%x): materialised numpy broadcast of x to the output shape
//          gelu(approximate=0 erf | 1 tanh), softplus(beta=, threshold=), clamp(min=, max=)
//   reductions: sum mean amax amin (dims=[..], keepdim=0|1)
//   matmul(%a, %b): [.., M, K] x [.., K, N]
//   to_dtype(%x): the output's dtype (f16/bf16 <-> f32)
//   transpose(%x): swaps the last two dims (fp16/bf16, rank 2-4), materialised
//   slice(%x, dim=d, start=s, end=e): x[.., s:e, ..] on dim d (step 1), materialised; on the last
//     dim an offset that is not a stick multiple is fp16/bf16 only
//   permute(%x, dims=[p0, ..]): output dim k = x's dim p_k, materialised (a new last dim is
//     fp16/bf16 only)
//   reshape(%x): x's elements in row-major order in the output shape; compiled where the two
//     generic stick layouts put every element at the same device bytes (a buffer copy)
//   cat(%a, %b, .., dim=d): the operands joined along d (on the last dim at offsets inside a
//     stick fp16/bf16 only)
//   select(%x, dim=d, index=i): x[.., i, ..] without dim d (decomposed: slice + squeeze)
//   constant_pad_nd(%x, pad=[l, r, ..], value=v): torch's pad list, last dim first; pads >= 0
//     (decomposed: fills + copy_into / cat; along the last dim at offsets inside a stick fp16/bf16)
//   full(value=v): a constant of the output's type (v finite)
//   copy_into(%fill, %x, offsets=[..]): fill broadcast to the output, x written at offsets (the
//     last dim whole: offset 0, x's full width)
//   layer norm over the last dim (torch-spyre's three ops; x f16/bf16/f32, rank 1-4):
//     exx2(%x) : f32[.., 2]                  per row E[x] and E[x^2] (fp32 accumulation)
//     layernormscale(%s, eps=e) : f32[.., 1]  per row rsqrt(E[x^2] - E[x]^2 + eps)
//     layernormnorm(%x, %s, %r[, %w][, %b]) : x's type   (x - E[x]) * rstd * w + b; w, b are
//       [C] tensors of x's dtype; weight=0 / bias=0 drop them (constant 1 / 0)
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

/// A node attribute: a number (`key=1.5`) or a list of numbers (`key=[0, 2]`).
struct Attr {
  std::vector<double> values;
  bool isList = false;
  Attr() = default;
  Attr(double v) : values{v} {}
  Attr(std::vector<double> v) : values(std::move(v)), isList(true) {}
  double scalar() const { return values.empty() ? 0.0 : values[0]; }
  bool operator==(const Attr &) const = default;
};

struct Node {
  std::string op;                    ///< see the op list below
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
  /// Throws spyre::Error naming the node when ids, arities or shapes are inconsistent.
  void verify() const;
};

std::string printGraph(const Graph &g);
Graph parseGraph(std::string_view text, std::string_view source = "<graph>");
std::string_view dtypeShortName(HostType t);

} // namespace spyre::frontend
