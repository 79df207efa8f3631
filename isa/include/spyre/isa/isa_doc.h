// docs/isa.md, generated: the instruction reference comes from instructions.def (one row per
// instruction), costs from HardwareConfig, and the prose sections live in isa_doc.cpp so the
// document changes together with the code it describes.
#pragma once
#include "spyre/isa/hardware_config.h"
#include "spyre/isa/program.h"
#include <string>
#include <vector>

namespace spyre::isa {

/// A checked-in hand-written kernel whose static timing docs/isa.md reports.
struct DocKernel {
  std::string file; ///< as shown in the document, e.g. "tests/kernels/vector_add_32.lst"
  Kernel kernel;
};

/// The Markdown of docs/isa.md for `hw`; `examples` adds the timing section of hand-written
/// kernels (computed here with timeKernel, so the numbers follow the model and `hw`), and the
/// one named add_relu_mul.lst is the listing-syntax section's example.
std::string generateIsaDoc(const HardwareConfig &hw, const std::vector<DocKernel> &examples = {});

/// The assembly syntax of one instruction derived from its operand kinds, e.g.
/// "add.{dl16,f32} vd, va, vb" or "dma.in lx[ra+off], ddr[arg+rb+off], shape=(n2,n1,n0) -> tK".
std::string instructionSyntax(const OpInfo &info);

} // namespace spyre::isa
