# pipelines/figures.gp — what the figure scripts share: each arm's name and colour (the same in every
# figure), the values a data column takes, and a figure's data written out as a clean TSV.
# Not a figure itself; fig1.gp, fig2.gp, fig3.gp, fig5.gp and curves.gp load it from their folder:
#
#   here = ARG0[1:strlen(ARG0) - strlen('fig2.gp')]; load here . 'figures.gp'
#
# The rules every figure follows: a legend names only the series that have points in the figure's
# data; no key sits inside a plot area; a caption line under the figure says what was measured, on
# which runs and seeds, at which tier; a log axis draws a value it cannot show at a floor, with its
# own marker, and the caption counts them.

# Display names and colours, one per arm (none pale: every colour reads on white).
# The gates beyond the paper (docs/beyond.md) have names and colours of their own too.
arm_title(a) = a eq "offbyone" ? "off-by-one" : a eq "sinktoken" ? "sink token" : a eq "sinklogit" ? "sink logit" : \
               a eq "renorm" ? "renorm twin" : a eq "normgate" ? "norm gate" : a eq "projgate" ? "projection gate" : \
               a eq "keygate" ? "key gate" : a eq "outgate" ? "output gate" : \
               a eq "outgate-elem" ? "output gate (element-wise)" : a eq "sinklogit+outgate" ? "sink logit + output gate" : a
array other_colors[5] = ["#393b79", "#8c6d31", "#843c39", "#7b4173", "#637939"]
arm_color(a, i) = a eq "baseline" ? "#444444" : a eq "offbyone" ? "#8c564b" : a eq "sinktoken" ? "#17becf" : \
                  a eq "sinklogit" ? "#1f77b4" : a eq "renorm" ? "#e377c2" : a eq "normgate" ? "#d62728" : \
                  a eq "projgate" ? "#2ca02c" : a eq "combo" ? "#ff7f0e" : a eq "combo2" ? "#9467bd" : \
                  a eq "keygate" ? "#8c6d31" : a eq "outgate" ? "#393b79" : a eq "outgate-elem" ? "#637939" : \
                  a eq "sinklogit+outgate" ? "#17a2b8" : \
                  a eq "oracle" ? "#000000" : other_colors[(i - 1) % 5 + 1]

# Word lists are strings with a space before and after every word (" a b "), so that
# has(list, w) is a plain substring test.
has(list, w) = strstrt(list, " " . w . " ") > 0
# The values a column takes, in order of first appearance: reset `seen`, then
#   seen = " "; stats FILE using (collect(strcol(2))) nooutput
seen = " "
collect(s) = (has(seen, s) ? 0 : (seen = seen . s . " "), 0)
# The words of `order` that are in `present`, once each, in the order of `order`; ordered(): then
# the other words of `present`, in their own order.
order_step(order, present, i, acc) = i > words(order) ? acc : \
    order_step(order, present, i + 1, has(present, word(order, i)) && !has(acc, word(order, i)) ? acc . word(order, i) . " " : acc)
common(order, present) = order_step(order, present, 1, " ")
ordered(order, present) = order_step(present, present, 1, common(order, present))
# A list as prose: "a, b, c".
prose_step(list, i, acc) = i > words(list) ? acc : prose_step(list, i + 1, acc . (i > 1 ? ", " : "") . word(list, i))
prose(list) = prose_step(list, 1, "")

# Whether a data file has a row that is not a comment (gnuplot warns on an empty file).
has_rows(file) = int(system("grep -c -v '^#' '" . file . "' || true")) > 0

# A figure's data, one row per point drawn: call emit(...) from a `stats … using` pass for each
# row, then write `header` and `rows` with `set print FILE; print header; print rows[1:strlen(rows) - 1]`.
# (gnuplot's own `set table` puts a space before every field.)
rows = ""
emit(line) = (rows = rows . line . "\n", 0)
