# pipelines/direction.gp — how close natural reads come to the projection gate's learned direction
# (sg-probe --probe direction; the limitation the paper's Section 7 leaves unmeasured). One panel per
# arm with a projection gate: the distribution of cos(v_j, w_h) over every read v_j of the probe's
# validation batches, pooled over the heads of each layer (one line a layer) and of the model (black).
#
#   gnuplot -e "input='results/quick/direction-hist.tsv'; output='results/quick/direction.png'; \
#               tier='quick'; seed='0'; arms='projgate combo2'" pipelines/direction.gp
#
# input: `sg-tabulate … --where probe=direction --where head=all --rows arm,layer,statistic --cell value
# --format tsv` (columns arm, layer, statistic, value); the rows cos_hist_KK (the share of the reads
# with cos in [-1 + KK/20, -1 + (KK+1)/20)) are drawn, share_cos_above_T of layer all is quoted in the
# caption. `data` (default: `output` with .tsv for .png) receives the points drawn: arm, layer, bin
# centre, density (share / bin width), one block a series.

if (!exists("input")) input = 'results/paper/direction-hist.tsv'
if (!exists("output")) output = 'results/paper/direction.png'
if (!exists("data")) data = output[1:strlen(output) - 4] . '.tsv'
if (!exists("tier")) tier = '124M'
if (!exists("seed")) seed = '0'
if (!exists("arms")) arms = 'projgate combo2'
here = ARG0[1:strlen(ARG0) - strlen('direction.gp')]
load here . 'figures.gp'
set datafile separator "\t"
letters = "abcdefghijklmnopqrstuvwxyz"
width = 0.05
is_bin(s) = strlen(s) > 9 && s[1:9] eq "cos_hist_"
# The bin of cos_hist_KK (two digits, read one at a time: gnuplot reads "08" as a bad octal number).
centre(s) = -1 + (10 * s[10:10] + s[11:11] + 0.5) * width

# The panels: the arms with rows, in the order of `arms`; each arm's layers, in the order of the data.
seen = " "
if (has_rows(input)) { stats input using (collect(strcol(1))) nooutput }
panel_arms = ordered(" " . arms . " ", seen)
panels = words(panel_arms)
# The figure's points, one block per series (arm:layer), blocks apart by two blank lines.
series = " "
blocks = ""
do for [a in panel_arms] {
  seen = " "
  stats input using (strcol(1) eq a && is_bin(strcol(3)) ? collect(strcol(2)) : 0) nooutput
  layers = ordered(seen, seen)
  do for [l in layers] {
    rows = ""
    stats input using (strcol(1) eq a && strcol(2) eq l && is_bin(strcol(3)) ? \
        emit(sprintf("%s\t%s\t%.3f\t%.9g", a, l, centre(strcol(3)), $4 / width)) : 0) nooutput
    blocks = blocks . rows . "\n\n"
    series = series . a . ":" . l . " "
  }
}
set print data
print "# arm\tlayer\tcos\tdensity"
if (strlen(blocks) > 0) { print blocks[1:strlen(blocks) - 2] }
unset print
position(s, i) = i > words(series) ? -1 : word(series, i) eq s ? i - 1 : position(s, i + 1)

# The caption's numbers: the share of every read (layer all) above each threshold, per arm.
shares = ""
do for [a in panel_arms] {
  s5 = NaN; s8 = NaN; s9 = NaN
  stats input using (strcol(1) eq a && strcol(2) eq "all" ? \
      (strcol(3) eq "share_cos_above_0.5" ? s5 = $4 : strcol(3) eq "share_cos_above_0.8" ? s8 = $4 : \
       strcol(3) eq "share_cos_above_0.9" ? s9 = $4 : 0, 0) : 0) nooutput
  shares = shares . sprintf("%s%s: %.3g%% above 0.5, %.3g%% above 0.8, %.3g%% above 0.9", \
                            strlen(shares) > 0 ? "; " : "", arm_title(a), 100 * s5, 100 * s8, 100 * s9)
}
caption = sprintf("The cosine between each read v_j (every position of the probe's validation batches, before the gate) and its head's gate direction w_h (sg-probe --probe direction),\npooled over the heads of each layer (one line a layer) and of the model (black); the seed-%s run of each arm, tier %s. Dashed: cos = 0.5, 0.8, 0.9.\nThe model's reads above them: %s.%s", \
                  seed, tier, shares, panels == 0 ? "\nNo arm with a projection gate was probed." : "")

set terminal pngcairo size (panels > 2 ? 650 * panels : 1300), 640 font "sans,11" noenhanced
set output output
set multiplot layout 1, (panels > 0 ? panels : 1) margins 0.07, 0.98, 0.3, 0.93 spacing 0.06, 0
set xrange [-1:1]
set xlabel "cos(v_j, w_h)"
set ylabel "density of reads"
set grid
set key at graph 0, -0.16 left top horizontal reverse Left samplen 2
set arrow 1 from 0.5, graph 0 to 0.5, graph 1 nohead dt 2 lc rgb "#888888"
set arrow 2 from 0.8, graph 0 to 0.8, graph 1 nohead dt 2 lc rgb "#888888"
set arrow 3 from 0.9, graph 0 to 0.9, graph 1 nohead dt 2 lc rgb "#888888"
array layer_colors[8] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
series_color(l) = l eq "all" ? "#000000" : layer_colors[int(l) % 8 + 1]
set label 1 caption at screen 0.01, 0.09 left front
if (panels == 0) {
  set title "no arm with a projection gate"
  set yrange [0:1]
  plot NaN notitle
}
do for [p = 1:panels] {
  a = word(panel_arms, p)
  set title sprintf("(%s) %s, tier %s", letters[p:p], arm_title(a), tier)
  mine = " "
  do for [s in series] { if (strstrt(s, a . ":") == 1) { mine = mine . s[strlen(a) + 2:strlen(s)] . " " } }
  plot for [l in mine] data index position(a . ":" . l, 1) using 3:4 with histeps \
       lw (l eq "all" ? 2.5 : 1.5) lc rgb series_color(l) title (l eq "all" ? "every layer" : "layer " . l)
  unset label 1
}
unset multiplot
