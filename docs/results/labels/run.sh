#!/bin/sh
# Node labels in the simulator (issue 18). Run from the repository root;
# each command's output goes beside this script.
set -e
out=docs/results/labels
go build -o /tmp/loom-labels ./cmd/loom
loom=/tmp/loom-labels
$loom sim --queues $out/capacity-scheduler.xml --policies drf,carbyne --quiet > $out/no-labels.txt
$loom sim --queues $out/capacity-scheduler.xml --node-labels 'gpu(exclusive=false)' --labelled-machines gpu=30 \
	--policies drf,carbyne --quiet > $out/labels.txt
