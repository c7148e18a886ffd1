// PMPI wrappers around the communicator constructors that are collective over their parent, so
// each new communicator gets an id of its own (comm_registry.h): without them a duplicate of
// MPI_COMM_WORLD would share the world's id and its collectives would be matched with the
// world's. MPI_Comm_idup is not wrapped (its handle is only usable after completion); its
// collectives fall back to the unsalted member hash.
#include "agent/inject/comm_registry.h"
#include "agent/inject/pmpi_common.h"
#include "agent/inject/record_sink.h"

namespace ri = rankscope::inject;

namespace {

// Runs the constructor, then registers its result when capture is on.
template <typename Construct>
int Made(MPI_Comm parent, MPI_Comm* out, Construct construct) {
  int rc = construct();
  if (rc == MPI_SUCCESS && out != nullptr && ri::Active()) ri::NoteCommCreated(parent, *out);
  return rc;
}

}  // namespace

extern "C" int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  return Made(comm, newcomm, [&] { return PMPI_Comm_dup(comm, newcomm); });
}

extern "C" int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) {
  return Made(comm, newcomm, [&] { return PMPI_Comm_dup_with_info(comm, info, newcomm); });
}

extern "C" int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  return Made(comm, newcomm, [&] { return PMPI_Comm_split(comm, color, key, newcomm); });
}

extern "C" int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                                   MPI_Comm* newcomm) {
  return Made(comm, newcomm,
              [&] { return PMPI_Comm_split_type(comm, split_type, key, info, newcomm); });
}

extern "C" int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  return Made(comm, newcomm, [&] { return PMPI_Comm_create(comm, group, newcomm); });
}

extern "C" int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) {
  int rc = PMPI_Comm_create_group(comm, group, tag, newcomm);
  if (rc == MPI_SUCCESS && newcomm != nullptr && ri::Active()) {
    ri::NoteCommCreatedFromGroup(comm, *newcomm, tag);
  }
  return rc;
}

extern "C" int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[],
                               int reorder, MPI_Comm* comm_cart) {
  return Made(comm, comm_cart,
              [&] { return PMPI_Cart_create(comm, ndims, dims, periods, reorder, comm_cart); });
}

extern "C" int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm* newcomm) {
  return Made(comm, newcomm, [&] { return PMPI_Cart_sub(comm, remain_dims, newcomm); });
}

extern "C" int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[],
                                int reorder, MPI_Comm* comm_graph) {
  return Made(comm, comm_graph,
              [&] { return PMPI_Graph_create(comm, nnodes, index, edges, reorder, comm_graph); });
}

extern "C" int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[],
                                              const int sourceweights[], int outdegree,
                                              const int destinations[], const int destweights[],
                                              MPI_Info info, int reorder,
                                              MPI_Comm* comm_dist_graph) {
  return Made(comm, comm_dist_graph, [&] {
    return PMPI_Dist_graph_create_adjacent(comm, indegree, sources, sourceweights, outdegree,
                                           destinations, destweights, info, reorder,
                                           comm_dist_graph);
  });
}

extern "C" int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm* newintracomm) {
  return Made(intercomm, newintracomm,
              [&] { return PMPI_Intercomm_merge(intercomm, high, newintracomm); });
}
