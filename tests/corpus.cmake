# Says whether the tests' corpus is there (cmake -DCORPUS=DIR -P corpus.cmake). Without it the tests
# that need it are disabled at configure time; this test is then reported as skipped with the reason.
if(EXISTS "${CORPUS}")
  message("the tests' corpus ${CORPUS} is present")
else()
  message("SKIPPED: the tests' corpus ${CORPUS} is missing, so the tests that need it did not run; "
          "install Debian's python3.11-doc (setup.sh does), or configure with -DSG_DEFAULT_CORPUS=DIR "
          "(a folder with a tutorial/ subfolder of text files)")
endif()
