#include "comm/collective.hpp"

#include "comm/algorithms.hpp"
#include "comm/executor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace ironlaw::comm {

const char* op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce: return "all_reduce";
    case CollectiveOp::reduce_scatter: return "reduce_scatter";
    case CollectiveOp::all_gather: return "all_gather";
    case CollectiveOp::all_to_all: return "all_to_all";
  }
  return "?";
}

CollectiveOp parse_op(const std::string& name) {
  for (auto op : {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather,
                  CollectiveOp::all_to_all}) {
    if (name == op_name(op)) return op;
  }
  throw std::invalid_argument("unknown collective \"" + name +
                              "\" (expected all_reduce, reduce_scatter, all_gather or all_to_all)");
}

const char* algorithm_name(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::ring: return "ring";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::automatic: return "automatic";
    case Algorithm::tree: return "tree";
    case Algorithm::nvls: return "nvls";
    case Algorithm::all_to_all: return "all_to_all";
  }
  return "?";
}

Algorithm parse_algorithm(const std::string& name) {
  if (name == "auto") return Algorithm::automatic;
  for (auto a : {Algorithm::ring, Algorithm::hierarchical, Algorithm::automatic, Algorithm::tree, Algorithm::nvls,
                 Algorithm::all_to_all}) {
    if (name == algorithm_name(a)) return a;
  }
  throw std::invalid_argument("unknown algorithm \"" + name +
                              "\" (expected ring, hierarchical, tree, nvls, all_to_all or auto)");
}

double bus_factor(CollectiveOp op, int ranks) {
  if (ranks < 1) throw std::invalid_argument("bus_factor: ranks must be ≥ 1");
  const double n = ranks;
  return op == CollectiveOp::all_reduce ? 2.0 * (n - 1) / n : (n - 1) / n;
}

double hbm_bytes_per_rank(CollectiveOp op, Algorithm algorithm, int ranks, double bytes) {
  if (ranks < 1) throw std::invalid_argument("hbm_bytes_per_rank: ranks must be ≥ 1");
  if (!(bytes >= 0)) throw std::invalid_argument("hbm_bytes_per_rank: bytes must be ≥ 0");
  const double n = ranks;
  const double s = bytes;
  if (ranks == 1) return 2.0 * s;
  switch (op) {
    case CollectiveOp::all_reduce:
      return algorithm == Algorithm::nvls ? 2.0 * s : 6.0 * s - 4.0 * s / n;
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_gather:
      return 3.0 * s - s / n;
    case CollectiveOp::all_to_all:
      return 4.0 * s - 2.0 * s / n;
  }
  return 0.0;
}

int hierarchical_slices(const config::CommSpec& comm, int nics, double bytes, int nodes, int local) {
  const int channels = std::max(comm.channels > 0 ? comm.channels : nics, 1);
  if (!(comm.chunk_bytes > 0)) return channels;
  const double per_step = static_cast<double>(std::max(nodes, 1)) * std::max(local, 1) * comm.chunk_bytes;
  const double deep = std::floor(bytes / per_step);
  return deep < 1 ? 1 : static_cast<int>(std::min<double>(deep, channels));
}

TreeChunks tree_chunks(const config::CommSpec& comm, double channel_bytes, int depth) {
  TreeChunks out;
  if (!(comm.chunk_bytes > 0) || !(channel_bytes > 0)) {
    out.bytes = channel_bytes;
    return out;
  }
  const double floor_bytes = comm.tree_min_chunk_bytes > 0 ? comm.tree_min_chunk_bytes : comm.chunk_bytes;
  double chunk = comm.chunk_bytes;
  while (channel_bytes / chunk < depth && chunk / 2 >= floor_bytes) chunk /= 2;
  out.count = std::max(1, static_cast<int>(std::ceil(channel_bytes / chunk * (1 - 1e-12))));
  out.bytes = channel_bytes / out.count;
  return out;
}

using detail::Collective;

