# pipelines/curves.gp — training and validation loss of a set of runs against the optimizer step,
# one line per run: (a) the training loss of each step's batch (light) and its running mean over
# `window` steps, (b) the validation loss at the evaluation steps.
#
#   build/bin/sg-info --curves results/quick/runs/quick/*/*.h5 > results/quick/curves.tsv
#   gnuplot -e "data='results/quick/curves.tsv'; output='results/quick/curves.png'; \
#               runs='quick/baseline/0 quick/combo2/0'" pipelines/curves.gp
#
# data: `sg-info --curves` (columns run, tier, arm, seed, series, step, value); runs: the runs to
# draw, as sg-info names them (tier/arm/seed); window: the running mean's length (default 20).

if (!exists("data")) data = 'results/quick/curves.tsv'
if (!exists("output")) output = 'results/quick/curves.png'
if (!exists("runs")) runs = ''
if (!exists("window")) window = 20

set datafile separator "\t"
set terminal pngcairo size 1400,520 font "sans,11"
set output output
set multiplot layout 1,2
set xlabel "optimizer step"
set ylabel "loss (nats)"
set grid
set key top right noenhanced
pick(run, series) = (strcol(1) eq run && strcol(5) eq series) ? $6 : NaN

set title sprintf("(a) training loss (running mean over %d steps)", window)
# The running mean restarts whenever the run or series changes (rows are grouped by both).
last = ""; n = 0; sum = 0
array ring[window]
mean_of(key, v) = (key ne last ? (last = key, n = 0, sum = 0) : 0, \
                   slot = n % window + 1, sum = sum - (n >= window ? ring[slot] : 0) + v, ring[slot] = v, \
                   n = n + 1, sum / (n < window ? n : window))
plot for [i = 1:words(runs)] data using (pick(word(runs, i), "train_loss")):(mean_of(strcol(1).strcol(5), $7)) \
     with lines lw 2 lc i title word(runs, i)

set title "(b) validation loss"
plot for [i = 1:words(runs)] data using (pick(word(runs, i), "val_loss")):7 with linespoints lw 2 pt 7 lc i \
     title word(runs, i)
unset multiplot
