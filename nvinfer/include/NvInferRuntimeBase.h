#pragma once
// The GPU-free NvInfer implementation: base vocabulary (types, enums, logger,
// error recorder). Names, signatures and enumerator values follow TensorRT's
// public API for every declaration here; the declarations are this project's
// own. See ../README.md for what is implemented and how it behaves.

#include <cstddef>
#include <cstdint>

#include "NvInferVersion.h"

// The CUDA runtime spells a stream this way; repeating the same typedef is
// harmless where cuda_runtime_api.h is also included, and lets this header
// stand without the CUDA toolkit.
struct CUstream_st;
typedef struct CUstream_st* cudaStream_t;

namespace nvinfer1 {

using AsciiChar = char;

enum class DataType : int32_t {
  kFLOAT = 0,
  kHALF = 1,
  kINT8 = 2,
  kINT32 = 3,
  kBOOL = 4,
  kUINT8 = 5,
  kFP8 = 6,
  kBF16 = 7,
  kINT64 = 8,
  kINT4 = 9,
  kFP4 = 10,
  kE8M0 = 11,
};

class Dims64 {
 public:
  static constexpr int32_t MAX_DIMS{8};
  int32_t nbDims;
  int64_t d[MAX_DIMS];
};
using Dims = Dims64;

enum class TensorIOMode : int32_t {
  kNONE = 0,
  kINPUT = 1,
  kOUTPUT = 2,
};

enum class TensorLocation : int32_t {
  kDEVICE = 0,
  kHOST = 1,
};

enum class TensorFormat : int32_t {
  kLINEAR = 0,
  kCHW2 = 1,
  kHWC8 = 2,
  kCHW4 = 3,
  kCHW16 = 4,
  kCHW32 = 5,
  kDHWC8 = 6,
  kCDHW32 = 7,
  kHWC = 8,
  kDLA_LINEAR = 9,
  kDLA_HWC4 = 10,
  kHWC16 = 11,
  kDHWC = 12,
};

enum class ErrorCode : int32_t {
  kSUCCESS = 0,
  kUNSPECIFIED_ERROR = 1,
  kINTERNAL_ERROR = 2,
  kINVALID_ARGUMENT = 3,
  kINVALID_CONFIG = 4,
  kFAILED_ALLOCATION = 5,
  kFAILED_INITIALIZATION = 6,
  kFAILED_EXECUTION = 7,
  kFAILED_COMPUTATION = 8,
  kINVALID_STATE = 9,
  kUNSUPPORTED_STATE = 10,
};

class ILogger {
 public:
  enum class Severity : int32_t {
    kINTERNAL_ERROR = 0,
    kERROR = 1,
    kWARNING = 2,
    kINFO = 3,
    kVERBOSE = 4,
  };
  virtual void log(Severity severity, AsciiChar const* msg) noexcept = 0;

  ILogger() = default;
  virtual ~ILogger() = default;

 protected:
  ILogger(ILogger const&) = default;
  ILogger(ILogger&&) = default;
  ILogger& operator=(ILogger const&) & = default;
  ILogger& operator=(ILogger&&) & = default;
};

// Receives the errors of the objects it is set on. The implementation calls
// reportError() once per failed call, before the call returns its failure.
class IErrorRecorder {
 public:
  using ErrorDesc = char const*;
  static constexpr size_t kMAX_DESC_LENGTH{127U};
  using RefCount = int32_t;

  IErrorRecorder() = default;
  virtual ~IErrorRecorder() noexcept = default;

  virtual int32_t getNbErrors() const noexcept = 0;
  virtual ErrorCode getErrorCode(int32_t errorIdx) const noexcept = 0;
  virtual ErrorDesc getErrorDesc(int32_t errorIdx) const noexcept = 0;
  virtual bool hasOverflowed() const noexcept = 0;
  virtual void clear() noexcept = 0;
  virtual bool reportError(ErrorCode val, ErrorDesc desc) noexcept = 0;
  virtual RefCount incRefCount() noexcept = 0;
  virtual RefCount decRefCount() noexcept = 0;

 protected:
  IErrorRecorder(IErrorRecorder const&) = default;
  IErrorRecorder(IErrorRecorder&&) = default;
  IErrorRecorder& operator=(IErrorRecorder const&) & = default;
  IErrorRecorder& operator=(IErrorRecorder&&) & = default;
};

}  // namespace nvinfer1
