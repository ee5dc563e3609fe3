#!/usr/bin/env python3
"""pipelines/stability.py — training stability across learning rates, every arm (`make stability`).

    python3 pipelines/stability.py --curves curves.tsv --val val.csv [--repetitive repetitive.csv]
        [--sinks sinks.csv] --out DIR

Reads what the tools wrote for a learning-rate grid (pipelines/stability.mk):

  --curves      `sg-info --curves` of every run (run, tier, arm, seed, series, step, value); a run's
                peak learning rate is the largest of its `lr` series, its factor the run's label
                lr_factor (in the run's name, `…/lr_factor=F`)
  --val         `sg-tabulate --format csv` of sg-eval's val_loss on the ordinary validation batches
  --repetitive  the same on the repetitive-context set (optional)
  --sinks       `sg-tabulate --format csv` of sg-probe's sinks probe, layer=all, head=all (optional)

and writes into DIR:

  stability-runs.tsv   one row per run: arm, lr, seed, the final losses, diverged, spikes, first
                       spike, the largest gradient norm, attention logit and activation, sinks
  stability-grid.tsv   one row per (arm, lr): mean and SE over seeds, diverged and stable seeds
  stability.md         the Markdown table (arm × lr: final loss ± SE over seeds; divergences marked)
  stability-claims.md  the claims with their numbers and whether each holds (printed too)

Definitions (docs/beyond.md, "Stability"):

- initial loss: the training loss of the first step (about ln V at initialisation).
- diverged: a non-finite training loss, a non-finite final validation loss, or a final validation
  loss above the initial loss.
- spike: a step whose training loss exceeds the median of the previous SPIKE_WINDOW (25) steps by
  more than SPIKE_NATS (0.5 nats) and by more than SPIKE_SIGMAS (5) robust standard deviations
  (1.4826 × the median absolute deviation) of those steps; consecutive spike steps are one spike.
- stable seed (at an arm and rate): not diverged, and, at a rate above the arm's best (the rate of
  its lowest seed-mean final loss), its final loss within STABLE_MARGIN (1.0 nat) of that best.
- largest stable rate of an arm: the largest rate of the grid at which every seed is stable, and
  at every smaller rate of the grid too. Every seed must agree, and a rate above an unstable one
  never counts, so no single lucky (or unlucky) seed decides it.

Claims (a), (b), (c) and (e) compare seed pairs by pipelines/claim_rule.py: each holds only when
every seed pair agrees in sign and the mean paired difference exceeds its threshold by more than
two standard errors of the paired differences; otherwise it is "not shown", printed with the mean,
the SE, the pairs and how many agree. A claim not shown is a finding, not an error: the exit status
is 0 either way (2 on bad input, naming the file).
"""
import csv
import math
import os
import statistics
import sys

from claim_rule import exceeds, mean_se, verdict

SPIKE_WINDOW = 25
SPIKE_NATS = 0.5
SPIKE_SIGMAS = 5.0
STABLE_MARGIN = 1.0
# Arms with a zero option or a per-query output gate, and arms with neither (the two groups).
ZERO_OR_OUTGATE = ("offbyone", "sinklogit", "combo2", "outgate", "sinklogit+outgate", "sinktoken", "combo")
NEITHER = ("baseline", "projgate", "keygate", "normgate", "renorm")
ARM_ORDER = ("baseline", "offbyone", "sinklogit", "projgate", "combo2", "outgate", "sinklogit+outgate", "keygate")


class InputError(Exception):
    pass


def finite(x):
    return x is not None and math.isfinite(x)


def number(text, where):
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{where}: '{text}' is not a number")


def lr_key(lr):
    """A learning rate as a grouping key: six significant digits (the schedule's float64 survives)."""
    return float(f"{lr:.6g}")


def read_curves(path):
    """{(arm, seed, factor): {"tier", "series": {name: [(step, value)]}}} from sg-info --curves."""
    runs = {}
    with open(path, encoding="utf-8") as f:
        for number_, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 7:
                raise InputError(f"{path}:{number_}: expected 7 tab-separated fields (sg-info --curves), found {len(fields)}")
            name, tier, arm, seed, series, step, value = fields
            factor = None
            for part in name.split("/"):
                if part.startswith("lr_factor="):
                    factor = part[len("lr_factor="):]
            if factor is None:
                raise InputError(f"{path}:{number_}: run {name} has no lr_factor label (sg-train --label lr_factor=F)")
            key = (arm, int(seed), factor)
            run = runs.setdefault(key, {"tier": tier, "name": name, "series": {}})
            run["series"].setdefault(series, []).append((int(step), number(value, f"{path}:{number_}")))
    if not runs:
        raise InputError(f"{path}: no curves (were the runs trained?)")
    return runs


