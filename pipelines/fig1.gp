# pipelines/fig1.gp — Figure 1: the two primitives across scale. (a) The zero-option increment (the
# sink logit's improvement over the baseline) and the filtering increments (combo and combo2 over the
# sink logit), paired per seed, with standard errors; (b) the share of attention mass the sink-logit
# model places on its phantom; (c) the within-row spread of every value-slot gate.
#
#   gnuplot -e "a='results/paper/fig1-a.tsv'; b='results/paper/fig1-b.tsv'; c='results/paper/fig1-c.tsv'; \
#               output='results/paper/fig1.png'; tiers='10M 50M 124M 350M'" pipelines/fig1.gp
#
# a: `sg-tabulate table1-baseline.h5 table1-sinklogit.h5 --where statistic=paired_diff --rows ref,arm,tier
# --cell mean --format tsv` (columns ref, arm, tier, mean = arm − ref, se); the improvement is −mean.
# b, c: `sg-tabulate PROBES --where probe=… --rows arm,tier --cell value --format tsv` (arm, tier, value).
# Tiers are placed in the order of `tiers`.

if (!exists("a")) a = 'results/paper/fig1-a.tsv'
if (!exists("b")) b = 'results/paper/fig1-b.tsv'
if (!exists("c")) c = 'results/paper/fig1-c.tsv'
if (!exists("output")) output = 'results/paper/fig1.png'
if (!exists("tiers")) tiers = '10M 50M 124M 350M'

set datafile separator "\t"
# The position of a tier in `tiers` (NaN when it is not there).
slot(t, i) = i > words(tiers) ? NaN : (word(tiers, i) eq t ? i : slot(t, i + 1))
at(t) = slot(t, 1)
n = words(tiers)
set terminal pngcairo size 1500,460 font "sans,11" noenhanced
set output output
set multiplot layout 1,3
set xrange [0.5:n + 0.5]
set xtics () 
do for [i = 1:n] { set xtics add (word(tiers, i) i) }
set xlabel "tier"
set grid
set key top left

# (a): rows (ref, arm, tier, mean, se).
pair(ref, arm) = (strcol(1) eq ref && strcol(2) eq arm) ? at(strcol(3)) : NaN
set title "(a) zero-option and filtering increments"
set ylabel "improvement (nats, paired per seed)"
plot a using (pair("baseline", "sinklogit")):(-$4):5 with yerrorlines lw 2 pt 7 lc rgb "#1f77b4" \
       title "zero option: sink logit − baseline", \
     a using (pair("sinklogit", "combo")):(-$4):5 with yerrorlines lw 2 pt 7 lc rgb "#ff7f0e" \
       title "filtering: combo − sink logit", \
     a using (pair("sinklogit", "combo2")):(-$4):5 with yerrorlines lw 2 pt 7 lc rgb "#9467bd" \
       title "filtering: combo2 − sink logit", \
     0 with lines dt 2 lc rgb "#888888" notitle

# (b), (c): rows (arm, tier, value).
arm_at(arm) = strcol(1) eq arm ? at(strcol(2)) : NaN
set title "(b) sink logit: mass on the phantom"
set ylabel "share of attention mass"
set yrange [0:1]
plot b using (arm_at("sinklogit")):3 with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "sink logit"

set title "(c) within-row spread of the gate"
set ylabel "attention-weighted sd of g within a row"
set yrange [0:0.3]
arms = "normgate combo projgate combo2"
array titles[4] = ["norm gate", "combo", "projection gate", "combo2"]
array colors[4] = ["#d62728", "#ff7f0e", "#2ca02c", "#9467bd"]
plot for [i = 1:4] c using (arm_at(word(arms, i))):3 with linespoints lw 2 pt 7 lc rgb colors[i] title titles[i]
unset multiplot
