# Data-parallel sg-train launched the way PyTorch users launch: torchrun (from the project's virtual
# environment, where the torch wheel puts it) with two CPU processes over Gloo, on the tokens of
# cli_sg-tokenize.cmake's fixture. (The numbers — equal to one process, bitwise equal across ranks,
# resume, lost ranks — are checked in tests/train/test_distributed.cpp.)
if(SG_PYTHON AND TARGET sg-train)
  get_filename_component(SG_VENV_BIN ${SG_PYTHON} DIRECTORY)
  if(EXISTS ${SG_VENV_BIN}/torchrun)
    add_test(NAME "cli: torchrun --no-python --nproc-per-node 2 sg-train trains one run on two ranks"
             COMMAND ${SG_VENV_BIN}/torchrun --standalone --no-python --nproc-per-node 2 $<TARGET_FILE:sg-train>
                     --tokens ${SG_CLI_DATA}/tokens.h5 --tier tiny --set iterations=4 --set warmup=1 --set eval_interval=2
                     --set eval_batches=1 --set final_eval_batches=2 --set micro_batch=2 --set accumulation=2 --threads 1
                     -o ${SG_CLI_DATA}/torchrun.h5 --force)
    set_tests_properties("cli: torchrun --no-python --nproc-per-node 2 sg-train trains one run on two ranks" PROPERTIES
                         FIXTURES_REQUIRED sg_tokens TIMEOUT 300
                         PASS_REGULAR_EXPRESSION "2 ranks \\(torchrun\\).*the 2 ranks hold the same weights after step 4.*finished at step 4")
  endif()
endif()
