//===- DtcTypes.td - types of the dtc dialect ---------------------------===//

#ifndef DTC_TYPES_TD
#define DTC_TYPES_TD

include "DtcBase.td"

def Dtc_TokenType : TypeDef<Dtc_Dialect, "Token"> {
  let mnemonic = "token";
  let summary = "an asynchronous operation in flight (a collective)";
  let description = [{
    Made by an op that starts communication and consumed by the op that
    waits for it: the distance between the two is the overlap of
    communication with computation, visible in the IR.
  }];
}

#endif // DTC_TYPES_TD
