// Tests of lib/loss: the chunked linear cross-entropy against the unfused loss of LibTorch.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "lib/loss.h"

TEST_CASE("chunked linear cross-entropy equals cross_entropy(hidden @ W^T), value and gradients") {
  torch::manual_seed(0);
  for (int64_t chunk : {0, 1, 7, 100}) {
    INFO("chunk rows " << chunk);
    auto hidden = torch::randn({37, 16}, torch::kDouble).requires_grad_(true);
    auto weight = torch::randn({211, 16}, torch::kDouble).requires_grad_(true);
    const auto targets = torch::randint(211, {37}, torch::kLong);
    auto hidden_ref = hidden.detach().clone().requires_grad_(true);
    auto weight_ref = weight.detach().clone().requires_grad_(true);
    auto loss = sg::linear_cross_entropy(hidden, weight, targets, chunk);
    auto ref = torch::nn::functional::cross_entropy(torch::matmul(hidden_ref, weight_ref.t()), targets);
    CHECK(std::abs(loss.item<double>() - ref.item<double>()) < 1e-6);
    (loss * 2.5).backward();
    (ref * 2.5).backward();
    CHECK((hidden.grad() - hidden_ref.grad()).abs().max().item<double>() < 1e-6);
    CHECK((weight.grad() - weight_ref.grad()).abs().max().item<double>() < 1e-6);
  }
  // Repeated targets (the scatter of -1/N adds up), float32, and a plain backward (scale one).
  for (auto dtype : {torch::kDouble, torch::kFloat}) {
    INFO("dtype " << dtype);
    const double tolerance = dtype == torch::kDouble ? 1e-12 : 2e-5;
    auto hidden = torch::randn({50, 8}, dtype).requires_grad_(true);
    auto weight = torch::randn({31, 8}, dtype).requires_grad_(true);
    const auto targets = torch::tensor({3, 3, 3, 0, 30}, torch::kLong).repeat({10});
    auto hidden_ref = hidden.detach().to(torch::kDouble).requires_grad_(true);
    auto weight_ref = weight.detach().to(torch::kDouble).requires_grad_(true);
    auto loss = sg::linear_cross_entropy(hidden, weight, targets, 16);
    auto ref = torch::nn::functional::cross_entropy(torch::matmul(hidden_ref, weight_ref.t()), targets);
    CHECK(std::abs(loss.item<double>() - ref.item<double>()) < tolerance);
    loss.backward();
    ref.backward();
    CHECK((hidden.grad().to(torch::kDouble) - hidden_ref.grad()).abs().max().item<double>() < tolerance);
    CHECK((weight.grad().to(torch::kDouble) - weight_ref.grad()).abs().max().item<double>() < tolerance);
  }
  torch::NoGradGuard no_grad;
  const auto h = torch::randn({5, 4}), w = torch::randn({9, 4});
  const auto t = torch::randint(9, {5}, torch::kLong);
  CHECK(std::abs(sg::linear_cross_entropy(h, w, t).item<double>() -
                 torch::nn::functional::cross_entropy(torch::matmul(h, w.t()), t).item<double>()) < 1e-5);
}
