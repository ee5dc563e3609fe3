// Tests of lib/run/arm and lib/run/config: arm names, Table 3 presets, overrides and config files.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "lib/base/error.h"
#include "lib/run/arm.h"
#include "lib/run/config.h"

TEST_CASE("the nine arms of Table 4 parse to their zero option and filter") {
  using sg::Filter;
  using sg::ZeroOption;
  const std::map<std::string, std::pair<ZeroOption, Filter>> table = {
      {"baseline", {ZeroOption::none, Filter::none}},        {"offbyone", {ZeroOption::offbyone, Filter::none}},
      {"sinklogit", {ZeroOption::sinklogit, Filter::none}},  {"sinktoken", {ZeroOption::sinktoken, Filter::none}},
      {"normgate", {ZeroOption::none, Filter::normgate}},    {"renorm", {ZeroOption::none, Filter::renorm}},
      {"projgate", {ZeroOption::none, Filter::projgate}},    {"combo", {ZeroOption::sinklogit, Filter::normgate}},
      {"combo2", {ZeroOption::sinklogit, Filter::projgate}},
  };
  CHECK(sg::paper_arm_names().size() == 9);
  for (const auto& name : sg::paper_arm_names()) {
    const auto arm = sg::parse_arm(name);
    CHECK(arm.zero == table.at(name).first);
    CHECK(arm.filter == table.at(name).second);
    CHECK(arm.name() == name);
  }
  const auto custom = sg::parse_arm("sinktoken+projgate");
  CHECK(custom.zero == ZeroOption::sinktoken);
  CHECK(custom.filter == Filter::projgate);
  CHECK(custom.name() == "sinktoken+projgate");
  CHECK(sg::parse_arm("sinklogit+projgate").name() == "combo2");
  CHECK_THROWS_AS(sg::parse_arm("gated"), sg::UsageError);
  CHECK_THROWS_AS(sg::parse_arm(""), sg::UsageError);
  CHECK_THROWS_AS(sg::parse_arm("sinklogit+"), sg::UsageError);
  CHECK_THROWS_AS(sg::parse_arm("sinklogit+gate"), sg::UsageError);
}

