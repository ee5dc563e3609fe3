// Tests of lib/io/loss_plan: the vocabulary tables (a row per enumerator, names unique), the
// spelling read and written back, the errors naming the field and the names, and docs/loss-plan.md
// holding the tables verbatim.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "lib/base/error.h"
#include "lib/io/loss_plan.h"

namespace {
std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

TEST_CASE("the loss plan's tables: a row per enumerator, in order, names unique and read back") {
  std::set<std::string> names;
  for (size_t i = 0; i < sg::loss_products_table().size(); ++i) {
    const auto& row = sg::loss_products_table()[i];
    CHECK(static_cast<size_t>(row.value) == i);
    CHECK(names.insert(row.name).second);
    CHECK(sg::loss_products_named(row.name) == row.value);
    CHECK((sg::info(row.instead).needs == sg::CpuFeature::none || row.instead != row.value));
    CHECK_FALSE(sg::info(row.in_float32).bf16_run_only);
  }
  for (size_t i = 0; i < sg::row_kernels_table().size(); ++i) {
    const auto& row = sg::row_kernels_table()[i];
    CHECK(static_cast<size_t>(row.value) == i);
    CHECK(names.insert(row.name).second);
    CHECK(sg::row_kernel_named(row.name) == row.value);
  }
  CHECK_FALSE(sg::loss_products_named("fastest").has_value());
  CHECK_FALSE(sg::row_kernel_named("sse").has_value());
}

TEST_CASE("the loss plan's spelling: parsed once, written back by one function") {
  // The spellings of lib/SCHEMA.md, written out by hand: the reference.
  const sg::LossPlan full = sg::parse_loss_plan("4096:packed:avx512f");
  CHECK(full.chunk_rows == 4096);
  CHECK(full.products == sg::LossProducts::packed);
  CHECK(full.row_kernel == sg::RowKernel::avx512f);
  CHECK(sg::loss_plan_text(full) == "4096:packed:avx512f");
  const sg::LossPlan named = sg::parse_loss_plan("2048:avx512bf16");
  CHECK(named.products == sg::LossProducts::avx512bf16);
  CHECK_FALSE(named.fixed());
  CHECK(sg::loss_plan_text(named) == "2048:avx512bf16");
  CHECK(sg::parse_loss_plan("auto").automatic());
  CHECK(sg::loss_plan_text(sg::LossPlan{}) == "auto");
  CHECK(sg::loss_plan_words(full) == "chunks of 4096 rows, packed products, avx512f softmax rows");
  CHECK_THROWS_WITH(sg::parse_loss_plan("2048:fastest", "SINKGATE_X"),
                    Catch::Contains("SINKGATE_X: '2048:fastest' names products 'fastest', not plain, packed, avx512, bf16 or avx512bf16"));
  CHECK_THROWS_WITH(sg::parse_loss_plan("2048:plain:sse"), Catch::Contains("not avx512f, avx2 or portable"));
  CHECK_THROWS_AS(sg::parse_loss_plan("0:plain"), sg::UsageError);
}

TEST_CASE("the loss plan's tables: docs/loss-plan.md holds them verbatim") {
  const auto doc = file_text(std::string(SG_TEST_SOURCE_DIR) + "/../docs/loss-plan.md");
  CHECK_THAT(doc, Catch::Contains(sg::loss_plan_markdown()));
}
