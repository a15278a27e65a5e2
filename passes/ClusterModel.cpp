//===- ClusterModel.cpp - cluster files and NCCL-style collective costs -===//
#include "passes/ClusterModel.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>

namespace dtc {

MachineModel ClusterModel::machineModel() const {
  MachineModel machine;
  machine.flopsPerSecond = device.gemmFlopsPerSecond;
  machine.gemmHalfDimension = device.gemmHalfDimension;
  machine.convFlopsPerSecond = device.convFlopsPerSecond;
  machine.bytesPerSecond = device.memoryBytesPerSecond;
  machine.opSeconds = device.kernelSeconds;
  machine.linkLatencySeconds = intraLatencySeconds;
  machine.linkBytesPerSecond = intraBusBytesPerSecond;
  machine.kindCosts = device.opCosts;
  machine.measuredSeconds = device.opTimes;
  machine.stepOverheadSeconds = device.stepOverheadSeconds;
  machine.batchFillBytesPerSecond = device.batchFillBytesPerSecond;
  machine.cacheBytes = device.cacheBytes;
  return machine;
}

double ClusterModel::intraBusBandwidth(Collective collective, double bytes) const {
  auto table = intraBusBySize.find(collective);
  if (table == intraBusBySize.end() || table->second.empty())
    return intraBusBytesPerSecond;
  const BandwidthBySize &points = table->second;
  if (bytes <= points.front().first)
    return points.front().second;
  if (bytes >= points.back().first)
    return points.back().second;
  auto upper = std::upper_bound(points.begin(), points.end(), bytes,
                                [](double b, const auto &point) { return b < point.first; });
  auto lower = std::prev(upper);
  const double t = std::log(bytes / lower->first) / std::log(upper->first / lower->first);
  return lower->second + t * (upper->second - lower->second);
}

double ClusterModel::ringSeconds(Collective collective, double bytes, int64_t n, double fraction,
                                 int64_t stepsPerDevice, int64_t stride) const {
  if (n <= 1)
    return 0.0;
  // Members `stride` apart: a node holds devicesPerNode / stride of them
  // (at least one), and as many rings as its devices a stride spans run at
  // once, one per offset.
  const int64_t ringsPerNode = std::clamp<int64_t>(stride, 1, devicesPerNode);
  const int64_t membersPerNode = std::max<int64_t>(1, devicesPerNode / ringsPerNode);
  const int64_t nodesUsed = (n + membersPerNode - 1) / membersPerNode;
  const int64_t perNode = std::min(n, membersPerNode);
  // Every byte a ring moves crosses each node boundary once per step: over
  // several nodes the node's network interfaces together carry it, shared
  // by the node's concurrent rings.
  double busBandwidth = intraBusBandwidth(collective, bytes);
  if (nodesUsed > 1)
    busBandwidth = std::min(busBandwidth, double(nicsPerNode) * nicBytesPerSecond /
                                              double(ringsPerNode));
  const double latency = double(stepsPerDevice) * (double(perNode - 1) * intraLatencySeconds +
                                                   double(nodesUsed - 1) * interLatencySeconds);
  return fraction * bytes / busBandwidth + latency;
}

double ClusterModel::allReduceSeconds(double bytes, int64_t n, int64_t stride) const {
  return ringSeconds(Collective::AllReduce, bytes, n, 2.0 * double(n - 1) / double(n), 2, stride);
}

double ClusterModel::allGatherSeconds(double bytes, int64_t n, int64_t stride) const {
  return ringSeconds(Collective::AllGather, bytes, n, double(n - 1) / double(n), 1, stride);
}

double ClusterModel::reduceScatterSeconds(double bytes, int64_t n, int64_t stride) const {
  return ringSeconds(Collective::ReduceScatter, bytes, n, double(n - 1) / double(n), 1, stride);
}

namespace {

/// Reads the fields of a parsed cluster file, remembering the first error.
class FieldReader {
public:
  explicit FieldReader(llvm::StringRef path) : path(path) {}

  /// `object`.`key` as a positive number ("what" names it in errors).
  double number(const llvm::json::Object *object, llvm::StringRef key, llvm::StringRef where,
                std::optional<double> fallback = std::nullopt) {
    if (!error.empty() || !object)
      return 0.0;
    const llvm::json::Value *value = object->get(key);
    if (!value) {
      if (fallback)
        return *fallback;
      fail(llvm::formatv("missing field '{0}{1}'", where, key));
      return 0.0;
    }
    std::optional<double> number = value->getAsNumber();
    if (!number || !std::isfinite(*number) || *number <= 0.0) {
      fail(llvm::formatv("field '{0}{1}' must be a positive number", where, key));
      return 0.0;
    }
    return *number;
  }

