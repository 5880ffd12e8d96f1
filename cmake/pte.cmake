# etrt_add_pte(<target> SPEC <spec.json> OUTPUT <file.pte> [DEPENDS <files...>]
#              [DELEGATE_STORAGE segment|inline])
#
# Generates an ExecuTorch .pte at build time from a JSON spec with etrt's
# packer (the package python/etrt/pte/, docs/pte-packer.md):
#
#   ${ETRT_PYTHON} -m etrt.pte --spec <spec> --out <file.pte>
#
# and adds the custom target <target> (part of ALL) that builds it. Blob files
# named in the spec are tracked through a depfile, so editing one regenerates
# the .pte; DEPENDS adds anything else (e.g. a blob produced by another rule).
#
# ETRT_PYTHON defaults to ${PROJECT_SOURCE_DIR}/.venv/bin/python. The packer
# needs the executorch wheel's flatc and schema; they are located from the
# executorch package CMake found (ETRT_PTE_FLATC / ETRT_PTE_SCHEMA_DIR, passed
# to the packer as ETRT_FLATC / ETRT_EXECUTORCH_SCHEMA_DIR), so any Python 3
# works as ETRT_PYTHON.
include_guard(GLOBAL)

set(ETRT_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python"
    CACHE FILEPATH "Python 3 interpreter that runs etrt's .pte packer at build time")

# Locate flatc and program.fbs next to the executorch package in use.
function(_etrt_pte_find_tools)
  set(_roots)
  if(executorch_DIR)
    get_filename_component(_d "${executorch_DIR}" ABSOLUTE)
    foreach(_i RANGE 4)
      list(APPEND _roots "${_d}")
      get_filename_component(_d "${_d}" DIRECTORY)
    endforeach()
  endif()
  file(GLOB _venv_roots "${PROJECT_SOURCE_DIR}/.venv/lib/python3*/site-packages/executorch")
  list(APPEND _roots ${_venv_roots})
  set(_flatc "")
  set(_schema "")
  foreach(_r IN LISTS _roots)
    if(NOT _flatc AND EXISTS "${_r}/data/bin/flatc")
      set(_flatc "${_r}/data/bin/flatc")
    endif()
    if(NOT _schema AND EXISTS "${_r}/exir/_serialize/program.fbs"
       AND EXISTS "${_r}/exir/_serialize/scalar_type.fbs")
      set(_schema "${_r}/exir/_serialize")
    endif()
  endforeach()
  set(ETRT_PTE_FLATC "${_flatc}" CACHE FILEPATH
      "flatc used by etrt_add_pte (empty: let the packer search its interpreter and PATH)")
  set(ETRT_PTE_SCHEMA_DIR "${_schema}" CACHE PATH
      "Directory with ExecuTorch's program.fbs + scalar_type.fbs used by etrt_add_pte")
endfunction()
_etrt_pte_find_tools()

