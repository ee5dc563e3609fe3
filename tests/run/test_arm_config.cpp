// Tests of lib/run/arm and lib/run/config: arm names, the arm table and what follows from it (shapes,
// costs, messages, --help lists, docs/arms.md, pipelines/hf/), Table 3 presets, overrides and config files.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "lib/base/error.h"
#include "lib/run/arm.h"
#include "lib/run/config.h"
#include "tests/support.h"

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

TEST_CASE("configure_run refuses every bad value of tests/fixtures/bad_fields.tsv naming its field, and the table covers every field") {
  std::ifstream table(std::string(SG_TEST_SOURCE_DIR) + "/fixtures/bad_fields.tsv");
  REQUIRE(table);
  std::set<std::string> covered;
  std::string line;
  while (std::getline(table, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    const std::string field = line.substr(0, tab), value = line.substr(tab + 1);
    covered.insert(field);
    sg::ConfigRequest request;
    request.tier = "tiny";
    request.overrides = {field + "=" + value};
    INFO(field + "=" + value);
    CHECK_THROWS_AS(sg::configure_run(request), sg::UsageError);
    CHECK_THROWS_WITH(sg::configure_run(request), Catch::Contains(field));
  }
  for (const auto& field : sg::field_names()) {
    INFO("tests/fixtures/bad_fields.tsv has no bad value of " + field);
    CHECK(covered.count(field) == 1);
  }
  // The tier's own values pass, and so does every preset.
  sg::ConfigRequest tiny;
  tiny.tier = "tiny";
  tiny.overrides = {"n_embd=2", "n_head=2", "warmup=200", "lr_min=6e-4"};
  CHECK_NOTHROW(sg::configure_run(tiny));
  for (const auto& name : sg::tier_names()) CHECK_NOTHROW(sg::configure_run({name, "baseline", 0, 0, "", {}}));
}

TEST_CASE("configure_run: the tier, arm and seed, then vocab_size, then the --config file, then --set") {
  const std::string path = "test_arm_config.configure.tmp";
  {
    std::ofstream out(path);
    out << "n_layer = 3\nvocab_size = 300\n";
  }
  const auto config = sg::configure_run({"tiny", "combo2", 7, 500, path, {"n_layer=5"}});
  std::remove(path.c_str());
  CHECK(config.tier == "tiny");
  CHECK(config.model.arm.name() == "combo2");
  CHECK(config.seed == 7);
  CHECK(config.model.vocab_size == 300);  // the file's over the token file's
  CHECK(config.model.n_layer == 5);       // --set over the file
  CHECK(sg::configure_run({"tiny", "baseline", 0, 500, "", {}}).model.vocab_size == 500);
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
  CHECK(config.train.loss_plan.automatic());
  CHECK(sg::find_tier("124M").train.loss_plan.automatic());
  sg::apply_overrides(config, {"loss_plan=2048:avx512"});
  CHECK(config.train.loss_plan.chunk_rows == 2048);
  CHECK(config.train.loss_plan.products == sg::LossProducts::avx512);
  CHECK_FALSE(config.train.loss_plan.row_kernel.has_value());
  sg::apply_overrides(config, {"loss_plan = 1024:plain:portable"});
  CHECK(config.train.loss_plan == sg::LossPlan{1024, sg::LossProducts::plain, sg::RowKernel::portable});
  for (const char* bad : {"", "fast", "0:plain", "-5:plain", "12x:plain", "2048", "2048:fastest", "2048:plain:sse",
                          "2048:plain:avx2:more", "AUTO"}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_WITH(sg::apply_overrides(config, {std::string("loss_plan=") + bad}),
                      Catch::Contains("field 'loss_plan'"));
  }
  CHECK(config.train.loss_plan == sg::LossPlan{1024, sg::LossProducts::plain, sg::RowKernel::portable});
  // The field round-trips with the others as text, and a damaged one fails validation.
  sg::RunConfig copy;
  for (const auto& [key, value] : sg::to_fields(config)) sg::set_field(copy, key, value);
  CHECK(copy.train.loss_plan == config.train.loss_plan);
  for (const auto& [key, value] : sg::to_fields(copy))
    if (key == "loss_plan") CHECK(value == "1024:plain:portable");
  copy.train.loss_plan.chunk_rows = -1;
  CHECK_THROWS_WITH(copy.train.validate(), Catch::Contains("loss_plan"));
}

TEST_CASE("precision: auto, float32 or bf16 (fp32 and bfloat16 read as those), a bad one names the field and its values") {
  auto config = sg::make_run_config("tiny", "baseline", 0);
  CHECK(config.train.precision == sg::Precision::automatic);
  for (const auto& tier : sg::tiers()) CHECK(tier.train.precision == sg::Precision::automatic);
  sg::apply_overrides(config, {"precision=bf16"});
  CHECK(config.train.precision == sg::Precision::bf16);
  sg::apply_overrides(config, {"precision = fp32"});
  CHECK(config.train.precision == sg::Precision::float32);
  CHECK(sg::parse_precision("bfloat16") == sg::Precision::bf16);
  CHECK(sg::parse_precision("auto") == sg::Precision::automatic);
  for (const char* bad : {"", "fp16", "half", "BF16", "float64", "bf16 "}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_WITH(sg::parse_precision(bad), Catch::Contains("field 'precision'") && Catch::Contains("auto, float32, bf16"));
  }
  sg::RunConfig copy;
  for (const auto& [key, value] : sg::to_fields(config)) sg::set_field(copy, key, value);
  CHECK(copy.train.precision == sg::Precision::float32);
  CHECK_THROWS_WITH(sg::set_field(copy, "precision", "fp8"), Catch::Contains("precision"));
}

TEST_CASE("the precision table: a row per enumerator in their order, names round-trip, automatic resolves by device") {
  const auto& rows = sg::precisions();
  REQUIRE(rows.size() == static_cast<size_t>(sg::Precision::bf16) + 1);
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO(rows[i].name);
    CHECK(static_cast<size_t>(rows[i].value) == i);
    CHECK(sg::parse_precision(rows[i].name) == rows[i].value);
    CHECK(std::string(sg::to_string(rows[i].value)) == rows[i].name);
    if (*rows[i].alias) CHECK(sg::parse_precision(rows[i].alias) == rows[i].value);
  }
  CHECK(sg::resolve_precision(sg::Precision::automatic, /*bf16_units=*/true) == sg::Precision::bf16);
  CHECK(sg::resolve_precision(sg::Precision::automatic, /*bf16_units=*/false) == sg::Precision::float32);
  CHECK(sg::resolve_precision(sg::Precision::float32, /*bf16_units=*/true) == sg::Precision::float32);
  CHECK(sg::uses_autocast(sg::Precision::bf16));
  CHECK_FALSE(sg::uses_autocast(sg::Precision::float32));
}

