#include "spyre/isa/data_format.h"

namespace spyre {

int64_t elemsPerStick(DataFormat f) {
  switch (f) {
#define X(name, eps, bytes)                                                                   \
  case DataFormat::name:                                                                      \
    return eps;
    SPYRE_DATA_FORMATS(X)
#undef X
  }
  return 0;
}

int64_t bytesPerElem(DataFormat f) {
  switch (f) {
#define X(name, eps, bytes)                                                                   \
  case DataFormat::name:                                                                      \
    return bytes;
    SPYRE_DATA_FORMATS(X)
#undef X
  }
  return 0;
}

std::string_view dataFormatName(DataFormat f) {
  switch (f) {
#define X(name, eps, bytes)                                                                   \
  case DataFormat::name:                                                                      \
    return #name;
    SPYRE_DATA_FORMATS(X)
#undef X
  }
  return "INVALID";
}

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
  }
  return "?";
}

int64_t hostTypeBytes(HostType t) {
  switch (t) {
  case HostType::F16: case HostType::BF16: case HostType::I16: return 2;
  case HostType::F32: case HostType::I32: return 4;
  case HostType::I64: return 8;
  case HostType::Bool: case HostType::I8: case HostType::U8: return 1;
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
  }
  return DataFormat::INVALID;
}

} // namespace spyre