  /// `object`.`key` as a number >= 0, `fallback` when it is absent.
  double nonNegative(const llvm::json::Object *object, llvm::StringRef key, llvm::StringRef where,
                     double fallback) {
    if (!error.empty() || !object || !object->get(key))
      return fallback;
    std::optional<double> number = object->get(key)->getAsNumber();
    if (!number || !std::isfinite(*number) || *number < 0.0) {
      fail(llvm::formatv("field '{0}{1}' must be a number >= 0", where, key));
      return 0.0;
    }
    return *number;
  }

  int64_t count(const llvm::json::Object *object, llvm::StringRef key, llvm::StringRef where) {
    double value = number(object, key, where);
    if (error.empty() && (value != std::floor(value) || value > 1e9)) {
      fail(llvm::formatv("field '{0}{1}' must be a whole number", where, key));
      return 0;
    }
    return int64_t(value);
  }

  const llvm::json::Object *object(const llvm::json::Object &root, llvm::StringRef key) {
    if (!error.empty())
      return nullptr;
    const llvm::json::Value *value = root.get(key);
    if (!value)
      fail(llvm::formatv("missing field '{0}'", key));
    else if (!value->getAsObject())
      fail(llvm::formatv("field '{0}' must be an object", key));
    return value ? value->getAsObject() : nullptr;
  }

  void fail(const llvm::Twine &message) {
    if (error.empty())
      error = message.str();
  }

  llvm::Error takeError() {
    if (error.empty())
      return llvm::Error::success();
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + error);
  }

private:
  std::string path;
  std::string error;
};

/// device.op_costs: {"dtc.gemm": {"call_s": S, "flops_per_s": F}, ...},
/// each kind with its seconds per call and at least one rate.
void readOpCosts(FieldReader &read, const llvm::json::Value &value,
                 std::map<std::string, OpKindCost, std::less<>> &costs) {
  const llvm::json::Object *kinds = value.getAsObject();
  if (!kinds) {
    read.fail("field 'device.op_costs' must be an object");
    return;
  }
  for (const auto &[kind, entry] : *kinds) {
    const std::string where = ("device.op_costs." + kind.str() + ".");
    const llvm::json::Object *fields = entry.getAsObject();
    if (!fields) {
      read.fail("field 'device.op_costs." + kind.str() + "' must be an object");
      return;
    }
    OpKindCost cost;
    cost.callSeconds = read.nonNegative(fields, "call_s", where, 0.0);
    if (fields->get("flops_per_s"))
      cost.flopsPerSecond = read.number(fields, "flops_per_s", where);
    if (fields->get("bytes_per_s"))
      cost.bytesPerSecond = read.number(fields, "bytes_per_s", where);
    if (fields->get("stream_bytes_per_s"))
      cost.streamBytesPerSecond = read.number(fields, "stream_bytes_per_s", where);
    if (const llvm::json::Value *overlap = fields->get("overlap")) {
      if (std::optional<bool> value = overlap->getAsBoolean())
        cost.overlap = *value;
      else
        read.fail("field '" + where + "overlap' must be true or false");
    }
    if (cost.flopsPerSecond == 0 && cost.bytesPerSecond == 0) {
      read.fail("field 'device.op_costs." + kind.str() +
                "' needs 'flops_per_s' or 'bytes_per_s'");
      return;
    }
    costs[kind.str()] = cost;
  }
}

/// device.op_times: [[KIND, FLOPS, BYTES, SECONDS], ...], the measured time
/// of an op of that kind with those estimated FLOPs and bytes.
void readOpTimes(FieldReader &read, const llvm::json::Value &value,
                 std::map<OpSignature, double> &times) {
  const llvm::json::Array *rows = value.getAsArray();
  if (!rows) {
    read.fail("field 'device.op_times' must be a list of [kind, flops, bytes, seconds]");
    return;
  }
  for (auto [i, row] : llvm::enumerate(*rows)) {
    const llvm::json::Array *fields = row.getAsArray();
    std::optional<llvm::StringRef> kind;
    std::optional<double> flops, bytes, seconds;
    if (fields && fields->size() == 4) {
      kind = (*fields)[0].getAsString();
      flops = (*fields)[1].getAsNumber();
      bytes = (*fields)[2].getAsNumber();
      seconds = (*fields)[3].getAsNumber();
    }
    if (!kind || !flops || !bytes || !seconds || *flops < 0 || *bytes < 0 || *seconds <= 0) {
      read.fail(llvm::formatv("field 'device.op_times[{0}]' must be [kind, flops >= 0, "
                              "bytes >= 0, seconds > 0]",
                              i)
                    .str());
      return;
    }
    times[{kind->str(), std::llround(*flops), std::llround(*bytes)}] = *seconds;
  }
}

/// intra_node.bus_bandwidth_by_size: {"all_reduce": [[BYTES, BUS_BYTES_PER_S],
/// ...], "all_gather": ..., "reduce_scatter": ...}, each list in increasing
/// bytes, every number positive.
void readBandwidthBySize(FieldReader &read, const llvm::json::Value &value,
                         std::map<Collective, BandwidthBySize> &tables) {
  const std::string where = "intra_node.bus_bandwidth_by_size";
  const llvm::json::Object *collectives = value.getAsObject();
  if (!collectives) {
    read.fail("field '" + where + "' must be an object");
    return;
  }
  for (const auto &[key, list] : *collectives) {
    std::optional<Collective> collective;
    if (key == "all_reduce")
      collective = Collective::AllReduce;
    else if (key == "all_gather")
      collective = Collective::AllGather;
    else if (key == "reduce_scatter")
      collective = Collective::ReduceScatter;
    const std::string field = where + "." + key.str();
    if (!collective) {
      read.fail("field '" + field + "' is not a collective (all_reduce, all_gather, "
                "reduce_scatter)");
      return;
    }
    const llvm::json::Array *points = list.getAsArray();
    if (!points || points->empty()) {
      read.fail("field '" + field + "' must be a non-empty list of [bytes, bus_bandwidth]");
      return;
    }
    BandwidthBySize table;
    for (const llvm::json::Value &point : *points) {
      const llvm::json::Array *pair = point.getAsArray();
      std::optional<double> bytes, bandwidth;
      if (pair && pair->size() == 2) {
        bytes = (*pair)[0].getAsNumber();
        bandwidth = (*pair)[1].getAsNumber();
      }
      if (!bytes || !bandwidth || !std::isfinite(*bytes) || !std::isfinite(*bandwidth) ||
          *bytes <= 0 || *bandwidth <= 0) {
        read.fail("field '" + field + "': each entry must be [bytes, bus_bandwidth], both "
                  "positive numbers");
        return;
      }
      if (!table.empty() && *bytes <= table.back().first) {
        read.fail("field '" + field + "': sizes must increase");
        return;
      }
      table.push_back({*bytes, *bandwidth});
    }
    tables[*collective] = std::move(table);
  }
}

} // namespace

