package webui

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/workload"
)

// vec keeps a vector's non-finite amounts (a share of a resource the
// cluster lacks is +Inf) out of JSON, which cannot carry them.
func vec(v fairness.Vector) fairness.Vector {
	for i := range v {
		v[i] = finite(v[i])
	}
	return v
}

// history is an app's DAG history, or a 404 that says why there is none.
func (c *call) history() (*am.History, string, error) {
	id, err := c.appID()
	if err != nil {
		return nil, "", err
	}
	app := rpc.AppIDString(id)
	h, err := c.s.b.AppHistory(app)
	switch {
	case errors.Is(err, ErrNoHistory):
		return nil, app, notFound("app %s has no DAG history: it was not run by Loom's DAG AM (a stock YARN AM writes none), or its AM has not written one yet", app)
	case errors.Is(err, ErrNotFound):
		return nil, app, notFound("app with id: %s not found", app)
	case err != nil:
		return nil, app, err
	case h == nil:
		return nil, app, notFound("app %s has no DAG history yet", app)
	}
	return h, app, nil
}

func getAppDAG(c *call) error {
	h, app, err := c.history()
	if err != nil {
		return err
	}
	out := dao.DAG{App: app, Job: h.Job, Attempt: h.Attempt, State: h.State, Diagnostics: h.Diagnostics,
		StartUnixMs: h.StartUnixMs, UpdatedUnixMs: h.UpdatedUnixMs, Stages: make([]dao.Stage, 0, len(h.Stages))}
	for _, s := range h.Stages {
		parents := s.Parents
		if parents == nil {
			parents = []string{}
		}
		out.Stages = append(out.Stages, dao.Stage{Name: s.Name, Tasks: s.Tasks, Parents: parents, DurationMs: s.DurationMs,
			Demand: vec(s.Demand), State: s.State, Succeeded: s.Succeeded, Running: s.Running, Failed: s.Failed})
	}
	return c.json(http.StatusOK, out)
}

func getAppTasks(c *call) error {
	h, app, err := c.history()
	if err != nil {
		return err
	}
	out := dao.Tasks{App: app, StartUnixMs: h.StartUnixMs, Tasks: make([]dao.Task, 0, len(h.Tasks))}
	for _, t := range h.Tasks {
		d := dao.Task{Stage: t.Stage, Task: t.Task, Attempt: t.Attempt, Container: t.Container, Node: t.Node,
			StartMs: t.StartMs, EndMs: t.EndMs, StartUnixMs: h.StartUnixMs + t.StartMs, Kind: t.Kind, State: t.State}
		if t.EndMs > 0 {
			d.EndUnixMs = h.StartUnixMs + t.EndMs
		}
		out.Tasks = append(out.Tasks, d)
	}
	return c.json(http.StatusOK, out)
}

func getLoomScheduler(c *call) error {
	s := c.s.b.Scheduler()
	out := dao.Scheduler{Policy: s.Policy, PAltruism: finite(s.PAltruism), LeftoverOrder: s.LeftoverOrder,
		LeftoverCap: finite(s.LeftoverCap), Recall: finite(s.Recall), PromiseSlack: finite(s.PromiseSlack), ShareGrowth: s.ShareGrowth, Capacity: vec(s.Capacity), Used: vec(s.Used), Leftover: vec(s.Leftover),
		Apps: make([]dao.AppShare, 0, len(s.Apps)), Queues: make([]dao.QueueShare, 0, len(s.Queues)),
		RESTWrites: c.s.b.RESTWritesEnabled(), Placements: placements(s.Placements)}
	for _, a := range s.Apps {
		out.Apps = append(out.Apps, dao.AppShare{ID: a.ID, Name: a.Name, Queue: a.Queue, User: a.User,
			Share: vec(a.Share), DominantShare: finite(a.DominantShare), Usage: vec(a.Usage),
			DominantUsage: finite(a.DominantUsage), Demand: vec(a.Demand), RemainingWork: finite(a.RemainingWork),
			PendingDefault: a.PendingDefault, PendingAltruistic: a.PendingAltruistic, Running: a.Running,
			Placements: placements(a.Placements), Promise: promise(a.Promise)})
	}
	if t := newQueueTree(s); t != nil {
		// The tree, in its order, each queue once.
		var walk func(n *queueNode, depth int)
		walk = func(n *queueNode, depth int) {
			out.Queues = append(out.Queues, c.s.queueShare(n, depth, s.Capacity))
			for _, ch := range n.children {
				walk(ch, depth+1)
			}
		}
		walk(t.root, 0)
		return c.json(http.StatusOK, out)
	}
	for _, q := range s.Queues {
		out.Queues = append(out.Queues, dao.QueueShare{Name: q.Name, Weight: finite(q.Weight), PAltruism: finite(q.PAltruism),
			Override: q.Override, Usage: vec(q.Usage), Apps: q.Apps})
	}
	return c.json(http.StatusOK, out)
}

