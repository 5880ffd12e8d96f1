# cmake -P script behind the etrt_install_consumer tests (tests/install/CMakeLists.txt).
#
#   BUILD_DIR, PREFIX, CONSUMER_SRC, CONSUMER_BIN, EXECUTORCH_ROOT, GENERATOR, PTE, SANITIZE
#   TENSORRT_ROOT (with SOURCE_DIR, BUILD_TYPE, CXX_COMPILER, CUDA_COMPILER, executorch_DIR): configure and build
#     libetrt (and libetrt_tools, installed beside it) in BUILD_DIR against the TensorRT at TENSORRT_ROOT first, then
#     install and consume it as below.
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
# Only what the consumer's project says counts, not the environment of whoever runs the test.
unset(ENV{TENSORRT_ROOT})

if(TENSORRT_ROOT)
  step(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BUILD_DIR} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
       -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_CUDA_COMPILER=${CUDA_COMPILER} -Dexecutorch_DIR=${executorch_DIR}
       -DETRT_WITH_CUDA=ON -DTENSORRT_ROOT=${TENSORRT_ROOT} "-DETRT_SANITIZE=${SANITIZE}"
       -DETRT_BUILD_TESTS=OFF -DETRT_BUILD_BENCHMARKS=OFF -DETRT_BUILD_EXAMPLES=OFF)
  step(${CMAKE_COMMAND} --build ${BUILD_DIR} --target etrt etrt_tools)
endif()

file(REMOVE_RECURSE ${PREFIX} ${CONSUMER_BIN})
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
# The installed libraries look for their dependencies relative to themselves only: no RUNPATH entry may name a
# directory of the build machine (the build tree, or the virtual environment whose ExecuTorch wheel it used).
file(GLOB installed_libs "${PREFIX}/lib*/libetrt*.so*")
list(LENGTH installed_libs n_libs)
if(n_libs EQUAL 0)
  message(FATAL_ERROR "no libetrt*.so* under ${PREFIX}")
endif()
foreach(lib IN LISTS installed_libs)
  if(IS_SYMLINK "${lib}")
    continue()
  endif()
  if(TENSORRT_ROOT AND lib MATCHES "gpufree")
    message(FATAL_ERROR "${lib} is installed, but an etrt built against TENSORRT_ROOT uses that TensorRT's libnvinfer")
  endif()
  file(READ_ELF "${lib}" RUNPATH runpath RPATH rpath)
  if(rpath)
    message(FATAL_ERROR "${lib} has a DT_RPATH (${rpath}); etrt installs with DT_RUNPATH only")
  endif()
  string(REPLACE ":" ";" entries "${runpath}")
  foreach(entry IN LISTS entries)
    if(NOT entry MATCHES "^\\$ORIGIN(/|$)")
      message(FATAL_ERROR "${lib} has RUNPATH '${runpath}': the entry '${entry}' is not relative to $ORIGIN, so the "
                          "installation depends on the machine that built it (cmake/install.cmake)")
    endif()
  endforeach()
  message(STATUS "${lib}: RUNPATH '${runpath}'")
endforeach()
# A sanitized libetrt needs a sanitized executable (the runtime must come first).
set(flags)
if(SANITIZE)
  set(flags "-DCMAKE_CXX_FLAGS=-fsanitize=${SANITIZE}" "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SANITIZE}")
endif()
# As a user would: the prefixes to search, nothing about TensorRT.
step(${CMAKE_COMMAND} -S ${CONSUMER_SRC} -B ${CONSUMER_BIN} -G ${GENERATOR}
     "-DCMAKE_PREFIX_PATH=${PREFIX}\;${EXECUTORCH_ROOT}" ${flags})
step(${CMAKE_COMMAND} --build ${CONSUMER_BIN})
if(TENSORRT_ROOT)
  # libetrt's RUNPATH is $ORIGIN only, so the loader finds TensorRT's libnvinfer where TensorRT's installation guide
  # puts it: on LD_LIBRARY_PATH (a Debian package's is on the default path).
  step(${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${TENSORRT_ROOT}/lib:$ENV{LD_LIBRARY_PATH}"
       ${CONSUMER_BIN}/consumer ${PTE})

  # A TENSORRT_ROOT that holds no TensorRT overrides the root etrt was built against, and is refused by name.
  set(empty_root ${CONSUMER_BIN}-empty-tensorrt)
  file(REMOVE_RECURSE ${empty_root} ${CONSUMER_BIN}-refused)
  file(MAKE_DIRECTORY ${empty_root})
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_SRC} -B ${CONSUMER_BIN}-refused -G ${GENERATOR}
                          "-DCMAKE_PREFIX_PATH=${PREFIX};${EXECUTORCH_ROOT}" -DTENSORRT_ROOT=${empty_root} ${flags}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX REPLACE "[ \n]+" " " err_text "${err}")
  if(rc EQUAL 0 OR NOT err_text MATCHES "found no TensorRT\\. Set TENSORRT_ROOT")
    message(FATAL_ERROR "find_package(etrt) with TENSORRT_ROOT=${empty_root} (no TensorRT there) should fail and say "
                        "so; it returned ${rc}:\n${out}\n${err}")
  endif()
  message(STATUS "refused as expected: TENSORRT_ROOT=${empty_root}")
else()
  step(${CONSUMER_BIN}/consumer ${PTE})
endif()