def read_table(path, value, required=("arm", "seed", "lr_factor")):
    """Rows of a sg-tabulate CSV as dicts; checks the columns named."""
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(line for line in f if not line.startswith("#"))  # sg-tabulate's #role, #type rows
        missing = [c for c in (*required, value) if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"{path}: no column {', '.join(missing)} (columns: {', '.join(reader.fieldnames or [])})")
        return list(reader)


def read_losses(path):
    """{(arm, seed, factor): val_loss} from sg-eval's table."""
    out = {}
    for row in read_table(path, "val_loss"):
        out[(row["arm"], int(row["seed"]), row["lr_factor"])] = number(row["val_loss"] or "nan", path)
    return out


def read_sinks(path):
    """{(arm, seed, factor): {statistic: value}} from sg-probe's sinks probe (layer all, head all)."""
    out = {}
    for row in read_table(path, "value", ("arm", "seed", "lr_factor", "statistic")):
        if row.get("layer", "all") != "all" or row.get("head", "all") != "all":
            continue
        out.setdefault((row["arm"], int(row["seed"]), row["lr_factor"]), {})[row["statistic"]] = number(row["value"] or "nan", path)
    return out


def spikes(losses):
    """(number of spikes, first spike step or None) of a training-loss curve [(step, loss)]."""
    count, first, inside = 0, None, False
    for i in range(SPIKE_WINDOW, len(losses)):
        step, loss = losses[i]
        window = [l for _, l in losses[i - SPIKE_WINDOW:i] if finite(l)]
        if not finite(loss) or len(window) < SPIKE_WINDOW:
            inside = False
            continue
        median = statistics.median(window)
        spread = 1.4826 * statistics.median(abs(l - median) for l in window)
        spike = loss - median > max(SPIKE_NATS, SPIKE_SIGMAS * spread)
        if spike and not inside:
            count += 1
            first = step if first is None else first
        inside = spike
    return count, first


def largest(series):
    values = [v for _, v in series if finite(v)]
    return max(values) if values else math.nan


def summarise(curves, val, repetitive, sinks):
    """One record per run."""
    records = []
    for (arm, seed, factor), run in sorted(curves.items()):
        s = run["series"]
        train = sorted(s.get("train_loss", []))
        if not train:
            raise InputError(f"run {run['name']}: no train_loss curve")
        initial = train[0][1]
        loss = val.get((arm, seed, factor), math.nan)
        rep = repetitive.get((arm, seed, factor), math.nan) if repetitive is not None else math.nan
        nonfinite = any(not finite(v) for _, v in train)
        diverged = nonfinite or not finite(loss) or loss > initial
        count, first = spikes(train)
        sink = sinks.get((arm, seed, factor), {}) if sinks is not None else {}
        records.append({
            "tier": run["tier"], "arm": arm, "seed": seed, "lr_factor": factor, "lr": lr_key(largest(s.get("lr", []))),
            "steps": train[-1][0], "initial_loss": initial, "val_loss": loss, "repetitive_loss": rep,
            "nonfinite": nonfinite, "diverged": diverged, "repetitive_above_initial": finite(rep) and rep > initial,
            "spikes": count, "first_spike": first,
            "max_grad_norm": largest(s.get("grad_norm", [])),
            "max_attention_logit": largest(s.get("max_attention_logit", [])),
            "max_activation": largest(s.get("max_activation", [])),
            "position0_mass": sink.get("position0_mass", math.nan), "phantom_mass": sink.get("phantom_mass", math.nan),
            "sink_mass": sink.get("sink_mass", math.nan), "r0_ratio": sink.get("r0_ratio", math.nan),
        })
    missing = [r for r in records if not finite(r["val_loss"]) and not r["nonfinite"]]
    if missing:
        names = ", ".join(f"{r['arm']}/lr_factor={r['lr_factor']}/{r['seed']}" for r in missing[:5])
        raise InputError(f"no finite val_loss for {len(missing)} run(s) whose training loss stayed finite: {names}")
    records.sort(key=lambda r: (ARM_ORDER.index(r["arm"]) if r["arm"] in ARM_ORDER else len(ARM_ORDER), r["arm"], r["lr"], r["seed"]))
    return records


