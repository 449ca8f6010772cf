# Installs the build and uses it as a user would (tests/CMakeLists.txt registers it with ctest):
#   1. `cmake --install` into a fresh prefix under the build folder; the package, headers,
#      configs and schemas are where the README says;
#   2. this folder's consumer project finds the package (find_package(stripesim CONFIG)), builds
#      against stripesim::model with the build's compiler and flags (sanitizer builds link too),
#      and counts active tiles: the golden values below, the same as the installed
#      `stripesim analyze` on that case;
#   3. the installed stripesim, with STRIPESIM_CONFIG_DIR unset, reads the prefix's configs: a
#      model that exists only in the prefix (added here) is found, while the build tree's
#      executable, which reads the source tree's configs/, does not know it;
#   4. built with CUDA (-DGPU_MODULE=ON), the GPU backends are a module the installed stripesim
#      loads for `validate --backend cuda` only: cuBLAS is not among the executable's own
#      libraries (its initialisation would cost every command), and with no GPU visible the run
#      fails in the backend (exit 3, rank 0), not in loading it; the module moved away, the same
#      command names where it looked (exit 2).
# cmake -DBUILD_DIR=... -DWORK_DIR=... -DCONFIG=... -DGENERATOR=... -DCXX_COMPILER=... -DCXX_FLAGS=...
#       -DBUILD_TREE_STRIPESIM=... -DGPU_MODULE=ON|OFF -DREADELF=... -DLIBDIR=...
#       -P run_consumer_test.cmake
foreach(var BUILD_DIR WORK_DIR GENERATOR CXX_COMPILER BUILD_TREE_STRIPESIM)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_consumer_test.cmake: -D${var}=... is required")
  endif()
endforeach()

# The consumer's golden output (n = 4096, N = 4, causal, 256x256 tiles): contiguous's last device
# computes 58 of its 136 tiles, striped spreads 160 tiles evenly (40 each).
set(golden "contiguous active_tiles total=136 busiest=58\nstriped active_tiles total=160 busiest=40\n")

# Runs a command; stops the test with its output unless it exits with `expected_rc`.
function(run_step expected_rc out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT "${rc}" STREQUAL "${expected_rc}")
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "exit ${rc} (expected ${expected_rc}): ${command}\n${out}${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

unset(ENV{STRIPESIM_CONFIG_DIR})
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(config_args)
if(CONFIG)
  set(config_args --config ${CONFIG})
endif()

# 1. Install.
run_step(0 out ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} ${config_args})
file(GLOB_RECURSE package_config ${prefix}/*/stripesimConfig.cmake)
foreach(file bin/stripesim include/stripesim/model/work/layout.hpp include/stripesim/sim/simulation.hpp
             share/stripesim/configs/hardware/h100-sxm.json share/stripesim/schemas/analyze.schema.json)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "cmake --install did not install ${file}")
  endif()
endforeach()
if(NOT package_config)
  message(FATAL_ERROR "cmake --install did not install stripesimConfig.cmake")
endif()

# 2. A consumer project, built with the same compiler, type and flags.
set(consumer_build ${WORK_DIR}/consumer)
run_step(0 out ${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR} -B ${consumer_build} -G ${GENERATOR}
         -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${CONFIG}
         "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
# It must have found this prefix, not a stripesim installed elsewhere on the machine.
file(STRINGS ${consumer_build}/CMakeCache.txt found_dir REGEX "^stripesim_DIR:")
string(FIND "${found_dir}" "${prefix}/" at)
if(NOT at GREATER -1)
  message(FATAL_ERROR "the consumer found another stripesim package: ${found_dir}")
endif()
run_step(0 out ${CMAKE_COMMAND} --build ${consumer_build} ${config_args})
find_program(consumer stripesim_consumer PATHS ${consumer_build} ${consumer_build}/${CONFIG} NO_DEFAULT_PATH REQUIRED)
run_step(0 counted ${consumer})
if(NOT counted STREQUAL golden)
  message(FATAL_ERROR "the consumer printed\n${counted}expected\n${golden}")
endif()

# ... and the installed CLI counts the same on that case.
set(installed ${prefix}/bin/stripesim)
run_step(0 analyzed ${installed} analyze --seq-len 4096 --devices 4 --tile 256x256 --layouts contiguous,striped
         --format json)
set(from_cli "")
foreach(i 0 1)
  string(JSON layout GET "${analyzed}" results ${i} layout)
  string(JSON total GET "${analyzed}" results ${i} metrics tiles total)
  string(JSON busiest GET "${analyzed}" results ${i} metrics tiles slowest_device)
  string(APPEND from_cli "${layout} active_tiles total=${total} busiest=${busiest}\n")
endforeach()
if(NOT from_cli STREQUAL counted)
  message(FATAL_ERROR "stripesim analyze counts\n${from_cli}the consumer\n${counted}")
endif()

# 3. The installed binary reads its own prefix's configs: a shipped hardware name works, and a
# model only the prefix has is found (the source tree's configs/ cannot have answered). It runs
# from the work folder, so no path relative to the source tree is involved either.
file(READ ${prefix}/share/stripesim/configs/models/1b.json probe)
string(JSON probe SET "${probe}" name "\"install-probe\"")
file(WRITE ${prefix}/share/stripesim/configs/models/install-probe.json "${probe}")
execute_process(COMMAND ${installed} simulate --hardware h100 -n 32k -N 4 WORKING_DIRECTORY ${WORK_DIR}
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed stripesim simulate --hardware h100 failed (exit ${rc}): ${err}")
endif()
execute_process(COMMAND ${installed} simulate --model install-probe --hardware h100 -n 32k -N 4
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed stripesim did not read ${prefix}/share/stripesim/configs (exit ${rc}): ${err}")
endif()
execute_process(COMMAND ${BUILD_TREE_STRIPESIM} simulate --model install-probe --hardware h100 -n 32k -N 4
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "the build tree's stripesim found the prefix's install-probe model (exit ${rc})")
endif()

# 4. The GPU backends' module.
if(GPU_MODULE)
  run_step(0 dynamic ${READELF} -d ${installed})
  if(dynamic MATCHES "libcublas")
    message(FATAL_ERROR "the installed stripesim links cuBLAS itself:\n${dynamic}")
  endif()
  set(module ${prefix}/${LIBDIR}/stripesim/libstripesim_gpu_backends.so)
  if(NOT EXISTS ${module})
    message(FATAL_ERROR "cmake --install did not install ${module}")
  endif()
  set(gpu_run ${CMAKE_COMMAND} -E env CUDA_VISIBLE_DEVICES= ${installed} validate --backend cuda --seq-len 256 --devices 2
              --tile 64x64 --head-dim 64 --timeout 5)
  execute_process(COMMAND ${gpu_run} WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 3 OR NOT err MATCHES "rank 0:")
    message(FATAL_ERROR "installed stripesim validate --backend cuda without a GPU: exit ${rc} (expected 3, rank 0): ${err}")
  endif()
  file(RENAME ${module} ${module}.away)
  execute_process(COMMAND ${gpu_run} WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "--backend cuda: cannot load the GPU backends' module [^ ]*/stripesim/libstripesim_gpu_backends.so ")
    message(FATAL_ERROR "installed stripesim validate --backend cuda without its module: exit ${rc} (expected 2): ${err}")
  endif()
endif()

message(STATUS "the installed package's consumer and the installed stripesim agree:\n${counted}")
file(REMOVE_RECURSE ${WORK_DIR})  # a failure leaves it for a look
