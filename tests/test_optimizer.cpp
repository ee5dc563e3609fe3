// Tests of lib/optimizer: the weight-decay groups and the schedule of App. A.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>

#include "lib/model.h"
#include "lib/optimizer.h"

TEST_CASE("decay exactly the tensors of dimension >= 2, never the arm parameters") {
  for (const char* arm : {"baseline", "sinklogit", "normgate", "renorm", "projgate", "combo", "combo2", "sinktoken"}) {
    INFO(arm);
    sg::ModelConfig config;
    config.n_layer = 2;
    config.n_head = 2;
    config.n_embd = 16;
    config.block_size = 8;
    config.vocab_size = 50;
    config.arm = sg::parse_arm(arm);
    auto model = sg::build_model(config, 0);
    const auto groups = sg::parameter_groups(*model);
    for (size_t i = 0; i < groups.decay.size(); ++i) {
      INFO(groups.decay_names[i]);
      CHECK(groups.decay[i].dim() >= 2);
      CHECK(groups.decay_names[i].find("gate_") == std::string::npos);
    }
    for (size_t i = 0; i < groups.no_decay.size(); ++i) {
      const auto& name = groups.no_decay_names[i];
      INFO(name);
      const bool arm_param = name.find("sink_logit") != std::string::npos || name.find("gate_") != std::string::npos;
      CHECK((groups.no_decay[i].dim() < 2 || arm_param));
    }
    // The projection-gate direction w_h is two-dimensional and still never decayed.
    const bool has_w = config.arm.filter == sg::Filter::projgate;
    bool w_in_no_decay = false;
    for (const auto& name : groups.no_decay_names) w_in_no_decay = w_in_no_decay || name.find("gate_w") != std::string::npos;
    CHECK(w_in_no_decay == has_w);
    CHECK(groups.decay.size() + groups.no_decay.size() == model->parameters().size());
    // The embedding is decayed (App. A), the layer norms are not.
    bool wte = false;
    for (const auto& name : groups.decay_names) wte = wte || name == "wte.weight";
    CHECK(wte);
  }
}

TEST_CASE("the optimizer applies weight decay 0.1 to the decay group only") {
  sg::ModelConfig config;
  config.n_layer = 1;
  config.n_head = 2;
  config.n_embd = 8;
  config.block_size = 4;
  config.vocab_size = 11;
  config.arm = sg::parse_arm("combo2");
  auto model = sg::build_model(config, 0);
  sg::TrainConfig train;
  auto optimizer = sg::make_optimizer(*model, train);
  REQUIRE(optimizer->param_groups().size() == 2);
  const auto& decay = static_cast<const torch::optim::AdamWOptions&>(optimizer->param_groups()[0].options());
  const auto& no_decay = static_cast<const torch::optim::AdamWOptions&>(optimizer->param_groups()[1].options());
  CHECK(decay.weight_decay() == Approx(0.1));
  CHECK(no_decay.weight_decay() == 0.0);
  CHECK(std::get<0>(decay.betas()) == Approx(0.9));
  CHECK(std::get<1>(decay.betas()) == Approx(0.95));
  // With zero gradients, one step shrinks only the decayed tensors, by lr * wd.
  for (auto& p : model->parameters()) p.mutable_grad() = torch::zeros_like(p);
  auto before = model->named_parameters();
  std::map<std::string, torch::Tensor> copies;
  for (const auto& item : before) copies[item.key()] = item.value().detach().clone();
  sg::set_learning_rate(*optimizer, 1e-2);
  optimizer->step();
  for (const auto& item : model->named_parameters()) {
    INFO(item.key());
    const bool decays = item.value().dim() >= 2 && item.key().find("gate_") == std::string::npos;
    const auto expected = decays ? copies[item.key()] * (1 - 1e-2 * 0.1) : copies[item.key()];
    CHECK((item.value() - expected).abs().max().item<double>() < 1e-7);
  }
}

TEST_CASE("learning rate: linear warm-up to 6e-4, cosine to 6e-5 at the final iteration") {
  sg::TrainConfig train;  // 10M tier: 6000 iterations, warm-up 200
  CHECK(sg::learning_rate(train, 0) == Approx(6e-4 / 200));
  CHECK(sg::learning_rate(train, 99) == Approx(6e-4 * 100 / 200));
  CHECK(sg::learning_rate(train, 199) == Approx(6e-4));
  CHECK(sg::learning_rate(train, 200) == Approx(6e-4));
  const double mid = 200 + (6000 - 1 - 200) / 2.0;  // halfway through the cosine
  CHECK(sg::learning_rate(train, static_cast<int64_t>(mid)) == Approx((6e-4 + 6e-5) / 2).epsilon(1e-3));
  CHECK(sg::learning_rate(train, 5999) == Approx(6e-5));
  for (int64_t step = 201; step < 6000; step += 97)
    CHECK(sg::learning_rate(train, step) <= sg::learning_rate(train, step - 1));
}
