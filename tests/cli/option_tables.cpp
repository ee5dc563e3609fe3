// option_tables — prints the library's option tables, one a line ("tiers: 10M 50M …"), read
// straight from lib/ and not through any tool's --help, for tests/cli/option_lists.cmake to hold
// every --help list and docs table against, and for tests/check_docs.py to hold the lists that
// README.md and docs/ mark (<!-- list: TABLE -->) against. Built by tests/cli/cli_option_lists.cmake.
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/tabulate.h"
#include "lib/base/log.h"
#include "lib/run/arm.h"
#include "lib/run/config.h"
#ifdef SG_OPTION_TABLES_TORCH
#include "lib/instruments/corruption.h"
#include "lib/instruments/probe.h"
#include "lib/instruments/evaluation.h"
#endif

namespace {

void print(const std::string& table, const std::vector<std::string>& names) {
  std::cout << table << ":";
  for (const auto& name : names) std::cout << " " << name;
  std::cout << "\n";
}

}  // namespace

int main() {
  print("tiers", sg::tier_names());
  std::vector<std::string> formats, spellings, extensions;
  for (const auto& format : sg::format_names()) {
    formats.push_back(format.name);
    spellings.push_back(format.name);
    if (!format.alias.empty()) spellings.push_back(format.alias);
    extensions.push_back("." + format.extension);
  }
  print("formats", formats);
  print("format-spellings", spellings);
  print("format-extensions", extensions);
  print("log-levels", sg::log::level_names());
  // The options of each arm axis but "none", as --help and the pages list them.
  for (const auto& [table, axis] : {std::pair{"zero-options", sg::ArmAxis::zero},
                                    std::pair{"filters", sg::ArmAxis::filter},
                                    std::pair{"output-gates", sg::ArmAxis::output_gate}}) {
    std::vector<std::string> names;
    for (const auto& name : sg::option_names(axis))
      if (name != "none") names.push_back(name);
    print(table, names);
  }
  print("paper-arms", sg::paper_arm_names());
#ifdef SG_OPTION_TABLES_TORCH
  print("junk", sg::junk_type_names());
  print("cutoffs", sg::cutoff_names());
  print("probes", sg::probe_names());
  std::vector<std::string> paper_probes;
  for (const auto probe : sg::all_probes()) paper_probes.push_back(sg::to_string(probe));
  print("paper-probes", paper_probes);
  print("tasks", sg::evaluation_task_names());
#endif
  return 0;
}
