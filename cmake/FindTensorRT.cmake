# FindTensorRT
# ------------
# Finds NVIDIA TensorRT's C++ runtime: its headers and, when present, libnvinfer.
#
#   find_package(TensorRT [<version>|<min>...<max>] [REQUIRED] [COMPONENTS nvinfer])
#
# Where it looks: TENSORRT_ROOT (a CMake variable, else the environment
# variable) — `<root>/include/NvInferVersion.h` and `<root>/lib*/libnvinfer*` —
# and nowhere else when TENSORRT_ROOT is set, so the headers and the library
# always come from one installation. Without TENSORRT_ROOT it searches the
# default prefixes (a Debian/RPM install puts TensorRT in /usr).
#
# Components: the headers are always required. `nvinfer` (the library) is
# optional unless listed under COMPONENTS. A root that holds headers but no
# library is found in *headers-only* mode: enough to compile against TensorRT
# (and verify that code compiles), not to link.
#
# Results:
#   TensorRT_FOUND            headers found (and every requested component)
#   TensorRT_INCLUDE_DIRS     the directory holding NvInfer*.h
#   TensorRT_VERSION          MAJOR.MINOR.PATCH from NvInferVersion.h
#   TensorRT_VERSION_MAJOR, TensorRT_VERSION_MINOR, TensorRT_VERSION_PATCH
#   TensorRT_nvinfer_FOUND    libnvinfer found
#   TensorRT_LIBRARIES        libnvinfer, when found
#   TensorRT_HEADERS_ONLY     TRUE when the headers were found but libnvinfer was not
#   TensorRT::headers         INTERFACE target: the include directory (as SYSTEM,
#                             TensorRT's headers carry deprecation warnings)
#   TensorRT::nvinfer         libnvinfer plus TensorRT::headers; defined only
#                             when the library was found
#
# TensorRT's headers include <cuda_runtime_api.h>; the consumer brings CUDA
# (e.g. find_package(CUDAToolkit) and CUDA::cudart).

if(NOT DEFINED TENSORRT_ROOT AND DEFINED ENV{TENSORRT_ROOT})
  set(TENSORRT_ROOT "$ENV{TENSORRT_ROOT}")
endif()
set(TENSORRT_ROOT "${TENSORRT_ROOT}" CACHE PATH "TensorRT installation: the directory holding include/ and lib/")
# TensorRT_SEARCH_ROOT, when the caller sets it, is searched instead of
# TENSORRT_ROOT: the GPU-free implementation's root staged in the build tree,
# or, in an installed etrtConfig.cmake, the root etrt was built against when the
# runner's project names none.
if(TensorRT_SEARCH_ROOT)
  set(_trt_root "${TensorRT_SEARCH_ROOT}")
else()
  set(_trt_root "${TENSORRT_ROOT}")
endif()

# A changed root invalidates what an earlier configure found under the old one.
if(DEFINED _TensorRT_ROOT_SEARCHED AND NOT "${_trt_root}" STREQUAL "${_TensorRT_ROOT_SEARCHED}")
  unset(TensorRT_INCLUDE_DIR CACHE)
  unset(TensorRT_nvinfer_LIBRARY CACHE)
endif()
set(_TensorRT_ROOT_SEARCHED "${_trt_root}" CACHE INTERNAL "root of the last search")

set(_trt_search)
if(_trt_root)
  set(_trt_search HINTS "${_trt_root}" NO_DEFAULT_PATH)
endif()

find_path(TensorRT_INCLUDE_DIR NvInferVersion.h ${_trt_search} PATH_SUFFIXES include include/x86_64-linux-gnu
          include/aarch64-linux-gnu)

