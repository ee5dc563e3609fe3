// Tests of lib/train/optimizer: the weight-decay groups and the schedule of App. A.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>

#include "lib/model/model.h"
#include "lib/train/optimizer.h"

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

TEST_CASE("the fused AdamW step follows App. A's AdamW, written out here in float64") {
  for (auto dtype : {torch::kDouble, torch::kFloat}) {
    INFO("dtype " << dtype);
    const double tolerance = dtype == torch::kDouble ? 1e-13 : 1e-6;
    torch::manual_seed(3);
    auto decayed = torch::randn({5, 4}, dtype).requires_grad_(true);
    auto plain = torch::randn({4}, dtype).requires_grad_(true);
    // Copies: for float64, .to(kDouble) alone would alias the parameters the optimizer updates.
    auto decayed_ref = decayed.detach().to(torch::kDouble).clone(), plain_ref = plain.detach().to(torch::kDouble).clone();
    std::vector<torch::optim::OptimizerParamGroup> groups;
    auto options = [](double decay) {
      auto o = std::make_unique<torch::optim::AdamWOptions>(1e-2);
      o->betas({0.9, 0.95}).eps(1e-8).weight_decay(decay);
      return o;
    };
    groups.emplace_back(std::vector<torch::Tensor>{decayed}, options(0.1));
    groups.emplace_back(std::vector<torch::Tensor>{plain}, options(0.0));
    sg::FusedAdamW optimizer(groups, torch::optim::AdamWOptions(1e-2));
    std::vector<torch::Tensor> m(2), v(2);
    for (auto& t : m) t = torch::zeros({}, torch::kDouble);
    for (auto& t : v) t = torch::zeros({}, torch::kDouble);
    for (int step = 1; step <= 6; ++step) {
      const double lr = 1e-2 / step;  // the schedule changes the rate between steps
      sg::set_learning_rate(optimizer, lr);
      const auto g0 = torch::randn({5, 4}, torch::kDouble), g1 = torch::randn({4}, torch::kDouble);
      decayed.mutable_grad() = g0.to(dtype);
      plain.mutable_grad() = g1.to(dtype);
      optimizer.step();
      auto reference = [&](torch::Tensor& p, const torch::Tensor& g, int i, double decay) {
        m[i] = 0.9 * m[i] + 0.1 * g;
        v[i] = 0.95 * v[i] + 0.05 * g * g;
        const double c1 = 1 - std::pow(0.9, step), c2 = 1 - std::pow(0.95, step);
        p = p * (1 - lr * decay) - lr * (m[i] / c1) / ((v[i] / c2).sqrt() + 1e-8);
      };
      reference(decayed_ref, g0, 0, 0.1);
      reference(plain_ref, g1, 1, 0.0);
      CHECK((decayed.detach().to(torch::kDouble) - decayed_ref).abs().max().item<double>() < tolerance);
      CHECK((plain.detach().to(torch::kDouble) - plain_ref).abs().max().item<double>() < tolerance);
    }
    // The state is LibTorch's AdamWParamState, as run files save it.
    auto& state = static_cast<torch::optim::AdamWParamState&>(*optimizer.state().at(decayed.unsafeGetTensorImpl()));
    CHECK(state.step() == 6);
    CHECK((state.exp_avg().to(torch::kDouble) - m[0]).abs().max().item<double>() < tolerance);
    CHECK((state.exp_avg_sq().to(torch::kDouble) - v[0]).abs().max().item<double>() < tolerance);
  }
}

TEST_CASE("clip_and_step equals LibTorch's clip_grad_norm_ followed by step") {
  for (double grad_size : {0.01, 10.0}) {  // below the clipping norm (factor exactly 1) and above it
    INFO("gradient size " << grad_size);
    torch::manual_seed(4);
    auto options = [](double decay) {
      auto o = std::make_unique<torch::optim::AdamWOptions>(1e-2);
      o->betas({0.9, 0.95}).eps(1e-8).weight_decay(decay);
      return o;
    };
    std::vector<torch::Tensor> fused_params, ref_params;
    for (auto shape : {std::vector<int64_t>{6, 3}, std::vector<int64_t>{5}}) {
      const auto init = torch::randn(shape, torch::kDouble);
      fused_params.push_back(init.clone().requires_grad_(true));
      ref_params.push_back(init.clone().requires_grad_(true));
    }
    auto make = [&](std::vector<torch::Tensor>& params) {
      std::vector<torch::optim::OptimizerParamGroup> groups;
      groups.emplace_back(std::vector<torch::Tensor>{params[0]}, options(0.1));
      groups.emplace_back(std::vector<torch::Tensor>{params[1]}, options(0.0));
      return sg::FusedAdamW(groups, torch::optim::AdamWOptions(1e-2));
    };
    auto fused = make(fused_params), reference = make(ref_params);
    for (int step = 0; step < 4; ++step) {
      for (size_t i = 0; i < fused_params.size(); ++i) {
        const auto g = torch::randn(fused_params[i].sizes(), torch::kDouble) * grad_size;
        fused_params[i].mutable_grad() = g.clone();
        ref_params[i].mutable_grad() = g.clone();
      }
      const double norm = fused.clip_and_step(1.0).item<double>();
      const double norm_ref = torch::nn::utils::clip_grad_norm_(ref_params, 1.0);
      reference.step();
      CHECK(norm == Approx(norm_ref).epsilon(1e-6));
      // The kernel takes the clipping factor as a float32 scalar: a relative 6e-8 on the gradients.
      for (size_t i = 0; i < fused_params.size(); ++i) {
        CHECK((fused_params[i] - ref_params[i]).abs().max().item<double>() < 1e-8);
        const auto& g = ref_params[i].grad();  // clipped
        CHECK((fused_params[i].grad() - g).abs().max().item<double>() < 2e-7 * g.abs().max().item<double>());
      }
    }
  }
}
