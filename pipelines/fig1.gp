# pipelines/fig1.gp — Figure 1: the two primitives across scale. (a) The zero-option increment (the
# sink logit's improvement over the baseline) and the filtering increments (combo and combo2 over the
# sink logit), paired per seed, with standard errors; (b) the share of attention mass the sink-logit
# model places on its phantom; (c) the within-row spread of every value-slot gate.
#
#   gnuplot -e "a='results/paper/fig1-a.tsv'; b='results/paper/fig1-b.tsv'; c='results/paper/fig1-c.tsv'; \
#               output='results/paper/fig1.png'; tiers='10M 50M 124M 350M'; seeds='10M:0,1,2 124M:0,1,2'; seed='0'" \
#               pipelines/fig1.gp
#
# a: `sg-tabulate table1-baseline.h5 table1-sinklogit.h5 --where statistic=paired_diff --rows ref,arm,tier
# --cell mean --format tsv` (columns ref, arm, tier, mean = arm − ref, se): Table 1's sign, negative is
# better. Panel (a) draws the improvement ref − arm = −mean (positive is better), as the paper does.
# b, c: `sg-tabulate PROBES --where probe=… --rows arm,tier --cell value --format tsv` (arm, tier, value).
# Tiers are placed in the order of `tiers`; seeds (TIER:SEED,SEED… for each tier) and seed (the
# probed run) go into the caption. `data` (default: `output` with .tsv for .png) receives the figure's numbers,
# one row per point: panel, ref (none in b, c), arm, tier, value (as drawn), se (NaN: none); the
# figure is drawn from that file.

if (!exists("a")) a = 'results/paper/fig1-a.tsv'
if (!exists("b")) b = 'results/paper/fig1-b.tsv'
if (!exists("c")) c = 'results/paper/fig1-c.tsv'
if (!exists("output")) output = 'results/paper/fig1.png'
if (!exists("data")) data = output[1:strlen(output) - 4] . '.tsv'
if (!exists("tiers")) tiers = '10M 50M 124M 350M'
if (!exists("seeds")) seeds = ''
if (!exists("seed")) seed = '0'
here = ARG0[1:strlen(ARG0) - strlen('fig1.gp')]
load here . 'figures.gp'
set datafile separator "\t"

# The position of a tier in `tiers` (NaN when it is not there).
slot(t, i) = i > words(tiers) ? NaN : (word(tiers, i) eq t ? i : slot(t, i + 1))
at(t) = slot(t, 1)
n = words(tiers)

# The figure's numbers. (a): the increments the paper draws, reference:arm.
increments = " baseline:sinklogit sinklogit:combo sinklogit:combo2 "
line(panel, ref, arm, tier, value, se) = emit(sprintf("%s\t%s\t%s\t%s\t%.9g\t%.9g", panel, ref, arm, tier, value, se))
# Rows are written series by series and, within a series, in the order of `tiers`.
if (has_rows(a)) {
  seen = " "
  stats a using (has(increments, strcol(1) . ":" . strcol(2)) ? collect(strcol(1) . ":" . strcol(2)) : 0) nooutput
  do for [s in common(increments, seen)] {
    do for [t in tiers] {
      stats a using (strcol(1) . ":" . strcol(2) eq s && strcol(3) eq t ? line("a", strcol(1), strcol(2), t, -$4, $5) : 0) nooutput
    }
  }
}
do for [panel in "b c"] {
  file = panel eq "b" ? b : c
  if (has_rows(file)) {
    seen = " "
    stats file using (collect(strcol(1))) nooutput
    do for [arm in seen] {
      do for [t in tiers] {
        stats file using (strcol(1) eq arm && strcol(2) eq t ? line(panel, "none", arm, t, $3, NaN) : 0) nooutput
      }
    }
  }
}
set print data
print "# panel\tref\tarm\ttier\tvalue\tse"
if (strlen(rows) > 0) { print rows[1:strlen(rows) - 1] }
unset print