class Grid:
    """The records by arm and rate, with each arm's stable seeds and largest stable rate."""

    def __init__(self, records):
        self.records = records
        self.arms = sorted({r["arm"] for r in records}, key=lambda a: (ARM_ORDER.index(a) if a in ARM_ORDER else 99, a))
        self.lrs = sorted({r["lr"] for r in records})
        self.cells = {}
        for r in records:
            self.cells.setdefault((r["arm"], r["lr"]), []).append(r)
        for cell in self.cells.values():
            cell.sort(key=lambda r: r["seed"])
        self.best, self.best_lr = {}, {}
        for arm in self.arms:
            means = [(mean_se([r["val_loss"] for r in self.cell(arm, lr) if not r["diverged"]])[0], lr) for lr in self.lrs]
            means = [(m, lr) for m, lr in means if finite(m)]
            self.best[arm], self.best_lr[arm] = min(means) if means else (math.nan, math.inf)
        # A rate at or below the arm's best is undertrained at worst, never unstable: the margin
        # applies above it.
        for r in records:
            r["stable"] = not r["diverged"] and finite(self.best[r["arm"]]) and (
                r["lr"] <= self.best_lr[r["arm"]] or r["val_loss"] <= self.best[r["arm"]] + STABLE_MARGIN)

    def cell(self, arm, lr):
        return self.cells.get((arm, lr), [])

    def stable_cell(self, arm, lr):
        cell = self.cell(arm, lr)
        return bool(cell) and all(r["stable"] for r in cell)

    def largest_stable(self, arm):
        """The largest stable rate (see the module comment), or None when even the smallest is not."""
        found = None
        for lr in self.lrs:
            if not self.cell(arm, lr):
                continue
            if not self.stable_cell(arm, lr):
                break
            found = lr
        return found

    def paired(self, arm, ref, lr, key="val_loss"):
        """The differences arm − ref, one per seed both ran at one rate (finite values only)."""
        ours = {r["seed"]: r[key] for r in self.cell(arm, lr)}
        theirs = {r["seed"]: r[key] for r in self.cell(ref, lr)}
        return [ours[s] - theirs[s] for s in sorted(ours) if s in theirs and finite(ours[s]) and finite(theirs[s])]


def fmt(x, digits=4):
    return "NaN" if not finite(x) else f"{round(x, digits) + 0.0:.{digits}f}"


def fmt_lr(lr):
    return "none" if lr is None else f"{lr:.3g}"


def write_runs(records, path):
    columns = ["tier", "arm", "lr_factor", "lr", "seed", "steps", "initial_loss", "val_loss", "repetitive_loss", "diverged",
               "nonfinite", "stable", "spikes", "first_spike", "max_grad_norm", "max_attention_logit", "max_activation",
               "position0_mass", "phantom_mass", "sink_mass", "r0_ratio"]
    with open(path, "w", encoding="utf-8") as f:
        f.write("# " + "\t".join(columns) + "\n")
        for r in records:
            cells = []
            for c in columns:
                v = r[c]
                cells.append(str(int(v)) if isinstance(v, bool) else ("NaN" if v is None or (isinstance(v, float) and math.isnan(v)) else (f"{v:.8g}" if isinstance(v, float) else str(v))))
            f.write("\t".join(cells) + "\n")


def write_grid(grid, path):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# arm\tlr\tval_mean\tval_se\trepetitive_mean\trepetitive_se\tmax_logit_mean\tmax_activation_mean\tseeds\tdiverged\tstable\n")
        for arm in grid.arms:
            for lr in grid.lrs:
                cell = grid.cell(arm, lr)
                if not cell:
                    continue
                vm, vs = mean_se([r["val_loss"] for r in cell])
                rm, rs = mean_se([r["repetitive_loss"] for r in cell])
                lm, _ = mean_se([r["max_attention_logit"] for r in cell])
                am, _ = mean_se([r["max_activation"] for r in cell])
                f.write(f"{arm}\t{lr:.6g}\t{vm:.8g}\t{vs:.8g}\t{rm:.8g}\t{rs:.8g}\t{lm:.8g}\t{am:.8g}\t{len(cell)}\t"
                        f"{sum(r['diverged'] for r in cell)}\t{sum(r['stable'] for r in cell)}\n")