llvm::Expected<ClusterModel> loadClusterModel(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot read cluster file '" + path +
                                       "': " + buffer.getError().message());
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse((*buffer)->getBuffer());
  if (!parsed)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": not valid JSON: " +
                                       llvm::toString(parsed.takeError()));
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": expected a JSON object");

  FieldReader read(path);
  ClusterModel cluster;
  if (std::optional<llvm::StringRef> name = root->getString("name"))
    cluster.name = name->str();
  cluster.devicesPerNode = read.count(root, "devices_per_node", "");
  cluster.nodes = read.count(root, "nodes", "");
  const llvm::json::Object *device = read.object(*root, "device");
  cluster.device.gemmFlopsPerSecond = read.number(device, "gemm_flops", "device.");
  cluster.device.convFlopsPerSecond = read.number(device, "conv_flops", "device.");
  cluster.device.memoryBytesPerSecond = read.number(device, "memory_bandwidth", "device.");
  cluster.device.memoryBytes = read.number(device, "memory_bytes", "device.");
  cluster.device.kernelSeconds = read.number(device, "kernel_overhead_s", "device.");
  cluster.device.gemmHalfDimension =
      read.number(device, "gemm_half_dimension", "device.", MachineModel().gemmHalfDimension);
  cluster.device.stepOverheadSeconds =
      read.nonNegative(device, "step_overhead_s", "device.", 0.0);
  cluster.device.batchFillBytesPerSecond =
      read.nonNegative(device, "batch_fill_bytes_per_s", "device.", 0.0);
  cluster.device.cacheBytes = read.nonNegative(device, "cache_bytes", "device.", 0.0);
  if (device)
    if (const llvm::json::Value *costs = device->get("op_costs"))
      readOpCosts(read, *costs, cluster.device.opCosts);
  if (device)
    if (const llvm::json::Value *times = device->get("op_times"))
      readOpTimes(read, *times, cluster.device.opTimes);
  const llvm::json::Object *intra = read.object(*root, "intra_node");
  cluster.intraBusBytesPerSecond = read.number(intra, "bus_bandwidth", "intra_node.");
  cluster.intraLatencySeconds = read.number(intra, "latency_s", "intra_node.");
  if (intra)
    if (const llvm::json::Value *tables = intra->get("bus_bandwidth_by_size"))
      readBandwidthBySize(read, *tables, cluster.intraBusBySize);
  // One node needs no network: the inter-node link is optional there.
  if (cluster.nodes > 1 || root->get("inter_node")) {
    const llvm::json::Object *inter = read.object(*root, "inter_node");
    cluster.nicBytesPerSecond = read.number(inter, "nic_bandwidth", "inter_node.");
    cluster.nicsPerNode = read.count(inter, "nics_per_node", "inter_node.");
    cluster.interLatencySeconds = read.number(inter, "latency_s", "inter_node.");
  }
  if (const llvm::json::Value *overlap = root->get("collectives_overlap_compute")) {
    if (std::optional<bool> value = overlap->getAsBoolean())
      cluster.overlapsCompute = *value;
    else
      read.fail("field 'collectives_overlap_compute' must be true or false");
  }
  if (llvm::Error error = read.takeError())
    return error;
  return cluster;
}

} // namespace dtc
