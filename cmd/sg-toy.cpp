// sg-toy — the channel-blind superposition task of App. D–E (Figure 3).
//
// Trains one attention head with a single learned query and a linear readout to report which of
// the n_rel relevant features occur among T items drawn from a dictionary of N = load·d features,
// for each condition (blind: keys are random tags; visible: keys are the items), load, arm and
// seed, and scores every run on one fixed held-out evaluation set. The arms are attention arms
// (the language models' own attention arithmetic) and the oracle (the baseline with every
// irrelevant read zeroed by ground truth). All arms and seeds of a (condition, load) train in one
// pass; (condition, load) pairs run one after the other (make -j runs them side by side).
//
// Output: a result table (lib/SCHEMA.md), one row per (condition, load, arm, seed) with the task
// error (per-label error rate of logit > 0), sequence error, evaluation and final training BCE,
// routing mass on relevant items, phantom mass and mean gate values. Progress goes to stderr.
//
// Examples:
//   sg-toy -o fig3.h5                                        # the whole Figure 3 grid
//   sg-toy --condition blind --load 4 --threads 1 -o runs/toy/blind-4.h5
//   sg-toy --load 2 --arms baseline,normgate --seeds 0 --steps 500 -o - | sg-tabulate - --cols arm --cell error
#include <sstream>
#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/base/text.h"
#include "lib/instruments/toy.h"
#include "lib/io/h5.h"
#include "lib/io/provenance.h"
#include "lib/io/results.h"
#include "lib/model/runtime.h"

namespace {

struct Options {
  sg::cli::CommonOptions common;
  std::vector<std::string> conditions = {"blind", "visible"};
  std::vector<std::string> loads = {"1", "2", "4", "8"};
  std::vector<std::string> arms = {"baseline", "offbyone", "normgate", "renorm", "oracle"};
  std::vector<std::string> seeds = {"0", "1", "2"};
  sg::toy::TaskConfig task;
  sg::toy::TrainOptions train;
};

std::string describe(const Options& o) {
  std::ostringstream out;
  const auto& t = o.task;
  const auto& r = o.train;
  out << "conditions=" << sg::join(o.conditions, ",") << " loads=" << sg::join(o.loads, ",")
      << " arms=" << sg::join(o.arms, ",") << " seeds=" << sg::join(o.seeds, ",")
      << " dim=" << t.dim << " relevant=" << t.relevant << " length=" << t.length
      << " relevant_rate=" << t.relevant_rate << " tags=" << t.tags << " steps=" << r.steps << " batch=" << r.batch
      << " lr=" << r.lr << " optimizer=adam(0.9,0.999,1e-8) gate_beta=" << r.gate_beta
      << " eval_sequences=" << r.eval_sequences << " eval_seed=" << r.eval_seed << " loss_window=" << r.loss_window
      << " query_block=" << r.query_block << " device=" << o.common.device;
  return out.str();
}

void run(Options options, const std::string& tool, const std::string& command_line) {
  options.train.device = sg::parse_device(options.common.device);
  std::vector<sg::toy::Routing> conditions;
  for (const auto& name : sg::split_lists(options.conditions)) conditions.push_back(sg::toy::parse_routing(name));
  if (conditions.empty()) throw sg::UsageError("--condition is empty");
  const auto loads = sg::parse_integers(options.loads, "--load");
  const auto seeds = sg::parse_integers(options.seeds, "--seeds");
  std::vector<sg::toy::ToyArm> arms;
  for (const auto& name : sg::split_lists(options.arms)) arms.push_back(sg::toy::parse_toy_arm(name));
  if (arms.empty()) throw sg::UsageError("--arms is empty");
  for (const auto condition : conditions)
    for (const int64_t load : loads) {
      auto task = options.task;
      task.routing = condition;
      task.load = load;
      task.validate();
    }
  sg::h5::check_writable(options.common.output, options.common.force);

  std::vector<sg::toy::RunResult> rows;
  for (const auto condition : conditions)
    for (const int64_t load : loads) {
      auto task = options.task;
      task.routing = condition;
      task.load = load;
      for (const auto& row : sg::toy::train_and_evaluate(task, options.train, arms, seeds)) {
        std::ostringstream line;
        line << tool << ": " << row.condition << " load " << row.load << " " << row.arm << " seed " << row.seed
             << ": error " << row.error << ", eval_bce " << row.eval_bce << ", relevant_mass " << row.relevant_mass;
        sg::log::info(line.str());
        rows.push_back(row);
      }
    }
  auto provenance = sg::make_provenance(tool, command_line, {}, describe(options));
  provenance.arithmetic = sg::arithmetic_text(options.train.device);
  sg::write_table(options.common.output, sg::toy::to_table(rows), provenance, options.common.force);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  options.common.output = "-";
  options.common.threads = 1;  // the toy's tensors are too small for intra-op threads to pay
  sg::cli::Parser parser("sg-toy", "The channel-blind superposition task of App. D-E (Figure 3): one attention head "
                                   "per arm, condition, load and seed; writes a result table.");
  parser.common(options.common, sg::cli::kOutput | sg::cli::kForce | sg::cli::kDevice | sg::cli::kThreads |
                                    sg::cli::kLogLevel);
  parser.list("--condition", options.conditions,
              "blind (keys are random tags) and/or visible (keys are the items); comma list or repeats");
  parser.list("--load", options.loads, "superposition loads N/d; comma list or repeats");
  parser.list("--arms", options.arms, "arms, comma list or repeats: " + sg::toy::toy_arm_choices());
  parser.list("--seeds", options.seeds, "seeds, comma list or repeats (dictionary, data stream and initialisation)");
  parser.option("--steps", options.train.steps, "training steps");
  parser.option("--batch-size", options.train.batch, "sequences per step");
  parser.renamed("--batch", "--batch-size");
  parser.option("--lr", options.train.lr, "Adam learning rate (constant)");
  parser.option("--gate-beta", options.train.gate_beta, "sharpness beta of the norm gate and the routing-slot control");
  parser.option("--dim", options.task.dim, "d: width of features, keys and reads");
  parser.option("--relevant", options.task.relevant, "n_rel: number of relevant features");
  parser.option("--length", options.task.length, "T: items per sequence");
  parser.option("--relevant-rate", options.task.relevant_rate, "probability that an item is relevant");
  parser.option("--tags", options.task.tags, "size of the bank of random key tags (blind condition)");
  parser.option("--eval-sequences", options.train.eval_sequences, "sequences in the fixed evaluation set");
  parser.option("--eval-seed", options.train.eval_seed, "seed of the evaluation set (the same for every run)");
  parser.option("--loss-window", options.train.loss_window, "train_bce: mean over this many final steps");
  parser.option("--log-interval", options.train.log_interval, "steps between progress lines (0: none)");
  parser.option("--query-block", options.train.query_block, "sequences per attend() batch entry (a power of 4)");
  return sg::run_torch_tool(parser, argc, argv, [&] { run(options, parser.tool(), parser.command_line()); });
}
