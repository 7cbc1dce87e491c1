package webui

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/loomrm/loom/fairness"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/workload"
)

// WhatIfFunc replays the request's jobs on its cluster at each of its
// P(Altruism) values, and judges each against P(Altruism) 0, as `loom
// tune` does; its rows follow Ps. The RM's command supplies it (it is the
// simulator's, which the daemon does not import); it returns when ctx
// ends.
type WhatIfFunc func(ctx context.Context, req WhatIfRequest) (*WhatIf, error)

// WhatIfRequest is one what-if: Jobs on Nodes machines of Node each, with
// LeftoverCap, Recall, the cluster's P(Altruism) and the queues' Overrides
// as they are now. Each of Ps is the cluster's P(Altruism), or with Queue set,
// that queue's override, its jobs alone judged.
type WhatIfRequest struct {
	Jobs        []*workload.Job
	Nodes       int
	Node        fairness.Vector
	LeftoverCap float64
	Recall      float64
	// PromiseSlack is the RM's (rm.PolicyConfig.PromiseSlack).
	PromiseSlack float64
	// ShareGrowth is the RM's (rm.PolicyConfig.ShareGrowth).
	ShareGrowth bool
	PAltruism   float64
	Overrides   map[string]float64
	Queue       string
	Ps          []float64
}

// whatIfPs are the settings replayed: loom tune's, and the current one.
var whatIfPs = []float64{0, 0.25, 0.5, 0.75, 1}

func whatIfSettings(current float64) []float64 {
	ps := slices.Clone(whatIfPs)
	if !slices.Contains(ps, current) {
		ps = append(ps, current)
		slices.Sort(ps)
	}
	return ps
}

// WhatIf is the trade-off P(Altruism) offers on the recorded jobs.
type WhatIf struct {
	// Objective says what Meets means, e.g. "at most 5% of jobs slowed
	// more than 20%".
	Objective string
	Rows      []WhatIfRow
	// Recommended indexes Rows: the fastest setting meeting the
	// objective; -1 when none does.
	Recommended int
}

// WhatIfRow is one setting's replay.
type WhatIfRow struct {
	PAltruism, LeftoverCap float64
	AvgJCT, P95JCT         time.Duration
	Jain                   float64
	// Speedup is P(Altruism) 0's average JCT over this one's; Slowed
	// the share of jobs slowed beyond the objective's factor against
	// P(Altruism) 0.
	Speedup, Slowed float64
	Meets           bool
}

// whatIfMaxJobs bounds the replay to the most recent finished jobs, so
// that it takes seconds, not minutes, on the RM's machine.
const whatIfMaxJobs = 500

// whatIfs are the web server's what-ifs, one per view: the cluster ("")
// and each queue asked for.
type whatIfs struct {
	mu    sync.Mutex
	views map[string]*whatIfState
}

// whatIfState is one view's last what-if and whether one runs.
type whatIfState struct {
	running bool
	last    *WhatIf
	err     string
	at      time.Time
	jobs    int    // recorded jobs it replayed
	key     string // what it replayed: jobs, cluster, settings
	nodes   int
}

