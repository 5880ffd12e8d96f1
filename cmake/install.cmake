# Installs libetrt, its public headers and a CMake package, so a runner can
#   find_package(etrt CONFIG REQUIRED)
#   target_link_libraries(my_runner PRIVATE etrt::etrt)
if(NOT TARGET etrt)
  return()
endif()
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS etrt EXPORT etrtTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/etrt DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The installed libetrt's RUNPATH, whole. ExecuTorch's imported targets link with -rpath options that name the wheel
# the build used by its absolute path (<venv>/site-packages/executorch/lib); CMake's install step rewrites only the
# part of the RUNPATH it computed itself, so without this the installed library would keep looking into the build
# machine's virtual environment. The default, $ORIGIN, finds the GPU-free NvInfer installed beside it; libexecutorch.so
# is the runner's (an executable linking etrt::etrt links it too, and the loader shares it by soname). The Python
# package sets $ORIGIN-relative paths to the ExecuTorch wheel of its environment (python/setup.py).
set(ETRT_INSTALL_RPATH "$ORIGIN" CACHE STRING
    "RUNPATH of the installed libetrt, ':'-separated; keep it $ORIGIN-relative so the installation can move")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(_etrt_installed_lib "${CMAKE_INSTALL_LIBDIR}/$<TARGET_FILE_NAME:etrt>")
else()
  set(_etrt_installed_lib "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/$<TARGET_FILE_NAME:etrt>")
endif()
install(CODE "file(RPATH_SET FILE \"\$ENV{DESTDIR}${_etrt_installed_lib}\" NEW_RPATH \"${ETRT_INSTALL_RPATH}\")")
unset(_etrt_installed_lib)
# Built against the GPU-free NvInfer implementation, libetrt needs it beside itself (its soname,
# libetrt_gpufree_nvinfer.so.0, never collides with NVIDIA's libnvinfer.so.10).
if(TARGET etrt_gpufree_nvinfer)
  install(TARGETS etrt_gpufree_nvinfer LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_SKIP)
endif()
# What the tools ask the runtime (libetrt_tools.so.0, include/etrt/tools_c_api.h), beside libetrt, where the Python
# tools look for it; no runner links it, so it is not part of the CMake package.
install(TARGETS etrt_tools LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_SKIP)
install(EXPORT etrtTargets NAMESPACE etrt:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/etrt)

# Built against NVIDIA's TensorRT (-DTENSORRT_ROOT), libetrt needs its libnvinfer, which is not installed beside it:
# etrtConfig.cmake finds it again with the FindTensorRT.cmake installed beside it, at the root and major version this
# build used unless the runner's project says otherwise (etrtConfig.cmake.in).
set(ETRT_CONFIG_TENSORRT_ROOT "")
set(ETRT_CONFIG_TENSORRT_VERSION "")
set(ETRT_CONFIG_TENSORRT_VERSION_RANGE "")
if(TENSORRT_ROOT)
  get_filename_component(ETRT_CONFIG_TENSORRT_ROOT "${TENSORRT_ROOT}" ABSOLUTE)
  set(ETRT_CONFIG_TENSORRT_VERSION "${TensorRT_VERSION}")
  # libetrt asks the loader for libnvinfer.so.<major>: any TensorRT of that major version from the one it was built
  # against on.
  math(EXPR _etrt_next_major "${TensorRT_VERSION_MAJOR} + 1")
  set(ETRT_CONFIG_TENSORRT_VERSION_RANGE "${TensorRT_VERSION_MAJOR}.${TensorRT_VERSION_MINOR}...<${_etrt_next_major}")
  unset(_etrt_next_major)
  install(FILES ${PROJECT_SOURCE_DIR}/cmake/FindTensorRT.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/etrt)
endif()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/etrtConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/etrtConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/etrt)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/etrtConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/etrtConfig.cmake ${PROJECT_BINARY_DIR}/etrtConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/etrt)
