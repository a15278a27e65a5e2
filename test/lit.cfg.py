# lit configuration of the dtc test suite: tools on PATH, substitutions.
#
#   %models   examples/models (the exported ONNX files)
#   %python   /usr/bin/python3 (Debian's, with torch and onnx: references only)
#   %gen      a scratch folder shared by tests for large generated models
#   %srcroot, %buildroot  the source tree and the build directory
import os
import lit.formats

config.name = "dtc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dtc_binary_root, "test")

path = [config.dtc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")]
config.environment["PATH"] = os.pathsep.join(path)
# OPENBLAS_CORETYPE, DTC_CONV_ALGO, DTC_CPU_ISA and OMP_NUM_THREADS (the
# programs' default --threads) pick kernels: scripts/test-portability.sh sets them.
for var in ["HOME", "TMPDIR", "OPENBLAS_CORETYPE", "DTC_CONV_ALGO", "DTC_CPU_ISA", "OMP_NUM_THREADS"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]
# Every program a test builds must compile without a warning: dtc passes
# -Werror to the host compiler under DTC_WERROR.
config.environment["DTC_WERROR"] = "1"

# CUDA: "cuda-runtime" when dtc can build --target=cuda programs,
# "cuda-device" when this machine has an NVIDIA GPU the programs can use.
if getattr(config, "dtc_cuda_runtime", False):
    config.available_features.add("cuda-runtime")
if os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl"):
    config.available_features.add("cuda-device")

gen_dir = os.path.join(config.dtc_binary_root, "generated-models")
os.makedirs(gen_dir, exist_ok=True)
config.substitutions.append(("%models", os.path.join(config.dtc_source_root, "examples", "models")))
config.substitutions.append(("%python", config.python_reference))
config.substitutions.append(("%gen", gen_dir))
config.substitutions.append(("%srcroot", config.dtc_source_root))
config.substitutions.append(("%buildroot", config.dtc_binary_root))
# A free loopback port, for tests that start ranks without dtcrun (dtcrun
# takes --master-port=0): use as $(%free_port) inside `sh -c`.
config.substitutions.append(
    ("%free_port", config.python_reference + " " + os.path.join(config.dtc_source_root, "test", "Inputs", "free_port.py")))
config.substitutions.append(("%cuda_emu", getattr(config, "dtc_cuda_emu", "")))
# The CUDA kernels themselves on the CPU (test/simt): "cuda-simt", %cuda_simt.
if getattr(config, "dtc_cuda_simt", ""):
    config.available_features.add("cuda-simt")
config.substitutions.append(("%cuda_simt", getattr(config, "dtc_cuda_simt", "")))
