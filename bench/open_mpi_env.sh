# Sourced by the bench scripts that start MPI jobs: Open MPI on the test bed, TCP over loopback
# (see shared/TESTBED.md; override from outside), and MPIRUN, the launcher with its flags.
# With more ranks than cores (mpi_train -np 4 on a 2-core box) Open MPI notices the
# oversubscription and makes waiting ranks yield instead of busy-polling; bench_mpi -np 2 polls.
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,tcp}
export OMPI_MCA_btl_tcp_if_include=${OMPI_MCA_btl_tcp_if_include:-lo}
MPIRUN=(mpirun --oversubscribe)
if [[ $(id -u) == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  MPIRUN+=(--allow-run-as-root)
fi
