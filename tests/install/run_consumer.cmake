# cmake -P script behind the etrt_install_consumer test.
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
file(REMOVE_RECURSE ${PREFIX} ${CONSUMER_BIN})
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
# A sanitized libetrt needs a sanitized executable (the runtime must come first).
set(flags)
if(SANITIZE)
  set(flags "-DCMAKE_CXX_FLAGS=-fsanitize=${SANITIZE}" "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SANITIZE}")
endif()
step(${CMAKE_COMMAND} -S ${CONSUMER_SRC} -B ${CONSUMER_BIN} -G ${GENERATOR}
     "-DCMAKE_PREFIX_PATH=${PREFIX}\;${EXECUTORCH_ROOT}" ${flags})
step(${CMAKE_COMMAND} --build ${CONSUMER_BIN})
step(${CONSUMER_BIN}/consumer ${PTE})