# From here on everything is read back from `data`: the series of each panel, in the data's order.
array series[3]
do for [p = 1:3] {
  panel = "abc"[p:p]
  seen = " "
  if (strlen(rows) > 0) { stats data using (strcol(1) eq panel ? collect(strcol(2) . ":" . strcol(3)) : 0) nooutput }
  series[p] = seen
}
ref_of(s) = s[1:strstrt(s, ":") - 1]
arm_of(s) = s[strstrt(s, ":") + 1:strlen(s)]
in_series(panel, s) = strcol(1) eq panel && strcol(2) eq ref_of(s) && strcol(3) eq arm_of(s)
# Series i of k sits a little left or right of its tier, so that equal values stay apart.
nudge(x, i, k) = x + 0.05 * (i - (k + 1) / 2.0)
increment_title(s) = ref_of(s) eq "baseline" ? "zero option: " . arm_title(arm_of(s)) . " over baseline" : \
    "filtering" . (arm_of(s) eq "combo" ? " (norm gate)" : arm_of(s) eq "combo2" ? " (projection gate)" : "") . \
    ": " . arm_title(arm_of(s)) . " over " . arm_title(ref_of(s))

tier_seeds = ""
do for [t in tiers] {
  w = ""
  do for [v in seeds] { if (strstrt(v, t . ":") == 1) { w = v[strlen(t) + 2:strlen(v)] } }
  tier_seeds = tier_seeds . (strlen(tier_seeds) > 0 ? ", " : "") . t . (strlen(w) > 0 ? " (seeds " . w . ")" : "")
}
caption = "(a) Improvement in final validation loss of an arm over its reference, paired per seed: mean ± SE over the seeds of each tier (reference − arm; Table 1 prints arm − reference).\n" . \
          sprintf("(b) Share of attention mass on the phantom and (c) attention-weighted within-row sd of the value gate, measured by sg-probe on the seed-%s run of each arm.\n", seed) . \
          sprintf("Tier%s: %s.", n > 1 ? "s" : "", tier_seeds)

set terminal pngcairo size 1500,640 font "sans,11" noenhanced
set output output
set multiplot layout 1,3 margins 0.075, 0.98, 0.36, 0.93 spacing 0.09, 0
set xrange [0.5:n + 0.5]
set xtics ()
do for [i = 1:n] { set xtics add (word(tiers, i) i) }
set xlabel "tier"
set grid
set key at graph 0, -0.17 left top vertical maxcols 1 reverse Left samplen 2.5
nodata(what) = sprintf("no %s among the runs", what)

set title "(a) zero-option and filtering increments"
set ylabel "improvement (nats; > 0: better)"
if (words(series[1]) == 0) { set yrange [-1:1]; set label 2 nodata("increment") at graph 0.5, 0.5 center } else { set yrange [*:*] }
plot for [i = 1:words(series[1])] data using (in_series("a", word(series[1], i)) ? nudge(at(strcol(4)), i, words(series[1])) : NaN):5:6 \
       with yerrorlines lw 2 pt 7 lc rgb arm_color(arm_of(word(series[1], i)), i) title increment_title(word(series[1], i)), \
     0 with lines dt 2 lc rgb "#888888" notitle
unset label 2

set title "(b) mass on the phantom"
set ylabel "share of attention mass"
set yrange [0:1]
if (words(series[2]) == 0) { set label 2 nodata("sink-logit run") at graph 0.5, 0.5 center }
plot for [i = 1:words(series[2])] data using (in_series("b", word(series[2], i)) ? at(strcol(4)) : NaN):5 \
       with linespoints lw 2 pt 7 lc rgb arm_color(arm_of(word(series[2], i)), i) title arm_title(arm_of(word(series[2], i))), \
     NaN notitle
unset label 2

set title "(c) within-row spread of the gate"
set ylabel "attention-weighted sd of g within a row"
if (words(series[3]) == 0) { set yrange [0:0.3]; set label 2 nodata("value-slot gate") at graph 0.5, 0.5 center } else { set yrange [0:*] }
set label 1 caption at screen 0.01, 0.085 left front
plot for [i = 1:words(series[3])] data using (in_series("c", word(series[3], i)) ? nudge(at(strcol(4)), i, words(series[3])) : NaN):5 \
       with linespoints lw 2 pt 7 lc rgb arm_color(arm_of(word(series[3], i)), i) title arm_title(arm_of(word(series[3], i))), \
     NaN notitle
unset multiplot
