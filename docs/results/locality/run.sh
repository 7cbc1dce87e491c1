#!/bin/sh
# Input locality in the simulator (issue 18). Run from the repository root;
# each command's output goes beside this script.
set -e
out=docs/results/locality
go build -o /tmp/loom-locality ./cmd/loom
loom=/tmp/loom-locality
$loom sim --policies drf,carbyne --quiet > $out/none.txt
$loom sim --locality --no-locality-preferences --policies drf,carbyne --quiet > $out/no-preferences.txt
$loom sim --locality --policies drf,carbyne --quiet > $out/locality.txt
$loom sim --locality --locality-delay-node 3s --locality-delay-rack 3s --policies drf,carbyne --quiet > $out/locality-3s.txt
