// The inject library is preloaded into programs that may not use MPI at all (a CUDA program
// traced through NVTX only). It does not link libmpi, so every MPI symbol it references is
// declared weak here: in a program without MPI they resolve to null instead of failing the load
// (which would happen under LD_BIND_NOW or for data symbols), and the MPI wrappers that use them
// are never called there. Include this instead of, or after, <mpi.h>.
#pragma once

#include <mpi.h>

// Every PMPI function the wrappers and the communicator registry call.
#pragma weak PMPI_Allgather
#pragma weak PMPI_Allgatherv
#pragma weak PMPI_Allreduce
#pragma weak PMPI_Alltoall
#pragma weak PMPI_Alltoallv
#pragma weak PMPI_Alltoallw
#pragma weak PMPI_Barrier
#pragma weak PMPI_Bcast
#pragma weak PMPI_Bsend
#pragma weak PMPI_Cart_create
#pragma weak PMPI_Cart_sub
#pragma weak PMPI_Cartdim_get
#pragma weak PMPI_Comm_create
#pragma weak PMPI_Comm_create_group
#pragma weak PMPI_Comm_dup
#pragma weak PMPI_Comm_dup_with_info
#pragma weak PMPI_Comm_free
#pragma weak PMPI_Comm_group
#pragma weak PMPI_Comm_rank
#pragma weak PMPI_Comm_remote_group
#pragma weak PMPI_Comm_size
#pragma weak PMPI_Comm_split
#pragma weak PMPI_Comm_split_type
#pragma weak PMPI_Comm_test_inter
#pragma weak PMPI_Dist_graph_create_adjacent
#pragma weak PMPI_Dist_graph_neighbors_count
#pragma weak PMPI_Exscan
#pragma weak PMPI_File_read
#pragma weak PMPI_File_read_all
#pragma weak PMPI_File_read_at
#pragma weak PMPI_File_read_at_all
#pragma weak PMPI_File_write
#pragma weak PMPI_File_write_all
#pragma weak PMPI_File_write_at
#pragma weak PMPI_File_write_at_all
#pragma weak PMPI_Finalize
#pragma weak PMPI_Finalized
#pragma weak PMPI_Gather
#pragma weak PMPI_Gatherv
#pragma weak PMPI_Get_count
#pragma weak PMPI_Graph_create
#pragma weak PMPI_Graph_neighbors_count
#pragma weak PMPI_Group_free
#pragma weak PMPI_Group_size
#pragma weak PMPI_Group_translate_ranks
#pragma weak PMPI_Iallgather
#pragma weak PMPI_Iallgatherv
#pragma weak PMPI_Iallreduce
#pragma weak PMPI_Ialltoall
#pragma weak PMPI_Ialltoallv
#pragma weak PMPI_Ialltoallw
#pragma weak PMPI_Ibarrier
#pragma weak PMPI_Ibcast
#pragma weak PMPI_Ibsend
#pragma weak PMPI_Iexscan
#pragma weak PMPI_Igather
#pragma weak PMPI_Igatherv
#pragma weak PMPI_Improbe
#pragma weak PMPI_Imrecv
#pragma weak PMPI_Ineighbor_allgather
#pragma weak PMPI_Ineighbor_allgatherv
#pragma weak PMPI_Ineighbor_alltoall
#pragma weak PMPI_Ineighbor_alltoallv
#pragma weak PMPI_Ineighbor_alltoallw
#pragma weak PMPI_Init
#pragma weak PMPI_Init_thread
#pragma weak PMPI_Initialized
#pragma weak PMPI_Intercomm_merge
#pragma weak PMPI_Iprobe
#pragma weak PMPI_Irecv
#pragma weak PMPI_Ireduce
#pragma weak PMPI_Ireduce_scatter
#pragma weak PMPI_Ireduce_scatter_block
#pragma weak PMPI_Irsend
#pragma weak PMPI_Iscan
#pragma weak PMPI_Iscatter
#pragma weak PMPI_Iscatterv
#pragma weak PMPI_Isend
#pragma weak PMPI_Issend
#pragma weak PMPI_Mprobe
#pragma weak PMPI_Mrecv
#pragma weak PMPI_Neighbor_allgather
#pragma weak PMPI_Neighbor_allgatherv
#pragma weak PMPI_Neighbor_alltoall
#pragma weak PMPI_Neighbor_alltoallv
#pragma weak PMPI_Neighbor_alltoallw
#pragma weak PMPI_Probe
#pragma weak PMPI_Recv
#pragma weak PMPI_Reduce
#pragma weak PMPI_Reduce_scatter
#pragma weak PMPI_Reduce_scatter_block
#pragma weak PMPI_Request_free
#pragma weak PMPI_Rsend
#pragma weak PMPI_Scan
#pragma weak PMPI_Scatter
#pragma weak PMPI_Scatterv
#pragma weak PMPI_Send
#pragma weak PMPI_Sendrecv
#pragma weak PMPI_Sendrecv_replace
#pragma weak PMPI_Ssend
#pragma weak PMPI_Start
#pragma weak PMPI_Startall
#pragma weak PMPI_Test
#pragma weak PMPI_Testall
#pragma weak PMPI_Testany
#pragma weak PMPI_Testsome
#pragma weak PMPI_Topo_test
#pragma weak PMPI_Type_size
#pragma weak PMPI_Wait
#pragma weak PMPI_Waitall
#pragma weak PMPI_Waitany
#pragma weak PMPI_Waitsome
#pragma weak PMPI_Win_complete
#pragma weak PMPI_Win_fence
#pragma weak PMPI_Win_flush
#pragma weak PMPI_Win_flush_all
#pragma weak PMPI_Win_flush_local
#pragma weak PMPI_Win_flush_local_all
#pragma weak PMPI_Win_lock
#pragma weak PMPI_Win_lock_all
#pragma weak PMPI_Win_post
#pragma weak PMPI_Win_start
#pragma weak PMPI_Win_unlock
#pragma weak PMPI_Win_unlock_all
#pragma weak PMPI_Win_wait

// Open MPI's predefined handles (MPI_COMM_WORLD, MPI_BYTE, ...) are addresses of these objects;
// as data they are bound at load time even under lazy binding.
#if defined(OPEN_MPI)
#pragma weak ompi_mpi_byte
#pragma weak ompi_mpi_comm_null
#pragma weak ompi_mpi_comm_world
#pragma weak ompi_mpi_datatype_null
#pragma weak ompi_mpi_group_null
#pragma weak ompi_message_no_proc
#pragma weak ompi_message_null
#pragma weak ompi_request_null
#endif
