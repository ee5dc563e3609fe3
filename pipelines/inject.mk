# pipelines/inject.mk — Tables 6, 7, 9 and Figure 2 of "Abstention and Noise Filtering: Two Missing
# Primitives of Softmax Attention" (Section 6, App. C): the injection battery and exposure accounting
# on the seed-0 run of every arm.
#
#   make -f Makefile.experiments -j4 table6 table7 table9 fig2 DEVICE=cuda TOKENS=data/fineweb.h5
#   make -f Makefile.experiments PROFILE=quick table6 table9     # the quick CPU tier (the main job prints them)
#   make -f Makefile.experiments table7-vs-paper                  # ours beside the paper's numbers
#
# One sg-inject call per run: $(OUT)/inject/TIER/ARM/SEED.h5, every junk type of INJECT_JUNK_TIER at
# both cutoffs and the four doses, and the exposure pass. Own-direction junk is asked for only where
# the arm has a projection gate. The tables show every condition computed (Tables 6 and 7 print a
# subset of the (junk, cutoff) pairs: the tables here are a superset of the paper's).
#
# Variables: INJECT_SEED (0), INJECT_DOSES, INJECT_CUTOFFS, INJECT_JUNK_TIER, INJECT_CONTEXT_TIER
# (0: min(512, the model's context); 1024 at 350M as in the paper), INJECT_FLAGS (e.g. --batches 2),
# TABLE6_TIERS, TABLE7_TIERS, TABLE9_TIERS, FIG2_TIERS (panels a, b), FIG2C_TIER (panel c).
# Included by Makefile.experiments (it uses its OUT, BIN, TIERS, arms_of, DEVICE, THREADS, LAUNCH).

INJECT_SEED    ?= 0
INJECT_DOSES   ?= 0.2,0.4,0.8,1.6
INJECT_CUTOFFS ?= q25,median
INJECT_FLAGS   ?=
INJECT_JUNK_10M   ?= structured gaussian
INJECT_JUNK_50M   ?= structured same-context gaussian random-direction own-direction
INJECT_JUNK_124M  ?= structured same-context gaussian random-direction own-direction
INJECT_JUNK_350M  ?= structured
INJECT_JUNK_quick ?= structured same-context gaussian random-direction own-direction
INJECT_JUNK_default ?= structured gaussian
INJECT_CONTEXT_350M ?= 1024
ifeq ($(PROFILE),quick)
  TABLE6_TIERS ?= $(TIERS)
  TABLE7_TIERS ?= $(TIERS)
  TABLE9_TIERS ?= $(TIERS)
  FIG2_TIERS   ?= $(TIERS) $(TIERS)
  FIG2C_TIER   ?= $(firstword $(TIERS))
else
  TABLE6_TIERS ?= 10M 50M
  TABLE7_TIERS ?= 124M 350M
  TABLE9_TIERS ?= 124M 50M
  FIG2_TIERS   ?= 124M 350M
  FIG2C_TIER   ?= 124M
endif

INJECT_PIPELINES := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
# The per-run injection tables of some tiers (the seed-0 run of every arm trained there).
inject_files = $(foreach t,$(1),$(foreach a,$(call arms_of,$(t)),$(OUT)/inject/$(t)/$(a)/$(INJECT_SEED).h5))
# The junk types of tier $(1) for arm $(2): own-direction only with a projection gate.
inject_junk = $(subst $(space),$(comma),$(strip $(if $(filter projgate combo2 %+projgate,$(2)),$(or $(INJECT_JUNK_$(1)),$(INJECT_JUNK_default)),$(filter-out own-direction,$(or $(INJECT_JUNK_$(1)),$(INJECT_JUNK_default))))))

JUNK_ORDER  := structured,same-context,gaussian,random-direction,own-direction
JUNK_LABELS := --label 'junk:structured=structured (other context)' --label 'junk:same-context=structured (same context)' \
               --label junk:gaussian=Gaussian --label 'junk:random-direction=random direction' \
               --label 'junk:own-direction=own gate direction'