// whatIfAnswer is GET /ws/v1/loom/whatif.
type whatIfAnswer struct {
	// State is "ready", "computing", "no-history" (no finished DAG job
	// recorded yet), "unavailable" (this RM was started without the
	// simulator) or "failed".
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Queue is the queue whose override the rows vary ("" for the
	// cluster's P(Altruism)).
	Queue      string  `json:"queue,omitempty"`
	ComputedMs int64   `json:"computedOnMs,omitempty"`
	Jobs       int     `json:"jobs"`
	Nodes      int     `json:"nodes,omitempty"`
	Current    float64 `json:"currentPAltruism"`
	Cap        float64 `json:"leftoverCap"`
	Objective  string  `json:"objective,omitempty"`
	// Recommended indexes Rows, -1 for none.
	Recommended int             `json:"recommended"`
	Rows        []whatIfRowJSON `json:"rows"`
	// Measured is what the apps that finished since the latest change of
	// P(Altruism) took, beside those that finished before it (since the
	// change before); absent until P(Altruism) has been changed.
	Measured *measuredJSON `json:"measured,omitempty"`
}

type measuredJSON struct {
	SinceMs int64   `json:"sinceMs"`
	P       float64 `json:"pAltruism"`
	FromP   float64 `json:"fromPAltruism"`
	After   jctStat `json:"after"`
	Before  jctStat `json:"before"`
}

type jctStat struct {
	Apps     int   `json:"apps"`
	AvgJCTMs int64 `json:"avgJctMs"`
}

type whatIfRowJSON struct {
	PAltruism float64 `json:"pAltruism"`
	AvgJCTMs  int64   `json:"avgJctMs"`
	P95JCTMs  int64   `json:"p95JctMs"`
	Jain      float64 `json:"jain"`
	Speedup   float64 `json:"speedup"`
	Slowed    float64 `json:"slowed"`
	Meets     bool    `json:"meetsObjective"`
}

// getWhatIf answers the last what-if on the recorded jobs (?queue=Q: for
// queue Q's override) and starts a new one in the background when the
// jobs, the cluster or the settings changed since: the operations page
// polls it while it computes.
func getWhatIf(c *call) error {
	s := c.s
	sched := s.b.Scheduler()
	queue := c.r.URL.Query().Get("queue")
	current := sched.PAltruism
	overrides := map[string]float64{}
	known := queue == ""
	for _, q := range sched.Queues {
		if !overridable(q) {
			continue
		}
		if q.Override {
			overrides[s.appQueue(q)] = q.PAltruism
		}
		if s.appQueue(q) == queue {
			known, current = true, q.PAltruism
		}
	}
	if !known {
		return badRequest("queue %q is not in loom.queues", queue)
	}
	ans := whatIfAnswer{Queue: queue, Current: finite(current), Cap: finite(sched.LeftoverCap), Recommended: -1, Rows: []whatIfRowJSON{}}
	var err error
	if ans.Measured, err = measured(c); err != nil {
		return err
	}
	if s.cfg.WhatIf == nil {
		ans.State = "unavailable"
		return c.json(http.StatusOK, ans)
	}
	jobs := s.b.RecordedJobs()
	if len(jobs) > whatIfMaxJobs {
		jobs = rebase(jobs[len(jobs)-whatIfMaxJobs:])
	}
	if queue != "" && !slices.ContainsFunc(jobs, func(j *workload.Job) bool { return j.Queue == queue }) {
		jobs = nil
	}
	if len(jobs) == 0 {
		ans.State = "no-history"
		return c.json(http.StatusOK, ans)
	}
	nodes, node, err := clusterShape(c)
	if err != nil {
		return err
	}
	req := WhatIfRequest{Jobs: jobs, Nodes: nodes, Node: node, LeftoverCap: sched.LeftoverCap, Recall: sched.Recall, PromiseSlack: sched.PromiseSlack, ShareGrowth: sched.ShareGrowth, PAltruism: sched.PAltruism,
		Overrides: overrides, Queue: queue, Ps: whatIfSettings(current)}
	// What the replay depends on; the overrides in sorted order.
	key := fmt.Sprint(len(jobs), nodes, node, req.LeftoverCap, req.Recall, req.PromiseSlack, req.ShareGrowth, req.Ps, slices.Sorted(maps.Keys(overrides)), overrides)
	if queue != "" {
		key += fmt.Sprint(" cluster ", req.PAltruism)
	}
	all := &s.whatIf
	all.mu.Lock()
	defer all.mu.Unlock()
	if all.views == nil {
		all.views = map[string]*whatIfState{}
	}
	w := all.views[queue]
	if w == nil {
		w = &whatIfState{}
		all.views[queue] = w
	}
	if w.key != key && !w.running && nodes > 0 {
		w.running = true
		go s.runWhatIf(w, req, key)
	}
	switch {
	case w.running:
		ans.State = "computing"
	case w.err != "":
		ans.State, ans.Error = "failed", w.err
	case w.last == nil:
		ans.State = "computing"
	default:
		ans.State = "ready"
	}
	if nodes == 0 {
		ans.State, ans.Error = "failed", "no RUNNING node to take the cluster's shape from"
	}
	if w.last != nil {
		ans.ComputedMs, ans.Jobs, ans.Nodes = w.at.UnixMilli(), w.jobs, w.nodes
		ans.Objective, ans.Recommended = w.last.Objective, w.last.Recommended
		for _, r := range w.last.Rows {
			ans.Rows = append(ans.Rows, whatIfRowJSON{PAltruism: finite(r.PAltruism), AvgJCTMs: r.AvgJCT.Milliseconds(),
				P95JCTMs: r.P95JCT.Milliseconds(), Jain: finite(r.Jain), Speedup: finite(r.Speedup),
				Slowed: finite(r.Slowed), Meets: r.Meets})
		}
	}
	return c.json(http.StatusOK, ans)
}

// measured compares the apps that succeeded since the latest change of
// P(Altruism) with those that succeeded between the change before it and
// that one, by their average time from submission to finish. Different
// apps ran in the two periods: the comparison is a guide, not a proof.
func measured(c *call) (*measuredJSON, error) {
	var changes []AltruismChange
	for _, ch := range c.s.b.AltruismChanges() {
		if ch.Queue == "" {
			changes = append(changes, ch)
		}
	}
	if len(changes) < 2 {
		return nil, nil
	}
	last, prev := changes[len(changes)-1], changes[len(changes)-2]
	apps, err := c.s.b.GetApplications(c.ctx(), &pb.GetApplicationsRequestProto{})
	if err != nil {
		return nil, err
	}
	m := &measuredJSON{SinceMs: last.UnixMs, P: finite(last.P), FromP: finite(prev.P)}
	var after, before int64
	for _, a := range apps.GetApplications() {
		start, end := a.GetStartTime(), a.GetFinishTime()
		if a.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED || end <= 0 || end < start {
			continue
		}
		switch {
		case end >= last.UnixMs:
			m.After.Apps++
			after += end - start
		case end >= prev.UnixMs:
			m.Before.Apps++
			before += end - start
		}
	}
	if m.After.Apps > 0 {
		m.After.AvgJCTMs = after / int64(m.After.Apps)
	}
	if m.Before.Apps > 0 {
		m.Before.AvgJCTMs = before / int64(m.Before.Apps)
	}
	return m, nil
}

func (s *server) runWhatIf(w *whatIfState, req WhatIfRequest, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := s.cfg.WhatIf(ctx, req)
	all := &s.whatIf
	all.mu.Lock()
	defer all.mu.Unlock()
	w.running, w.at, w.key = false, s.now(), key
	w.jobs, w.nodes = len(req.Jobs), req.Nodes
	if err != nil {
		w.err = err.Error()
		s.cfg.Log.Warn().Err(err).Str("queue", req.Queue).Msg("what-if for P(Altruism) failed")
		return
	}
	w.last, w.err = res, ""
}

// clusterShape is the RUNNING nodes: how many, and the largest's
// capability, which the simulator gives every machine (as `loom tune
// --rm-web` takes it).
func clusterShape(c *call) (int, fairness.Vector, error) {
	resp, err := c.s.b.GetClusterNodes(c.ctx(), &pb.GetClusterNodesRequestProto{NodeStates: []pb.NodeStateProto{pb.NodeStateProto_NS_RUNNING}})
	if err != nil {
		return 0, fairness.Vector{}, err
	}
	n := 0
	var mem, vc float64
	for _, nd := range resp.GetNodeReports() {
		if nd.GetNodeState() != pb.NodeStateProto_NS_RUNNING {
			continue
		}
		n++
		mem = max(mem, float64(nd.GetCapability().GetMemory()))
		vc = max(vc, float64(nd.GetCapability().GetVirtualCores()))
	}
	if mem <= 0 || vc <= 0 {
		return 0, fairness.Vector{}, nil
	}
	return n, fairness.New(mem, vc), nil
}

// rebase shifts copies of jobs so the first arrives at 0.
func rebase(jobs []*workload.Job) []*workload.Job {
	out := make([]*workload.Job, len(jobs))
	first := jobs[0].Arrival
	for _, j := range jobs {
		first = min(first, j.Arrival)
	}
	for i, j := range jobs {
		c := j.Clone()
		c.Arrival -= first
		out[i] = c
	}
	return out
}
