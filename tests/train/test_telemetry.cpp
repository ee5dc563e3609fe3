// test_telemetry.cpp — training's telemetry (lib/train/telemetry.h): the blockwise largest causal
// logit against the whole (B, H, T, T) matrix in float64, written here; bf16 within its stated
// bound; the recorder's running maxima over layers and passes.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "lib/train/telemetry.h"

namespace {

/// max_{j <= i} q_i.k_j * scale over every batch entry and head, from the whole matrix in float64.
double naive_largest(const torch::Tensor& q, const torch::Tensor& k, double scale) {
  const auto q64 = q.to(torch::kDouble), k64 = k.to(torch::kDouble);
  const int64_t t = q.size(2);
  double best = -std::numeric_limits<double>::infinity();
  const auto logits = torch::matmul(q64, k64.transpose(-2, -1)) * scale;  // (B, H, T, T)
  auto table = logits.accessor<double, 4>();
  for (int64_t b = 0; b < q.size(0); ++b)
    for (int64_t h = 0; h < q.size(1); ++h)
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j <= i; ++j) best = std::max(best, table[b][h][i][j]);
  return best;
}

}  // namespace

TEST_CASE("the blockwise largest causal logit equals the whole matrix's, for every block size and length") {
  torch::manual_seed(3);
  for (int64_t length : {1, 2, 7, 64, 100}) {
    auto q = torch::randn({2, 3, length, 8}, torch::kDouble), k = torch::randn({2, 3, length, 8}, torch::kDouble);
    // A future key far larger than every causal logit: it must never count.
    if (length > 1) k.select(2, length - 1).fill_(50.0), q.select(2, 0).fill_(1.0);
    const double scale = 1.0 / std::sqrt(8.0);
    const double want = naive_largest(q, k, scale);
    for (int64_t block : {1, 3, 16, 64, 256}) {
      INFO("length " << length << ", block " << block);
      const auto got = sg::largest_causal_logit(q, k, scale, block);
      CHECK(got.scalar_type() == torch::kDouble);
      CHECK(got.item<double>() == Approx(want).epsilon(1e-14));
      const auto got32 = sg::largest_causal_logit(q.to(torch::kFloat), k.to(torch::kFloat), scale, block);
      CHECK(got32.scalar_type() == torch::kFloat);
      CHECK(got32.item<double>() == Approx(want).epsilon(1e-5));
    }
  }
}

TEST_CASE("in bf16 the largest causal logit is within a relative 2^-8 of float64 on the same rounded inputs") {
  torch::manual_seed(4);
  for (int64_t length : {5, 300}) {
    const auto q = torch::randn({2, 4, length, 16}).to(torch::kBFloat16), k = torch::randn({2, 4, length, 16}).to(torch::kBFloat16);
    const double want = naive_largest(q, k, 0.25);
    const auto got = sg::largest_causal_logit(q, k, 0.25);
    INFO("length " << length << ": " << got.item<double>() << " against " << want);
    CHECK(got.scalar_type() == torch::kFloat);
    CHECK(std::abs(got.item<double>() - want) <= std::ldexp(std::abs(want), -8));
  }
}

TEST_CASE("the recorder keeps the running maxima over layers and passes until reset") {
  sg::StepMaximaRecorder recorder;
  CHECK_FALSE(recorder.attention_logit().defined());
  const auto q = torch::ones({1, 1, 3, 2}), k = torch::ones({1, 1, 3, 2});
  recorder.attention_inputs(0, q, k, 1.0);        // every logit 2
  recorder.attention_inputs(1, q * 2, k, 0.5);    // every logit 2
  recorder.attention_inputs(0, q, k * 3, 1.0);    // every logit 6
  recorder.residual(-1, torch::tensor({1.0f, -7.5f, 3.0f}).view({1, 3, 1}));
  recorder.residual(0, torch::tensor({4.0f, 2.0f, -1.0f}).view({1, 3, 1}));
  CHECK(recorder.attention_logit().item<double>() == 6.0);
  CHECK(recorder.activation().item<double>() == 7.5);  // the largest |x|, a negative one here
  recorder.reset();
  CHECK_FALSE(recorder.attention_logit().defined());
  CHECK_FALSE(recorder.activation().defined());
}
