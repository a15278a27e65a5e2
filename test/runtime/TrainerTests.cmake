# Unit tests of the non-kernel runtime (dtcrt_trainer): options, data readers
# (image folders too: the tests write PNG and JPEG files with libpng/libjpeg),
# sampler, ONNX and TensorProto I/O, checkpoints, and the whole training loop
# on hand-written fake programs (a 2-stage pipeline on forked ranks too; GPU
# programs through a host-memory device backend, and the real CUDA backend's
# no-GPU error when it is built). Include after runtime/TrainerSources.cmake:
#   include(${CMAKE_SOURCE_DIR}/test/runtime/TrainerTests.cmake)
include_guard(GLOBAL)
find_package(GTest REQUIRED)
# Imported targets are directory-scoped: find them here too.
if(NOT TARGET protobuf::libprotobuf)
  find_package(Protobuf REQUIRED)
endif()
find_package(ZLIB REQUIRED)
include(GoogleTest)

set(DTCRT_TRAINER_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
add_executable(dtcrt_trainer_tests
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestOptions.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestLrSchedule.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestData.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestTokens.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestImages.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestIo.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestCheckpoint.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestCheckpointShards.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestLoop.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestStop.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestPipeline.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestDevice.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestFiles.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestMetrics.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestProfiler.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestShardedState.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestTensorSlices.cpp
  ${DTCRT_TRAINER_TEST_DIR}/TrainerTestThreads.cpp
)
# The tests build ONNX models with the protobuf API, like the io/ sources.
target_compile_definitions(dtcrt_trainer_tests PRIVATE ONNX_ML=1 ONNX_NAMESPACE=onnx)
target_link_libraries(dtcrt_trainer_tests PRIVATE dtcrt_trainer ${DTCRT_ONNX_PROTO_LIBRARY}
  protobuf::libprotobuf ZLIB::ZLIB ${DTCRT_JPEG_LIBRARY} ${DTCRT_PNG_LIBRARY} GTest::gtest
  GTest::gtest_main)
gtest_discover_tests(dtcrt_trainer_tests TEST_PREFIX "runtime.trainer." DISCOVERY_TIMEOUT 60
                     PROPERTIES TIMEOUT 180)

# A hand-written "generated program" linked like a real one, run through its
# command line.
add_executable(dtcrt_fake_program ${DTCRT_TRAINER_TEST_DIR}/TrainerFakeProgram.cpp)
target_link_libraries(dtcrt_fake_program PRIVATE dtcrt_main dtcrt_trainer)
add_test(NAME runtime.trainer.cli.help COMMAND dtcrt_fake_program --help)
set_tests_properties(runtime.trainer.cli.help PROPERTIES
  PASS_REGULAR_EXPRESSION "usage: .* --data=DIR\\|FILE\\|synthetic")
add_test(NAME runtime.trainer.cli.bad-number COMMAND dtcrt_fake_program --data=synthetic --lr=abc)
set_tests_properties(runtime.trainer.cli.bad-number PROPERTIES
  PASS_REGULAR_EXPRESSION "^error: --lr: expected a number, got 'abc'\n$")
add_test(NAME runtime.trainer.cli.exit-status
  COMMAND sh -c "$<TARGET_FILE:dtcrt_fake_program> --bogus; test $? -eq 1")
add_test(NAME runtime.trainer.cli.synthetic
  COMMAND dtcrt_fake_program --data=synthetic --max-steps=20 --log-every=10 --eval)
set_tests_properties(runtime.trainer.cli.synthetic PROPERTIES
  PASS_REGULAR_EXPRESSION "epoch 1 step 20/100 loss .*epoch 1 eval loss .*done: 20 steps")
if(EXISTS /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz)
  add_test(NAME runtime.trainer.cli.fashion-mnist
    COMMAND dtcrt_fake_program --data=/usr/share/datasets/fashion-mnist --max-steps=200
            --lr=0.5 --log-every=100 --eval --shuffle=false)
  # Softmax regression reaches ~70% test accuracy within 200 steps.
  # Its hand-written eval step counts no top-5 hits: no "top-5 0.00%".
  set_tests_properties(runtime.trainer.cli.fashion-mnist PROPERTIES
    PASS_REGULAR_EXPRESSION "eval loss [0-9.]+ accuracy [6-9][0-9]\\."
    FAIL_REGULAR_EXPRESSION "top-5")
endif()
add_test(NAME runtime.trainer.cli.trace-needs-op-table
  COMMAND dtcrt_fake_program --data=synthetic --trace=t.json)
set_tests_properties(runtime.trainer.cli.trace-needs-op-table PROPERTIES
  PASS_REGULAR_EXPRESSION "^error: --trace: this program has no op table \\(compiled by an older dtc\\); compile it again\n$")

# A 2-stage pipeline started as one process, or as rank 0 of 3: the job-size
# error at once (no rendezvous, no hang).
add_executable(dtcrt_fake_pipeline ${DTCRT_TRAINER_TEST_DIR}/TrainerFakePipeline.cpp)
target_link_libraries(dtcrt_fake_pipeline PRIVATE dtcrt_main dtcrt_trainer)
add_test(NAME runtime.trainer.cli.pipeline-one-process
  COMMAND dtcrt_fake_pipeline --data=synthetic)
set_tests_properties(runtime.trainer.cli.pipeline-one-process PROPERTIES
  TIMEOUT 20
  PASS_REGULAR_EXPRESSION "^error: this program is a 2-stage pipeline with 1 data-parallel replica and needs 2 ranks, but the job has 1 \\(start it with dtcrun --nproc-per-node=2\\)\n$")
add_test(NAME runtime.trainer.cli.pipeline-wrong-world
  COMMAND ${CMAKE_COMMAND} -E env RANK=0 WORLD_SIZE=3 MASTER_PORT=1
          $<TARGET_FILE:dtcrt_fake_pipeline> --data=synthetic)
set_tests_properties(runtime.trainer.cli.pipeline-wrong-world PROPERTIES
  TIMEOUT 20
  PASS_REGULAR_EXPRESSION "^error: rank 0: this program is a 2-stage pipeline with 1 data-parallel replica and needs 2 ranks, but the job has 3 \\(start it with dtcrun --nproc-per-node=2\\)\n$")
add_test(NAME runtime.trainer.cli.pipeline-gradcheck
  COMMAND dtcrt_fake_pipeline --data=synthetic --gradcheck)
set_tests_properties(runtime.trainer.cli.pipeline-gradcheck PROPERTIES
  PASS_REGULAR_EXPRESSION "^error: --gradcheck: not available for pipeline programs")

# The CUDA device backend (runtime/CudaBackendSources.cmake), when built: on
# a machine without a GPU, opening it fails with one line and status 1, in
# process (death test) and through a fake --target=cuda program's main.
if(TARGET dtcrt_cuda_backend)
  add_executable(dtcrt_cuda_backend_tests ${DTCRT_TRAINER_TEST_DIR}/CudaBackendTest.cpp)
  target_link_libraries(dtcrt_cuda_backend_tests PRIVATE dtcrt_cuda_backend GTest::gtest
                        GTest::gtest_main)
  gtest_discover_tests(dtcrt_cuda_backend_tests TEST_PREFIX "runtime.cuda-backend."
                       DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60)
  add_executable(dtcrt_fake_cuda_program ${DTCRT_TRAINER_TEST_DIR}/TrainerFakeCudaProgram.cpp)
  target_link_libraries(dtcrt_fake_cuda_program PRIVATE dtcrt_main dtcrt_trainer
                        dtcrt_cuda_backend)
  # Only meaningful without a GPU: with one, the program would train.
  add_test(NAME runtime.trainer.cli.cuda-without-gpu
    COMMAND sh -c "if nvidia-smi -L >/dev/null 2>&1; then echo 'skipped: a GPU is visible'; exit 0; fi; $<TARGET_FILE:dtcrt_fake_cuda_program> --data=synthetic 2>&1; echo \"status $?\"")
  set_tests_properties(runtime.trainer.cli.cuda-without-gpu PROPERTIES
    TIMEOUT 60
    PASS_REGULAR_EXPRESSION "^error: this program was compiled for --target=cuda but no CUDA device is visible \\([^\n]*\\)\nstatus 1\n$|^skipped: a GPU is visible")
endif()

# The image-folder loading benchmark tool (bench/image_loader.py runs it).
add_executable(dtcrt_image_loader_bench ${DTCRT_TRAINER_TEST_DIR}/../../bench/image_loader.cpp)
target_link_libraries(dtcrt_image_loader_bench PRIVATE dtcrt_trainer)
