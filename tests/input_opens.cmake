# Checks that every module of lib/ opens the files it reads through open_input
# (lib/base/input_file.h), the one function that applies the rules for inputs (a regular file, at
# its size after the open; devices, folders, sockets and FIFOs refused by name; never blocking).
# A line of lib/ that opens a file another way -- std::ifstream, std::fstream, fopen, POSIX
# ::open, libhdf5's H5Fopen, a stream's .open( -- fails the check unless it says, in a comment
# "// opens: WHY", what it opens that is no input (a temporary of its own, a cache, /proc).
# Run as: cmake -DLIB=path/to/lib -P input_opens.cmake   (prints "input opens: ok", or fails naming each line)
cmake_minimum_required(VERSION 3.25)
set(problems "")
file(GLOB_RECURSE sources RELATIVE ${LIB} ${LIB}/*.h ${LIB}/*.cpp ${LIB}/*.cu ${LIB}/*.cuh)
foreach(source ${sources})
  if(source STREQUAL "base/input_file.cpp")
    continue()
  endif()
  # One list element per line: the characters CMake's lists treat specially are replaced first.
  file(READ ${LIB}/${source} content)
  string(REPLACE ";" "<semicolon>" content "${content}")
  string(REPLACE "[" "<" content "${content}")
  string(REPLACE "]" ">" content "${content}")
  string(REPLACE "\n" ";" lines "${content}")
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    string(REGEX REPLACE "^[ \t]*//.*" "" code "${line}")
    if(code MATCHES "std::i?fstream|(^|[^A-Za-z0-9_])fopen\\(|(^|[^A-Za-z0-9_>:])::open\\(|(^|[ \t(=!])open\\([^)]*O_|H5Fopen\\(|\\.open\\("
       AND NOT line MATCHES "// opens: ")
      list(APPEND problems "lib/${source}:${number}: ${line}")
    endif()
  endforeach()
endforeach()
if(problems)
  list(JOIN problems "\n" text)
  string(REPLACE "<semicolon>" ";" text "${text}")
  message(FATAL_ERROR "a module opens a file other than through open_input (lib/base/input_file.h); "
                      "route it there, or say what it opens in a comment '// opens: WHY':\n${text}")
endif()
list(LENGTH sources count)
message("input opens: ok (${count} files)")
