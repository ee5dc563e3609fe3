# pipelines/fig2.gp — Figure 2: the increase in validation loss under injected junk against the dose.
# One panel per tier of `tiers` with structured junk at the 25th-percentile cutoff, one line per arm;
# then a random fixed direction (dashed) against the projection gate's own direction (solid), median
# cutoff, at `ctier`.
#
#   gnuplot -e "ab='results/paper/fig2-ab.tsv'; c='results/paper/fig2-c.tsv'; output='results/paper/fig2.png'; \
#               tiers='124M 350M'; ctier='124M'; seed='0'" pipelines/fig2.gp
#
# ab: `sg-tabulate … --rows tier,arm,dose --cell delta_loss --format tsv` (columns tier, arm, dose,
# delta_loss); c: the same with junk in place of tier; seed: the run of each arm that was measured;
# paper=1: the numbers are the paper's (the caption says so).
#
# The y axis is logarithmic and starts at `bottom` (5e-4 nats). A change below it (zero or less: the
# junk did not raise the loss) is drawn on the dotted floor line as an open triangle in its arm's
# colour, and the caption counts them. `data` (default: `output` with .tsv for .png) receives the
# figure's numbers, one row per point: panel, tier, junk, cutoff, arm, dose, delta_loss, y (where it
# is drawn), marker (point, or floor: drawn on the floor line); the figure is drawn from that file.

if (!exists("ab")) ab = 'results/paper/fig2-ab.tsv'
if (!exists("c")) c = 'results/paper/fig2-c.tsv'
if (!exists("output")) output = 'results/paper/fig2.png'
if (!exists("data")) data = output[1:strlen(output) - 4] . '.tsv'
if (!exists("tiers")) tiers = '124M 350M'
if (!exists("ctier")) ctier = '124M'
if (!exists("seed")) seed = '0'
if (!exists("bottom")) bottom = 5e-4
if (!exists("paper")) paper = 0
here = ARG0[1:strlen(ARG0) - strlen('fig2.gp')]
load here . 'figures.gp'
set datafile separator "\t"
letters = "abcdefghijklmnopqrstuvwxyz"

# The figure's numbers: one panel per tier of `tiers` present in ab, then the direction panel.
seen = " "
if (has_rows(ab)) { stats ab using (collect(strcol(1))) nooutput }
panel_tiers = common(" " . tiers . " ", seen)
n = words(panel_tiers)
panels = n + 1
cpanel = letters[panels:panels]
point(panel, tier, junk, cutoff, arm, dose, delta) = emit(sprintf("%s\t%s\t%s\t%s\t%s\t%g\t%.9g\t%.9g\t%s", \
    panel, tier, junk, cutoff, arm, dose, delta, delta >= bottom ? delta : bottom, delta >= bottom ? "point" : "floor"))
# Rows are written series by series (an arm; in the direction panel a junk type and arm), each in
# the order of its input.
do for [p = 1:n] {
  tier = word(panel_tiers, p)
  seen = " "
  stats ab using (strcol(1) eq tier ? collect(strcol(2)) : 0) nooutput
  do for [arm in seen] {
    stats ab using (strcol(1) eq tier && strcol(2) eq arm ? point(letters[p:p], tier, "structured", "q25", arm, $3, $4) : 0) nooutput
  }
}
if (has_rows(c)) {
  seen = " "
  stats c using (collect(strcol(1) . ":" . strcol(2))) nooutput
  do for [s in seen] {
    stats c using (strcol(1) . ":" . strcol(2) eq s ? point(cpanel, ctier, strcol(1), "median", strcol(2), $3, $4) : 0) nooutput
  }
}
set print data
print "# panel\ttier\tjunk\tcutoff\tarm\tdose\tdelta_loss\ty\tmarker"
if (strlen(rows) > 0) { print rows[1:strlen(rows) - 1] }
unset print

