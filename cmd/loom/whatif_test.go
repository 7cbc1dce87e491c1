package main

import (
	"context"
	"testing"
	"time"

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
	w, err := rmWhatIf(context.Background(), jobs, 4, workload.PaperMachine(), 2, ps)
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
	if _, err := rmWhatIf(ctx, jobs, 4, fairness.New(131072, 20), 2, ps); err == nil {
		t.Error("a cancelled what-if returned no error")
	}
}
