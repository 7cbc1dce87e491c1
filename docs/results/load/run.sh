#!/bin/sh
# The RM under 1,000 to 10,000 NodeManagers (issue 19): `loom bench load`
# at each size, asynchronous scheduling, the RM in a process of its own
# (--rm-process: its CPU and memory apart from the generator's), then
# 10,000 NMs beside a competing CPU load, then 10,000 NMs with the RM in the
# generator's process for comparison, then 10,000 NMs with heartbeats only,
# then 1,000 to 10,000 NMs with one tracker connection each (as real NMs).
# Run from the repository root on a quiet machine; each run's table
# (<nodes>.txt), second-by-second CSV (<nodes>.csv) and figure
# (load-<nodes>.svg) go beside this script. About 7 minutes on 2 cores.
set -e
out=docs/results/load
go build -o /tmp/loom-load ./cmd/loom
loom=/tmp/loom-load
for n in 1000 2000 5000 10000; do
	$loom bench load --nodes $n --nm-conns 100 --apps $((n / 5)) --tasks $((n * 20)) --async 10ms --rm-process --quiet \
		--series $out/$n.csv --plot $out > $out/$n.txt
done
# A missed latency target is printed, not an error; a lost task or app is.
$loom bench load --nodes 10000 --nm-conns 100 --apps 2000 --tasks 200000 --async 10ms --rm-process --cpu-load 1 --quiet \
	--series $out/10000-cpu-load.csv > $out/10000-cpu-load.txt
$loom bench load --nodes 10000 --nm-conns 100 --apps 2000 --tasks 200000 --async 10ms --quiet \
	--series $out/10000-one-process.csv > $out/10000-one-process.txt
# The same 10,000 NMs heartbeating for 20 s with almost nothing to
# allocate (10 apps of 2 long tasks): the heartbeat path alone, with the
# machine's cores to spare.
$loom bench load --nodes 10000 --nm-conns 100 --apps 10 --tasks 20 --task-ms 15000 --async 10ms --rm-process --quiet \
	--series $out/10000-heartbeats-only.csv > $out/10000-heartbeats-only.txt
# One tracker connection per NM (--nm-conns 0), as real NodeManagers
# connect: the RM holds N connections more.
for n in 1000 2000 5000 10000; do
	$loom bench load --nodes $n --nm-conns 0 --apps $((n / 5)) --tasks $((n * 20)) --async 10ms --rm-process --quiet \
		> $out/conns-$n.txt
done
