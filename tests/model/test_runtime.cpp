// Tests of lib/model/runtime: device names.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "lib/base/error.h"
#include "lib/model/runtime.h"

TEST_CASE("devices: cpu parses, cuda without a GPU is a usage error with a hint") {
  CHECK(sg::parse_device("cpu").is_cpu());
  CHECK_THROWS_AS(sg::parse_device("tpu"), sg::UsageError);
  if (!torch::cuda::is_available()) CHECK_THROWS_WITH(sg::parse_device("cuda"), Catch::Contains("no CUDA GPU"));
}
