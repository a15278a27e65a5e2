//===- Interfaces.cpp - generated definitions of the dtc op interfaces ---===//
#include "dialect/DtcDialect.h"

#include "dialect/DtcInterfaces.cpp.inc"
