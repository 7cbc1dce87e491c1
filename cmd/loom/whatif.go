package main

import (
	"context"

	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/tool/sim"
	"github.com/loomrm/loom/tool/tune"
	"github.com/loomrm/loom/workload"
)

// rmWhatIf is the RM web port's what-if (the operations page's curve): the
// recorded jobs replayed by loom tune on the live cluster's shape, at the
// P(Altruism) values the page asks for and the RM's leftover cap, one
// simulation at a time so that the RM keeps a core. The objective is loom
// tune's default: at most 5% of jobs slowed more than 20%. When ctx ends
// first it returns at once; the simulation in flight runs to its end.
func rmWhatIf(ctx context.Context, jobs []*workload.Job, nodes int, node fairness.Vector, leftoverCap float64, ps []float64) (*webui.WhatIf, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg := sim.DefaultConfig()
	cfg.Machines, cfg.Machine = nodes, node
	obj := tune.Objective{MaxSlowed: 0.05, SlowdownOver: 0.2}
	done := make(chan struct{})
	var res *tune.Result
	var err error
	go func() {
		defer close(done)
		res, err = tune.Run(cfg, jobs, tune.Grid(ps, []float64{leftoverCap}), obj, tune.Options{Workers: 1})
	}()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-done:
	}
	if err != nil {
		return nil, err
	}
	out := &webui.WhatIf{Objective: obj.String(), Recommended: res.Recommended}
	for _, r := range res.Rows {
		out.Rows = append(out.Rows, webui.WhatIfRow{PAltruism: r.PAltruism, LeftoverCap: r.LeftoverCap,
			AvgJCT: r.AvgJCT, P95JCT: r.P95JCT, Jain: r.Jain, Speedup: r.Speedup, Slowed: r.Slowed, Meets: r.Meets})
	}
	return out, nil
}
