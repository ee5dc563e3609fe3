# pipelines/gpu.mk — one GPU per job. Included by Makefile.experiments and pipelines/survey.mk.
#
# With DEVICE=cuda and no LAUNCH, every job that uses the device (training, evaluation, injection,
# probes, zero-shot scoring, the survey) runs under pipelines/gpu_slot.sh, which gives it GPUs of
# its own for its whole life: one, or NPROC for a torchrun training job. `make -j N` with more
# jobs than GPUs then waits for a free one instead of stacking jobs on GPU 0.
#   GPUS       the GPUs to share out (default: CUDA_VISIBLE_DEVICES when set, else every GPU that
#              `nvidia-smi -L` lists), e.g. GPUS=0,1,2,3
#   GPU_SLOTS  the folder of their lock files (default ${TMPDIR:-/tmp}/sinkgate-gpu-slots-UID,
#              on the node's own disk: every make of this user on this node shares them)
# DEVICE=cuda:N pins every job to GPU N and assigns nothing; with LAUNCH (srun …) the scheduler
# allocates the GPUs and make assigns nothing either.

SG_GPU_ROOT := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
GPU_SLOTTED := $(if $(filter cuda,$(DEVICE)),$(if $(strip $(LAUNCH)),,yes))
ifeq ($(GPU_SLOTTED),yes)
  ifndef GPUS
    GPUS := $(or $(CUDA_VISIBLE_DEVICES),$(shell nvidia-smi -L 2>/dev/null | sed -n 's/^GPU \([0-9][0-9]*\):.*/\1/p' | paste -sd, -))
  endif
endif
ifndef GPU_SLOTS
  GPU_SLOTS := $(or $(TMPDIR),/tmp)/sinkgate-gpu-slots-$(shell id -u)
endif
# gpu_job COUNT: the prefix of a job that needs COUNT GPUs at once (LAUNCH's, or a slot's).
gpu_job = $(strip $(LAUNCH) $(if $(GPU_SLOTTED),$(SG_GPU_ROOT)/gpu_slot.sh --gpus '$(GPUS)' --count $(1) --slots '$(GPU_SLOTS)' --))
DEVICE_LAUNCH = $(call gpu_job,1)