def markdown(grid, key, title):
    lines = [title, "", "| Arm | " + " | ".join(f"lr {fmt_lr(lr)}" for lr in grid.lrs) + " | largest stable lr |",
             "| --- |" + " ---: |" * len(grid.lrs) + " ---: |"]
    for arm in grid.arms:
        cells = []
        for lr in grid.lrs:
            cell = grid.cell(arm, lr)
            if not cell:
                cells.append("–")
                continue
            m, se = mean_se([r[key] for r in cell])
            text = fmt(m, 3) + ("" if not finite(se) else f" ± {fmt(se, 3)}")
            diverged = sum(r["diverged"] for r in cell)
            if diverged:
                text += f" ({diverged}/{len(cell)} diverged)"
            elif not all(r["stable"] for r in cell):
                text += " (unstable)"
            cells.append(text)
        lines.append(f"| {arm} | " + " | ".join(cells) + f" | {fmt_lr(grid.largest_stable(arm))} |")
    return "\n".join(lines)


def claims(grid):
    """The claims as Markdown lines."""
    out = []

    def claim(text, evidence, numbers):
        """evidence: claim_rule Evidence, a bool (a rule's evidence with a further condition), or None (untested)."""
        out.append(f"- {text}: **{verdict(evidence)}** — {numbers}")

    seeds = sorted({r["seed"] for r in grid.records})
    out.append(f"Rates {', '.join(fmt_lr(lr) for lr in grid.lrs)}; seeds {', '.join(map(str, seeds))}; "
               f"stable: every seed not diverged and, above the arm's best rate, within {STABLE_MARGIN:g} nat of its best mean loss, "
               f"at that rate and every smaller one. A comparison holds only when every seed pair agrees in sign and the mean "
               f"paired difference exceeds its threshold by more than two standard errors; otherwise it is not shown.")
    out.append("")
    base = grid.largest_stable("baseline") if "baseline" in grid.arms else None

    def tolerates(text, arms):
        present = [a for a in arms if a in grid.arms]
        if "baseline" not in grid.arms or not present:
            return claim(text, None, f"needs the baseline and {' or '.join(arms)}")
        if base is None:
            return claim(text, None, "the baseline is stable at no rate of the grid")
        for arm in present:
            ours = grid.largest_stable(arm)
            beyond = [lr for lr in grid.lrs if lr > base and grid.cell(arm, lr) and grid.cell("baseline", lr)]
            m, se = mean_se(grid.paired(arm, "baseline", base))
            n = len(grid.paired(arm, "baseline", base))
            evidence = (f"largest stable rate {fmt_lr(ours)} against the baseline's {fmt_lr(base)}; at the baseline's, "
                        f"{arm} − baseline {fmt(m)} ± {fmt(se)} nats ({n} seed pairs)")
            if not beyond:
                claim(f"{text} ({arm})", None, evidence + "; the grid has no rate above the baseline's largest stable one")
                continue
            nxt = beyond[0]
            # The claim predicts the arm lower than the baseline: baseline − arm above zero.
            lower = exceeds([-d for d in grid.paired(arm, "baseline", nxt)])
            claim(f"{text} ({arm})", ours is not None and ours > base and lower.holds,
                  evidence + f"; at {fmt_lr(nxt)}, baseline − {arm}: {lower.text()}")

    tolerates("(a) the output gate tolerates a larger rate than the baseline", ["outgate", "sinklogit+outgate"])
    tolerates("(b) a zero option tolerates a larger rate than the baseline", ["sinklogit", "offbyone"])

    # (c) At every rate where some runs stay stable and others do not, the stable runs' largest
    # attention logit (and activation) is below the unstable runs'. Paired by seed: at each such rate,
    # each seed with runs of both kinds gives one difference, the median of its unstable runs minus
    # the median of its stable runs.
    for key, label in (("max_attention_logit", "attention logits"), ("max_activation", "residual activations")):
        text = f"(c) runs that stay stable keep smaller {label}"
        if not any(finite(r[key]) for arm in grid.arms for lr in grid.lrs for r in grid.cell(arm, lr)):
            claim(text, None, f"not recorded: no run measured its {label} (train with --set telemetry=1, as make stability does)")
            continue
        split, differences = [], []
        for lr in grid.lrs:
            runs = [r for arm in grid.arms for r in grid.cell(arm, lr) if finite(r[key])]
            stable = [r[key] for r in runs if r["stable"]]
            unstable = [r[key] for r in runs if not r["stable"]]
            if stable and unstable:
                split.append((lr, statistics.median(stable), statistics.median(unstable), len(stable), len(unstable)))
                for seed in sorted({r["seed"] for r in runs}):
                    s = [r[key] for r in runs if r["seed"] == seed and r["stable"]]
                    u = [r[key] for r in runs if r["seed"] == seed and not r["stable"]]
                    if s and u:
                        differences.append(statistics.median(u) - statistics.median(s))
        if not split:
            claim(text, None, "no rate of the grid has both stable and unstable runs")
            continue
        claim(text, exceeds(differences),
              "median over runs, stable against unstable: " + "; ".join(
                  f"lr {fmt_lr(lr)} {fmt(s, 2)} ({ns}) vs {fmt(u, 2)} ({nu})" for lr, s, u, ns, nu in split) +
              "; unstable − stable within each seed and rate: " + exceeds(differences).text(2))

    # (d) The largest stable rate of each arm.
    out.append("- (d) largest stable rate of each arm: " + ", ".join(
        f"{arm} {fmt_lr(grid.largest_stable(arm))}" for arm in grid.arms))

    # (e) Ordinary batches against the repetitive-context set: the advantage of the arms with a zero
    # option or an output gate over those with neither, at the largest rate. Paired by seed: each
    # seed's advantage (neither's mean minus either's mean over its arms) on the repetitive set
    # minus the same on the ordinary batches, which the claim predicts above 0.1 nat.
    with_arms = [a for a in grid.arms if a in ZERO_OR_OUTGATE]
    without = [a for a in grid.arms if a in NEITHER]
    have_rep = any(finite(r["repetitive_loss"]) for r in grid.records)
    text = ("(e) at the largest rate, the advantage of a zero option or output gate is larger on repetitive context "
            "than on ordinary batches (by more than 0.1 nat)")
    if not with_arms or not without or not have_rep:
        claim(text, None, "needs arms of both groups and the repetitive-context set")
        return out

    def advantage(lr, key, seed=None):
        def group(arms):
            return mean_se([r[key] for a in arms for r in grid.cell(a, lr) if seed is None or r["seed"] == seed])[0]
        return group(without) - group(with_arms)

    gaps = [(lr, advantage(lr, "val_loss"), advantage(lr, "repetitive_loss")) for lr in grid.lrs]
    gaps = [(lr, o, r) for lr, o, r in gaps if finite(o) and finite(r)]
    if not gaps:
        claim(text, None, "no rate has finite losses of both groups on both sets")
        return out
    top = gaps[-1][0]
    differences = [advantage(top, "repetitive_loss", seed) - advantage(top, "val_loss", seed) for seed in seeds]
    evidence = exceeds(differences, threshold=0.1)
    claim(text, evidence,
          f"neither ({', '.join(without)}) minus either ({', '.join(with_arms)}), mean over runs, ordinary / repetitive: " +
          "; ".join(f"lr {fmt_lr(lr)} {fmt(o, 3)} / {fmt(r, 3)}" for lr, o, r in gaps) +
          f"; at lr {fmt_lr(top)}, repetitive − ordinary advantage per seed: {evidence.text(3)}")
    return out


