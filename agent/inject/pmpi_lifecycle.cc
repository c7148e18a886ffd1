// PMPI wrappers around MPI's lifetime: describe MPI_COMM_WORLD right after MPI_Init (so the
// first collective pays nothing extra), send everything before MPI_Finalize, and forget a
// communicator before MPI frees its handle.
#include "agent/inject/comm_registry.h"
#include "agent/inject/pmpi_common.h"
#include "agent/inject/record_sink.h"

namespace ri = rankscope::inject;

extern "C" int MPI_Init(int* argc, char*** argv) {
  int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS && ri::Active()) ri::LookupComm(ri::WorldComm());
  return rc;
}

extern "C" int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS && ri::Active()) ri::LookupComm(ri::WorldComm());
  return rc;
}

extern "C" int MPI_Finalize(void) {
  // Many MPI programs end with _exit-like paths or are killed by the launcher right after
  // MPI_Finalize returns on every rank; this is the last point known to be reached.
  ri::FlushAll();
  return PMPI_Finalize();
}

extern "C" int MPI_Comm_free(MPI_Comm* comm) {
  if (ri::Active() && comm != nullptr) ri::ForgetComm(*comm);
  return PMPI_Comm_free(comm);
}