INJECT_TABLE_FLAGS := --where measure=injection --where layer=all --rows tier,junk,cutoff,arm --cols dose \
  --cell delta_loss --signed --decimals 3 --order junk=$(JUNK_ORDER) --order cutoff=q25,median \
  --row-order $(ARM_ORDER) --order tier=$(TIER_ORDER) $(JUNK_LABELS) $(ARM_LABELS) --label 'dose:*=ε = *' \
  --header tier=Tier --header 'junk=Junk type' --header cutoff=Cutoff --header arm=Arm

.PHONY: injections table6 table7 table9 fig2 fig2-paper table6-vs-paper table7-vs-paper table9-vs-paper

injections: $(call inject_files,$(sort $(TABLE6_TIERS) $(TABLE7_TIERS) $(TABLE9_TIERS)))

$(OUT)/inject/%.h5: $(OUT)/runs/%.h5 | $(TOKENS)
	@mkdir -p $(@D)
	$(LAUNCH) $(BIN)/sg-inject --tokens $(TOKENS) $< --junk $(call inject_junk,$(call tier_of,$*),$(call arm_of,$*)) \
	  --cutoff $(INJECT_CUTOFFS) --dose $(INJECT_DOSES) --context $(or $(INJECT_CONTEXT_$(call tier_of,$*)),0) \
	  --device $(DEVICE) --threads $(THREADS) $(INJECT_FLAGS) -o $@ --force

# One table of all the runs of a table's tiers (pipe it into sg-tabulate for other layouts).
$(OUT)/table6.h5: $(call inject_files,$(TABLE6_TIERS))
	$(BIN)/sg-tabulate $^ --format h5 -o $@ --force
$(OUT)/table7.h5: $(call inject_files,$(TABLE7_TIERS))
	$(BIN)/sg-tabulate $^ --format h5 -o $@ --force
$(OUT)/table9.h5: $(call inject_files,$(TABLE9_TIERS))
	$(BIN)/sg-tabulate $^ --format h5 -o $@ --force

# Tables 6 and 7: the increase in validation loss (nats) per tier, junk type (cutoff), arm and dose.
table6: $(OUT)/table6.md
table7: $(OUT)/table7.md
$(OUT)/table6.md $(OUT)/table7.md: $(OUT)/%.md: $(OUT)/%.h5
	$(BIN)/sg-tabulate $< $(INJECT_TABLE_FLAGS) -o $@.tmp --force && mv $@.tmp $@

# Table 9: exposure — the mean share of a row's attention mass on quiet reads, and on the phantom.
table9: $(OUT)/table9.md
$(OUT)/table9.md: $(OUT)/table9.h5
	$(BIN)/sg-tabulate $< --where measure=exposure --where layer=all --rows arm --cols tier,cutoff --cell quiet_mass \
	  --decimals 3 --row-order $(ARM_ORDER) --order tier=$(subst $(space),$(comma),$(TABLE9_TIERS)) \
	  --order cutoff=median,q25 --label 'cutoff:median=quiet (med)' --label 'cutoff:q25=quiet (q25)' $(ARM_LABELS) \
	  --header arm=Arm -o $@.quiet --force
	$(BIN)/sg-tabulate $< --where measure=exposure --where layer=all --where cutoff=median --rows arm --cols tier \
	  --cell phantom_mass --decimals 3 --row-order $(ARM_ORDER) --order tier=$(subst $(space),$(comma),$(TABLE9_TIERS)) \
	  --missing – $(ARM_LABELS) --header arm=Arm -o $@.phantom --force
	{ echo "Share of each attention row's mass on quiet reads (below the per-head median or 25th percentile norm):"; \
	  echo; cat $@.quiet; echo; echo "Share on the phantom (the sink token for the sink-token arm; – without one):"; \
	  echo; cat $@.phantom; } > $@.tmp && rm -f $@.quiet $@.phantom && mv $@.tmp $@

