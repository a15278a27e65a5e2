#!/bin/sh
# launch.sh STYLE NRANKS PORT PROGRAM [ARGS...]
# Starts NRANKS copies of PROGRAM on this machine without dtcrun, each with
# the variables one launcher sets (STYLE), and MASTER_ADDR=127.0.0.1,
# MASTER_PORT=PORT (0: a free port of this machine):
#   env    RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE  (torchrun's names)
#   ompi   OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE (what mpirun sets)
#   slurm  SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE (srun)
# (mpirun and srun themselves are not installed here: this sets what they set.)
# Waits for every rank; exits 0 when all exit 0, else 1.
style=$1; n=$2; port=$3; shift 3
start_rank() {
  r=$1; shift
  case $style in
    env)   env RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n "$@" ;;
    ompi)  env OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=$n OMPI_COMM_WORLD_LOCAL_RANK=$r OMPI_COMM_WORLD_LOCAL_SIZE=$n "$@" ;;
    slurm) env SLURM_PROCID=$r SLURM_NTASKS=$n SLURM_LOCALID=$r SLURM_NTASKS_PER_NODE=$n "$@" ;;
  esac
}
case $style in env|ompi|slurm) ;; *) echo "launch.sh: unknown style $style" >&2; exit 2 ;; esac
if [ "$port" = 0 ]; then
  port=$(/usr/bin/python3 "$(dirname "$0")/../../Inputs/free_port.py") || exit 1
fi
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$port
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE SLURM_PROCID SLURM_NTASKS
pids=""
r=0
while [ "$r" -lt "$n" ]; do
  start_rank "$r" "$@" &
  pids="$pids $!"
  r=$((r + 1))
done
status=0
for pid in $pids; do
  wait "$pid" || status=1
done
exit $status
