# Coordinator ingest (records/s through the real gRPC service) and analysis throughput.
add_executable(bench_coordinator ${CMAKE_CURRENT_LIST_DIR}/coordinator_bench.cc)
target_link_libraries(bench_coordinator PRIVATE benchmark::benchmark rankscope_coordinator rankscope_report rankscope_scale_sim
                      rankscope_warnings)