// queueShare is one queue of a tree in Loom's view: a parent carries no
// P(Altruism) of its own (its apps are its leaves').
func (s *server) queueShare(n *queueNode, depth int, capacity fairness.Vector) dao.QueueShare {
	p := func(v fairness.Vector) *fairness.Vector { v = vec(v); return &v }
	q := dao.QueueShare{Name: n.Name, Weight: finite(n.Weight), Usage: vec(n.Usage), Apps: n.Apps,
		Path: n.Path, Depth: depth, Share: p(n.Share), Min: p(n.Min), Max: p(n.maximum(capacity)), Demand: p(n.Demand),
		MaxRunningApps: n.MaxRunningApps, Policy: n.Policy, SubmitACL: n.SubmitACL, AdminACL: n.AdminACL}
	if n.parent != nil {
		q.Parent = n.parent.Path
	}
	if n.leaf() {
		q.Leaf, q.Queue = true, s.appQueue(n.QueueShare)
		q.PAltruism, q.Override = finite(n.PAltruism), n.Override
	}
	return q
}

func getTimeline(c *call) error {
	samples := c.s.b.Timeline()
	out := dao.Timeline{Samples: make([]dao.Sample, 0, len(samples))}
	for _, s := range samples {
		out.Samples = append(out.Samples, dao.Sample{UnixMs: s.UnixMs, Utilisation: vec(s.Utilisation),
			Jain: finite(s.Jain), RunningApps: s.RunningApps, PendingDefault: s.PendingDefault,
			PendingAltruistic: s.PendingAltruistic, Yielded: finite(s.Yielded), HeldOverShare: finite(s.HeldOverShare),
			AltruisticPerSec: finite(s.AltruisticPerSec), BehindShare: s.BehindShare})
	}
	return c.json(http.StatusOK, out)
}

// placements adds the shares to the counts: of the containers whose
// asks named hosts or racks, so that asks without locality neither
// dilute them nor pass for a 0% node-local.
func placements(p Placements) dao.Placements {
	out := dao.Placements{NodeLocal: p.NodeLocal, RackLocal: p.RackLocal, OffSwitch: p.OffSwitch, Any: p.Any,
		WithLocality: p.WithLocality()}
	if n := float64(out.WithLocality); n > 0 {
		out.NodeLocalShare, out.RackLocalShare, out.OffSwitchShare = float64(p.NodeLocal)/n, float64(p.RackLocal)/n, float64(p.OffSwitch)/n
	}
	return out
}

func getAppPlacements(c *call) error {
	id, err := c.appID()
	if err != nil {
		return err
	}
	app := rpc.AppIDString(id)
	p, err := c.s.b.AppPlacements(app)
	if errors.Is(err, ErrNotFound) {
		return notFound("app with id: %s not found", app)
	} else if err != nil {
		return err
	}
	return c.json(http.StatusOK, dao.AppPlacements{App: app, Placements: placements(p)})
}

func getAppTimeline(c *call) error {
	id, err := c.appID()
	if err != nil {
		return err
	}
	app := rpc.AppIDString(id)
	samples, err := c.s.b.AppTimeline(app)
	if errors.Is(err, ErrNotFound) {
		return notFound("app with id: %s not found", app)
	} else if err != nil {
		return err
	}
	out := dao.AppTimeline{App: app, Samples: make([]dao.AppSample, 0, len(samples))}
	for _, s := range samples {
		out.Samples = append(out.Samples, dao.AppSample{UnixMs: s.UnixMs, DominantShare: finite(s.DominantShare),
			DominantUsage: finite(s.DominantUsage)})
	}
	return c.json(http.StatusOK, out)
}

func (s *server) altruism() dao.Altruism {
	changes := s.b.AltruismChanges()
	sched := s.b.Scheduler()
	out := dao.Altruism{P: finite(sched.PAltruism), Queues: map[string]float64{}, Changes: make([]dao.AltruismChange, 0, len(changes))}
	for _, q := range sched.Queues {
		if q.Override && overridable(q) {
			out.Queues[s.appQueue(q)] = finite(q.PAltruism)
		}
	}
	for _, ch := range changes {
		out.Changes = append(out.Changes, dao.AltruismChange{UnixMs: ch.UnixMs, P: finite(ch.P), Who: ch.Who, Queue: ch.Queue, Cleared: ch.Cleared})
	}
	return out
}

func getAltruism(c *call) error {
	return c.json(http.StatusOK, c.s.altruism())
}

