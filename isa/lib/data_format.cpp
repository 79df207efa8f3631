#include "spyre/isa/data_format.h"

namespace spyre {

namespace {
/// One row per format, in enum order (SPYRE_DATA_FORMATS), so a lookup is an index.
struct FormatRow {
  DataFormat format;
  int64_t eps, bytes;
  std::string_view name;
};
constexpr FormatRow kFormats[] = {
#define X(n, eps, bytes) {DataFormat::n, eps, bytes, #n},
    SPYRE_DATA_FORMATS(X)
#undef X
};

const FormatRow *row(DataFormat f) {
  for (const FormatRow &r : kFormats)
    if (r.format == f)
      return &r;
  return nullptr;
}
} // namespace

int64_t elemsPerStick(DataFormat f) { return row(f) ? row(f)->eps : 0; }

int64_t bytesPerElem(DataFormat f) { return row(f) ? row(f)->bytes : 0; }

std::string_view dataFormatName(DataFormat f) { return row(f) ? row(f)->name : "INVALID"; }

std::optional<DataFormat> parseDataFormat(std::string_view name) {
#define X(n, eps, bytes)                                                                      \
  if (name == #n)                                                                             \
    return DataFormat::n;
  SPYRE_DATA_FORMATS(X)
#undef X
  return std::nullopt;
}

std::string_view hostTypeName(HostType t) {
  switch (t) {
  case HostType::F16: return "float16";
  case HostType::BF16: return "bfloat16";
  case HostType::F32: return "float32";
  case HostType::I32: return "int32";
  case HostType::I64: return "int64";
  case HostType::Bool: return "bool";
  case HostType::I8: return "int8";
  case HostType::I16: return "int16";
  case HostType::U8: return "uint8";
  case HostType::F8E4M3: return "float8_e4m3fn";
  }
  return "?";
}

int64_t hostTypeBytes(HostType t) {
  switch (t) {
  case HostType::F16: case HostType::BF16: case HostType::I16: return 2;
  case HostType::F32: case HostType::I32: return 4;
  case HostType::I64: return 8;
  case HostType::Bool: case HostType::I8: case HostType::U8: case HostType::F8E4M3: return 1;
  }
  return 0;
}

DataFormat deviceFormatFor(HostType t) {
  switch (t) {
  case HostType::F16: case HostType::BF16: case HostType::Bool: return DataFormat::SEN169_FP16;
  case HostType::F32: return DataFormat::IEEE_FP32;
  case HostType::I32: case HostType::I64: return DataFormat::IEEE_INT32;
  case HostType::I8: return DataFormat::SENINT8;
  case HostType::I16: return DataFormat::SENINT16;
  case HostType::U8: return DataFormat::SENUINT32;
  case HostType::F8E4M3: return DataFormat::SEN143_FP8;
  }
  return DataFormat::INVALID;
}

} // namespace spyre
