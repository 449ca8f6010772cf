# `cmake --install build --prefix P` lays out under P:
#   bin/stripesim                         the executable (finds P/share/stripesim/configs itself)
#   lib/stripesim/libstripesim_gpu_backends.so  the GPU backends, which the executable loads for
#                                         `validate --backend cuda|nccl` (built with CUDA)
#   lib/libstripesim_*.a                  the libraries, as they are built (static unless BUILD_SHARED_LIBS)
#   include/stripesim/{model,sim,...}/    their public headers
#   lib/cmake/stripesim/                  the CMake package: find_package(stripesim CONFIG) gives
#                                         stripesim::model, ::output, ::sim, ::validate, ::validate_backends,
#                                         ::report (and ::validate_gpu when built with CUDA), the same
#                                         names the build tree's aliases use (each library's EXPORT_NAME)
#   share/stripesim/configs/              the shipped models, hardware, kernels, topologies, experiments
#   share/stripesim/schemas/              the JSON Schemas of the commands' outputs (reports/schema)
# The command layer (stripesim_cli) is the executable's own and stays out.
include(CMakePackageConfigHelpers)

set(stripesim_installed_libraries stripesim_model stripesim_output stripesim_sim stripesim_validate stripesim_validate_backends
                                  stripesim_report)
set(stripesim_header_dirs model/include output/include sim/include validate/include report/include)
# The optional backends (MPI, CUDA): when built, validate_backends links them publicly, so they
# are exported beside it, and the package config looks for what they need
# (stripesim_with_mpi_targets, stripesim_with_gpu_targets).
set(stripesim_optional_kinds mpi gpu)
set(stripesim_optional_header_dirs validate/mpi/include validate/cuda/include)
foreach(kind header_dir IN ZIP_LISTS stripesim_optional_kinds stripesim_optional_header_dirs)
  if(TARGET stripesim_validate_${kind})
    list(APPEND stripesim_installed_libraries stripesim_validate_${kind})
    list(APPEND stripesim_header_dirs ${header_dir})
    set(stripesim_with_${kind}_targets ON)
  else()
    set(stripesim_with_${kind}_targets OFF)
  endif()
endforeach()

install(TARGETS stripesim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The GPU backends' module, where the executable looks for it (validate/CMakeLists.txt).
if(TARGET stripesim_gpu_backends)
  install(TARGETS stripesim_gpu_backends LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/stripesim)
endif()
install(TARGETS ${stripesim_installed_libraries}
        EXPORT stripesimTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(dir IN LISTS stripesim_header_dirs)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${STRIPESIM_INSTALL_CONFIG_DIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/reports/schema/ DESTINATION ${CMAKE_INSTALL_DATADIR}/stripesim/schemas
        FILES_MATCHING PATTERN "*.json")

set(stripesim_package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/stripesim)
install(EXPORT stripesimTargets NAMESPACE stripesim:: DESTINATION ${stripesim_package_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/stripesimConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/stripesimConfig.cmake
                              INSTALL_DESTINATION ${stripesim_package_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/stripesimConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/stripesimConfig.cmake ${PROJECT_BINARY_DIR}/stripesimConfigVersion.cmake
        DESTINATION ${stripesim_package_dir})
