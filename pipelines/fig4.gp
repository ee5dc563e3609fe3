# pipelines/fig4.gp — Figure 4: incidence in pretrained models against their size. (a) The mass on
# the sink (the first four positions), (b) the blind-mass ratio at the 30th percentile (1: routing
# blind to read norms), (c) the share of content through the quiet band at the 30th percentile; one
# series per family present (GPT-2, Pythia, and with survey-modern Llama, Mistral, Qwen2, Qwen3,
# OLMo 2, gpt-oss).
#
#   gnuplot -e "data='runs/survey/fig4-models.tsv'; output='runs/survey/fig4.png'" pipelines/fig4.gp
#
# data: `sg-tabulate SURVEY.h5… --where scope=model --where statistic=sink_mass,blind_ratio_p30,content_share_p30
# --rows family,model,params_m --cols statistic --col-order sink_mass,blind_ratio_p30,content_share_p30
# --format tsv` (columns family, model, params_m, then the three statistics), one series per family
# present; text (optional): what was read, for the caption.

if (!exists("data")) data = 'runs/survey/fig4-models.tsv'
if (!exists("output")) output = 'runs/survey/fig4.png'
if (!exists("text")) text = ''
here = ARG0[1:strlen(ARG0) - strlen('fig4.gp')]
load here . 'figures.gp'

set datafile separator "\t"
# The families present (one series each), in this order first.
seen = " "
if (has_rows(data)) { stats data using (collect(strcol(1))) nooutput }
families = ordered("gpt2 gpt_neox llama mistral qwen2 qwen3 olmo2 gpt_oss sinkgate", seen)
family_title(f) = f eq "gpt2" ? "GPT-2" : f eq "gpt_neox" ? "Pythia" : f eq "llama" ? "Llama" : f eq "mistral" ? "Mistral" : \
                  f eq "qwen2" ? "Qwen2" : f eq "qwen3" ? "Qwen3" : f eq "olmo2" ? "OLMo 2" : f eq "gpt_oss" ? "gpt-oss" : f
array colors[9] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#d62728", "#17becf", "#e377c2", "#444444"]
array points[9] = [7, 5, 9, 13, 11, 15, 4, 6, 8]
family(f) = strcol(1) eq f ? $3 : NaN

set terminal pngcairo size 1500,560 font "sans,11" noenhanced
set output output
set multiplot layout 1,3 margins 0.06, 0.98, 0.33, 0.92 spacing 0.08, 0
set logscale x
set xlabel "parameters (millions)"
set grid
set key at graph 0, -0.19 left top horizontal reverse Left samplen 2 width 2
array titles[3] = ["(a) sink mass", "(b) blind-mass ratio @30", "(c) content share @30"]
array ylabels[3] = ["share of attention mass", "quiet-band mass / band size", "share of a_ij |v_j|"]
do for [p = 1:3] {
  set title titles[p]
  set ylabel ylabels[p]
  if (p == 3) {
    set label 1 "Pretrained models surveyed by sg-survey (App. F) on " . (strlen(text) > 0 ? text : "WikiText-2 validation text") . \
        "; one point per model, its summary over heads as in Table 12.\n" . \
        "(a) Attention mass on the first four positions; (b) mass on the quiet band (reads below the 30th percentile of norm) over the band's share of keys\n" . \
        "(1: routing blind to norms); (c) the share of content (a_ij |v_j|) through that band." \
        at screen 0.01, 0.1 left front
  }
  plot for [i = 1:words(families)] data using (family(word(families, i))):(column(3 + p)) \
       with linespoints lw 2 pt points[(i - 1) % 9 + 1] lc rgb colors[(i - 1) % 9 + 1] title family_title(word(families, i)), \
       NaN notitle
}
unset multiplot
