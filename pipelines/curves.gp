# pipelines/curves.gp — training and validation loss of a set of runs against the optimizer step,
# one row of panels per tier: left the training loss of each step's batch as a running mean over
# `window` steps, right the validation loss at the evaluation steps. The colour of a line is its arm,
# its line style (and point shape) its seed; the legend lists the arms and seeds present.
#
#   build/bin/sg-info --curves results/quick/runs/quick/*/*.h5 > results/quick/curves.tsv
#   gnuplot -e "data='results/quick/curves.tsv'; output='results/quick/curves.png'" pipelines/curves.gp
#
# data: `sg-info --curves` (columns run, tier, arm, seed, series, step, value); runs (optional): the
# runs to draw, as sg-info names them (tier/arm/seed), else every run in data; window: the running
# mean's length (default 20).

if (!exists("data")) data = 'results/quick/curves.tsv'
if (!exists("output")) output = 'results/quick/curves.png'
if (!exists("runs")) runs = ''
if (!exists("window")) window = 20
here = ARG0[1:strlen(ARG0) - strlen('curves.gp')]
load here . 'figures.gp'
set datafile separator "\t"

# What is drawn: the runs (all, or those of `runs`), and their tiers, arms and seeds, in the data's order.
drawn(run) = strlen(runs) == 0 || has(" " . runs . " ", run)
# A run is drawn as run|tier|arm|seed.
seen = " "
stats data using (drawn(strcol(1)) ? collect(strcol(1) . "|" . strcol(2) . "|" . strcol(3) . "|" . strcol(4)) : 0) nooutput
run_list = seen
field_step(r, k) = k == 1 ? r[1:strstrt(r, "|") - 1] : field_step(r[strstrt(r, "|") + 1:strlen(r)], k - 1)
field(r, k) = field_step(r . "|", k)
run_of(r) = field(r, 1)
tier_of(r) = field(r, 2)
arm_of(r) = field(r, 3)
seed_of(r) = field(r, 4)
seen = " "
stats data using (drawn(strcol(1)) ? collect(strcol(2)) : 0) nooutput
tier_list = seen
seen = " "
stats data using (drawn(strcol(1)) ? collect(strcol(3)) : 0) nooutput
arm_list = seen
seen = " "
stats data using (drawn(strcol(1)) ? collect(strcol(4)) : 0) nooutput
seed_list = seen
place(w, list, i) = i > words(list) ? 1 : word(list, i) eq w ? i : place(w, list, i + 1)
color_of(arm) = arm_color(arm, place(arm, arm_list, 1))
dash_of(seed) = (place(seed, seed_list, 1) - 1) % 5 + 1
array shapes[5] = [7, 5, 9, 13, 11]
shape_of(seed) = shapes[(place(seed, seed_list, 1) - 1) % 5 + 1]

pick(run, series) = (strcol(1) eq run && strcol(5) eq series) ? $6 : NaN
# The running mean restarts whenever the run or series changes (rows are grouped by both).
last = ""; n = 0; sum = 0
array ring[window]
mean_of(key, v) = (key ne last ? (last = key, n = 0, sum = 0) : 0, \
                   slot = n % window + 1, sum = sum - (n >= window ? ring[slot] : 0) + v, ring[slot] = v, \
                   n = n + 1, sum / (n < window ? n : window))

tiers_n = words(tier_list)
letters = "abcdefghijklmnopqrstuvwxyz"
arm_titles = ""
do for [a in arm_list] { arm_titles = arm_titles . (strlen(arm_titles) > 0 ? ", " : "") . arm_title(a) }
caption = sprintf("Left: training loss of each step's batch, as a running mean over %d steps; right: validation loss on the run's fixed validation batches at its evaluation steps; from the run files (sg-info --curves).\n", window) . \
          sprintf("Runs: tier%s %s; arms %s; seeds %s (%d runs). Colour: the arm; line style and point shape: the seed.", \
                  tiers_n > 1 ? "s" : "", prose(tier_list), arm_titles, prose(seed_list), words(run_list))

height = 130 + 470 * tiers_n
set terminal pngcairo size 1500, height font "sans,11" noenhanced
set output output
set multiplot layout tiers_n, 2 margins 0.06, 0.8, 145.0 / height, 1 - 40.0 / height spacing 0.07, 120.0 / height
set xlabel "optimizer step"
set ylabel "loss (nats)"
set grid
set key off
do for [t = 1:tiers_n] {
  tier = word(tier_list, t)
  # Both panels of a tier span its steps (a single evaluation would leave an empty range).
  stats data using (strcol(2) eq tier && drawn(strcol(1)) ? $6 : NaN) nooutput
  set xrange [0:STATS_max * 1.03]
  if (STATS_max < 10) { set xtics 1 } else { set xtics autofreq }
  set title sprintf("(%s) tier %s: training loss (running mean over %d steps)", letters[2 * t - 1:2 * t - 1], tier, window)
  plot for [i = 1:words(run_list)] data \
       using (tier_of(word(run_list, i)) eq tier ? pick(run_of(word(run_list, i)), "train_loss") : NaN):(mean_of(strcol(1) . strcol(5), $7)) \
       with lines lw 2 lc rgb color_of(arm_of(word(run_list, i))) dt dash_of(seed_of(word(run_list, i))) notitle

  set title sprintf("(%s) tier %s: validation loss", letters[2 * t:2 * t], tier)
  if (t == 1) {
    set key at screen 0.82, 1 - 40.0 / height left top vertical reverse Left samplen 3 title "arm (colour), seed (style)"
    set label 1 caption at screen 0.01, 45.0 / height left front
  }
  plot for [i = 1:words(run_list)] data \
       using (tier_of(word(run_list, i)) eq tier ? pick(run_of(word(run_list, i)), "val_loss") : NaN):7 \
       with linespoints lw 2 pt shape_of(seed_of(word(run_list, i))) lc rgb color_of(arm_of(word(run_list, i))) \
       dt dash_of(seed_of(word(run_list, i))) notitle, \
       for [a in arm_list] keyentry with lines lw 3 lc rgb color_of(a) title arm_title(a), \
       for [s in seed_list] keyentry with linespoints lw 2 pt shape_of(s) dt dash_of(s) lc rgb "#444444" title "seed " . s
  set key off
  unset label 1
}
unset multiplot
