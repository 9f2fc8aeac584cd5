#pragma once
// The DGX H100 topology of topologies/dgx-h100-leaf-spine.yaml built in C++, for tests of the
// hardware and comm layers that must not depend on the YAML loader. Each number cites the
// source its YAML twin gives.
#include "config/spec.hpp"

namespace ironlaw::test {

/// DGX H100 on a non-blocking NDR leaf/spine fabric.
inline config::TopologySpec dgx_h100() {
  constexpr double GBps = 1e9;
  config::TopologySpec t;
  t.name = "dgx-h100-leaf-spine";
  t.file = "topologies/dgx-h100-leaf-spine.yaml";
  t.node.gpus = 8;                                   // DGX BasePOD RA: 8 H100 SXM5
  t.node.nvlink = {360 * GBps, Time::ns(500)};       // 450 GB/s line − 20 % protocol (nccl-tests #212); 0.5 us assumed
  t.node.gpus_per_pcie_switch = 1;                   // DGX H100: one GPU + one CX-7 per PCIe switch
  t.node.pcie = {51 * GBps, Time::ns(250)};          // Azure nvbandwidth H2D 51 GB/s; 250 ns assumed
  t.node.nics = 8;                                   // 8 × ConnectX-7 400 Gb/s
  t.node.nic = {47 * GBps, Time::ns(500)};           // nccl-tests #290: 46–48 GB/s per NDR NIC
  t.fabric.nodes_per_leaf = 4;                       // QM9700 64 ports: 32 down + 32 up
  t.fabric.oversubscription = 1;
  t.fabric.spines = 0;
  t.fabric.leaf_spine = {47 * GBps, Time::ns(100)};  // NDR port, as the NIC; 100 ns cable assumed
  t.fabric.switch_latency = Time::ns(300);           // assumed
  t.comm.channels = 8;                               // one ring per NIC
  t.comm.launch_latency = Time::ns(8400);            // NCCL tuning.cc baseLat Ring/Simple
  t.comm.step_latency = Time::ns(3400);              // NCCL tuning.cc hwLat NVLink Ring/Simple
  t.comm.chunk_bytes = 512 * 1024;                   // NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8
  t.comm.tree_min_chunk_bytes = 32 * 1024;           // NCCL enqueue.cc Tree/Simple chunk floor
  return t;
}

}  // namespace ironlaw::test
