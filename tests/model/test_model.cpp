// Tests of lib/model/model: parameter costs of Table 4, initialisation, the sink token, the KV
// cache against a full pass for every arm, and seeded determinism.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "lib/model/model.h"
#include "lib/train/optimizer.h"

namespace {

sg::ModelConfig small_config(const std::string& arm, int64_t layers = 2, int64_t heads = 4, int64_t width = 32) {
  sg::ModelConfig config;
  config.n_layer = layers;
  config.n_head = heads;
  config.n_embd = width;
  config.block_size = 24;
  config.vocab_size = 97;
  config.arm = sg::parse_arm(arm);
  return config;
}

int64_t count(const torch::nn::Module& module) {
  int64_t total = 0;
  for (const auto& p : module.parameters()) total += p.numel();
  return total;
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

const char* kAllArms[] = {"baseline", "offbyone", "sinklogit", "sinktoken", "normgate", "renorm",
                          "projgate", "combo",    "combo2",    "sinktoken+projgate", "offbyone+renorm",
                          "keygate",  "outgate",  "outgate-elem", "sinktoken+keygate+outgate", "combo2+outgate-elem"};

}  // namespace

TEST_CASE("parameters added per layer equal Table 4, at two model sizes") {
  struct Shape {
    int64_t layers, heads, width;
  };
  for (const Shape shape : {Shape{2, 4, 32}, Shape{3, 6, 96}}) {
    const int64_t h = shape.heads, d = shape.width / shape.heads;
    // Table 4, written out: H, H(d+1), H(d+2), 2H; the sink token's d_model is once per model.
    const std::map<std::string, int64_t> per_layer = {
        {"baseline", 0}, {"offbyone", 0}, {"sinklogit", h},         {"normgate", h},        {"renorm", h},
        {"projgate", h * (d + 1)},        {"combo", 2 * h},         {"combo2", h * (d + 2)},
        // beyond the paper: the key gate as the projection gate; W_theta is C x H or C x C
        {"keygate", h * (d + 1)},         {"outgate", shape.width * h}, {"outgate-elem", shape.width * shape.width},
        {"sinklogit+outgate", h + shape.width * h},
    };
    auto base_model = sg::build_model(small_config("baseline", shape.layers, shape.heads, shape.width), 0);
    const int64_t base_block = count(*base_model->blocks[0]);
    for (const auto& [arm, cost] : per_layer) {
      INFO(arm << " at width " << shape.width);
      auto model = sg::build_model(small_config(arm, shape.layers, shape.heads, shape.width), 0);
      CHECK(count(*model->blocks[0]) - base_block == cost);
      CHECK(model->parameter_count() - base_model->parameter_count() == cost * shape.layers);
    }
    auto sink_model = sg::build_model(small_config("sinktoken", shape.layers, shape.heads, shape.width), 0);
    CHECK(sink_model->parameter_count() - base_model->parameter_count() == shape.width);
  }
}

TEST_CASE("for every arm of the table, the model registers each row's parameters by its shape, init and decay") {
  const int64_t layers = 2, heads = 4, width = 32, d = width / heads;
  const double beta = 8.0;
  std::set<std::string> base_names;
  for (const auto& item : sg::build_model(small_config("baseline", layers, heads, width), 0)->named_parameters())
    base_names.insert(item.key());
  for (const auto& arm : sg::all_arms()) {
    INFO(arm.name());
    auto config = small_config(arm.name(), layers, heads, width);
    config.gate_beta = beta;
    auto model = sg::build_model(config, 0);
    std::map<std::string, torch::Tensor> own;  // beyond the baseline's
    for (const auto& item : model->named_parameters())
      if (!base_names.count(item.key())) own[item.key()] = item.value().detach();
    std::set<std::string> expected;
    const auto groups = sg::parameter_groups(*model);
    for (const auto& parameter : sg::arm_parameters(arm)) {
      std::vector<int64_t> shape;  // the rule, read here: H, d, d_model
      for (const auto extent : parameter.shape)
        shape.push_back(extent == sg::Extent::heads ? heads : extent == sg::Extent::head_dim ? d : width);
      for (int64_t layer = 0; layer < (parameter.per_layer ? layers : 1); ++layer) {
        const std::string name = parameter.per_layer ? "blocks." + std::to_string(layer) + ".attn." + parameter.name
                                                     : std::string(parameter.name);
        INFO(name);
        expected.insert(name);
        REQUIRE(own.count(name));
        const auto& value = own.at(name);
        CHECK(value.sizes().vec() == shape);
        switch (parameter.init) {
          case sg::ArmInit::zeros: CHECK(value.abs().max().item<double>() == 0.0); break;
          case sg::ArmInit::constant: CHECK(value.eq(parameter.value).all().item<bool>()); break;
          case sg::ArmInit::minus_4_over_beta:
            CHECK(value.eq(static_cast<float>(-4.0 / beta)).all().item<bool>());
            break;
          case sg::ArmInit::normal: {
            const double sd = value.std().item<double>();
            CHECK(sd > 0.5 * parameter.value);
            CHECK(sd < 1.5 * parameter.value);
            break;
          }
        }
        const bool decayed = std::find(groups.decay_names.begin(), groups.decay_names.end(), name) != groups.decay_names.end();
        CHECK(decayed == parameter.decayed);
      }
    }
    CHECK(own.size() == expected.size());
  }
}

TEST_CASE("the configuration's parameter count (what sg-info prints, without a model) is the model's") {
  for (const char* arm : kAllArms)
    for (const auto& [layers, heads, width] : {std::tuple<int64_t, int64_t, int64_t>{2, 4, 32}, {3, 6, 96}}) {
      INFO(arm << " at " << layers << " layers of width " << width);
      const auto config = small_config(arm, layers, heads, width);
      CHECK(config.parameter_count() == sg::build_model(config, 0)->parameter_count());
    }
}

TEST_CASE("initialisation: N(0, 0.02), output projections 0.02/sqrt(2L), no biases, tied head") {
  sg::ModelConfig config = small_config("baseline", 4, 4, 128);
  config.vocab_size = 4000;
  auto model = sg::build_model(config, 3);
  const double proj_std = 0.02 / std::sqrt(2.0 * 4);
  for (const auto& item : model->named_parameters()) {
    INFO(item.key());
    const auto& p = item.value();
    if (p.dim() < 2) continue;
    const bool output = item.key().find("c_proj") != std::string::npos;
    const double std = p.std().item<double>();
    CHECK(std::abs(std - (output ? proj_std : 0.02)) < 0.1 * (output ? proj_std : 0.02));
    CHECK(std::abs(p.mean().item<double>()) < 0.002);
  }
  for (const auto& item : model->named_parameters())
    if (item.key().find("c_") != std::string::npos) CHECK(item.key().find("bias") == std::string::npos);
  // Tied: the logits are the final hidden states times the token embedding.
  const auto idx = torch::randint(config.vocab_size, {1, 5});
  torch::NoGradGuard no_grad;
  CHECK(max_diff(model->forward(idx), torch::matmul(model->hidden(idx), model->wte->weight.t())) < 1e-5);
}

TEST_CASE("the sink token returns one output per input position") {
  auto model = sg::build_model(small_config("sinktoken"), 1);
  const auto idx = torch::randint(97, {3, 10});
  torch::NoGradGuard no_grad;
  const auto logits = model->forward(idx);
  CHECK(logits.sizes() == torch::IntArrayRef({3, 10, 97}));
  // Position 0 still depends on the learned sink position (it is attended to).
  auto before = logits.clone();
  model->sink_token.add_(torch::randn_like(model->sink_token));  // not a constant: LayerNorm removes those
  CHECK(max_diff(model->forward(idx).select(1, 0), before.select(1, 0)) > 1e-6);
}

TEST_CASE("for every arm, decoding with the KV cache gives the logits of one full pass") {
  for (const char* arm : kAllArms) {
    INFO(arm);
    auto model = sg::build_model(small_config(arm), 5);
    {  // Move the arm parameters off their initial values so that gates and sinks act.
      torch::NoGradGuard no_grad;
      for (const auto& item : model->named_parameters())
        if ((item.value().dim() == 1 && item.key().find("ln") == std::string::npos) ||
            item.key().find("gate_w") != std::string::npos || item.key().find("out_gate") != std::string::npos)
          item.value().normal_(0.0, 1.0);
    }
    const auto idx = torch::randint(97, {2, 17});
    torch::NoGradGuard no_grad;
    for (auto backend : {sg::AttentionBackend::explicit_math, sg::AttentionBackend::fused}) {
      model->set_backend(backend);
      const auto full = model->forward(idx);
      sg::ModelCache cache;
      std::vector<torch::Tensor> steps;
      for (int64_t t = 0; t < 17; ++t) steps.push_back(model->forward(idx.narrow(1, t, 1), &cache));
      CHECK(max_diff(torch::cat(steps, 1), full) < 1e-4);
      // A prefill of several tokens, then one at a time.
      sg::ModelCache chunked;
      auto prefill = model->forward(idx.narrow(1, 0, 6), &chunked);
      std::vector<torch::Tensor> rest{prefill};
      for (int64_t t = 6; t < 17; ++t) rest.push_back(model->forward(idx.narrow(1, t, 1), &chunked));
      CHECK(max_diff(torch::cat(rest, 1), full) < 1e-4);
      CHECK(chunked.tokens == 17);
    }
  }
}

TEST_CASE("the fused and explicit paths agree on a whole model, forward and gradients") {
  for (const char* arm : kAllArms) {
    INFO(arm);
    auto model = sg::build_model(small_config(arm), 6);
    const auto idx = torch::randint(97, {2, 20});
    std::vector<std::vector<torch::Tensor>> grads;
    std::vector<torch::Tensor> losses;
    for (auto backend : {sg::AttentionBackend::explicit_math, sg::AttentionBackend::fused}) {
      model->set_backend(backend);
      model->zero_grad();
      auto loss = model->loss(idx, idx.roll(-1, 1));
      loss.backward();
      losses.push_back(loss.detach());
      grads.emplace_back();
      for (const auto& p : model->parameters()) grads.back().push_back(p.grad().clone());
    }
    CHECK(max_diff(losses[0], losses[1]) < 1e-5);
    for (size_t i = 0; i < grads[0].size(); ++i) CHECK(max_diff(grads[0][i], grads[1][i]) < 1e-5);
  }
}

TEST_CASE("model->loss gives the loss and gradients of cross_entropy over the full logits, in float64") {
  // The fused loss (chunked, gradients in the forward pass) and the sparse lookup gradient of
  // the tied embedding, against LibTorch's own cross-entropy over materialised logits. The
  // tolerance is float64 rounding of the chunked sums, whose last bits vary between runs of the
  // same binary (1e-12 failed about one run in four on the 2-core machine; 1e-10 passed 30 of 30).
  for (const char* arm : {"baseline", "combo2", "sinktoken"}) {
    INFO(arm);
    auto model = sg::build_model(small_config(arm), 8);
    model->to(torch::kDouble);
    const auto idx = torch::randint(97, {3, 20});
    const auto targets = idx.roll(-1, 1);
    model->zero_grad();
    auto loss = model->loss(idx, targets);
    loss.backward();
    std::vector<torch::Tensor> fused;
    for (const auto& p : model->parameters()) fused.push_back(p.grad().to_dense().clone());
    model->zero_grad();
    const auto logits = model->forward(idx);
    auto reference = torch::nn::functional::cross_entropy(logits.reshape({-1, 97}), targets.reshape({-1}));
    reference.backward();
    CHECK(std::abs(loss.item<double>() - reference.item<double>()) < 1e-10);
    const auto params = model->named_parameters();
    size_t i = 0;
    for (const auto& item : params) {
      INFO(item.key());
      CHECK(!item.value().grad().is_sparse());
      CHECK(max_diff(fused[i++], item.value().grad().to_dense()) < 1e-10);
    }
  }
}

TEST_CASE("the same seed gives bitwise-identical weights and outputs on the CPU") {
  for (const char* arm : {"baseline", "combo2", "sinktoken"}) {
    INFO(arm);
    auto a = sg::build_model(small_config(arm), 42), b = sg::build_model(small_config(arm), 42);
    auto c = sg::build_model(small_config(arm), 43);
    const auto pa = a->parameters(), pb = b->parameters(), pc = c->parameters();
    bool same = true, differs = false;
    for (size_t i = 0; i < pa.size(); ++i) {
      same = same && torch::equal(pa[i], pb[i]);
      differs = differs || !torch::equal(pa[i], pc[i]);
    }
    CHECK(same);
    CHECK(differs);
    const auto idx = torch::randint(97, {2, 12});
    torch::NoGradGuard no_grad;
    CHECK(torch::equal(a->forward(idx), b->forward(idx)));
  }
}

TEST_CASE("a sequence longer than the context is refused") {
  auto model = sg::build_model(small_config("baseline"), 0);
  CHECK_THROWS_WITH(model->forward(torch::zeros({1, 25}, torch::kLong)),
                    Catch::Contains("exceeds the context length 24"));
}
