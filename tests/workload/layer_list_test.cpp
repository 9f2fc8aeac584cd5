// Models beyond transformers: layer-list cards (models/resnet50.yaml, mnist-mlp.yaml,
// lstm-ptb-large.yaml) give their published parameter counts exactly; a convolution is timed as
// the implicit GEMM of the same shape by the same roofline; FLOPs match hand counts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "config/layer_model.hpp"
#include "core/error.hpp"
#include "workload/layer_list.hpp"
#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using ironlaw::workload::testing::h100_sxm;

namespace {

std::string card(const std::string& name) {
  return (std::filesystem::path(IRONLAW_SOURCE_DIR) / "models" / (name + ".yaml")).string();
}

config::LayerModelSpec one_layer(const config::LayerSpec& l, const std::string& kind, std::vector<int> input) {
  config::LayerModelSpec m;
  m.name = "test";
  m.input_kind = kind;
  m.input = std::move(input);
  m.layers = {l};
  return m;
}

}  // namespace

TEST_CASE("layer-list cards give their exact parameter counts", "[workload][layer_list][acceptance]") {
  REQUIRE(config::is_layer_model(card("resnet50")));
  CHECK_FALSE(config::is_layer_model(card("gpt2-124m")));
  const auto resnet = config::load_layer_model(card("resnet50"));
  // torchvision ResNet50_Weights.IMAGENET1K_V1: num_params 25,557,032.
  CHECK(layer_model_cost(resnet, 1, "bf16").params() == 25'557'032);
  REQUIRE(resnet.published.params.has_value());
  CHECK(*resnet.published.params == 25'557'032);
  // 784·128 + 128 + 128·10 + 10.
  CHECK(layer_model_cost(config::load_layer_model(card("mnist-mlp")), 1, "bf16").params() == 101'770);
  // Zaremba et al. large: 1500·10000 + 2·(4·1500·3000 + 4·1500) + 1500·10000 + 10000.
  CHECK(layer_model_cost(config::load_layer_model(card("lstm-ptb-large")), 1, "bf16").params() == 66'022'000);
}

TEST_CASE("ResNet-50 forward multiply-adds match torchvision's 4.09 G", "[workload][layer_list]") {
  const auto cost = layer_model_cost(config::load_layer_model(card("resnet50")), 1, "bf16");
  // torchvision lists GFLOPS 4.09 for ResNet-50 at 224², counting one multiply-add as one.
  CHECK(cost.matmul_flops_per_sample() / 2 == Approx(4.09e9).epsilon(0.01));
  CHECK(cost.model_flops_per_sample() == 3 * cost.matmul_flops_per_sample());
  // 16 bottleneck blocks + conv1, bn1, relu, maxpool, avgpool, flatten, fc.
  CHECK(cost.layers.size() == 16 + 7);
  const auto& last = cost.layers.back();
  CHECK(last.out.channels == 1000);
  // The last stage's output is 2048 × 7 × 7 (224 / 32).
  const auto& layer4 = cost.layers[cost.layers.size() - 4];
  CHECK(layer4.out.channels == 2048);
  CHECK(layer4.out.height == 7);
  CHECK(layer4.out.width == 7);
}

TEST_CASE("a convolution is an implicit GEMM timed by the transformer GEMMs' roofline", "[workload][layer_list]") {
  // 3×3 conv, 64 → 128 channels, stride 1, padding 1, on 56 × 56, batch 32:
  // m = 32·56·56 = 100,352, n = 128, k = 64·9 = 576; FLOPs 2·m·n·k.
  config::LayerSpec conv;
  conv.kind = "conv2d";
  conv.filters = 128;
  conv.kernel = 3;
  conv.padding = 1;
  conv.bias = false;
  const auto cost = layer_model_cost(one_layer(conv, "image", {64, 56, 56}), 32, "bf16");
  REQUIRE(cost.layers.size() == 1);
  const auto& l = cost.layers[0];
  CHECK(l.params == 64.0 * 9 * 128);
  REQUIRE(l.forward.size() == 1);
  const Op& op = l.forward[0];
  CHECK(op.m == 100352);
  CHECK(op.n == 128);
  CHECK(op.k == 576);
  CHECK(op.flops == 2.0 * 100352 * 128 * 576);
  CHECK(l.matmul_flops == 2.0 * 56 * 56 * 128 * 576);
  // The roofline (op_time) on the H100 of ../shared/reference/hardware.md: 784 × 1 tiles of
  // 128 × 256 = 6 waves on 132 SMs, each tile 2·128·256·576 FLOPs at 989.4e12 · 0.801 / 132
  // per SM → 37.7 us; bytes (m·k + k·n + m·n) · 2 = 141,443,072 B at 3.35e12 B/s → 42.2 us.
  // Memory-bound: the larger of the two.
  CHECK(op.bytes == 141'443'072);
  const double compute = 6 * 2.0 * 128 * 256 * 576 / (989.4e12 * 0.801 / 132);
  const double memory = 141'443'072 / 3.35e12;
  // op_time rounds up to a whole ns.
  CHECK(op_time(op, h100_sxm(), "bf16").seconds() == Approx(std::max(compute, memory)).margin(1e-9));
  // Backward: dX and dW GEMMs of the same FLOPs each.
  REQUIRE(l.backward.size() == 2);
  CHECK(l.backward[0].flops == op.flops);
  CHECK(l.backward[1].flops == op.flops);
  CHECK(l.out.channels == 128);
  CHECK(l.out.height == 56);
}

TEST_CASE("an LSTM's recurrent GEMMs run one per step", "[workload][layer_list]") {
  // 2 LSTM units, 3 inputs, 5 steps, batch 4: input GEMM (m 20, n 8, k 3) + 5 × (m 4, n 8, k 2).
  config::LayerSpec lstm;
  lstm.kind = "lstm";
  lstm.units = 2;
  lstm.biases = 2;  // PyTorch: b_ih and b_hh
  config::LayerModelSpec m;
  m.input_kind = "tokens";
  m.input = {5};
  config::LayerSpec emb;
  emb.kind = "embedding";
  emb.vocab = 7;
  emb.units = 3;
  m.layers = {emb, lstm};
  const auto cost = layer_model_cost(m, 4, "fp32");
  REQUIRE(cost.layers.size() == 2);
  CHECK(cost.layers[0].params == 21);
  CHECK(cost.layers[1].params == 4 * 2 * (3 + 2) + 2 * 4 * 2);  // PyTorch nn.LSTM(3, 2): 56
  int recurrent = 0;
  for (const auto& op : cost.layers[1].forward) recurrent += op.name.find("_recurrent") != std::string::npos ? 1 : 0;
  CHECK(recurrent == 5);
  CHECK(cost.layers[1].matmul_flops == 2.0 * 5 * 8 * 3 + 5 * 2.0 * 8 * 2);
}

TEST_CASE("layer lists that do not fit are refused", "[workload][layer_list]") {
  // A card whose shapes cannot chain is bad input naming the entry (exit 2), not an internal error.
  config::LayerSpec conv;
  conv.kind = "conv2d";
  conv.filters = 8;
  conv.kernel = 9;
  CHECK_THROWS_AS(layer_model_cost(one_layer(conv, "image", {3, 4, 4}), 1, "bf16"), InputError);
  try {
    layer_model_cost(one_layer(conv, "image", {3, 4, 4}), 1, "bf16");
  } catch (const InputError& e) {
    REQUIRE(e.diagnostics().size() == 1);
    CHECK(e.diagnostics()[0].key == "model.layers[0]");
    CHECK(e.diagnostics()[0].message.find("kernel 9 does not fit the 4x4 input") != std::string::npos);
  }
  config::LayerSpec emb;
  emb.kind = "embedding";
  emb.vocab = 10;
  emb.units = 4;
  config::LayerModelSpec m = one_layer(conv, "image", {3, 32, 32});
  m.layers.push_back(emb);
  CHECK_THROWS_AS(layer_model_cost(m, 1, "bf16"), InputError);
  CHECK_THROWS_AS(layer_model_cost(one_layer(emb, "tokens", {8}), 0, "bf16"), std::invalid_argument);
}

TEST_CASE("a bad layer-list card is reported with file, line and key", "[workload][layer_list][errors]") {
  const auto path = std::filesystem::temp_directory_path() / "ironlaw-bad-layer-card.yaml";
  {
    std::FILE* f = std::fopen(path.string().c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("architecture: layer_list\nname: bad\nsource: test\ninput_kind: image\ninput: [3, 32]\n"
               "layers:\n  - { kind: dense }\n  - { kind: conv3d, filters: 4 }\n",
               f);
    std::fclose(f);
  }
  try {
    config::load_layer_model(path.string());
    FAIL("no error");
  } catch (const InputError& e) {
    std::vector<std::string> msgs;
    for (const auto& d : e.diagnostics()) msgs.push_back(d.str());
    REQUIRE(msgs.size() == 3);
    CHECK(msgs[0].find(":5:") != std::string::npos);
    CHECK(msgs[0].find("input: expected [channels, height, width]") != std::string::npos);
    CHECK(msgs[1].find("layers[0].units: a dense layer needs units > 0") != std::string::npos);
    CHECK(msgs[2].find(":8:") != std::string::npos);
    CHECK(msgs[2].find("layers[1].kind") != std::string::npos);
  }
  std::filesystem::remove(path);
}

TEST_CASE("a weight gradient with few output tiles is split along k", "[workload][layer_list]") {
  // conv 3×3, 64 → 128 channels on 56 × 56, batch 32: dW is m = 576, n = 128, k = 100,352.
  // On the H100 (132 SMs, 128 × 256 tiles): 5 × 1 = 5 tiles → s = min(⌊132 / 5⌋ = 26,
  // ⌈100352 / 512⌉ = 196) = 26 slices of k = 100352 / 26, one wave; then a reduction of the 26
  // fp32 partial outputs. Without the device: one GEMM of k = 100,352.
  config::LayerSpec conv;
  conv.kind = "conv2d";
  conv.filters = 128;
  conv.kernel = 3;
  conv.padding = 1;
  conv.bias = false;
  const auto device = h100_sxm();
  const auto plain = layer_model_cost(one_layer(conv, "image", {64, 56, 56}), 32, "bf16");
  const auto split = layer_model_cost(one_layer(conv, "image", {64, 56, 56}), 32, "bf16", &device);
  const Op& dw = plain.layers[0].backward[1];
  CHECK(dw.k == 100352);
  const auto& ops = split.layers[0].backward;
  const Op* sliced = nullptr;
  const Op* reduce = nullptr;
  for (const auto& op : ops) {
    if (op.name == "conv2d0_dw") sliced = &op;
    if (op.name == "conv2d0_dw_splitk_reduce") reduce = &op;
  }
  REQUIRE(sliced != nullptr);
  REQUIRE(reduce != nullptr);
  CHECK(sliced->batch == 26);
  CHECK(sliced->k == Approx(100352.0 / 26));
  CHECK(sliced->flops == dw.flops);
  CHECK(reduce->bytes == 26.0 * 576 * 128 * 4 + 576.0 * 128 * 2);
  // One wave of 130 tiles of k = 100352/26 instead of one wave of 5 tiles of k = 100,352: the
  // sliced GEMM alone takes under a twentieth of the unsplit wave (2·128·256·100,352 FLOPs on
  // one SM at 0.801 × 989.4 TFLOP/s / 132), and op_time of the unsplit op is the same split.
  const double unsplit_wave = 2.0 * 128 * 256 * 100352 / (0.801 * 989.4e12 / 132);
  CHECK(op_time(*sliced, device, "bf16").seconds() < unsplit_wave / 20);
  CHECK(op_time(dw, device, "bf16") == op_time(*sliced, device, "bf16") + op_time(*reduce, device, "bf16"));
}
