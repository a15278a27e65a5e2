//===- DtcOps.td - every op of the dtc dialect ---------------------------===//

#ifndef DTC_OPS_TD
#define DTC_OPS_TD

include "DtcBase.td"
include "DtcStructureOps.td"
include "DtcMathOps.td"
include "DtcNNOps.td"
include "DtcShapeOps.td"
include "DtcGradOps.td"
include "DtcResampleOps.td"
include "DtcTrainingOps.td"
include "DtcCollectiveOps.td"
include "DtcPipelineOps.td"

#endif // DTC_OPS_TD
