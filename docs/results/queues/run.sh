#!/bin/sh
# Reproduces docs/results/queues.md: the default workload (250 TPC-H jobs
# on 100 machines, seed 1) spread over the leaves of fair-scheduler.xml,
# under DRF, Tetris and Carbyne, without and with preemption, and the same
# workload without queues for comparison; then a stress case for preemption.
set -e
cd "$(dirname "$0")/../../.."
make build >/dev/null
for args in "" "--queues docs/results/queues/fair-scheduler.xml" "--queues docs/results/queues/fair-scheduler.xml --preemption 15s"; do
	echo "== loom sim --policies drf,tetris,carbyne $args"
	bin/loom sim --policies drf,tetris,carbyne --quiet $args
	echo
done
# The stress case: load 2, 2-second timeouts (about 6 minutes each).
for args in "" "--preemption 2s"; do
	echo "== loom sim --policies drf,carbyne --load 2 --queues docs/results/queues/fair-scheduler-tight.xml $args"
	bin/loom sim --policies drf,carbyne --quiet --load 2 --queues docs/results/queues/fair-scheduler-tight.xml $args
	echo
done
