# Overhead of librankscope_inject.so on the programs it is loaded into.
#   bench_nvtx      NVTX push/pop and mark cost (Google Benchmark)
#   bench_mpi       MPI_Allreduce(1 int) cost; run under `mpirun -np 2`, rank 0 reports
#   bench_ipc_sink  stand-in for the agent's socket end (drains + decodes inject batches)
# bench/run_inject_overhead.sh runs them without and with the library and prints the table.
add_executable(bench_nvtx ${CMAKE_CURRENT_LIST_DIR}/nvtx_bench.cc)
target_link_libraries(bench_nvtx PRIVATE benchmark::benchmark rankscope_nvtx3 rankscope_warnings
                      ${CMAKE_DL_LIBS})

add_executable(bench_mpi ${CMAKE_CURRENT_LIST_DIR}/mpi_bench.cc)
target_compile_definitions(bench_mpi PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
target_link_libraries(bench_mpi PRIVATE benchmark::benchmark MPI::MPI_C rankscope_warnings)

add_executable(bench_ipc_sink ${CMAKE_CURRENT_LIST_DIR}/ipc_sink.cc)
target_link_libraries(bench_ipc_sink PRIVATE rankscope_core rankscope_warnings)
