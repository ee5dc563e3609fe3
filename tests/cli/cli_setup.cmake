# setup.sh's choice of torch and its driver check (./setup.sh --plan), without a GPU: a stub
# nvidia-smi reporting driver 550, 580 or none; another CUDA build; a second Python standing in
# for a cluster's torch. Needs the project's Python (SG_PYTHON), whose torch that Python reaches.
if(SG_PYTHON)
  add_test(NAME "setup: --plan names the torch it will use, checks the NVIDIA driver against it before any download, and accepts a cluster's torch"
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/setup_plan.py ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/setup-plan ${SG_PYTHON})
  set_tests_properties("setup: --plan names the torch it will use, checks the NVIDIA driver against it before any download, and accepts a cluster's torch"
    PROPERTIES PASS_REGULAR_EXPRESSION "ok: 0 failures")
endif()
