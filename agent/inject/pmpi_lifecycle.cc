// PMPI wrappers around MPI's lifetime: describe MPI_COMM_WORLD right after MPI_Init (so the
// first collective pays nothing extra), send everything before MPI_Finalize, and forget a
// communicator before MPI frees its handle.
#include "agent/inject/comm_registry.h"
#include "agent/inject/pmpi_common.h"
#include "agent/inject/record_sink.h"

namespace ri = rankscope::inject;

namespace {

// Runs MPI_Init or MPI_Init_thread, records it (the blame model's first event of the rank:
// record_sink.h) and describes MPI_COMM_WORLD.
template <typename Init>
int Initialized(Init init) {
  if (!ri::Active()) return init();
  rankscope::MpiCallRecord r;
  r.call = rankscope::MpiCall::kInit;
  r.tid = ri::ThreadId();
  r.enter = rankscope::inject::FastNow();
  const int rc = init();
  r.exit = rankscope::inject::FastNow();
  if (rc == MPI_SUCCESS) {
    ri::EmitMpiCall(r);
    ri::LookupComm(ri::WorldComm());
  }
  return rc;
}

}  // namespace

extern "C" int MPI_Init(int* argc, char*** argv) {
  return Initialized([&] { return PMPI_Init(argc, argv); });
}

extern "C" int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  return Initialized([&] { return PMPI_Init_thread(argc, argv, required, provided); });
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