function(etrt_add_pte target)
  cmake_parse_arguments(ARG "" "SPEC;OUTPUT;DELEGATE_STORAGE" "DEPENDS" ${ARGN})
  if(NOT ARG_SPEC OR NOT ARG_OUTPUT)
    message(FATAL_ERROR "etrt_add_pte(${target}): SPEC and OUTPUT are required")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "etrt_add_pte(${target}): unexpected arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT EXISTS "${ETRT_PYTHON}")
    message(FATAL_ERROR "etrt_add_pte(${target}): ETRT_PYTHON=${ETRT_PYTHON} does not exist; "
                        "run scripts/bootstrap.sh or pass -DETRT_PYTHON=<python3>")
  endif()
  get_filename_component(_spec "${ARG_SPEC}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  get_filename_component(_out "${ARG_OUTPUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  set(_env "PYTHONPATH=${PROJECT_SOURCE_DIR}/python")
  if(ETRT_PTE_FLATC)
    list(APPEND _env "ETRT_FLATC=${ETRT_PTE_FLATC}")
  endif()
  if(ETRT_PTE_SCHEMA_DIR)
    list(APPEND _env "ETRT_EXECUTORCH_SCHEMA_DIR=${ETRT_PTE_SCHEMA_DIR}")
  endif()
  set(_extra)
  if(ARG_DELEGATE_STORAGE)
    list(APPEND _extra --delegate-storage ${ARG_DELEGATE_STORAGE})
  endif()
  set(_depfile_args)
  set(_depfile_opt)
  if(CMAKE_GENERATOR MATCHES "Ninja|Makefiles")
    set(_depfile_args --depfile "${_out}.d")
    set(_depfile_opt DEPFILE "${_out}.d")
  endif()
  add_custom_command(
    OUTPUT "${_out}"
    COMMAND ${CMAKE_COMMAND} -E env ${_env}
            "${ETRT_PYTHON}" -m etrt.pte --spec "${_spec}" --out "${_out}" ${_depfile_args} ${_extra}
    DEPENDS "${_spec}" ${ARG_DEPENDS}
            "${PROJECT_SOURCE_DIR}/python/etrt/__init__.py" "${PROJECT_SOURCE_DIR}/python/etrt/dtypes.py"
            "${PROJECT_SOURCE_DIR}/python/etrt/pte/__init__.py" "${PROJECT_SOURCE_DIR}/python/etrt/pte/__main__.py"
            "${PROJECT_SOURCE_DIR}/python/etrt/pte/builder.py" "${PROJECT_SOURCE_DIR}/python/etrt/pte/command.py"
            "${PROJECT_SOURCE_DIR}/python/etrt/pte/format.py" "${PROJECT_SOURCE_DIR}/python/etrt/pte/reader.py"
            "${PROJECT_SOURCE_DIR}/python/etrt/pte/schema.py" "${PROJECT_SOURCE_DIR}/python/etrt/pte/spec.py"
            "${PROJECT_SOURCE_DIR}/python/etrt/pte/toolchain.py" "${PROJECT_SOURCE_DIR}/python/etrt/pte/verify.py"
            ${ETRT_PTE_FLATC}
    ${_depfile_opt}
    COMMENT "Packing ${ARG_OUTPUT} from ${ARG_SPEC}"
    VERBATIM)
  add_custom_target(${target} ALL DEPENDS "${_out}")
endfunction()

# etrt_add_generated_ptes(<prefix> GENERATOR <executable target> DIR <dir> NAMES <names...>
#                         [ARGS <args...>] [COMMENT <text>])
# Runs `<generator> [args...] <dir>` once, which writes a packer spec <dir>/<name>.json (and the blobs it names)
# for every name, then packs each spec into <dir>/<name>.pte with etrt_add_pte. The packing targets are
# <prefix>_<name>; their list is returned in <prefix>_TARGETS.
function(etrt_add_generated_ptes prefix)
  cmake_parse_arguments(ARG "" "GENERATOR;DIR;COMMENT" "NAMES;ARGS" ${ARGN})
  if(NOT ARG_GENERATOR OR NOT ARG_DIR OR NOT ARG_NAMES)
    message(FATAL_ERROR "etrt_add_generated_ptes(${prefix}): GENERATOR, DIR and NAMES are required")
  endif()
  if(NOT ARG_COMMENT)
    set(ARG_COMMENT "Building the engines and packer specs of ${prefix}")
  endif()
  set(specs)
  foreach(name IN LISTS ARG_NAMES)
    list(APPEND specs ${ARG_DIR}/${name}.json)
  endforeach()
  add_custom_command(
    OUTPUT ${specs}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${ARG_DIR}
    COMMAND ${ARG_GENERATOR} ${ARG_ARGS} ${ARG_DIR}
    DEPENDS ${ARG_GENERATOR}
    COMMENT "${ARG_COMMENT}")
  set(targets)
  foreach(name IN LISTS ARG_NAMES)
    etrt_add_pte(${prefix}_${name} SPEC ${ARG_DIR}/${name}.json OUTPUT ${ARG_DIR}/${name}.pte)
    list(APPEND targets ${prefix}_${name})
  endforeach()
  set(${prefix}_TARGETS ${targets} PARENT_SCOPE)
endfunction()
