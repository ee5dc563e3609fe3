// inspect.h — what a sinkgate file is, for sg-info: its kind, schema version and provenance, and
// per kind what a reader most often wants to know (lib/SCHEMA.md describes the layouts):
//   token file    tokenizer, vocabulary, end-of-text id, documents, split sizes;
//   run file      tier, arm, seed, labels, every configuration field (marked where it differs
//                 from the tier's preset), parameter count (from the configuration), step,
//                 finished, final validation loss, the checkpoint's time, the loss plan;
//   result table  rows, and each column's name, role and type (HDF5 or CSV).
// Also the tiers' presets (sg-info --tier). Reads files only: no model is built.
#pragma once
#include <string>
#include <vector>

namespace sg {

enum class InfoFormat { text, json };

/// A description of `path` ("-": stdin): as aligned "name  value" lines under the file's name, or
/// as one JSON object {"path", "kind" (tokens | run | result), "format", "schema_version",
/// "provenance": {…}, and an object named after the kind}. Throws InputError naming the file when
/// it is neither a sinkgate HDF5 file nor a CSV result table.
std::string describe_file(const std::string& path, InfoFormat format);

/// The training curves of run files as TSV: a header line "# run\ttier\tarm\tseed\tseries\tstep\tvalue",
/// then one line per point; run is "tier/arm/seed" (with the run's labels appended as /KEY=VALUE),
/// series is train_loss, val_loss, lr or tokens_per_second (per optimizer step; val_loss at its
/// evaluation steps). Throws InputError naming a file that is not a run file.
std::string run_curves(const std::vector<std::string>& paths);

/// A tier's preset, or every preset for "all": its description and every configuration field,
/// with a --config file's fields and the `overrides` (key=value) applied, as sg-train would run it
/// (configure_run: validated). Throws UsageError listing the names for an unknown tier, and
/// naming the field of an override out of bounds.
std::string describe_tiers(const std::string& name, InfoFormat format, const std::string& config_file = "",
                           const std::vector<std::string>& overrides = {});

}  // namespace sg
