package main

import (
	"context"
	"testing"
	"time"

	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/workload"
)

// TestRMWhatIf runs the RM's what-if through the real simulator: one row
// per P(Altruism) asked, in order, P = 0 judged against itself.
func TestRMWhatIf(t *testing.T) {
	pool, err := workload.Catalogue("tpch:100g")
	if err != nil {
		t.Fatal(err)
	}
	jobs := pool[:6]
	for i, j := range jobs {
		j.Arrival = time.Duration(i) * 5 * time.Second
	}
	ps := []float64{0, 0.5, 0.8, 1}
	w, err := rmWhatIf(context.Background(), webui.WhatIfRequest{Jobs: jobs, Nodes: 4, Node: workload.PaperMachine(), LeftoverCap: 2, PAltruism: 1, Ps: ps})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Rows) != len(ps) || w.Objective != "at most 5% of jobs slowed more than 20%" {
		t.Fatalf("what-if %+v", w)
	}
	for i, r := range w.Rows {
		if r.PAltruism != ps[i] || r.LeftoverCap != 2 || r.AvgJCT <= 0 || !(r.Jain > 0 && r.Jain <= 1) {
			t.Errorf("row %d: %+v", i, r)
		}
	}
	if r := w.Rows[0]; r.Speedup != 1 || r.Slowed != 0 {
		t.Errorf("P = 0 against itself: speedup %v, slowed %v", r.Speedup, r.Slowed)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rmWhatIf(ctx, webui.WhatIfRequest{Jobs: jobs, Nodes: 4, Node: fairness.New(131072, 20), LeftoverCap: 2, Ps: ps}); err == nil {
		t.Error("a cancelled what-if returned no error")
	}
	// One queue's view: its override varies, its jobs alone are judged.
	for i, j := range jobs {
		if i%2 == 0 {
			j.Queue = "etl"
		}
	}
	q, err := rmWhatIf(context.Background(), webui.WhatIfRequest{Jobs: jobs, Nodes: 4, Node: workload.PaperMachine(), LeftoverCap: 2,
		PAltruism: 1, Overrides: map[string]float64{"etl": 0.5}, Queue: "etl", Ps: ps})
	if err != nil || len(q.Rows) != len(ps) || q.Rows[0].Speedup != 1 {
		t.Errorf("etl's what-if: %+v, %v", q, err)
	}
}