// checkAdmin lets through a request that carries the admin credential
// as a bearer token. The comparison takes the same time whatever the
// token, its length included.
func (c *call) checkAdmin() error {
	secret := c.s.cfg.AdminSecret
	if secret == "" {
		return forbidden("changes are refused: no admin credential is configured (set loom.admin.secret)")
	}
	scheme, _, ok := strings.Cut(strings.TrimSpace(c.r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return forbidden("the admin credential is missing: send the header Authorization: Bearer <loom.admin.secret>")
	}
	if !AdminBearer(c.r, secret) {
		return forbidden("the admin credential is wrong")
	}
	return nil
}

// AdminBearer says whether a request carries secret, the admin
// credential (loom.admin.secret), as its bearer token. The comparison
// takes the same time whatever the token, its length included; an empty
// secret lets nothing through.
func AdminBearer(r *http.Request, secret string) bool {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if secret == "" || !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got, want := sha256.Sum256([]byte(strings.TrimSpace(token))), sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// parseAltruismBody reads {"p": x}, x in [0, 1].
func parseAltruismBody(c *call) (AltruismSet, error) {
	var body dao.AltruismUpdate
	if err := readBody(c, &body); err != nil {
		return AltruismSet{}, err
	}
	set := AltruismSet{Queue: body.Queue, Clear: body.Clear}
	switch {
	case body.Clear && body.Queue == "":
		return set, badRequest("clear removes a queue's override: name the queue, {\"queue\": <name>, \"clear\": true}")
	case body.Clear && body.P != nil:
		return set, badRequest("send p or clear, not both")
	case body.Clear:
		return set, nil
	case body.P == nil:
		return set, badRequest("p is missing: send {\"p\": <P(Altruism) between 0 and 1>}, with \"queue\" for one queue's override")
	}
	set.P = *body.P
	if err := rm.CheckPAltruism(set.P); err != nil {
		return set, badRequest("p must be between 0 and 1, got %v", set.P)
	}
	return set, nil
}

func setAltruism(c *call) error {
	if err := c.checkAdmin(); err != nil {
		c.s.cfg.Log.Warn().Str("user", c.user()).Str("remote", remoteIP(c.r)).Str("reason", err.(*webError).message).
			Msg("P(Altruism) change refused")
		return err
	}
	set, err := parseAltruismBody(c)
	if err != nil {
		return err
	}
	who := fmt.Sprintf("%s from %s", c.user(), remoteIP(c.r))
	before := c.s.b.Scheduler().PAltruism
	if err := c.s.b.SetAltruism(c.ctx(), set, who); err != nil {
		return fromBackend(err)
	}
	c.s.cfg.Log.Info().Float64("from", before).Float64("p", set.P).Str("queue", set.Queue).Bool("clear", set.Clear).
		Str("who", who).Msg("P(Altruism) changed")
	return c.json(http.StatusOK, c.s.altruism())
}

func serveMetrics(c *call) error {
	if c.s.cfg.Metrics == nil {
		return notFound("metrics are not served by this ResourceManager")
	}
	c.s.cfg.Metrics.ServeHTTP(c.w, c.r)
	return nil
}

// getRecordedWorkload answers the finished DAG jobs the RM recorded, in
// Loom's JSON DAG format (a `loom sim --workload` file).
func getRecordedWorkload(c *call) error {
	var buf bytes.Buffer
	if err := workload.WriteJSON(&buf, c.s.b.RecordedJobs()); err != nil {
		return err
	}
	c.w.Header().Set("Content-Type", contentTypeJSON)
	c.w.WriteHeader(http.StatusOK)
	_, err := c.w.Write(buf.Bytes())
	return err
}

// setHAState is an admin's request to change this RM's HA state,
// {"state": "standby"} on an active RM (loom haadmin
// -transitionToStandby): the admin credential, as for P(Altruism).
func setHAState(c *call) error {
	if err := c.checkAdmin(); err != nil {
		return err
	}
	var body struct {
		State string `json:"state"`
	}
	if err := readBody(c, &body); err != nil {
		return err
	}
	if c.s.cfg.HATransition == nil {
		return badRequest("this ResourceManager is not one of an HA cluster (yarn.resourcemanager.ha.enabled)")
	}
	if err := c.s.cfg.HATransition(strings.ToLower(strings.TrimSpace(body.State))); err != nil {
		return badRequest("%v", err)
	}
	c.s.cfg.Log.Warn().Str("state", body.State).Str("remote", remoteIP(c.r)).Msg("HA state change asked by an admin")
	c.w.WriteHeader(http.StatusOK)
	return nil
}

// promise is an app's first promise for the REST view; nil when the RM
// keeps none for it.
func promise(p rm.PromiseState) *dao.Promise {
	if !p.Kept {
		return nil
	}
	return &dao.Promise{SpanMs: p.Span.Milliseconds(), FinishMs: p.Finish.Milliseconds(), LimitMs: p.Limit.Milliseconds(), Late: p.Late}
}
