"""Plays NCCL for the CPU test machine: writes the real 2xH200 NCCL log of this rank (recorded
on the GPU machine, tests/fixtures/h200x2-torch-allreduce) where NCCL would write it, honouring
NCCL_DEBUG / NCCL_DEBUG_FILE (%h, %p) and NCCL_TOPO_DUMP_FILE(_RANK), in a few chunks as NCCL
does while it runs. Usage under mpirun: replay_nccl.py (rank from OMPI_COMM_WORLD_RANK)."""
import os
import shutil
import socket
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "h200x2-torch-allreduce")
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
log = os.path.join(FIXTURES, ["nccl.vm.747.log", "nccl.vm.748.log"][rank % 2])

target = os.environ.get("NCCL_DEBUG_FILE")
if os.environ.get("NCCL_DEBUG") == "INFO" and target:
    path = target.replace("%h", socket.gethostname()).replace("%p", str(os.getpid()))
    with open(log) as src, open(path, "w") as out:
        lines = src.readlines()
        third = len(lines) // 3
        for chunk in (lines[:third], lines[third:2 * third], lines[2 * third:]):
            out.writelines(chunk)
            out.flush()
            time.sleep(0.3)
dump = os.environ.get("NCCL_TOPO_DUMP_FILE")
if dump and int(os.environ.get("NCCL_TOPO_DUMP_FILE_RANK", "0")) == rank:
    shutil.copy(os.path.join(FIXTURES, "topo.xml"), dump)
print(f"replayed rank {rank}")
