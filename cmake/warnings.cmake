# rankscope_warnings: strict warnings for rankscope's own targets (not third-party code).
add_library(rankscope_warnings INTERFACE)
target_compile_options(rankscope_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wnon-virtual-dtor -Wcast-align -Wunused -Wimplicit-fallthrough)
if(RANKSCOPE_WERROR)
  target_compile_options(rankscope_warnings INTERFACE -Werror)
endif()

if(RANKSCOPE_SANITIZE)
  # GCC 12 reports -Wmaybe-uninitialized false positives inside libstdc++ (std::regex,
  # std::function) when ASan instruments them; the non-sanitizer build keeps the warning.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(rankscope_warnings INTERFACE -Wno-maybe-uninitialized)
  endif()
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# rankscope_add_test(NAME SOURCES... LIBS ... [LABEL unit|integration]): a GoogleTest binary
# registered with CTest. "integration" tests start other processes (mpirun, preloading our
# library into programs not built with sanitizers), so the sanitizer pass (-L unit) skips them.
function(rankscope_add_test name)
  cmake_parse_arguments(ARG "" "LABEL" "SOURCES;LIBS" ${ARGN})
  if(NOT ARG_LABEL)
    set(ARG_LABEL unit)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gmock GTest::gtest_main
                        rankscope_warnings)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS ${ARG_LABEL})
endfunction()