# From here on everything is read back from `data`. Series: an arm (tier panels) or arm:junk (the
# direction panel), in the order of the data; every arm keeps its colour from panel to panel.
total = 0; floored = 0; nonpositive = 0; ytop = 20
count(v, m) = (total = total + 1, floored = floored + (m eq "floor"), nonpositive = nonpositive + (v <= 0), 0)
seen = " "
if (strlen(rows) > 0) {
  stats data using (count($7, strcol(9)) + collect(strcol(5))) nooutput
  stats data using 8 nooutput
  ytop = STATS_max > 10 ? 2 * STATS_max : 20
}
all_arms = seen
array series[panels]
array floored_in[panels]
do for [p = 1:panels] {
  seen = " "; floored_in[p] = 0
  if (strlen(rows) > 0) {
    stats data using (strcol(1) eq letters[p:p] ? \
        collect(strcol(5) . (p == panels ? ":" . strcol(3) : "")) + (floored_in[p] = floored_in[p] + (strcol(9) eq "floor"), 0) \
        : 0) nooutput
  }
  series[p] = seen
}
arm_of(s) = strstrt(s, ":") > 0 ? s[1:strstrt(s, ":") - 1] : s
junk_of(s) = strstrt(s, ":") > 0 ? s[strstrt(s, ":") + 1:strlen(s)] : "structured"
in_series(panel, s) = strcol(1) eq panel && strcol(5) eq arm_of(s) && strcol(3) eq junk_of(s)
series_title(s) = arm_title(arm_of(s)) . (junk_of(s) eq "own-direction" ? ", own direction" : \
                                          junk_of(s) eq "random-direction" ? ", random direction" : "")
place(a, i) = i > words(all_arms) ? 1 : word(all_arms, i) eq a ? i : place(a, i + 1)
# Series i of k sits a little left or right of its dose, so that points on the floor stay apart.
nudge(dose, i, k) = dose * (1 + 0.025 * (i - (k + 1) / 2.0))
dash_of(s) = junk_of(s) eq "random-direction" ? 2 : 1
color_of(s) = arm_color(arm_of(s), place(arm_of(s), 1))

both = " " . panel_tiers . " " . ctier . " "
caption_tiers = ordered(both, both)
caption = (paper ? "The paper's own numbers (pipelines/paper_injection.csv): the increase in validation loss under injected junk.\n" \
                 : "The increase in validation loss when junk is injected into each head's quietest reads, before any gate (sg-inject).\n") . \
          sprintf("Runs: the seed-%s run of each arm; tier%s %s.\n", seed, words(caption_tiers) > 1 ? "s" : "", prose(caption_tiers)) . \
          (floored > 0 ? sprintf("▽ on the dotted line: %d of the %d points are below %g nats (%d of them zero or less: the junk did not raise the loss), drawn at the floor of the axis.", \
                                 floored, total, bottom, nonpositive) \
                       : sprintf("All %d points lie above the floor of the axis (%g nats).", total, bottom))

set terminal pngcairo size (panels > 2 ? 520 * panels : 1300), 760 font "sans,11" noenhanced
set output output
set multiplot layout 1, panels margins 0.08 * 2 / (panels > 2 ? panels : 2), 0.98, 0.36, 0.94 spacing 0.2 / (panels > 2 ? panels : 2), 0
set logscale xy
set xrange [0.17:1.9]
set xtics (0.2, 0.4, 0.8, 1.6)
set xlabel "dose ε"
set ylabel "Δ validation loss (nats)"
set yrange [bottom / 1.6:ytop]
set key at graph 0, -0.14 left top vertical maxcols 1 reverse Left samplen 2.5
set grid
do for [p = 1:panels] {
  panel = letters[p:p]
  if (p < panels) {
    set title sprintf("(%s) structured junk, q25 cutoff, tier %s", panel, word(panel_tiers, p))
  } else {
    set title sprintf("(%s) random vs own gate direction, median cutoff, tier %s", panel, ctier)
    set label 1 caption at screen 0.01, 0.075 left front
  }
  k = words(series[p])
  plot for [i = 1:k] data using (in_series(panel, word(series[p], i)) && strcol(9) eq "point" ? nudge($6, i, k) : NaN):8 \
         with linespoints lw 2 pt 7 lc rgb color_of(word(series[p], i)) dt dash_of(word(series[p], i)) \
         title series_title(word(series[p], i)), \
       for [i = 1:k] data using (in_series(panel, word(series[p], i)) && strcol(9) eq "floor" ? nudge($6, i, k) : NaN):8 \
         with points pt 10 ps 1.6 lw 1.5 lc rgb color_of(word(series[p], i)) notitle, \
       bottom with lines dt 3 lc rgb "#888888" notitle, \
       keyentry with points pt 10 ps 1.6 lw 1.5 lc rgb "#444444" \
         title (floored_in[p] > 0 ? sprintf("Δ below %g nats, drawn on the floor (%d)", bottom, floored_in[p]) : "")
}
unset multiplot
