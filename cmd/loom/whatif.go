package main

import (
	"context"

	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/tool/sim"
	"github.com/loomrm/loom/tool/tune"
)

// rmWhatIf is the RM web port's what-if (the operations page's curve): the
// recorded jobs replayed by loom tune on the live cluster's shape, with the
// RM's leftover cap, recall, P(Altruism) and queue overrides, at each P(Altruism)
// the page asks for (the cluster's, or one queue's override), one
// simulation at a time so that the RM keeps a core. The objective is loom
// tune's default: at most 5% of jobs slowed more than 20%. When ctx ends
// first it returns at once; the simulation in flight runs to its end.
func rmWhatIf(ctx context.Context, req webui.WhatIfRequest) (*webui.WhatIf, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg := sim.DefaultConfig()
	cfg.Machines, cfg.Machine = req.Nodes, req.Node
	cfg.PAltruism, cfg.QueuePAltruism, cfg.Recall = req.PAltruism, req.Overrides, req.Recall
	cfg.PromiseSlack, cfg.ShareGrowth = req.PromiseSlack, req.ShareGrowth
	obj := tune.Objective{MaxSlowed: 0.05, SlowdownOver: 0.2}
	done := make(chan struct{})
	var res *tune.Result
	var err error
	go func() {
		defer close(done)
		res, err = tune.Run(cfg, req.Jobs, tune.Grid(req.Ps, []float64{req.LeftoverCap}), obj, tune.Options{Workers: 1, Queue: req.Queue})
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
