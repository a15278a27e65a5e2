//===- Compile.cpp - one compilation of the model (see Compile.h) ---------===//
#include "Compile.h"

#include "dialect/PlanAttributes.h"
#include "importer/OnnxImporter.h"

#include "mlir/Pass/PassManager.h"

namespace dtc {

mlir::OwningOpRef<mlir::ModuleOp> compile(mlir::MLIRContext &context, const CompileJob &job,
                                          std::string *binaryModel) {
  ImportOptions options;
  options.batchSize = job.importBatch();
  options.binaryModel = binaryModel;
  options.readExternalFloatData = !job.shapesOnly;
  options.forTraining = job.pipeline.mode == TrainingPipelineOptions::Mode::Train;
  mlir::OwningOpRef<mlir::ModuleOp> module = importOnnxFile(context, job.inputPath, options);
  if (!module || !job.runPipeline)
    return module;
  mlir::PassManager pm(&context);
  buildTrainingPipeline(pm, job.pipeline);
  if (mlir::failed(pm.run(*module)))
    return nullptr;
  if (job.pipeline.target == TrainingPipelineOptions::Target::Cuda)
    (*module)->setAttr(attr::kTarget, mlir::StringAttr::get(&context, "cuda"));
  return module;
}

} // namespace dtc