# NvInferVersion.h spells the numbers out (10.x: `#define NV_TENSORRT_MAJOR 10`)
# or through another macro (10.16+, 11.x: `#define NV_TENSORRT_MAJOR TRT_MAJOR_ENTERPRISE`).
function(_trt_version_part header part out)
  file(STRINGS "${header}" _line REGEX "^#define NV_TENSORRT_${part} ")
  string(REGEX REPLACE "^#define NV_TENSORRT_${part} +([A-Za-z0-9_]+).*$" "\\1" _value "${_line}")
  if(NOT _value MATCHES "^[0-9]+$" AND _value MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    file(STRINGS "${header}" _line REGEX "^#define ${_value} ")
    string(REGEX REPLACE "^#define ${_value} +([0-9]+).*$" "\\1" _value "${_line}")
  endif()
  if(NOT _value MATCHES "^[0-9]+$")
    set(_value "")
  endif()
  set(${out} "${_value}" PARENT_SCOPE)
endfunction()

if(TensorRT_INCLUDE_DIR)
  _trt_version_part("${TensorRT_INCLUDE_DIR}/NvInferVersion.h" MAJOR TensorRT_VERSION_MAJOR)
  _trt_version_part("${TensorRT_INCLUDE_DIR}/NvInferVersion.h" MINOR TensorRT_VERSION_MINOR)
  _trt_version_part("${TensorRT_INCLUDE_DIR}/NvInferVersion.h" PATCH TensorRT_VERSION_PATCH)
  if(NOT TensorRT_VERSION_MAJOR STREQUAL "" AND NOT TensorRT_VERSION_MINOR STREQUAL ""
     AND NOT TensorRT_VERSION_PATCH STREQUAL "")
    set(TensorRT_VERSION "${TensorRT_VERSION_MAJOR}.${TensorRT_VERSION_MINOR}.${TensorRT_VERSION_PATCH}")
  endif()
endif()

# A library this build makes (the GPU-free implementation, whose root is staged
# in the build tree and has no library yet at configure time): the caller
# names its target in TensorRT_nvinfer_TARGET.
if(TensorRT_nvinfer_TARGET)
  set(TensorRT_nvinfer_LIBRARY "${TensorRT_nvinfer_TARGET}" CACHE FILEPATH "" FORCE)
endif()
# Windows names the library after its major version (nvinfer_10.dll).
find_library(TensorRT_nvinfer_LIBRARY NAMES nvinfer nvinfer_${TensorRT_VERSION_MAJOR} ${_trt_search}
             PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu lib/aarch64-linux-gnu targets/x86_64-linux/lib)
mark_as_advanced(TensorRT_INCLUDE_DIR TensorRT_nvinfer_LIBRARY)

if(TensorRT_nvinfer_LIBRARY)
  set(TensorRT_nvinfer_FOUND TRUE)
  # libnvinfer.so.<major>...: a library of another major than the headers
  # would refuse the runtime at createInferRuntime; say so now.
  get_filename_component(_trt_real "${TensorRT_nvinfer_LIBRARY}" REALPATH)
  if(NOT TensorRT_nvinfer_TARGET AND _trt_real MATCHES "libnvinfer\\.so\\.([0-9]+)" AND TensorRT_VERSION_MAJOR
     AND NOT CMAKE_MATCH_1 STREQUAL TensorRT_VERSION_MAJOR)
    message(WARNING "TensorRT: ${_trt_real} is major version ${CMAKE_MATCH_1} but the headers in "
                    "${TensorRT_INCLUDE_DIR} are ${TensorRT_VERSION}; point TENSORRT_ROOT at one installation.")
  endif()
else()
  set(TensorRT_nvinfer_FOUND FALSE)
endif()

if(NOT TensorRT_INCLUDE_DIR)
  set(_trt_reason "set TENSORRT_ROOT to the TensorRT installation (the directory holding include/NvInferVersion.h)")
elseif(NOT TensorRT_nvinfer_FOUND)
  set(_trt_reason "TENSORRT_ROOT (${TENSORRT_ROOT}) has TensorRT's headers but no libnvinfer in lib/ or lib64/")
else()
  set(_trt_reason "")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(TensorRT
  REQUIRED_VARS TensorRT_INCLUDE_DIR
  VERSION_VAR TensorRT_VERSION
  HANDLE_VERSION_RANGE
  HANDLE_COMPONENTS
  REASON_FAILURE_MESSAGE "${_trt_reason}")

if(TensorRT_FOUND)
  set(TensorRT_INCLUDE_DIRS "${TensorRT_INCLUDE_DIR}")
  if(NOT TARGET TensorRT::headers)
    add_library(TensorRT::headers INTERFACE IMPORTED)
    set_target_properties(TensorRT::headers PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${TensorRT_INCLUDE_DIR}")
  endif()
  if(TensorRT_nvinfer_FOUND)
    set(TensorRT_HEADERS_ONLY FALSE)
    set(TensorRT_LIBRARIES "${TensorRT_nvinfer_LIBRARY}")
    if(NOT TARGET TensorRT::nvinfer AND TensorRT_nvinfer_TARGET)
      add_library(TensorRT::nvinfer INTERFACE IMPORTED)
      set_target_properties(TensorRT::nvinfer PROPERTIES INTERFACE_LINK_LIBRARIES
                                                         "${TensorRT_nvinfer_TARGET};TensorRT::headers")
    elseif(NOT TARGET TensorRT::nvinfer)
      add_library(TensorRT::nvinfer UNKNOWN IMPORTED)
      set_target_properties(TensorRT::nvinfer PROPERTIES IMPORTED_LOCATION "${TensorRT_nvinfer_LIBRARY}"
                                                         INTERFACE_LINK_LIBRARIES TensorRT::headers)
    endif()
  else()
    set(TensorRT_HEADERS_ONLY TRUE)
    set(TensorRT_LIBRARIES "")
    if(NOT TensorRT_FIND_QUIETLY)
      message(STATUS "TensorRT ${TensorRT_VERSION}: HEADERS ONLY (${TensorRT_INCLUDE_DIR}); no libnvinfer under "
                     "${TENSORRT_ROOT}, so code compiles against TensorRT but cannot link")
    endif()
  endif()
endif()
unset(_trt_search)
unset(_trt_root)
unset(_trt_reason)
