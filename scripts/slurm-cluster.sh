#!/usr/bin/env bash
# slurm-cluster.sh start|stop|status [DIR]: a real 4-node SLURM cluster (n1..n4) on this one
# machine, as ../shared/TESTBED.md describes: munge, one slurmctld and four slurmd (Debian's slurm
# 22.05 runs several slurmd per host), each slurmd in its own mount namespace so PMIx's per-step
# directory differs per node. For the srun/attach/sweep tests; run as root.
#   DIR (default /tmp/rankscope-slurm) holds slurm.conf, state, logs and pid files.
# Clients need `export SLURM_CONF=DIR/slurm.conf` (printed by start). MPI programs under srun
# across the "nodes" need OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo.
set -euo pipefail
cmd=${1:-status}
dir=${2:-/tmp/rankscope-slurm}
conf=$dir/slurm.conf
nodes=(n1 n2 n3 n4)

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

write_config() {
  mkdir -p "$dir/state" "$dir/pmixbase"
  for n in "${nodes[@]}"; do mkdir -p "$dir/pmix.$n" "$dir/slurmd.$n"; done
  cat > "$conf" <<CONF
ClusterName=rankscope
SlurmctldHost=localhost
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SlurmUser=root
SlurmdUser=root
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
SlurmctldPidFile=$dir/slurmctld.pid
StateSaveLocation=$dir/state
SlurmctldLogFile=$dir/slurmctld.log
SlurmdSpoolDir=$dir/slurmd.%n
SlurmdPidFile=$dir/slurmd.%n.pid
SlurmdLogFile=$dir/slurmd.%n.log
NodeName=n[1-4] NodeHostname=localhost Port=17001-17004 CPUs=4 State=UNKNOWN
PartitionName=debug Nodes=n[1-4] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  echo "PMIxCliTmpDirBase=$dir/pmixbase" > "$dir/mpi.conf"
}

munge_works() { munge -n 2> /dev/null | unmunge > /dev/null 2>&1; }

start_munge() {
  munge_works && return
  [ -f /etc/munge/munge.key ] || mungekey -c
  mkdir -p /run/munge
  munged --force 2> /dev/null || true
  for _ in $(seq 50); do munge_works && return; sleep 0.1; done
  echo "slurm-cluster.sh: munged does not answer (munge -n | unmunge fails)" >&2
  exit 1
}

# The nodes sinfo reports idle; 0 when slurmctld does not answer within 5 s.
idle_nodes() {
  timeout 5 sinfo -h -o '%D %t' 2> /dev/null | awk '$2 == "idle" {n += $1} END {print n + 0}'
}

case $cmd in
  start)
    export SLURM_CONF=$conf
    if running "$dir/slurmctld.pid" && [ "$(idle_nodes)" = 4 ]; then
      echo "export SLURM_CONF=$conf"
      exit 0
    fi
    write_config
    start_munge
    running "$dir/slurmctld.pid" || slurmctld -f "$conf"
    for n in "${nodes[@]}"; do
      running "$dir/slurmd.$n.pid" && continue
      unshare --mount --propagation private sh -c \
        "mount --bind '$dir/pmix.$n' '$dir/pmixbase' && exec slurmd -f '$conf' -N $n"
    done
    deadline=$((SECONDS + 60))
    while [ $SECONDS -lt $deadline ]; do
      if [ "$(idle_nodes)" = 4 ]; then
        echo "export SLURM_CONF=$conf"
        exit 0
      fi
      sleep 0.5
    done
    echo "slurm-cluster.sh: nodes did not become idle in 60 s:" >&2
    timeout 5 sinfo >&2 || true
    tail -n 20 "$dir"/*.log >&2 || true
    exit 1
    ;;
  stop)
    for pidfile in "$dir"/slurmd.n*.pid "$dir/slurmctld.pid"; do
      if running "$pidfile"; then kill "$(cat "$pidfile")"; fi
    done
    for pidfile in "$dir"/slurmd.n*.pid "$dir/slurmctld.pid"; do
      for _ in $(seq 50); do running "$pidfile" || break; sleep 0.1; done
      if running "$pidfile"; then kill -9 "$(cat "$pidfile")"; fi
    done
    ;;
  status)
    SLURM_CONF=$conf timeout 5 sinfo
    ;;
  *)
    echo "usage: slurm-cluster.sh start|stop|status [DIR]" >&2
    exit 2
    ;;
esac
