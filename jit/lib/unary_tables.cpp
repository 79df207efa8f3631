// The DL16 unary tables (unary_tables.h): storage, filling, and their symbols for JIT code.
#include "unary_tables.h"
#include "spyre/isa/dl16.h"
#include "spyre/isa/semantics.h"
#include <mutex>

namespace spyre::jit {

namespace orc = llvm::orc;

namespace {
alignas(64) float unaryTables[kUnaryTableRows][1u << kUnaryTableBits];
std::once_flag unaryFilled[kUnaryTableRows];
} // namespace

const float *unaryTableRow(unsigned row) {
  std::call_once(unaryFilled[row], [row] {
    float x[isa::kLanes], y[isa::kLanes], unused[isa::kLanes];
    for (uint32_t c0 = 0; c0 < 0x10000; c0 += isa::kLanes) {
      for (unsigned l = 0; l < isa::kLanes; ++l)
        x[l] = dl16::toFloat(static_cast<uint16_t>(c0 + l));
      isa::sfpApply(kUnaryTableOps[row], isa::Format::DL16, y, unused, x, x, x, 0.0f, 0.0f);
      for (unsigned l = 0; l < isa::kLanes; ++l)
        unaryTables[row][dl16::floatBits(x[l]) >> 14] = y[l];
    }
  });
  return unaryTables[row];
}

namespace {
class UnaryTableGenerator : public orc::DefinitionGenerator {
public:
  llvm::Error tryToGenerate(orc::LookupState &, orc::LookupKind, orc::JITDylib &jd, orc::JITDylibLookupFlags,
                            const orc::SymbolLookupSet &names) override {
    orc::SymbolMap syms;
    for (const auto &kv : names)
      for (unsigned row = 0; row < kUnaryTableRows; ++row)
        if (*kv.first == unaryTableSymbol(row))
          syms[kv.first] = {orc::ExecutorAddr::fromPtr(unaryTableRow(row)), llvm::JITSymbolFlags::Exported};
    return syms.empty() ? llvm::Error::success() : jd.define(orc::absoluteSymbols(std::move(syms)));
  }
};
} // namespace

std::unique_ptr<orc::DefinitionGenerator> unaryTableGenerator() { return std::make_unique<UnaryTableGenerator>(); }

} // namespace spyre::jit
