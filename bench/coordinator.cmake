# Coordinator ingest (records/s through the real gRPC service) and analysis throughput.
add_executable(bench_coordinator ${CMAKE_CURRENT_LIST_DIR}/coordinator_bench.cc)
target_link_libraries(bench_coordinator PRIVATE benchmark::benchmark rankscope_coordinator rankscope_report rankscope_scale_sim
                      rankscope_warnings)

# Requests without the token against a running coordinator (bench/run_hostile_upload.sh).
add_executable(bench_hostile_upload ${CMAKE_CURRENT_LIST_DIR}/hostile_upload.cc)
target_link_libraries(bench_hostile_upload PRIVATE rankscope_rpc rankscope_warnings)
