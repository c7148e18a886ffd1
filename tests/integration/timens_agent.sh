#!/bin/sh
# Runs `rankscope agent -- PROGRAM...` and its rank inside a new time namespace whose
# CLOCK_MONOTONIC is ahead by 1000*rank+17 seconds: on one machine, every "host" gets a
# really different clock (TESTBED.md). Usage: timens_agent.sh RANKSCOPE PROGRAM ARGS...
rankscope=$1
shift
offset=$((1000 * ${OMPI_COMM_WORLD_RANK:-0} + 17))
exec unshare --time --monotonic "$offset" --fork -- "$rankscope" agent -- "$@"
