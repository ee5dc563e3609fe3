// Tests of lib/model/tensors: tensors through sg_core's plain interfaces — HDF5 round trips for
// every dtype and rank, safetensors decoded to their values, token windows as (inputs, targets).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "lib/base/error.h"
#include "lib/model/tensors.h"
#include "tests/support.h"

using sg_test::Scratch;

TEST_CASE("tensors of every dtype and rank survive a write and a read") {
  Scratch scratch;
  const auto path = scratch / "tensors.h5";
  torch::manual_seed(0);
  std::vector<std::pair<std::string, torch::Tensor>> tensors = {
      {"f32", torch::randn({3, 4, 5})},
      {"f64", torch::randn({2, 3}, torch::kDouble)},
      {"bf16", torch::randn({4, 6}).to(torch::kBFloat16)},
      {"i64", torch::arange(-5, 7, torch::kLong).reshape({3, 4})},
      {"i32", torch::tensor({-2147483647, 0, 2147483647}, torch::kInt)},
      {"u16", torch::tensor({0, 1, 50256, 65535}, torch::kInt).to(torch::kUInt16)},
      {"bool", torch::tensor({true, false, true, true}).reshape({2, 2})},
      {"i8", torch::tensor({-128, 0, 127}, torch::kChar)},
      {"i16", torch::tensor({-32768, 5, 32767}, torch::kShort)},
      {"u8", torch::tensor({0, 200, 255}, torch::kByte)},
      {"scalar", torch::tensor(3.5)},
      {"empty", torch::zeros({0, 3})},
      {"nested/deeper/w", torch::ones({2})},
      {"strided", torch::arange(12, torch::kFloat).view({3, 4}).t()},  // not contiguous
  };
  {
    sg::h5::Writer writer(path, /*force=*/false);
    for (const auto& [name, tensor] : tensors) sg::write_tensor(writer.root(), name, tensor);
    CHECK_THROWS_WITH(sg::write_tensor(writer.root(), "half", torch::ones({2}, torch::kHalf)),
                      Catch::Contains(path) && Catch::Contains("unsupported tensor dtype"));
    writer.commit();
  }
  const auto file = sg::h5::File::open(path);
  for (const auto& [name, tensor] : tensors) {
    INFO(name);
    const auto back = sg::read_tensor(file, name);
    CHECK(back.scalar_type() == tensor.scalar_type());
    CHECK(back.sizes() == tensor.sizes());
    CHECK(torch::equal(back, tensor));
  }
  CHECK(file.dataset("bf16").dtype() == sg::h5::Dtype::bfloat16);
  CHECK(file.dataset("bf16").attribute_string("sg_dtype") == "bfloat16");
  // A dataset of strings is not a tensor.
  {
    sg::h5::Writer writer(scratch / "strings.h5", false);
    writer.root().write_strings("s", {"a"});
    writer.commit();
  }
  CHECK_THROWS_AS(sg::read_tensor(sg::h5::File::open(scratch / "strings.h5"), "s"), sg::InputError);
}

TEST_CASE("safetensors: every supported dtype decodes to its values", "[safetensors]") {
  Scratch scratch;
  sg_test::write_bytes(scratch / "ok.safetensors", sg_test::valid_safetensors());
  const auto file = sg::SafetensorsFile::open(scratch / "ok.safetensors");
  const auto w = sg::load_tensor(file, "w");
  CHECK(w.scalar_type() == torch::kFloat32);
  CHECK(w.sizes() == torch::IntArrayRef({2, 3}));
  CHECK(torch::equal(w, torch::arange(1, 7, torch::kFloat32).view({2, 3})));
  const auto h = sg::load_tensor(file, "h");
  CHECK(h.scalar_type() == torch::kFloat16);
  CHECK(torch::equal(h.to(torch::kFloat32), torch::tensor({1.5f, -2.0f})));
  const auto b = sg::load_tensor(file, "b");
  CHECK(b.scalar_type() == torch::kBFloat16);
  CHECK(torch::equal(b.to(torch::kFloat32), torch::tensor({1.5f, -3.0f})));
  const auto i = sg::load_tensor(file, "i");
  CHECK(i.scalar_type() == torch::kInt64);
  CHECK(i[0].item<int64_t>() == -3);
  CHECK(i[2].item<int64_t>() == (1LL << 40));
  CHECK(sg::load_tensor(file, "s").dim() == 0);
  CHECK(sg::load_tensor(file, "s").item<float>() == 0.25f);
  CHECK(sg::load_tensor(file, "e").numel() == 0);
  CHECK_THROWS_AS(sg::load_tensor(file, "absent"), sg::InputError);
  sg_test::write_bytes(scratch / "model.safetensors", sg_test::valid_safetensors());
  const auto folder = sg::SafetensorsFolder::open(scratch.dir);
  CHECK(torch::equal(sg::load_tensor(folder, "w"), w));
  CHECK_THROWS_WITH(sg::load_tensor(folder, "absent"), Catch::Contains("no tensor 'absent'"));
}

TEST_CASE("token windows as batches: paired by seed, micro-batches concatenate, targets shifted by one") {
  Scratch scratch;
  const auto path = scratch / "pairing.h5";
  sg_test::write_counting_tokens(path, 200, 2000);
  const auto tokens = sg::TokenFile::open(path);
  const auto a = sg::sample_batch(tokens, sg::Split::train, 7, 0, 64, 32);
  const auto b = sg::sample_batch(tokens, sg::Split::train, 7, 0, 64, 32);
  const auto c = sg::sample_batch(tokens, sg::Split::train, 8, 0, 64, 32);
  REQUIRE(a.inputs.sizes() == torch::IntArrayRef({64, 32}));
  CHECK(a.inputs.scalar_type() == torch::kLong);
  CHECK(torch::equal(a.inputs, b.inputs));
  CHECK_FALSE(torch::equal(a.inputs, c.inputs));
  // Micro-batch 16 x 4 draws gives the same windows as 64 x 1.
  std::vector<torch::Tensor> parts;
  for (int micro = 0; micro < 4; ++micro) parts.push_back(sg::sample_batch(tokens, sg::Split::train, 7, micro * 16, 16, 32).inputs);
  CHECK(torch::equal(torch::cat(parts), a.inputs));
  // Targets are the inputs shifted by one token, and both are the sampler's windows.
  CHECK(torch::equal(a.inputs.narrow(1, 1, 31), a.targets.narrow(1, 0, 31)));
  const auto windows = sg::sample_windows(tokens, sg::Split::train, 7, 0, 64, 32);
  for (int64_t r = 0; r < 64; r += 9) {
    CHECK(a.inputs[r][0].item<int64_t>() == windows.row(r)[0]);
    CHECK(a.targets[r][31].item<int64_t>() == windows.row(r)[32]);
  }
  // Validation windows come from the validation split only (its tokens are < 2000 here).
  const auto val = sg::sample_batch(tokens, sg::Split::val, 7, 0, 64, 32);
  CHECK(val.targets.max().item<int64_t>() < 2000 + 50256);
  CHECK(val.inputs.ne(50256).logical_and(val.inputs.ge(2000)).sum().item<int64_t>() == 0);
}