# Ours beside the paper's (pipelines/paper_injection.csv, paper_exposure.csv: Tables 6, 7 and 9).
table6-vs-paper table7-vs-paper: %-vs-paper: $(OUT)/%.h5
	$(BIN)/sg-tabulate $< $(INJECT_PIPELINES)/paper_injection.csv --source-key source \
	  --where tier=$(subst $(space),$(comma),$(if $(filter table6,$*),$(TABLE6_TIERS),$(TABLE7_TIERS))) \
	  $(subst --rows tier$(comma)junk$(comma)cutoff$(comma)arm,--rows tier$(comma)junk$(comma)cutoff$(comma)arm$(comma)source,$(INJECT_TABLE_FLAGS)) \
	  --label source:$*=sinkgate -o $(OUT)/$@.md --force
	@cat $(OUT)/$@.md
table9-vs-paper: $(OUT)/table9.h5
	$(BIN)/sg-tabulate $< $(INJECT_PIPELINES)/paper_exposure.csv --source-key source \
	  --where tier=$(subst $(space),$(comma),$(TABLE9_TIERS)) --where measure=exposure --where layer=all \
	  --rows arm,source --cols tier,cutoff --cell quiet_mass --decimals 3 --row-order $(ARM_ORDER) \
	  --label source:table9=sinkgate $(ARM_LABELS) -o $(OUT)/$@.md --force
	@cat $(OUT)/$@.md

# Figure 2: (a, b) delta_loss against dose, structured junk at the q25 cutoff, per arm, at the two
# FIG2_TIERS; (c) a random fixed direction against the gate's own direction at FIG2C_TIER.
fig2: $(OUT)/fig2.png
$(OUT)/fig2-ab.tsv: $(call inject_files,$(sort $(FIG2_TIERS)))
	$(BIN)/sg-tabulate $^ --where measure=injection --where junk=structured --where cutoff=q25 \
	  --rows tier,arm,dose --cell delta_loss --format tsv -o $@ --force
$(OUT)/fig2-c.tsv: $(call inject_files,$(FIG2C_TIER))
	$(BIN)/sg-tabulate $^ --where measure=injection --where junk=random-direction,own-direction --where cutoff=median \
	  --rows junk,arm,dose --cell delta_loss --format tsv -o $@ --force
$(OUT)/fig2.png: $(OUT)/fig2-ab.tsv $(OUT)/fig2-c.tsv $(INJECT_PIPELINES)/fig2.gp
	gnuplot -e "ab='$(OUT)/fig2-ab.tsv'; c='$(OUT)/fig2-c.tsv'; output='$@'; tiers='$(FIG2_TIERS)'; ctier='$(FIG2C_TIER)'" \
	  $(INJECT_PIPELINES)/fig2.gp

# The same figure from the paper's own numbers (pipelines/paper_injection.csv), to set beside ours.
fig2-paper: $(OUT)/fig2-paper.png
$(OUT)/fig2-paper.png: $(INJECT_PIPELINES)/paper_injection.csv $(INJECT_PIPELINES)/fig2.gp
	@mkdir -p $(@D)
	$(BIN)/sg-tabulate $< --where junk=structured --where cutoff=q25 --rows tier,arm,dose --cell delta_loss \
	  --format tsv -o $(OUT)/fig2-paper-ab.tsv --force
	$(BIN)/sg-tabulate $< --where tier=124M --where junk=random-direction,own-direction --where cutoff=median \
	  --rows junk,arm,dose --cell delta_loss --format tsv -o $(OUT)/fig2-paper-c.tsv --force
	gnuplot -e "ab='$(OUT)/fig2-paper-ab.tsv'; c='$(OUT)/fig2-paper-c.tsv'; output='$@'; tiers='124M 350M'; ctier='124M'" \
	  $(INJECT_PIPELINES)/fig2.gp
