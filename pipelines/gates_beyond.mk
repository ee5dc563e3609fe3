# pipelines/gates_beyond.mk — beyond the paper: does the blind-spot principle apply to gates on the
# query and key side of attention (the paper's third open question)? Section 7 argues that Qiu et
# al.'s output gate, decided per query, can supply abstention, and that a gate that does not decide
# on the read it multiplies cannot filter it. This target trains the arms that ask the question with
# paired seeds and prints the answer's tables (docs/beyond.md):
#
#   make -f Makefile.experiments -j2 gates-beyond                       # quick profile, CPU, about 15 min
#   make -f Makefile.experiments -j4 gates-beyond GATES_BEYOND_PROFILE=paper TIERS=124M DEVICE=cuda
#
#   (a) Table 1-style paired improvements over the baseline, and Table 2-style 2x2 decompositions of
#       the sink logit with the output gate (sinklogit+outgate) and with the projection gate (combo2);
#   (b) the sink analysis (sg-probe --probe sinks) of every arm;
#   (c) the injection battery (Table 6-style), with the key gate's own direction on the keys;
#   (d) each arm's parameters per layer (Table 4-style, from sg-arms);
#   (e) how close the reads (projection gate) and the keys (key gate) come to the gate's learned
#       direction (sg-probe --probe direction, at DIRECTION_TIER);
#   (f) the extended Figure 3: the toy task with the key gate and the output gate (pipelines/toy.mk
#       fig3-beyond; at the quick profile the channel-blind condition at loads 2 and 8, the question
#       of filtering; GATES_BEYOND_TOY for other grids, GATES_BEYOND_TOY=none to leave it out).
#
# Variables: GATES_BEYOND_ARMS, GATES_BEYOND_PROFILE (quick), GATES_BEYOND_TOY, GATES_BEYOND_OUT (results/PROFILE/gates-beyond,
# or OUT when given); the profile's usual variables (TIERS, SEEDS, TOKENS, DEVICE, ...) pass through.
# Included by Makefile.experiments.

GATES_BEYOND_ARMS    ?= baseline sinklogit projgate combo2 outgate sinklogit+outgate keygate
GATES_BEYOND_PROFILE ?= quick
GATES_BEYOND_OUT     ?= $(if $(filter command line environment,$(origin OUT)),$(OUT),results/$(GATES_BEYOND_PROFILE))/gates-beyond
GATES_BEYOND_ORDER   := baseline,sinklogit,projgate,combo2,outgate,sinklogit+outgate,outgate-elem,sinklogit+outgate-elem,keygate,sinklogit+keygate
# The toy grid's variables for fig3-beyond (pipelines/toy.mk), or none.
GATES_BEYOND_TOY     ?= $(if $(filter quick,$(GATES_BEYOND_PROFILE)),TOY_BEYOND_CONDITIONS=blind 'TOY_BEYOND_LOADS=2 8')
GATES_BEYOND_TOY_FILES = $(GATES_BEYOND_OUT)/toy/beyond/fig3-beyond.png $(GATES_BEYOND_OUT)/toy/beyond/fig3-beyond-claims.md
GATES_BEYOND_LABELS  := --label 'outgate=output gate' --label 'sinklogit+outgate=sink logit + output gate' \
  --label 'outgate-elem=output gate (element-wise)' --label 'keygate=key gate' --label 'sinklogit+keygate=sink logit + key gate'

.PHONY: gates-beyond gates-beyond-tables

gates-beyond:
	$(MAKE) -f $(SG_MAKEFILE) PROFILE=$(GATES_BEYOND_PROFILE) $(if $(filter quick,$(GATES_BEYOND_PROFILE)),THREADS=1) \
	  OUT=$(GATES_BEYOND_OUT) 'ARMS=$(GATES_BEYOND_ARMS)' 'ARM_ORDER=$(GATES_BEYOND_ORDER)' \
	  "ARM_LABELS=$(ARM_LABELS) $(GATES_BEYOND_LABELS)" $(if $(filter none,$(GATES_BEYOND_TOY)),,$(GATES_BEYOND_TOY)) \
	  gates-beyond-tables $(if $(filter none,$(GATES_BEYOND_TOY)),,$(GATES_BEYOND_TOY_FILES))
	@echo; echo "## Beyond the paper: gates on the query and key side ($(GATES_BEYOND_PROFILE) profile; docs/beyond.md)"
	@echo; echo "### Parameters per layer (Table 4-style)"; echo
	@cat $(GATES_BEYOND_OUT)/gates-beyond-arms.md
	@echo; echo "### (a) Paired improvements (Table 1-style; negative is better)"; echo
	@cat $(GATES_BEYOND_OUT)/table1.md
	@echo; echo "### (a) Two-by-two decompositions with the sink logit (Table 2-style; positive is better)"; echo
	@cat $(GATES_BEYOND_OUT)/gates-beyond-table2.md
	@echo; echo "### (b) Sink analysis (seed $(PROBE_SEED))"; echo
	@cat $(GATES_BEYOND_OUT)/gates-beyond-sinks.md
	@echo; echo "### (c) Injected junk (Table 6-style: increase in validation loss, seed $(INJECT_SEED))"; echo
	@cat $(GATES_BEYOND_OUT)/table6.md
	@echo; echo "Own direction: defined for the projection gate (junk on the reads along w_h) and the key gate"
	@echo "(junk on the keys along w_h, the quantity it decides on); not defined for the output gate, which"
	@echo "decides on the query, nor for arms without a gate: their rows for it are absent by definition."
	@echo; echo "### (e) The reads (projection gate) and keys (key gate) against the gate's direction (seed $(PROBE_SEED))"; echo
	@cat $(GATES_BEYOND_OUT)/direction.md
	$(if $(filter none,$(GATES_BEYOND_TOY)),,@echo; echo "### (f) The toy task with these gates (extended Figure 3: $(GATES_BEYOND_OUT)/toy/beyond/fig3-beyond.png)"; echo; \
	  cat $(GATES_BEYOND_OUT)/toy/beyond/fig3-beyond-claims.md)

