#include "engine/tensorrt/nvinfer_io.h"

#include "engine/tensorrt/nvinfer_compat.h"

#include <string_view>
#include <unordered_map>

#include "common/utf8.h"

namespace etrt::engine::tensorrt {
namespace {

// NvInfer's element types that etrt names: TensorRT's spelling of each and, for those etrt binds, etrt's own type.
// By value, so that the enumerators an older header lacks need not be named: 8.6 has none of kBF16 = 7, kINT64 = 8
// and kINT4 = 9; 10.1 lacks kFP4 = 10 and kE8M0 = 11.
struct TypeRow {
  int32_t trt;  // the nvinfer1::DataType
  const char* name;
  bool bindable;
  DataType etrt;  // when bindable
};
constexpr int32_t value_of(nvinfer1::DataType t) { return static_cast<int32_t>(t); }
constexpr TypeRow kTypes[] = {
    {value_of(nvinfer1::DataType::kFLOAT), "FLOAT", true, DataType::kFloat32},
    {value_of(nvinfer1::DataType::kHALF), "HALF", true, DataType::kFloat16},
    {7, "BF16", true, DataType::kBFloat16},
    {value_of(nvinfer1::DataType::kINT8), "INT8", true, DataType::kInt8},
    {value_of(nvinfer1::DataType::kUINT8), "UINT8", true, DataType::kUInt8},
    {value_of(nvinfer1::DataType::kINT32), "INT32", true, DataType::kInt32},
    {8, "INT64", true, DataType::kInt64},
    {value_of(nvinfer1::DataType::kBOOL), "BOOL", true, DataType::kBool},
    {value_of(nvinfer1::DataType::kFP8), "FP8", false, DataType::kFloat32},
    {9, "INT4", false, DataType::kFloat32},
    {10, "FP4", false, DataType::kFloat32},
    {11, "E8M0", false, DataType::kFloat32},
};

// The row of `t`, or nullptr for a type this table does not name.
const TypeRow* find_type(nvinfer1::DataType t) {
  for (const TypeRow& row : kTypes)
    if (row.trt == value_of(t)) return &row;
  return nullptr;
}

// The refusal of an IO tensor whose element type etrt does not bind.
Error refuse_type(int32_t i, const char* shown, nvinfer1::DataType type, Diagnostic& why) {
  why.clear();
  why.append("engine IO tensor %d '%s' has element type ", i, shown);
  const TypeRow* row = find_type(type);
  if (row != nullptr) {
    why.append("%s", row->name);
  } else {
    why.append("nvinfer1::DataType %d", value_of(type));
  }
  why.append(
      ", which etrt cannot bind (it binds FLOAT, HALF, BF16, INT8, UINT8, INT32, INT64 and BOOL); rebuild the "
      "engine with a supported type at the network boundary, e.g. cast to HALF before the output");
  return Error::NotSupported;
}

}  // namespace

Shape to_shape(const nvinfer1::Dims& d) {
  Shape s;
  s.rank = d.nbDims;
  for (int32_t i = 0; i < d.nbDims; ++i) s.d[i] = d.d[i];
  return s;
}

// Fills each output's aliased_input from the engine's own alias table.
Error describe_aliases(nvinfer1::ICudaEngine& engine, std::vector<TensorDesc>* io, Diagnostic& why) {
  if (!nv::kHasAliasedOutputs) return Error::Ok;
  std::unordered_map<std::string_view, int32_t> inputs;  // by name: linear in the number of IO tensors
  for (size_t i = 0; i < io->size(); ++i)
    if ((*io)[i].is_input) inputs.emplace((*io)[i].name, static_cast<int32_t>(i));
  for (TensorDesc& desc : *io) {
    if (desc.is_input) continue;
    const char* input = nv::aliased_input_tensor(engine, desc.name.c_str());
    if (input == nullptr) continue;
    const auto found = inputs.find(input);
    if (found != inputs.end()) desc.aliased_input = found->second;
    if (desc.aliased_input < 0) {
      return fail(why, Error::NotSupported,
                  "engine output '%s' aliases '%s' (getAliasedInputTensor), which is not an input of the engine",
                  desc.display_name.c_str(), escape_name(input).c_str());
    }
  }
  return Error::Ok;
}

Error describe_io(nvinfer1::ICudaEngine& engine, std::vector<TensorDesc>* io, Diagnostic& why) {
  const int32_t count = engine.getNbIOTensors();
  const int32_t profiles = engine.getNbOptimizationProfiles();
  io->resize(static_cast<size_t>(count));
  for (int32_t i = 0; i < count; ++i) {
    TensorDesc& desc = (*io)[static_cast<size_t>(i)];
    const char* name = engine.getIOTensorName(i);
    if (name == nullptr) return fail(why, Error::Internal, "engine IO tensor %d of %d has no name", i, count);
    desc.name = name;
    desc.display_name = escape_name(desc.name);
    const char* shown = desc.display_name.c_str();

    const nvinfer1::TensorIOMode mode = engine.getTensorIOMode(name);
    if (mode == nvinfer1::TensorIOMode::kNONE) {
      return fail(why, Error::Internal,
                  "engine IO tensor %d '%s' is neither an input nor an output (getTensorIOMode returned kNONE)", i,
                  shown);
    }
    desc.is_input = mode == nvinfer1::TensorIOMode::kINPUT;

    const nvinfer1::DataType type = engine.getTensorDataType(name);
    const TypeRow* row = find_type(type);
    if (row == nullptr || !row->bindable) return refuse_type(i, shown, type, why);
    desc.dtype = row->etrt;

    const nvinfer1::Dims dims = engine.getTensorShape(name);
    if (dims.nbDims < 0 || dims.nbDims > kMaxRank) {
      return fail(why, Error::Internal,
                  "engine IO tensor %d '%s' has no usable shape (getTensorShape returned rank %d)", i, shown,
                  dims.nbDims);
    }
    desc.shape = to_shape(dims);
    desc.is_shape_tensor = engine.isShapeInferenceIO(name);

    // etrt binds every tensor to device memory (staging host tensors itself); a tensor TensorRT expects in host
    // memory would be read from the wrong address space. Shape tensors are refused by the backend, with its own words.
    if (!desc.is_shape_tensor && engine.getTensorLocation(name) == nvinfer1::TensorLocation::kHOST) {
      return fail(why, Error::NotSupported,
                  "engine IO tensor %d '%s' is placed on the host by TensorRT (getTensorLocation returned kHOST) and "
                  "is not a shape tensor; etrt binds device memory only: rebuild the engine so this tensor stays on "
                  "the device (e.g. make it a regular tensor input instead of a host-computed one)",
                  i, shown);
    }

    // etrt hands TensorRT dense row-major buffers; a vectorized layout (kHWC8,
    // kCHW32, ...) would read them wrongly, so refuse it here rather than at run.
    for (int32_t p = 0; p < profiles && !desc.is_shape_tensor; ++p) {
      if (nv::tensor_format(engine, name, p) != nvinfer1::TensorFormat::kLINEAR) {
        const char* format = nv::tensor_format_desc(engine, name, p);
        return fail(why, Error::NotSupported,
                    "engine IO tensor %d '%s' uses a non-linear layout under profile %d (%s); etrt binds dense "
                    "row-major tensors only: build the engine with kLINEAR IO formats (the default; drop "
                    "BuilderConfig/ITensor::setAllowedFormats for IO tensors)",
                    i, shown, p, format != nullptr ? format : "unknown");
      }
    }
  }
  return Error::Ok;
}

}  // namespace etrt::engine::tensorrt
