// Tests of lib/data: token files (splits, errors) and the paired counter-based sampler.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <numeric>
#include <set>
#include <unistd.h>

#include "lib/data.h"
#include "lib/error.h"

namespace {

/// A token file whose token at stream position p is p % 50000, documents of 97 tokens.
std::string make_token_file(const std::string& name, int64_t documents, int64_t val_tokens) {
  const std::string path = name + "." + std::to_string(::getpid()) + ".h5";
  sg::TokenWriter writer(path, /*force=*/true, val_tokens, "test", 50257, 50256);
  int64_t position = 0;
  for (int64_t d = 0; d < documents; ++d) {
    std::vector<int32_t> tokens(96);
    for (auto& t : tokens) t = static_cast<int32_t>(position++ % 50000);
    ++position;  // the end-of-text id takes one position
    writer.add_document(tokens);
  }
  writer.commit();
  return path;
}

uint64_t batch_hash(const sg::Batch& batch) {
  const auto flat = batch.inputs.contiguous().view(-1);
  uint64_t h = 1469598103934665603ull;
  for (int64_t i = 0; i < flat.numel(); ++i) h = (h ^ static_cast<uint64_t>(flat[i].item<int64_t>())) * 1099511628211ull;
  return h;
}

}  // namespace

TEST_CASE("token file: the validation split is the first tokens, the training split the rest") {
  const auto path = make_token_file("test_data_splits", 50, 1000);
  const auto tokens = sg::TokenFile::open(path);
  CHECK(tokens.info().documents == 50);
  CHECK(tokens.info().val_tokens == 1000);
  CHECK(tokens.info().train_tokens == 50 * 97 - 1000);
  CHECK(tokens.info().eot_id == 50256);
  // The stream was 0, 1, 2, … with 50256 at every 97th position.
  const auto val = tokens.read(sg::Split::val, 0, 1000);
  const auto train = tokens.read(sg::Split::train, 0, tokens.size(sg::Split::train));
  const auto stream = torch::cat({val, train});
  for (int64_t p = 0; p < stream.numel(); ++p) {
    const int64_t expected = (p % 97 == 96) ? 50256 : p % 50000;
    if (stream[p].item<int64_t>() != expected) FAIL("position " << p);
  }
  CHECK(val[0].item<int64_t>() == 0);
  CHECK(train[0].item<int64_t>() == stream[1000].item<int64_t>());
  std::remove(path.c_str());
}

TEST_CASE("token file: errors name the file") {
  CHECK_THROWS_AS(sg::TokenFile::open("/nonexistent/tokens.h5"), sg::InputError);
  const std::string text = "test_data_not_h5.txt";
  { std::FILE* f = std::fopen(text.c_str(), "w"); std::fputs("hello", f); std::fclose(f); }
  CHECK_THROWS_WITH(sg::TokenFile::open(text), Catch::Contains(text));
  std::remove(text.c_str());
  // A corpus shorter than the validation split is refused, and nothing is left behind.
  const std::string path = "test_data_short.h5";
  {
    sg::TokenWriter writer(path, true, 1000, "test", 50257, 50256);
    writer.add_document({1, 2, 3});
    CHECK_THROWS_AS(writer.commit(), sg::InputError);
  }
  CHECK(std::fopen(path.c_str(), "r") == nullptr);
}

TEST_CASE("the sampler pairs runs: the same seed gives the same windows, another seed others") {
  const auto path = make_token_file("test_data_pairing", 200, 2000);
  const auto tokens = sg::TokenFile::open(path);
  // The stream depends on (seed, split, index) only: nothing about arms enters it.
  const auto a = sg::sample_batch(tokens, sg::Split::train, 7, 0, 64, 32);
  const auto b = sg::sample_batch(tokens, sg::Split::train, 7, 0, 64, 32);
  const auto c = sg::sample_batch(tokens, sg::Split::train, 8, 0, 64, 32);
  CHECK(batch_hash(a) == batch_hash(b));
  CHECK(batch_hash(a) != batch_hash(c));
  // Micro-batch 16 x 4 draws gives the same windows as 64 x 1.
  std::vector<torch::Tensor> parts;
  for (int micro = 0; micro < 4; ++micro) parts.push_back(sg::sample_batch(tokens, sg::Split::train, 7, micro * 16, 16, 32).inputs);
  CHECK(torch::equal(torch::cat(parts), a.inputs));
  // Targets are the inputs shifted by one token.
  CHECK(torch::equal(a.inputs.narrow(1, 1, 31), a.targets.narrow(1, 0, 31)));
  // Validation windows come from the validation split only (its tokens are < 2000 here).
  const auto val = sg::sample_batch(tokens, sg::Split::val, 7, 0, 64, 32);
  CHECK(val.targets.max().item<int64_t>() < 2000 + 50256);
  CHECK(val.inputs.ne(50256).logical_and(val.inputs.ge(2000)).sum().item<int64_t>() == 0);
  std::remove(path.c_str());
}

TEST_CASE("window starts are uniform over their range") {
  const int64_t range = 10, draws = 100000;
  std::vector<int64_t> counts(range, 0);
  for (int64_t k = 0; k < draws; ++k) ++counts[sg::window_start(3, sg::Split::train, k, range)];
  for (auto c : counts) CHECK(std::abs(c - draws / range) < 5 * std::sqrt(draws / range));  // 5 sigma
  std::set<int64_t> seen;
  for (int64_t k = 0; k < 2000; ++k) seen.insert(sg::window_start(3, sg::Split::train, k, 1000));
  CHECK(seen.size() > 800);
  CHECK(sg::window_start(3, sg::Split::train, 5, 1000) != sg::window_start(3, sg::Split::val, 5, 1000));
}

TEST_CASE("a split no longer than the context is refused with a hint") {
  const auto path = make_token_file("test_data_context", 3, 100);
  const auto tokens = sg::TokenFile::open(path);
  CHECK_THROWS_WITH(sg::sample_batch(tokens, sg::Split::val, 0, 0, 1, 100), Catch::Contains("context length 100"));
  std::remove(path.c_str());
}