def main(argv):
    args = {"--curves": None, "--val": None, "--repetitive": None, "--sinks": None, "--out": None}
    i = 1
    while i < len(argv):
        if argv[i] not in args or i + 1 >= len(argv):
            print("usage: stability.py --curves CURVES.tsv --val VAL.csv [--repetitive REP.csv] [--sinks SINKS.csv] --out DIR",
                  file=sys.stderr)
            return 2
        args[argv[i]] = argv[i + 1]
        i += 2
    if not args["--curves"] or not args["--val"] or not args["--out"]:
        print("usage: stability.py --curves CURVES.tsv --val VAL.csv [--repetitive REP.csv] [--sinks SINKS.csv] --out DIR",
              file=sys.stderr)
        return 2
    try:
        curves = read_curves(args["--curves"])
        val = read_losses(args["--val"])
        repetitive = read_losses(args["--repetitive"]) if args["--repetitive"] else None
        sinks = read_sinks(args["--sinks"]) if args["--sinks"] else None
        records = summarise(curves, val, repetitive, sinks)
    except (OSError, InputError, csv.Error) as error:
        print(f"stability.py: error: {error}", file=sys.stderr)
        return 2
    grid = Grid(records)
    out = args["--out"]
    os.makedirs(out, exist_ok=True)
    write_runs(records, os.path.join(out, "stability-runs.tsv"))
    write_grid(grid, os.path.join(out, "stability-grid.tsv"))
    tier = records[0]["tier"]
    table = markdown(grid, "val_loss", f"Final validation loss (nats, mean ± SE over seeds), tier {tier}, ordinary validation batches")
    if repetitive is not None:
        table += "\n\n" + markdown(grid, "repetitive_loss", "The same runs on the repetitive-context set")
    with open(os.path.join(out, "stability.md"), "w", encoding="utf-8") as f:
        f.write(table + "\n")
    lines = claims(grid)
    with open(os.path.join(out, "stability-claims.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
