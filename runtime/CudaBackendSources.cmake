# The CUDA device backend of libdtcrt (runtime/cuda/Backend.cpp, plain C++):
# dtcrt::cuda::deviceBackend(), the DeviceBackend (runtime/Program.h) that
# programs compiled with --target=cuda point ProgramSpec::device at. Library
# dtcrt_cuda_backend, built only when the CUDA kernel layer (dtcrt_cuda,
# CudaSources.cmake) and the NCCL communicator (dtcrt_comm_nccl,
# CommSources.cmake) are: include it from runtime/CMakeLists.txt after both.
# CPU programs never link it (dtcrt_trainer reaches devices only through the
# DeviceBackend table).
include_guard(GLOBAL)

if(TARGET dtcrt_cuda AND TARGET dtcrt_comm_nccl)
  add_library(dtcrt_cuda_backend STATIC ${CMAKE_CURRENT_LIST_DIR}/cuda/Backend.cpp)
  set_target_properties(dtcrt_cuda_backend PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(dtcrt_cuda_backend PUBLIC ${CMAKE_CURRENT_LIST_DIR}/..)
  target_compile_features(dtcrt_cuda_backend PUBLIC cxx_std_17)
  target_compile_options(dtcrt_cuda_backend PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_link_libraries(dtcrt_cuda_backend PUBLIC dtcrt_cuda dtcrt_comm_nccl)
  message(STATUS "dtcrt: CUDA device backend (dtcrt_cuda_backend)")
else()
  message(STATUS "dtcrt: no CUDA kernel layer or NCCL; skipping the CUDA device backend")
endif()
