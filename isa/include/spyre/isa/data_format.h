// Device data formats (torch-spyre's DataFormats enum) and their stick geometry.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spyre {

constexpr int64_t kStickBytes = 128;

// Order and names follow torch-spyre's DataFormats enum.
#define SPYRE_DATA_FORMATS(X)                                                                 \
  X(SEN169_FP16, 64, 2)                                                                       \
  X(IEEE_FP32, 32, 4)                                                                         \
  X(SEN143_FP8, 128, 1)                                                                       \
  X(SEN152_FP8, 128, 1)                                                                       \
  X(SEN153_FP9, 64, 2)                                                                        \
  X(SENINT2, 512, 0)                                                                          \
  X(SENINT4, 256, 0)                                                                          \
  X(SENINT8, 128, 1)                                                                          \
  X(SENINT16, 64, 2)                                                                          \
  X(SENINT24, 32, 4)                                                                          \
  X(IEEE_INT64, 16, 8)                                                                        \
  X(IEEE_INT32, 32, 4)                                                                        \
  X(SENUINT32, 32, 4)                                                                         \
  X(SENUINT2, 512, 0)                                                                         \
  X(IEEE_FP16, 64, 2)                                                                         \
  X(BOOL, 128, 1)                                                                             \
  X(BFLOAT16, 64, 2)                                                                          \
  X(SEN18F_FP24, 32, 4)                                                                       \
  X(INVALID, 0, 0)

enum class DataFormat : uint8_t {
#define X(name, eps, bytes) name,
  SPYRE_DATA_FORMATS(X)
#undef X
};

/// Elements per 128-byte stick (0 for INVALID).
int64_t elemsPerStick(DataFormat f);
/// Bytes per element on the device (sub-byte formats report 0).
int64_t bytesPerElem(DataFormat f);
std::string_view dataFormatName(DataFormat f);
std::optional<DataFormat> parseDataFormat(std::string_view name);

/// Host element types we convert from/to (the torch dtypes the device accepts). F8E4M3 is
/// torch.float8_e4m3fn; the simulator's SEN143_FP8 holds exactly its bytes (1-4-3, bias 7,
/// no infinities, S.1111.111 is NaN, max 448).
enum class HostType : uint8_t { F16, BF16, F32, I32, I64, Bool, I8, I16, U8, F8E4M3 };
std::string_view hostTypeName(HostType t);
int64_t hostTypeBytes(HostType t);
/// torch-spyre's stringToDTDataFormatPair: the device format a host dtype lives in.
DataFormat deviceFormatFor(HostType t);

} // namespace spyre
