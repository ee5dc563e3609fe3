// stats.cpp — grouping by key columns, pairing by seed, mean ± standard error.
#include "lib/analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "lib/base/error.h"
#include "lib/base/text.h"

namespace sg {
namespace {

/// The rows of one group: per arm, per seed (as text), the value.
struct Group {
  size_t first_row = 0;
  std::string label;                                     // "tier=10M, condition=x"
  std::vector<std::string> arms;                         // in order of first appearance
  std::map<std::string, std::map<std::string, double>> values;  // arm → seed → value
  bool has(const std::string& arm) const { return values.count(arm) > 0; }
};

struct Grouping {
  std::vector<std::string> keys;  // the group key columns
  std::vector<Group> groups;      // in order of first appearance
  std::set<std::string> arms;     // every arm in the input
  bool numeric_seeds = false;
  std::vector<std::string> warnings;
};

Grouping group_rows(const ResultTable& input, const std::string& pair, const std::string& by, const std::string& value) {
  for (const auto& name : {pair, by, value})
    if (!input.has(name))
      throw UsageError("no column '" + name + "' in the input", "its columns: " + join(input.names(), ", "));
  const auto& pair_column = input.column(pair);
  const auto& by_column = input.column(by);
  const auto& value_column = input.column(value);
  if (!value_column.numeric()) throw UsageError("column '" + value + "' holds strings; --value needs numbers");
  if (pair == by) throw UsageError("the pairing column and the arm column are both '" + pair + "'");

  Grouping grouping;
  grouping.numeric_seeds = pair_column.numeric();
  for (const auto& name : input.key_names())
    if (name != pair && name != by && name != value && name != kRunKey) grouping.keys.push_back(name);
  std::map<std::string, size_t> index;
  for (size_t r = 0; r < input.rows(); ++r) {
    std::string id, label;
    for (const auto& key : grouping.keys) {
      const auto text = input.column(key).text(r);
      id += text + '\x1f';
      label += (label.empty() ? "" : ", ") + key + "=" + text;
    }
    auto [it, is_new] = index.emplace(id, grouping.groups.size());
    if (is_new) {
      Group group;
      group.first_row = r;
      group.label = label.empty() ? "all rows" : label;
      grouping.groups.push_back(group);
    }
    auto& group = grouping.groups[it->second];
    const auto arm = by_column.text(r);
    const auto seed = pair_column.text(r);
    grouping.arms.insert(arm);
    if (!group.has(arm)) {
      group.arms.push_back(arm);
      group.values[arm];
    }
    if (value_column.missing(r)) {
      grouping.warnings.push_back(group.label + ": " + by + " " + arm + ", " + pair + " " + seed + ": " + value +
                                  " is missing (NaN); left out");
      continue;
    }
    auto& seeds = group.values[arm];
    if (seeds.count(seed))
      throw InputError("two rows for " + group.label + ", " + by + "=" + arm + ", " + pair + "=" + seed,
                       "each arm and seed may appear once per group: is an input listed twice, or is a key column "
                       "missing (for CSV inputs, name the key columns with --keys)?");
    // A missing value (NaN) is left out above; an infinite one is refused: the paired difference
    // of an infinite loss is infinite or undefined (inf − inf), and a mean over it says nothing.
    const double number = value_column.number(r);
    if (!std::isfinite(number)) {
      const std::string run = input.has(kRunKey) ? " (" + input.column(kRunKey).text(r) + ")" : "";
      throw InputError(group.label + ": " + by + " " + arm + ", " + pair + " " + seed + run + ": " + value + " is " +
                           (number > 0 ? "+inf" : "-inf") + ", which has no paired difference",
                       "leave that run out of the inputs (a run whose loss diverged has no loss to compare)");
    }
    seeds[seed] = number;
  }
  return grouping;
}

/// Sorts seed texts: numerically when the pairing column is numeric, else as text.
void sort_seeds(std::vector<std::string>& seeds, bool numeric) {
  std::sort(seeds.begin(), seeds.end(), [numeric](const std::string& a, const std::string& b) {
    if (numeric) return std::stod(a) < std::stod(b);
    return a < b;
  });
}

std::vector<std::string> seeds_of(const Group& group, const std::string& arm, bool numeric) {
  std::vector<std::string> seeds;
  for (const auto& [seed, value] : group.values.at(arm)) seeds.push_back(seed);
  sort_seeds(seeds, numeric);
  return seeds;
}

/// One paired quantity: f applied per seed to the values of `arms`, over the seeds all share.
struct Term {
  MeanSe stats;
  std::vector<std::string> seeds, unpaired;
};

Term paired_term(const Group& group, const std::vector<std::string>& arms,
                 const std::function<double(const std::vector<double>&)>& f, const std::string& what,
                 const Grouping& grouping, const std::string& pair, std::vector<std::string>& warnings) {
  std::set<std::string> all, common;
  for (size_t i = 0; i < arms.size(); ++i) {
    std::set<std::string> these;
    for (const auto& [seed, value] : group.values.at(arms[i])) these.insert(seed);
    all.insert(these.begin(), these.end());
    if (i == 0) {
      common = these;
    } else {
      std::set<std::string> kept;
      std::set_intersection(common.begin(), common.end(), these.begin(), these.end(), std::inserter(kept, kept.end()));
      common = kept;
    }
  }
  Term term;
  term.seeds.assign(common.begin(), common.end());
  std::set_difference(all.begin(), all.end(), common.begin(), common.end(), std::back_inserter(term.unpaired));
  sort_seeds(term.seeds, grouping.numeric_seeds);
  sort_seeds(term.unpaired, grouping.numeric_seeds);
  if (term.seeds.empty()) {
    std::string detail;
    for (const auto& arm : arms) {
      const auto seeds = seeds_of(group, arm, grouping.numeric_seeds);
      detail += std::string(detail.empty() ? "" : "; ") + arm + ": " +
                (seeds.empty() ? "no " + pair + " with a value" : pair + " " + join(seeds, ","));
    }
    throw InputError(group.label + ": " + what + ": no " + pair + " in common (" + detail + ")",
                     "a paired comparison needs runs of every arm with the same " + pair);
  }
  if (!term.unpaired.empty())
    warnings.push_back(group.label + ": " + what + ": " + pair + " " + join(term.unpaired, ",") +
                       " left out (not present for every arm compared)");
  std::vector<double> per_seed;
  for (const auto& seed : term.seeds) {
    std::vector<double> values;
    for (const auto& arm : arms) values.push_back(group.values.at(arm).at(seed));
    per_seed.push_back(f(values));
  }
  term.stats = mean_se(per_seed);
  return term;
}

void require_arm_somewhere(const Grouping& grouping, const std::string& arm, const std::string& by,
                           const std::string& option) {
  if (grouping.arms.count(arm)) return;
  throw UsageError("no arm '" + arm + "' (" + option + ") in column '" + by + "'",
                   "arms in the input: " +
                       join(std::vector<std::string>(grouping.arms.begin(), grouping.arms.end()), ", "));
}

void require_arm_in_group(const Group& group, const std::string& arm, const std::string& role) {
  if (group.has(arm)) return;
  std::string present;
  for (const auto& a : group.arms) present += (present.empty() ? "" : ", ") + a;
  throw InputError(group.label + ": the " + role + " arm '" + arm + "' is absent (arms here: " + present + ")",
                   "add its result files, or leave the group out with --where");
}

/// The output table's group key columns: one row per entry of `rows` (input row numbers).
ResultTable group_columns(const ResultTable& input, const Grouping& grouping, const std::vector<size_t>& rows,
                          const std::vector<std::string>& reserved) {
  const auto taken = input.take(rows);
  ResultTable out;
  for (const auto& key : grouping.keys) {
    if (std::find(reserved.begin(), reserved.end(), key) != reserved.end())
      throw UsageError("the input's key column '" + key + "' has the name of an output column",
                       "rename it in the input (the output adds: " + join(reserved, ", ") + ")");
    out.add_column(taken.column(key));
  }
  return out;
}

/// Appends the value columns of `terms` to `out`; mean and se are in `units` (the compared value's).
void add_term_columns(ResultTable& out, const std::vector<Term>& terms, const std::string& units) {
  std::vector<double> mean, se;
  std::vector<int64_t> n;
  std::vector<std::string> seeds, unpaired;
  for (const auto& t : terms) {
    mean.push_back(t.stats.mean);
    se.push_back(t.stats.se);
    n.push_back(t.stats.n);
    seeds.push_back(join(t.seeds, ","));
    unpaired.push_back(join(t.unpaired, ","));
  }
  out.add_value("mean", mean).units = units;
  out.add_value("se", se).units = units;
  out.add_value("n", n);
  out.add_value("seeds", seeds);
  out.add_value("unpaired", unpaired);
}

}  // namespace

MeanSe mean_se(const std::vector<double>& values) {
  const double nan = std::nan("");
  const auto n = static_cast<int64_t>(values.size());
  if (n == 0) return {nan, nan, 0};
  double sum = 0;
  for (double v : values) sum += v;
  const double mean = sum / static_cast<double>(n);
  if (n < 2) return {mean, nan, n};
  double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  const double sd = std::sqrt(squares / static_cast<double>(n - 1));
  return {mean, sd / std::sqrt(static_cast<double>(n)), n};
}

StatsResult paired_differences(const ResultTable& input, const PairOptions& options) {
  auto grouping = group_rows(input, options.pair, options.by, options.value);
  require_arm_somewhere(grouping, options.ref, options.by, "--ref");
  for (const auto& arm : options.arms) require_arm_somewhere(grouping, arm, options.by, "--arms");
  StatsResult result;
  result.warnings = grouping.warnings;

  std::vector<size_t> rows;
  std::vector<std::string> statistic, ref, arm_names;
  std::vector<Term> terms;
  for (const auto& group : grouping.groups) {
    require_arm_in_group(group, options.ref, "reference");
    if (options.ref_mean) {
      Term level;
      level.seeds = seeds_of(group, options.ref, grouping.numeric_seeds);
      std::vector<double> values;
      for (const auto& seed : level.seeds) values.push_back(group.values.at(options.ref).at(seed));
      level.stats = mean_se(values);
      if (level.seeds.empty())
        throw InputError(group.label + ": the reference arm '" + options.ref + "' has no value of " + options.value);
      rows.push_back(group.first_row);
      statistic.push_back("mean");
      ref.push_back(options.ref);
      arm_names.push_back(options.ref);
      terms.push_back(level);
    }
    for (const auto& arm : group.arms) {
      if (arm == options.ref) continue;
      if (!options.arms.empty() && std::find(options.arms.begin(), options.arms.end(), arm) == options.arms.end())
        continue;
      terms.push_back(paired_term(
          group, {arm, options.ref}, [](const std::vector<double>& v) { return v[0] - v[1]; },
          arm + " vs " + options.ref, grouping, options.pair, result.warnings));
      rows.push_back(group.first_row);
      statistic.push_back("paired_diff");
      ref.push_back(options.ref);
      arm_names.push_back(arm);
    }
  }
  if (std::count(statistic.begin(), statistic.end(), "paired_diff") == 0)
    result.warnings.push_back("no arm to compare with the reference '" + options.ref + "'" +
                              (options.arms.empty() ? "" : " among --arms"));
  const std::vector<std::string> reserved{"statistic", "ref", options.by, "mean", "se", "n", "seeds", "unpaired"};
  result.table = group_columns(input, grouping, rows, reserved);
  result.table.add_key("statistic", statistic);
  result.table.add_key("ref", ref);
  result.table.add_key(options.by, arm_names);
  add_term_columns(result.table, terms, input.column(options.value).units);
  return result;
}

StatsResult summarize(const ResultTable& input, const PairOptions& options) {
  auto grouping = group_rows(input, options.pair, options.by, options.value);
  StatsResult result;
  result.warnings = grouping.warnings;
  std::vector<size_t> rows;
  std::vector<std::string> arm_names, seeds;
  std::vector<double> means, sds, ses;
  std::vector<int64_t> counts;
  for (const auto& group : grouping.groups) {
    for (const auto& arm : group.arms) {
      if (!options.arms.empty() && std::find(options.arms.begin(), options.arms.end(), arm) == options.arms.end())
        continue;
      const auto arm_seeds = seeds_of(group, arm, grouping.numeric_seeds);
      std::vector<double> values;
      for (const auto& seed : arm_seeds) values.push_back(group.values.at(arm).at(seed));
      const auto stats = mean_se(values);
      rows.push_back(group.first_row);
      arm_names.push_back(arm);
      means.push_back(stats.mean);
      sds.push_back(stats.se * std::sqrt(static_cast<double>(stats.n)));
      ses.push_back(stats.se);
      counts.push_back(stats.n);
      seeds.push_back(join(arm_seeds, ","));
    }
  }
  const std::vector<std::string> reserved{"statistic", options.by, "mean", "sd", "se", "n", "seeds"};
  result.table = group_columns(input, grouping, rows, reserved);
  result.table.add_key("statistic", std::vector<std::string>(rows.size(), "mean"));
  result.table.add_key(options.by, arm_names);
  const auto& units = input.column(options.value).units;
  result.table.add_value("mean", means).units = units;
  result.table.add_value("sd", sds).units = units;
  result.table.add_value("se", ses).units = units;
  result.table.add_value("n", counts);
  result.table.add_value("seeds", seeds);
  return result;
}

StatsResult decompose(const ResultTable& input, const DecomposeOptions& options) {
  auto grouping = group_rows(input, options.pair, options.by, options.value);
  require_arm_somewhere(grouping, options.ref, options.by, "--ref");
  require_arm_somewhere(grouping, options.sink, options.by, "--sink");
  require_arm_somewhere(grouping, options.both, options.by, "--both");
  StatsResult result;
  result.warnings = grouping.warnings;
  if (!grouping.arms.count(options.gate))
    result.warnings.push_back("no arm '" + options.gate + "' (--gate) in any group: no gate and overlap terms");

  const auto improvement = [](const std::vector<double>& v) { return v[1] - v[0]; };  // {arm, ref}: ref − arm
  std::vector<size_t> rows;
  std::vector<std::string> term_names;
  std::vector<Term> terms;
  auto add = [&](const Group& group, const std::string& name, Term term) {
    rows.push_back(group.first_row);
    term_names.push_back(name);
    terms.push_back(std::move(term));
  };
  for (const auto& group : grouping.groups) {
    require_arm_in_group(group, options.ref, "reference");
    require_arm_in_group(group, options.sink, "sink");
    require_arm_in_group(group, options.both, "both");
    const bool has_gate = group.has(options.gate);
    auto term = [&](const std::vector<std::string>& arms, const std::function<double(const std::vector<double>&)>& f,
                    const std::string& what) {
      return paired_term(group, arms, f, what, grouping, options.pair, result.warnings);
    };
    add(group, "sink", term({options.sink, options.ref}, improvement, options.sink + " vs " + options.ref));
    if (has_gate) add(group, "gate", term({options.gate, options.ref}, improvement, options.gate + " vs " + options.ref));
    add(group, "both", term({options.both, options.ref}, improvement, options.both + " vs " + options.ref));
    if (has_gate)
      add(group, "overlap",
          term({options.ref, options.sink, options.gate, options.both},
               [](const std::vector<double>& v) { return (v[0] - v[1]) + (v[0] - v[2]) - (v[0] - v[3]); },
               "overlap of " + options.sink + " and " + options.gate));
    add(group, "filter",
        term({options.sink, options.both}, [](const std::vector<double>& v) { return v[0] - v[1]; },
             options.both + " vs " + options.sink));
  }
  const std::vector<std::string> reserved{"ref", "sink_arm", "gate_arm", "both_arm", "term",
                                          "mean", "se", "n", "seeds", "unpaired"};
  result.table = group_columns(input, grouping, rows, reserved);
  const size_t n = rows.size();
  result.table.add_key("ref", std::vector<std::string>(n, options.ref));
  result.table.add_key("sink_arm", std::vector<std::string>(n, options.sink));
  result.table.add_key("gate_arm", std::vector<std::string>(n, options.gate));
  result.table.add_key("both_arm", std::vector<std::string>(n, options.both));
  result.table.add_key("term", term_names);
  add_term_columns(result.table, terms, input.column(options.value).units);
  return result;
}

}  // namespace sg