// --- the arm table: every test below iterates it, none lists an arm by hand -------------------

namespace {

/// The test's own reading of a shape rule: H, d and d_model for an extent.
std::vector<int64_t> rule_shape(const sg::ArmParameter& parameter, int64_t heads, int64_t width) {
  std::vector<int64_t> out;
  for (const auto extent : parameter.shape)
    out.push_back(extent == sg::Extent::heads ? heads : extent == sg::Extent::head_dim ? width / heads : width);
  return out;
}

std::string run_output(const std::string& command) {
  std::string output;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  INFO(command << "\n" << output);
  REQUIRE(pclose(pipe) == 0);
  return output;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("the arm table: one row per option of each axis, each name parses back to its row") {
  std::map<std::pair<int, int>, int> rows;
  for (const auto& option : sg::arm_options()) {
    INFO(option.name);
    ++rows[{static_cast<int>(option.axis), option.value}];
    sg::Arm arm;
    REQUIRE_NOTHROW(arm = sg::parse_arm(option.name));
    if (std::string(option.name) != "none") CHECK(&sg::arm_option(arm, option.axis) == &option);
    CHECK(sg::option_names(option.axis).front() == "none");
  }
  for (const auto& [key, count] : rows) CHECK(count == 1);
  // Every combination is an arm whose canonical name reads back.
  const auto arms = sg::all_arms();
  CHECK(arms.size() == sg::option_names(sg::ArmAxis::zero).size() * sg::option_names(sg::ArmAxis::filter).size() *
                           sg::option_names(sg::ArmAxis::output_gate).size());
  for (const auto& arm : arms) CHECK(sg::parse_arm(arm.name()) == arm);
  // A parameter name two options share (tau_h; w_h and b_h; W_theta) is one tensor, the same
  // initialisation, decay and export name in both (only the output gate's shape differs).
  std::map<std::string, const sg::ArmParameter*> seen;
  for (const auto& option : sg::arm_options())
    for (const auto& parameter : option.parameters) {
      const auto [it, fresh] = seen.emplace(parameter.name, &parameter);
      if (fresh) continue;
      INFO(parameter.name);
      CHECK(it->second->per_layer == parameter.per_layer);
      CHECK(it->second->init == parameter.init);
      CHECK(it->second->value == parameter.value);
      CHECK(it->second->decayed == parameter.decayed);
      CHECK(std::string(it->second->export_name) == parameter.export_name);
    }
}

TEST_CASE("the arm table: parameter_shapes and the parameter count hold every row's parameters by its shape rule") {
  const int64_t heads = 4, width = 32, layers = 2;
  auto plain = sg::make_run_config("tiny", "baseline", 0).model;
  plain.n_head = heads, plain.n_embd = width, plain.n_layer = layers;
  const auto base = plain.parameter_shapes();
  std::set<std::string> base_names;
  for (const auto& [name, shape] : base) base_names.insert(name);
  for (const auto& arm : sg::all_arms()) {
    INFO(arm.name());
    auto config = plain;
    config.arm = arm;
    std::map<std::string, std::vector<int64_t>> own;  // the arm's beyond the baseline's
    for (const auto& [name, shape] : config.parameter_shapes())
      if (!base_names.count(name)) own[name] = shape;
    std::map<std::string, std::vector<int64_t>> expected;
    int64_t added = 0;
    for (const auto& parameter : sg::arm_parameters(arm)) {
      const auto shape = rule_shape(parameter, heads, width);
      int64_t size = 1;
      for (const auto extent : shape) size *= extent;
      if (parameter.per_layer)
        for (int64_t layer = 0; layer < layers; ++layer) expected["blocks." + std::to_string(layer) + ".attn." + parameter.name] = shape;
      else
        expected[parameter.name] = shape;
      added += parameter.per_layer ? layers * size : size;
    }
    CHECK(own == expected);
    CHECK(config.parameter_count() - plain.parameter_count() == added);
    // Table 4's per-layer cost is the sum of the parameters' sizes (the sink token's counted once).
    int64_t cost = 0;
    for (const auto& parameter : sg::arm_parameters(arm)) {
      int64_t size = 1;
      for (const auto extent : rule_shape(parameter, heads, width)) size *= extent;
      cost += size;
    }
    CHECK(sg::arm_parameter_cost(arm, heads, width / heads, width) == cost);
  }
}

TEST_CASE("the arm table: only tensors of dimension >= 2 are decayed, and of those only w_h, a vector per head, is not") {
  for (const auto& option : sg::arm_options())
    for (const auto& parameter : option.parameters) {
      INFO(option.name << " " << parameter.name);
      if (parameter.decayed) CHECK(parameter.shape.size() >= 2);
      if (!parameter.decayed && parameter.shape.size() >= 2)
        CHECK(parameter.shape == std::vector<sg::Extent>{sg::Extent::heads, sg::Extent::head_dim});
    }
}

TEST_CASE("the arm table: capability messages name every option and paper arm that has the capability") {
  for (const auto capability :
       {sg::ArmCapability::phantom, sg::ArmCapability::sink_position, sg::ArmCapability::read_gate,
        sg::ArmCapability::value_slot_gate, sg::ArmCapability::routing_slot, sg::ArmCapability::read_direction,
        sg::ArmCapability::key_direction, sg::ArmCapability::query_gate}) {
    const auto message = sg::arms_with(capability);
    INFO(message);
    for (const auto& name : sg::paper_arm_names())
      CHECK((message.find(" " + name + ",") != std::string::npos || message.find("(" + name + ",") != std::string::npos) ==
            sg::arm_has(sg::parse_arm(name), capability));
    for (const auto& arm : sg::all_arms()) {
      bool has = false;
      for (const auto axis : {sg::ArmAxis::zero, sg::ArmAxis::filter, sg::ArmAxis::output_gate}) {
        const auto& caps = sg::arm_option(arm, axis).capabilities;
        has = has || std::find(caps.begin(), caps.end(), capability) != caps.end();
      }
      CHECK(sg::arm_has(arm, capability) == has);
    }
  }
  // The overrides' message names the key gate, which multiplies the read as the other value-slot gates do.
  CHECK_THAT(sg::arms_with(sg::ArmCapability::value_slot_gate), Catch::Contains("keygate"));
}

TEST_CASE("the arm table: each tool's --help lists the arms of the table") {
  for (const char* tool : {"sg-train", "sg-arms", "sg-toy"}) {
    const std::string path = std::string(SG_BIN_DIR) + "/" + tool;
    if (!sg_test::exists(path)) {
      WARN("SKIPPED: " << path << " is not built");
      continue;
    }
    INFO(tool);
    CHECK_THAT(run_output(sg_test::shell_quote(path) + " --help"), Catch::Contains(sg::arm_choices()));
  }
  // The list names every option of every axis and every paper arm.
  for (const auto& option : sg::arm_options())
    if (std::string(option.name) != "none") CHECK_THAT(sg::arm_choices(), Catch::Contains(option.name));
}

TEST_CASE("the arm table: docs/arms.md holds it verbatim") {
  const auto doc = file_text(std::string(SG_TEST_SOURCE_DIR) + "/../docs/arms.md");
  CHECK_THAT(doc, Catch::Contains(sg::arm_options_markdown()));
}

TEST_CASE("the arm table: pipelines/hf/ declares each arm's parameters, shapes and initialisation (transformers)") {
  const int64_t heads = 4, width = 32, layers = 2;
  const double beta = 8.0;
  const auto quote = [](const std::string& text) { return "\"" + text + "\""; };
  std::ostringstream json;
  json << "{\"heads\": " << heads << ", \"width\": " << width << ", \"layers\": " << layers << ", \"gate_beta\": " << beta
       << ", \"axes\": {";
  bool first_axis = true;
  for (const auto axis : {sg::ArmAxis::zero, sg::ArmAxis::filter, sg::ArmAxis::output_gate}) {
    json << (first_axis ? "" : ", ") << quote(sg::config_field(axis)) << ": [";
    first_axis = false;
    const auto names = sg::option_names(axis);
    for (size_t i = 0; i < names.size(); ++i) json << (i ? ", " : "") << quote(names[i]);
    json << "]";
  }
  json << "}, \"arms\": [";
  const char* inits[] = {"zeros", "constant", "minus_4_over_beta", "normal"};
  const auto arms = sg::all_arms();
  for (size_t a = 0; a < arms.size(); ++a) {
    const auto& arm = arms[a];
    json << (a ? ", " : "") << "{\"arm\": " << quote(arm.name());
    for (const auto axis : {sg::ArmAxis::zero, sg::ArmAxis::filter, sg::ArmAxis::output_gate})
      json << ", " << quote(sg::config_field(axis)) << ": " << quote(sg::arm_option(arm, axis).name);
    json << ", \"parameters\": [";
    bool first = true;
    for (const auto& parameter : sg::arm_parameters(arm)) {
      std::vector<std::string> names;
      if (parameter.per_layer)
        for (int64_t layer = 0; layer < layers; ++layer)
          names.push_back("transformer.h." + std::to_string(layer) + "." + parameter.export_name);
      else
        names.push_back(std::string("transformer.") + parameter.export_name);
      for (const auto& name : names) {
        json << (first ? "" : ", ") << "{\"name\": " << quote(name) << ", \"shape\": [";
        first = false;
        const auto shape = rule_shape(parameter, heads, width);
        for (size_t i = 0; i < shape.size(); ++i) json << (i ? ", " : "") << shape[i];
        json << "], \"init\": " << quote(inits[static_cast<int>(parameter.init)]) << ", \"value\": " << parameter.value << "}";
      }
    }
    json << "]}";
  }
  json << "]}";
  const auto folder = sg_test::make_folder("/tmp/sg-arm-table-XXXXXX");
  const std::string table = folder + "/table.json";
  std::ofstream(table) << json.str();
  const auto output = run_output(sg_test::shell_quote(SG_PYTHON) + " " +
                                 sg_test::shell_quote(std::string(SG_TEST_SOURCE_DIR) + "/hf_arm_table.py") + " " +
                                 sg_test::shell_quote(table) + " " +
                                 sg_test::shell_quote(std::string(SG_TEST_SOURCE_DIR) + "/../pipelines/hf"));
  sg_test::remove_tree(folder);
  CHECK_THAT(output, Catch::Contains("hf arm table: ok (" + std::to_string(arms.size()) + " arms)"));
}