gates-beyond-tables: $(OUT)/gates-beyond-arms.md $(OUT)/table1.md $(OUT)/gates-beyond-table2.md \
  $(OUT)/gates-beyond-sinks.md $(OUT)/table6.md $(OUT)/direction.md

# The sink analysis with the output gate's abstention: its mean value and the share of query rows it
# closes (below 0.1), beside the masses on position 0 and on the phantom.
$(OUT)/gates-beyond-sinks.md: $(OUT)/sinks.h5
	$(BIN)/sg-tabulate $< --where probe=sinks --where layer=all --where head=all --rows arm --cols statistic --cell value \
	  --decimals 3 --where statistic=position0_mass,phantom_mass,r0_ratio,output_gate_mean,output_gate_closed \
	  --col-order position0_mass,phantom_mass,r0_ratio,output_gate_mean,output_gate_closed \
	  --label 'statistic:position0_mass=mass on position 0' --label 'statistic:phantom_mass=mass on the phantom' \
	  --label 'statistic:r0_ratio=position-0 norm ratio' --label 'statistic:output_gate_mean=output gate, mean' \
	  --label 'statistic:output_gate_closed=rows the output gate closes (< 0.1)' \
	  --order arm=$(ARM_ORDER) $(ARM_LABELS) --header arm=Arm -o $@.tmp --force && mv $@.tmp $@

# Table 4-style: each arm's zero option, filter, output gate and parameters per layer, at every tier run.
$(OUT)/gates-beyond-arms.md:
	@mkdir -p $(@D)
	{ echo "| Tier | Arm | Zero option | Filter | Output gate | Params per layer |"; echo "| --- | --- | --- | --- | --- | ---: |"; \
	  for tier in $(TIERS); do $(BIN)/sg-arms --tier $$tier --arms $(subst $(space),$(comma),$(strip $(ALL_ARMS))) \
	    | awk -F '\t' -v tier=$$tier 'NR > 1 { printf "| %s | %s | %s | %s | %s | %s |\n", tier, $$1, $$2, $$3, $$4, $$5 }'; \
	  done; } > $@.tmp && mv $@.tmp $@

# The 2x2 decompositions: the sink logit with each gate whose combined arm was trained.
$(OUT)/gates-beyond-table2.md: $(OUT)/val.h5
	rm -f $(OUT)/gates-beyond-table2-*.h5
	$(if $(filter sinklogit,$(ALL_ARMS)),$(if $(filter combo2,$(ALL_ARMS)),$(if $(filter projgate,$(ALL_ARMS)),\
	  $(BIN)/sg-pairdiff $< --decompose --sink sinklogit --gate projgate --both combo2 --log-level quiet \
	    -o $(OUT)/gates-beyond-table2-projection.h5 --force)))
	$(if $(filter sinklogit,$(ALL_ARMS)),$(if $(filter sinklogit+outgate,$(ALL_ARMS)),$(if $(filter outgate,$(ALL_ARMS)),\
	  $(BIN)/sg-pairdiff $< --decompose --sink sinklogit --gate outgate --both sinklogit+outgate --log-level quiet \
	    -o $(OUT)/gates-beyond-table2-output.h5 --force)))
	if ls $(OUT)/gates-beyond-table2-*.h5 >/dev/null 2>&1; then \
	  $(BIN)/sg-tabulate $(OUT)/gates-beyond-table2-*.h5 --rows gate_arm,tier --cols term --se none \
	    --order term=sink,gate,both,overlap,filter --col-order sink,gate,both,overlap,filter \
	    --order gate_arm=projgate,outgate --label gate_arm:projgate=projection --label gate_arm:outgate=output \
	    --header gate_arm=Gate --header tier=Tier -o $@.tmp --force; \
	else \
	  echo "No decomposition: it needs sinklogit with projgate and combo2, or with outgate and sinklogit+outgate." > $@.tmp; \
	fi && mv $@.tmp $@
