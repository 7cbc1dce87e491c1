#!/bin/sh
# Regenerates every figure of docs/results/altruism.md (issue 15): the
# comparison tables, the frontiers and their plots, the load sweep. Run from
# the repository root after `make build`; about 40 minutes on 2 cores.
set -eu
out=docs/results/altruism
loom=${LOOM:-bin/loom}
run() { what=$1; shift; echo "== $what: loom sim $*"; "$loom" sim --quiet "$@" > "$out/$what.txt"; }

# Carbyne against every baseline (the paper's Table 3), online at load 1 and
# batch, on TPC-H, TPC-DS, their mix and the heavy-tailed mix.
run tpch          --catalogue tpch:100g,250g
run tpcds         --catalogue tpcds
run mix           --catalogue tpch:100g,250g+tpcds
run heavytail     --catalogue heavytail
run tpch-batch    --catalogue tpch:100g,250g --arrivals batch
run tpcds-batch   --catalogue tpcds --arrivals batch
run mix-batch     --catalogue tpch:100g,250g+tpcds --arrivals batch
run tpcds-load1.5 --catalogue tpcds --load 1.5
run tpcds-load2   --catalogue tpcds --load 2
run tpcds-load4   --catalogue tpcds --load 4
run tpcds-cpf     --catalogue tpcds --policies drf,carbyne --critical-path-first

# The performance-fairness frontier of every policy's knobs.
for w in tpch:tpch:100g,250g tpcds:tpcds mix:tpch:100g,250g+tpcds; do
	name=${w%%:*}; cat=${w#*:}
	run "frontier-$name" --catalogue "$cat" --frontier --plots "$out/frontier-$name"
	run "frontier-$name-batch" --catalogue "$cat" --arrivals batch --frontier --plots "$out/frontier-$name-batch"
done