std::vector<int> channel_ring(const std::vector<int>& ranks, const hardware::Cluster& cluster, int channel) {
  const auto groups = detail::group_by_node(ranks, cluster);
  if (!detail::uniform(groups)) return ranks;
  const int g = static_cast<int>(groups.front().size());
  std::vector<int> order;
  order.reserve(ranks.size());
  for (const auto& group : groups) {
    for (int j = 0; j < g; ++j) order.push_back(group[static_cast<std::size_t>((channel + j) % g)]);
  }
  return order;
}

Communicator::Communicator(engine::Simulator& sim, engine::FlowNetwork& net, const hardware::Cluster& cluster)
    : sim_(sim), net_(net), cluster_(cluster), routes_(std::make_shared<detail::RouteCache>(cluster, net)),
      flows_per_connection_(cluster.topology().comm.flows_per_connection),
      merge_routes_(std::getenv("IRONLAW_NO_ROUTE_MERGE") == nullptr) {}

void Communicator::set_flows_per_connection(int flows) {
  if (flows < 1) throw std::invalid_argument("Communicator: flows per connection must be ≥ 1");
  flows_per_connection_ = flows;
}

void Communicator::set_all_to_all_kernels(double rdma_rate, double forward_rate) {
  for (double rate : {rdma_rate, forward_rate}) {
    if (!(rate >= 0) || !std::isfinite(rate)) {
      throw std::invalid_argument("Communicator::set_all_to_all_kernels: rates must be finite and ≥ 0");
    }
  }
  if (rdma_rate != kernel_rdma_rate_) kernel_rdma_links_.clear();
  if (forward_rate != kernel_forward_rate_) kernel_forward_links_.clear();
  kernel_rdma_rate_ = rdma_rate;
  kernel_forward_rate_ = forward_rate;
}

void Communicator::attach_kernel_links(CollectiveCall& call) {
  if (call.op != CollectiveOp::all_to_all || !call.layered()) return;
  auto attach = [&](double rate, std::vector<engine::LinkId>& links, const char* what) -> const std::vector<engine::LinkId>* {
    if (!(rate > 0)) return nullptr;
    links.resize(static_cast<std::size_t>(cluster_.gpus()), DirectSend::kNoVia);
    for (int gpu : call.ranks) {
      engine::LinkId& link = links[static_cast<std::size_t>(gpu)];
      if (link == DirectSend::kNoVia) link = net_.add_link(rate, Time::zero(), "gpu" + std::to_string(gpu) + " " + what);
    }
    return &links;
  };
  call.kernel_rdma_links = attach(kernel_rdma_rate_, kernel_rdma_links_, "ep kernel rdma");
  call.kernel_forward_links = attach(kernel_forward_rate_, kernel_forward_links_, "ep kernel forward");
}

void Communicator::check_ranks(const std::vector<int>& ranks) const {
  if (ranks.empty()) throw std::invalid_argument("Communicator::start: no ranks");
  // One mark per GPU, kept across calls and cleared for the ranks marked: a step starts
  // hundreds of thousands of small collectives on clusters of tens of thousands of GPUs.
  if (seen_.size() != static_cast<std::size_t>(cluster_.gpus())) seen_.assign(static_cast<std::size_t>(cluster_.gpus()), 0);
  const char* problem = nullptr;
  std::size_t marked = 0;
  for (; marked < ranks.size(); ++marked) {
    const int gpu = ranks[marked];
    if (gpu < 0 || gpu >= cluster_.gpus()) {
      problem = "Communicator::start: GPU out of range";
      break;
    }
    if (seen_[static_cast<std::size_t>(gpu)]) {
      problem = "Communicator::start: repeated GPU";
      break;
    }
    seen_[static_cast<std::size_t>(gpu)] = 1;
  }
  for (std::size_t i = 0; i < marked; ++i) seen_[static_cast<std::size_t>(ranks[i])] = 0;
  if (problem != nullptr) throw std::invalid_argument(problem);
}