TEST_CASE("beyond the paper: the key gate and the output gate compose with every zero option and filter") {
  using sg::Filter;
  using sg::OutputGate;
  using sg::ZeroOption;
  struct Case {
    const char* name;
    ZeroOption zero;
    Filter filter;
    OutputGate gate;
    const char* canonical;
  };
  const Case cases[] = {
      {"keygate", ZeroOption::none, Filter::keygate, OutputGate::none, "keygate"},
      {"none+keygate", ZeroOption::none, Filter::keygate, OutputGate::none, "keygate"},
      {"outgate", ZeroOption::none, Filter::none, OutputGate::headwise, "outgate"},
      {"outgate-elem", ZeroOption::none, Filter::none, OutputGate::elementwise, "outgate-elem"},
      {"baseline+outgate", ZeroOption::none, Filter::none, OutputGate::headwise, "outgate"},
      {"sinklogit+outgate", ZeroOption::sinklogit, Filter::none, OutputGate::headwise, "sinklogit+outgate"},
      {"outgate+sinklogit", ZeroOption::sinklogit, Filter::none, OutputGate::headwise, "sinklogit+outgate"},
      {"projgate+outgate", ZeroOption::none, Filter::projgate, OutputGate::headwise, "projgate+outgate"},
      {"combo2+outgate-elem", ZeroOption::sinklogit, Filter::projgate, OutputGate::elementwise, "combo2+outgate-elem"},
      {"outgate+projgate+sinklogit", ZeroOption::sinklogit, Filter::projgate, OutputGate::headwise, "combo2+outgate"},
      {"sinktoken+keygate+outgate", ZeroOption::sinktoken, Filter::keygate, OutputGate::headwise,
       "sinktoken+keygate+outgate"},
      {"offbyone+renorm", ZeroOption::offbyone, Filter::renorm, OutputGate::none, "offbyone+renorm"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const auto arm = sg::parse_arm(c.name);
    CHECK(arm.zero == c.zero);
    CHECK(arm.filter == c.filter);
    CHECK(arm.output_gate == c.gate);
    CHECK(arm.name() == c.canonical);
    CHECK(sg::parse_arm(arm.name()) == arm);  // the canonical name reads back
  }
  // An axis named twice, differently, is an error; the same value twice is not.
  CHECK_THROWS_AS(sg::parse_arm("outgate+outgate-elem"), sg::UsageError);
  CHECK_THROWS_AS(sg::parse_arm("projgate+keygate"), sg::UsageError);
  CHECK_THROWS_AS(sg::parse_arm("combo2+offbyone"), sg::UsageError);
  CHECK(sg::parse_arm("combo2+sinklogit").name() == "combo2");
  // The key gate decides on the key and multiplies the read: a value-slot gate with a direction.
  CHECK(sg::parse_arm("keygate").gates_values());
  CHECK(sg::parse_arm("keygate").has_gate_direction());
  CHECK(!sg::parse_arm("outgate").has_gate());
}

TEST_CASE("tier presets match Table 3") {
  struct Row {
    const char* name;
    int64_t layers, heads, width, context, micro, accumulation, iterations, warmup;
  };
  const Row rows[] = {{"10M", 6, 6, 384, 512, 64, 1, 6000, 200},
                      {"50M", 10, 10, 640, 1024, 16, 2, 29000, 500},
                      {"124M", 12, 12, 768, 1024, 8, 4, 48800, 800},
                      {"350M", 24, 16, 1024, 1024, 8, 4, 177000, 2000}};
  for (const auto& row : rows) {
    INFO(row.name);
    const auto& tier = sg::find_tier(row.name);
    CHECK(tier.model.n_layer == row.layers);
    CHECK(tier.model.n_head == row.heads);
    CHECK(tier.model.n_embd == row.width);
    CHECK(tier.model.block_size == row.context);
    CHECK(tier.train.micro_batch == row.micro);
    CHECK(tier.train.accumulation == row.accumulation);
    CHECK(tier.train.iterations == row.iterations);
    CHECK(tier.train.warmup == row.warmup);
    CHECK(tier.model.vocab_size == 50257);
    CHECK(tier.train.lr_peak == 6e-4);
    CHECK(tier.train.lr_min == 6e-5);
    CHECK(tier.train.eval_batches == 16);
    CHECK(tier.train.final_eval_batches == 64);
    // Tokens of Table 3: iterations x batch x context.
  }
  CHECK(sg::find_tier("tiny").model.n_layer > 0);
  CHECK(sg::find_tier("small").model.n_layer > 0);
  CHECK_THROWS_AS(sg::find_tier("7B"), sg::UsageError);
}

TEST_CASE("overrides and fields round-trip") {
  auto config = sg::make_run_config("124M", "combo2", 3);
  sg::apply_overrides(config, {"n_layer=4", "lr_peak = 3e-4", "arm=sinktoken+normgate"});
  CHECK(config.model.n_layer == 4);
  CHECK(config.train.lr_peak == 3e-4);
  CHECK(config.model.arm.name() == "sinktoken+normgate");
  sg::RunConfig copy;
  for (const auto& [key, value] : sg::to_fields(config)) sg::set_field(copy, key, value);
  CHECK(sg::to_fields(copy) == sg::to_fields(config));
  CHECK_THROWS_AS(sg::apply_overrides(config, {"n_layer=four"}), sg::UsageError);
  CHECK_THROWS_AS(sg::apply_overrides(config, {"lr_peak=nan"}), sg::UsageError);
  CHECK_THROWS_AS(sg::apply_overrides(config, {"nonsense=1"}), sg::UsageError);
  CHECK_THROWS_AS(sg::apply_overrides(config, {"n_layer"}), sg::UsageError);
  // The tier is a preset chosen with --tier: naming another one would relabel the run only.
  CHECK_THROWS_WITH(sg::apply_overrides(config, {"tier=tiny"}), Catch::Contains("--tier"));
  CHECK(config.tier == "124M");
  CHECK_NOTHROW(sg::apply_overrides(config, {"tier=124M"}));  // a dumped configuration repeats it
  config.model.n_embd = 100;
  config.model.n_head = 12;
  CHECK_THROWS_AS(config.model.validate(), sg::UsageError);
}

TEST_CASE("configuration files: key = value lines, errors name the file and line") {
  const std::string path = "test_arm_config.conf.tmp";
  {
    std::ofstream out(path);
    out << "# comment\n\nn_layer = 3   # trailing comment\nwarmup=7\n";
  }
  auto config = sg::make_run_config("tiny", "baseline", 0);
  sg::load_config_file(config, path);
  CHECK(config.model.n_layer == 3);
  CHECK(config.train.warmup == 7);
  {
    std::ofstream out(path);
    out << "n_layer = 3\nthis line is wrong\n";
  }
  CHECK_THROWS_WITH(sg::load_config_file(config, path), Catch::Contains(path + ":2"));
  {
    std::ofstream out(path);
    out << "n_layer = 3\ntier = small\n";
  }
  CHECK_THROWS_WITH(sg::load_config_file(config, path), Catch::Contains(path + ":2") && Catch::Contains("with --tier"));
  CHECK(config.tier == "tiny");
  std::remove(path.c_str());
  CHECK_THROWS_AS(sg::load_config_file(config, "/nonexistent/file.conf"), sg::InputError);
}

TEST_CASE("loss_plan: auto or ROWS:PRODUCTS[:ROW_KERNEL], a bad one is a usage error naming the field") {
  auto config = sg::make_run_config("tiny", "baseline", 0);
  CHECK(config.train.loss_plan == "auto");
  CHECK(sg::find_tier("124M").train.loss_plan == "auto");
  sg::apply_overrides(config, {"loss_plan=2048:avx512"});
  CHECK(config.train.loss_plan == "2048:avx512");
  sg::apply_overrides(config, {"loss_plan = 1024:plain:portable"});
  CHECK(config.train.loss_plan == "1024:plain:portable");
  const auto spec = sg::parse_loss_plan("512:packed:avx2");
  CHECK(spec.chunk_rows == 512);
  CHECK(spec.products == "packed");
  CHECK(spec.row_kernel == "avx2");
  CHECK(sg::to_string(spec) == "512:packed:avx2");
  CHECK(sg::parse_loss_plan("auto").automatic());
  CHECK(sg::to_string(sg::parse_loss_plan("auto")) == "auto");
  for (const char* bad : {"", "fast", "0:plain", "-5:plain", "12x:plain", "2048", "2048:fastest", "2048:plain:sse",
                          "2048:plain:avx2:more", "AUTO"}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_WITH(sg::apply_overrides(config, {std::string("loss_plan=") + bad}),
                      Catch::Contains("field 'loss_plan'"));
  }
  CHECK(config.train.loss_plan == "1024:plain:portable");
  // The field round-trips with the others, and a damaged one fails validation.
  sg::RunConfig copy;
  for (const auto& [key, value] : sg::to_fields(config)) sg::set_field(copy, key, value);
  CHECK(copy.train.loss_plan == "1024:plain:portable");
  copy.train.loss_plan = "1024:gpu";
  CHECK_THROWS_WITH(copy.train.validate(), Catch::Contains("loss_plan"));
}
