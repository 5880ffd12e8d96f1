# etrt_add_test(<name> SOURCES <files...> [LIBS <targets...>] [INCLUDES <dirs...>] [LABELS <labels...>] [GPU])
#
# One GoogleTest executable; each TEST becomes its own CTest test, labelled cpu plus LABELS. It sees src/,
# include/, tools/testing/ (test-support headers such as module_loading.h) and INCLUDES, links LIBS and GoogleTest
# (gtest, gtest_main, gmock: the caller finds GTest), and compiles its C++ with ETRT_WARNINGS.
#
# GPU: a test of the GPU suite (tests/gpu, docs/gpu-testing.md). CUDA sources are allowed (ETRT_WARNINGS are
# GCC's, so only its C++ gets them), it links the CUDA runtime, its tests are labelled gpu instead of cpu, and
# they are listed when ctest runs (on the GPU machine), never at build time.
include_guard(GLOBAL)
include(GoogleTest)

function(etrt_add_test name)
  cmake_parse_arguments(ARG "GPU" "" "SOURCES;LIBS;INCLUDES;LABELS" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "etrt_add_test(${name}): SOURCES is required")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "etrt_add_test(${name}): unexpected arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  set(libs ${ARG_LIBS})
  set(labels cpu ${ARG_LABELS})
  set(discovery)
  if(ARG_GPU)
    list(APPEND libs CUDA::cudart)
    set(labels gpu ${ARG_LABELS})
    set(discovery DISCOVERY_MODE PRE_TEST)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${libs} GTest::gtest GTest::gtest_main GTest::gmock)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include
                                             ${PROJECT_SOURCE_DIR}/tools/testing ${ARG_INCLUDES})
  target_compile_options(${name} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${ETRT_WARNINGS}>")
  # gtest_discover_tests writes the list unescaped; escape it so every label survives.
  string(REPLACE ";" "\\;" labels "${labels}")
  gtest_discover_tests(${name} ${discovery} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${labels}")
endfunction()