namespace {

/// The unit that runs `algorithm` for `call` (see Communicator::start for the fallbacks).
const AlgorithmUnit& unit_for(const CollectiveCall& call, Algorithm algorithm) {
  if (call.op == CollectiveOp::all_to_all) return algorithm_unit(Algorithm::all_to_all);
  if (algorithm == Algorithm::automatic) return algorithm_unit(choose_algorithm(call));
  const AlgorithmUnit& unit = algorithm_unit(algorithm);
  if (unit.applies(call)) return unit;
  if (algorithm == Algorithm::hierarchical) {
    if (call.nodes() > 1 && !detail::uniform(call.groups)) {
      throw std::invalid_argument("Communicator::start: hierarchical needs the same number of ranks on every node");
    }
    return algorithm_unit(Algorithm::ring);
  }
  if (algorithm == Algorithm::tree) throw std::invalid_argument("Communicator::start: the tree algorithm runs all_reduce only");
  if (algorithm == Algorithm::nvls) {
    throw std::invalid_argument(
        "Communicator::start: nvls runs all_reduce on the GPUs of one node whose NVSwitch reduces "
        "(node.nvswitch_reduce_bandwidth)");
  }
  throw std::invalid_argument(std::string("Communicator::start: ") + algorithm_name(algorithm) +
                              " does not apply to this collective");
}

}  // namespace

void Communicator::start(CollectiveOp op, const std::vector<int>& ranks, double bytes, Algorithm algorithm,
                         std::function<void()> on_done) {
  check_ranks(ranks);
  if (!(bytes >= 0)) throw std::invalid_argument("Communicator::start: bytes must be ≥ 0");
  const auto& comm = cluster_.topology().comm;
  auto collective = std::make_shared<Collective>(sim_, net_, cluster_, routes_, trace_, comm.step_latency,
                                                 flows_per_connection_, std::move(on_done));
  collective->set_fluid(fluid_rings_);
  collective->set_merge_routes(merge_routes_);
  collective->set_registry(&live_);
  CollectiveCall call = call_for(op, ranks, bytes);
  attach_kernel_links(call);
  const AlgorithmUnit& unit = unit_for(call, algorithm);
  const Time launch = ranks.size() > 1 ? unit.build(call, *collective) : comm.launch_latency;
  sim_.schedule_in(launch, [collective] { collective->launch(); });
}

void Communicator::send(int src, int dst, double bytes, std::function<void()> on_done) {
  if (src < 0 || dst < 0 || src >= cluster_.gpus() || dst >= cluster_.gpus()) {
    throw std::invalid_argument("Communicator::send: GPU out of range");
  }
  if (!(bytes >= 0)) throw std::invalid_argument("Communicator::send: bytes must be ≥ 0");
  auto collective = std::make_shared<Collective>(sim_, net_, cluster_, routes_, trace_, cluster_.topology().comm.step_latency,
                                                 flows_per_connection_, std::move(on_done));
  collective->set_direct_step_latency(false);
  collective->set_merge_routes(merge_routes_);
  if (src != dst) collective->add_direct({src, dst, bytes, 1, 0});
  sim_.schedule_in(cluster_.topology().comm.launch_latency, [collective] { collective->launch(); });
}

Time Communicator::predict(CollectiveOp op, const std::vector<int>& ranks, double bytes, Algorithm algorithm) const {
  check_ranks(ranks);
  if (ranks.size() == 1) return cluster_.topology().comm.launch_latency;
  const CollectiveCall call = call_for(op, ranks, bytes);
  if (op == CollectiveOp::all_to_all) algorithm = Algorithm::all_to_all;
  if (algorithm == Algorithm::automatic) algorithm = choose_algorithm(call);
  const AlgorithmUnit& unit = algorithm_unit(algorithm);
  return unit.applies(call) ? unit.predict(call) : Time::max();
}

Algorithm Communicator::choose(CollectiveOp op, const std::vector<int>& ranks, double bytes) const {
  check_ranks(ranks);
  return choose_algorithm(call_for(op, ranks, bytes));
}

CollectiveCall Communicator::call_for(CollectiveOp op, const std::vector<int>& ranks, double bytes) const {
  CollectiveCall call(op, ranks, bytes, cluster_, net_);
  call.aggregate = aggregate_all_to_all_;
  call.route_targets = route_targets_;
  call.route_picks = route_picks_;
  call.kernel_rdma_rate = kernel_rdma_rate_;
  call.kernel_forward_rate = kernel_forward_rate_;
  return call;
}

}  // namespace ironlaw::comm
