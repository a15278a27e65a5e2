# The non-kernel half of libdtcrt: command line, data readers, training loop,
# logging, checkpoints, ONNX I/O (dtcrt_trainer), and the main() of generated
# programs (dtcrt_main). Include it after the `dtcrt` (kernels) target exists:
#   include(${CMAKE_CURRENT_LIST_DIR}/TrainerSources.cmake)
# Needs Debian's libonnx-dev (libonnx_proto, built with ONNX_ML and the
# `onnx` namespace), protobuf, zlib, and libjpeg-turbo and libpng (image
# folders: libjpeg62-turbo-dev, libpng-dev).
include_guard(GLOBAL)
set(DTCRT_RUNTIME_DIR ${CMAKE_CURRENT_LIST_DIR})

if(NOT TARGET protobuf::libprotobuf)
  find_package(Protobuf REQUIRED)
endif()
find_package(ZLIB REQUIRED)
find_library(DTCRT_ONNX_PROTO_LIBRARY onnx_proto REQUIRED)
find_library(DTCRT_JPEG_LIBRARY jpeg REQUIRED)
find_library(DTCRT_PNG_LIBRARY NAMES png16 png REQUIRED)
find_path(DTCRT_JPEG_INCLUDE_DIR jpeglib.h REQUIRED)
find_path(DTCRT_PNG_INCLUDE_DIR png.h REQUIRED)
# (Cache variables: codegen's link line for generated programs names them too.)

add_library(dtcrt_trainer STATIC
  ${DTCRT_RUNTIME_DIR}/support/Files.cpp
  ${DTCRT_RUNTIME_DIR}/support/MappedFile.cpp
  ${DTCRT_RUNTIME_DIR}/support/Rank.cpp
  ${DTCRT_RUNTIME_DIR}/support/TensorSlices.cpp
  ${DTCRT_RUNTIME_DIR}/data/Column.cpp
  ${DTCRT_RUNTIME_DIR}/data/Idx.cpp
  ${DTCRT_RUNTIME_DIR}/data/ImageDecode.cpp
  ${DTCRT_RUNTIME_DIR}/data/ImageTransform.cpp
  ${DTCRT_RUNTIME_DIR}/data/ImageFolder.cpp
  ${DTCRT_RUNTIME_DIR}/data/Npy.cpp
  ${DTCRT_RUNTIME_DIR}/data/Sampler.cpp
  ${DTCRT_RUNTIME_DIR}/data/Dataset.cpp
  ${DTCRT_RUNTIME_DIR}/data/Synthetic.cpp
  ${DTCRT_RUNTIME_DIR}/data/Tokens.cpp
  ${DTCRT_RUNTIME_DIR}/io/TensorProto.cpp
  ${DTCRT_RUNTIME_DIR}/io/OnnxModel.cpp
  ${DTCRT_RUNTIME_DIR}/io/OnnxInitializers.cpp
  ${DTCRT_RUNTIME_DIR}/train/Options.cpp
  ${DTCRT_RUNTIME_DIR}/train/LrSchedule.cpp
  ${DTCRT_RUNTIME_DIR}/train/Logger.cpp
  ${DTCRT_RUNTIME_DIR}/train/TensorBoardWriter.cpp
  ${DTCRT_RUNTIME_DIR}/train/TrainingPlot.cpp
  ${DTCRT_RUNTIME_DIR}/train/Checkpoint.cpp
  ${DTCRT_RUNTIME_DIR}/train/CheckpointShards.cpp
  ${DTCRT_RUNTIME_DIR}/train/ShardedState.cpp
  ${DTCRT_RUNTIME_DIR}/train/ShardedCheckpoint.cpp
  ${DTCRT_RUNTIME_DIR}/train/StageState.cpp
  ${DTCRT_RUNTIME_DIR}/train/TensorParallelState.cpp
  ${DTCRT_RUNTIME_DIR}/train/TensorParallelShards.cpp
  ${DTCRT_RUNTIME_DIR}/train/Pipeline.cpp
  ${DTCRT_RUNTIME_DIR}/train/StepGraphs.cpp
  ${DTCRT_RUNTIME_DIR}/train/Trace.cpp
  ${DTCRT_RUNTIME_DIR}/train/Profiler.cpp
  ${DTCRT_RUNTIME_DIR}/train/Device.cpp
  ${DTCRT_RUNTIME_DIR}/train/StopSignal.cpp
  ${DTCRT_RUNTIME_DIR}/train/ThreadEnvironment.cpp
  ${DTCRT_RUNTIME_DIR}/train/StopAgreement.cpp
  ${DTCRT_RUNTIME_DIR}/train/TestHooks.cpp
  ${DTCRT_RUNTIME_DIR}/train/Trainer.cpp
  ${DTCRT_RUNTIME_DIR}/train/TrainerRun.cpp
  ${DTCRT_RUNTIME_DIR}/train/Inference.cpp
  ${DTCRT_RUNTIME_DIR}/train/GradCheck.cpp
  ${DTCRT_RUNTIME_DIR}/train/RunProgram.cpp
)
set_target_properties(dtcrt_trainer PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(dtcrt_trainer PUBLIC ${DTCRT_RUNTIME_DIR}/..)
target_compile_features(dtcrt_trainer PUBLIC cxx_std_17)
# Only the io/ sources include onnx/onnx_pb.h; the public headers do not.
target_compile_definitions(dtcrt_trainer PRIVATE ONNX_ML=1 ONNX_NAMESPACE=onnx)
target_compile_options(dtcrt_trainer PRIVATE -Wall -Wextra -Wno-unused-parameter)
target_include_directories(dtcrt_trainer PRIVATE ${DTCRT_JPEG_INCLUDE_DIR} ${DTCRT_PNG_INCLUDE_DIR})
target_link_libraries(dtcrt_trainer
  PUBLIC dtcrt
  PRIVATE ${DTCRT_ONNX_PROTO_LIBRARY} protobuf::libprotobuf ZLIB::ZLIB
  ${DTCRT_JPEG_LIBRARY} ${DTCRT_PNG_LIBRARY})

# main() of generated programs: link it (with dtcrt_trainer) and the
# generated source that defines dtc_program().
add_library(dtcrt_main OBJECT ${DTCRT_RUNTIME_DIR}/main/Main.cpp)
set_target_properties(dtcrt_main PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_link_libraries(dtcrt_main PUBLIC dtcrt_trainer)
