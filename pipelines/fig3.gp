# pipelines/fig3.gp — Figure 3: task error against superposition load, one line per arm, error bars
# the standard error over seeds; left the channel-blind condition, right the routing-visible control.
#
#   gnuplot -e "data='runs/toy/fig3.tsv'; output='runs/toy/fig3.png'; summary='runs/toy/fig3-summary.tsv'; \
#               seed_names='0,1,2'" pipelines/fig3.gp
#
# data: `sg-tabulate … --rows condition,arm,load --cols seed --cell error --format tsv`, i.e. the
# columns condition, arm, load, then one column of task error per seed. summary (optional) receives
# the plotted numbers: condition, arm, load, mean, standard error, number of seeds; one line per arm
# present in data, and the legend names those arms only. seed_names (optional): for the caption.
# arms_caption (optional, any value): a caption line naming the arms (the beyond-the-paper figure,
# pipelines/toy.mk fig3-beyond).

if (!exists("data")) data = 'runs/toy/fig3.tsv'
if (!exists("output")) output = 'runs/toy/fig3.png'
here = ARG0[1:strlen(ARG0) - strlen('fig3.gp')]
load here . 'figures.gp'

set datafile separator "\t"
stats data using 3 nooutput
first = 4                      # the first seed column
seeds = STATS_columns - first + 1

mean(dummy) = sum [i=first:first+seeds-1] column(i) / seeds
sd(m) = seeds > 1 ? sqrt(sum [i=first:first+seeds-1] (column(i) - m)**2 / (seeds - 1)) : NaN
se(m) = sd(m) / sqrt(seeds)
pick(condition, arm) = (strcol(1) eq condition && strcol(2) eq arm)

# The arms present, in this order first (the paper's, then the gates beyond it, the oracle last);
# their titles and colours (figures.gp), a point type per arm of `order`.
order = "baseline offbyone normgate renorm oracle keygate outgate outgate-elem sinklogit+outgate"
legend_order = "baseline offbyone normgate renorm keygate outgate outgate-elem sinklogit+outgate oracle"
seen = " "
stats data using (collect(strcol(2))) nooutput
arms = ordered(legend_order, seen)
title_of(a) = a eq "renorm" ? "renorm (routing slot)" : arm_title(a)
array points[9] = [7, 5, 9, 13, 4, 11, 6, 12, 15]
point_of(a, j) = (i = place(a, 1), points[(i > 0 ? i - 1 : j - 1) % |points| + 1])
place(a, i) = i > words(order) ? 0 : word(order, i) eq a ? i : place(a, i + 1)
# The conditions present, blind first: one panel each (the quick profile's reduced grid has blind only).
seen = " "
stats data using (collect(strcol(1))) nooutput
conditions = ordered("blind visible", seen)
panels = words(conditions)

# The plotted numbers: one row per condition, arm and load (mean and standard error over seeds).
if (exists("summary")) {
  rows = ""
  do for [c in conditions] {
    do for [a in arms] {
      stats data using (pick(c, a) ? (m = mean(0), \
          emit(sprintf("%s\t%s\t%g\t%.6g\t%.6g\t%d", c, a, $3, m, se(m), seeds))) : 0) nooutput
    }
  }
  set print summary
  print "# condition\tarm\tload\tmean\tse\tseeds"
  if (strlen(rows) > 0) { print rows[1:strlen(rows) - 1] }
  unset print
}

set terminal pngcairo size (panels > 1 ? 1200 : 800),600 font "sans,11" noenhanced
set output output
set multiplot layout 1,panels margins (panels > 1 ? 0.07 : 0.11), 0.98, 0.3, 0.92 spacing 0.09, 0
set logscale x 2
set xrange [0.85:9.4]
set xtics (1, 2, 4, 8)
panel_title(c, p) = sprintf("(%s) ", p == 1 ? "a" : "b") . (c eq "blind" ? "channel-blind keys" : "routing-visible keys (control)")
set xlabel "superposition load N/d"
set ylabel "task error (per-label error rate)"
set yrange [0:*]
set grid ytics
# More than five arms (fig3-beyond): narrower columns, so that the legend keeps to three rows.
set key at graph 0, -0.17 left top horizontal maxcols 3 reverse Left samplen 2 width (words(arms) > 5 ? -3 : 1)
k = words(arms)
do for [p = 1:panels] {
  c = word(conditions, p)
  set title (panels > 1 ? panel_title(c, p) : panel_title(c, p)[5:*])
  if (p == panels) {
    set label 1 sprintf("Task error of the toy superposition task (sg-toy, App. D-E) on its fixed evaluation set:%smean ± SE over %d seed%s%s per arm, condition and load.\nThe points of one load are spread sideways so that they stay apart.%s", \
                        panels > 1 ? " " : "\n", seeds, seeds > 1 ? "s" : "", exists("seed_names") ? " (" . seed_names . ")" : "", \
                        exists("arms_caption") ? "\nBeyond the paper (docs/beyond.md): the key gate decides on each item's key, the output gate on the learned query." : "") \
        at screen 0.01, (panels > 1 ? (exists("arms_caption") ? 0.09 : 0.06) : 0.095) left front
    if (panels > 1) { set key off }
  }
  plot for [j = 1:k] data \
       using (pick(c, word(arms, j)) ? $3 * (1 + 0.02 * (j - (k + 1) / 2.0)) : NaN):(m = mean(0)):(se(m)) \
       with yerrorlines lw 2 pt point_of(word(arms, j), j) ps 1.2 lc rgb arm_color(word(arms, j), j) title title_of(word(arms, j))
}
unset multiplot
