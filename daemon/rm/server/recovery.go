package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/daemon/rm/store"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/lifecycle"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// Work-preserving restart, as YARN's: with
// yarn.resourcemanager.recovery.enabled the RM writes every app and
// attempt to its state store as they change. A restarted RM reads them
// back: finished apps are reported as they ended; running ones wait for
// their NodeManagers, told to resync, to report the containers they still
// run (the AM's among them), and for their AMs to register again. Nothing
// running is killed. Container ids carry the RM's epoch, so that a
// restarted RM never grants an id a node still runs.

// storeTimeout bounds one state-store write under the RM's lock.
const storeTimeout = 10 * time.Second

// appRecord is an app in the state store (YARN's ApplicationStateData).
type appRecord struct {
	Context     []byte `json:"context"` // ApplicationSubmissionContextProto
	User        string `json:"user"`
	Queue       string `json:"queue"`
	SubmitMs    int64  `json:"submit_ms"`
	State       string `json:"state"`
	Final       string `json:"final_status"`
	Diagnostics string `json:"diagnostics,omitempty"`
	FinishMs    int64  `json:"finish_ms,omitempty"`
	// Replay is a finished DAG job as the what-if replays it (history.go).
	Replay json.RawMessage `json:"replay,omitempty"`
	// PromisedAtMs and PromisedMs are a running app's first promise
	// (rm/promise.go): when it was taken (Unix ms) and its span (ms).
	PromisedAtMs int64 `json:"promised_at_ms,omitempty"`
	PromisedMs   int64 `json:"promised_ms,omitempty"`
}

// attemptRecord is an attempt in the state store
// (ApplicationAttemptStateData).
type attemptRecord struct {
	Attempt     int32  `json:"attempt"`
	State       string `json:"state"`
	AMContainer int64  `json:"am_container,omitempty"`
	StartMs     int64  `json:"start_ms"`
	Diagnostics string `json:"diagnostics,omitempty"`
	// Exit and FinishMs say whether a failed attempt counts against the
	// app's max attempts after a restart (absent in older records: it
	// counts).
	Exit     *int32 `json:"exit,omitempty"`
	FinishMs int64  `json:"finish_ms,omitempty"`
}

// persistApp writes an app's record. A store that fails loses the app on
// a restart, not now: it is logged, and the RM carries on (YARN would
// stop being active). Callers hold mu.
func (r *RM) persistApp(a *appRec) {
	if r.store == nil {
		return
	}
	ctxBytes, err := proto.Marshal(a.ctx)
	if err == nil {
		rec := appRecord{Context: ctxBytes, User: a.user, Queue: a.queue, SubmitMs: a.submitted.UnixMilli(),
			State: a.state().String(), Final: a.final().String(), Diagnostics: a.lc.Diagnostics, Replay: encodeReplay(a.replay)}
		if !a.lc.Finished.IsZero() {
			rec.FinishMs = a.lc.Finished.UnixMilli()
		}
		if a.promised > 0 && !a.done() {
			rec.PromisedAtMs, rec.PromisedMs = a.promisedAt.UnixMilli(), a.promised.Milliseconds()
		}
		var data []byte
		if data, err = json.Marshal(rec); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
			err = r.store.PutApp(ctx, rpc.AppIDString(a.yid), data)
			cancel()
		}
	}
	if err != nil {
		r.log.Error().Err(err).Str("app", rpc.AppIDString(a.yid)).Msg("state store: could not save the app")
		r.storeFailed(err)
	}
}

// persistAttempt writes an attempt's record. Callers hold mu.
func (r *RM) persistAttempt(a *appRec, at *attemptRec) {
	if r.store == nil {
		return
	}
	rec := attemptRecord{Attempt: at.n, State: at.state().String(), AMContainer: at.amWire,
		StartMs: at.lc.Started.UnixMilli(), Diagnostics: at.lc.Diagnostics}
	if at.state() == pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED {
		rec.Exit, rec.FinishMs = proto.Int32(at.lc.Exit), at.lc.Finished.UnixMilli()
	}
	data, err := json.Marshal(rec)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		err = r.store.PutAttempt(ctx, rpc.AppIDString(a.yid), rpc.AttemptIDString(at.yid), data)
		cancel()
	}
	if err != nil {
		r.log.Error().Err(err).Str("attempt", rpc.AttemptIDString(at.yid)).Msg("state store: could not save the attempt")
		r.storeFailed(err)
	}
}

// unpersistApp removes a forgotten app. Callers hold mu.
func (r *RM) unpersistApp(a *appRec) {
	if r.store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := r.store.RemoveApp(ctx, rpc.AppIDString(a.yid)); err != nil {
		r.log.Error().Err(err).Str("app", rpc.AppIDString(a.yid)).Msg("state store: could not remove the app")
		r.storeFailed(err)
	}
}

// recover rebuilds the apps and attempts a state store holds. It runs
// before the RM serves anything.
func (r *RM) recover(st *store.State) error {
	ids := make([]string, 0, len(st.Apps))
	for id := range st.Apps {
		ids = append(ids, id)
	}
	// In submission order: application ids sort by cluster timestamp,
	// then number, once parsed.
	type parsed struct {
		id  *pb.ApplicationIdProto
		key string
	}
	var apps []parsed
	for _, s := range ids {
		id, err := rpc.ParseAppID(s)
		if err != nil {
			return fmt.Errorf("state store: app %q: %w", s, err)
		}
		apps = append(apps, parsed{id, s})
	}
	slices.SortFunc(apps, func(x, y parsed) int {
		if c := x.id.GetClusterTimestamp() - y.id.GetClusterTimestamp(); c != 0 {
			return int(max(min(c, 1), -1))
		}
		return int(x.id.GetId() - y.id.GetId())
	})
	running := 0
	for _, p := range apps {
		a, err := r.recoverApp(p.id, st.Apps[p.key])
		if err != nil {
			return fmt.Errorf("state store: app %s: %w", p.key, err)
		}
		if !a.done() {
			running++
		}
	}
	r.log.Info().Int("apps", len(apps)).Int("running", running).Int64("epoch", r.epoch).Msg("recovered from the state store")
	return nil
}

func (r *RM) recoverApp(id *pb.ApplicationIdProto, stored store.App) (*appRec, error) {
	var rec appRecord
	if err := json.Unmarshal(stored.Data, &rec); err != nil {
		return nil, err
	}
	sc := &pb.ApplicationSubmissionContextProto{}
	if err := proto.Unmarshal(rec.Context, sc); err != nil {
		return nil, fmt.Errorf("its submission context: %w", err)
	}
	state, ok := storedAppState(rec.State)
	final, ok2 := storedFinal(rec.Final)
	if !ok || !ok2 {
		return nil, fmt.Errorf("state %q / final status %q", rec.State, rec.Final)
	}
	amReq, err := amResourceRequest(sc)
	var amRes fairness.Vector
	if err == nil {
		amRes, err = rpc.VectorFromResource(amReq)
	}
	if err == nil {
		amRes, err = r.checkResource("the AM container", amRes)
	}
	if err != nil {
		return nil, fmt.Errorf("its AM resource: %w", err)
	}
	a := &appRec{id: rm.AppID(id.GetId()), yid: id, ctx: sc, user: rec.User, queue: rec.Queue,
		submitted: time.UnixMilli(rec.SubmitMs), amResource: amRes, nodesUsed: map[*nodeRec]bool{}, asks: map[askKey]int{}}
	a.lc = r.lifecycleApp(a)
	a.replay = decodeReplay(rec.Replay)
	a.lc.State, a.lc.Final, a.lc.Diagnostics = state, final, rec.Diagnostics
	if rec.FinishMs > 0 {
		a.lc.Finished = time.UnixMilli(rec.FinishMs)
	}
	if _, dup := r.apps[a.id]; dup {
		return nil, fmt.Errorf("app number %d is used twice", a.id)
	}
	var ats []attemptRecord
	for key, data := range stored.Attempts {
		var at attemptRecord
		if err := json.Unmarshal(data, &at); err != nil {
			return nil, fmt.Errorf("attempt %s: %w", key, err)
		}
		ats = append(ats, at)
	}
	slices.SortFunc(ats, func(x, y attemptRecord) int { return int(x.Attempt - y.Attempt) })
	for i, rec := range ats {
		state, ok := storedAttemptState(rec.State)
		if !ok || rec.Attempt != int32(i+1) {
			return nil, fmt.Errorf("attempt %d: state %q", rec.Attempt, rec.State)
		}
		lc := &lifecycle.Attempt{N: rec.Attempt, State: state, AMGranted: rec.AMContainer != 0, Exit: ExitInvalid,
			Diagnostics: rec.Diagnostics, Started: time.UnixMilli(rec.StartMs)}
		if rec.FinishMs > 0 {
			lc.Finished = time.UnixMilli(rec.FinishMs)
		}
		if rec.Exit != nil {
			lc.Exit = *rec.Exit
		}
		a.lc.Attempts = append(a.lc.Attempts, lc)
		a.attempts = append(a.attempts, &attemptRec{n: rec.Attempt, lc: lc, amWire: rec.AMContainer, lastSeen: time.Now(),
			yid: &pb.ApplicationAttemptIdProto{ApplicationId: id, AttemptId: proto.Int32(rec.Attempt)}})
	}
	r.apps[a.id] = a
	r.appOrder = append(r.appOrder, a)
	if id.GetClusterTimestamp() == r.clusterTS || a.id > rm.AppID(r.nextApp) {
		r.nextApp = max(r.nextApp, int32(a.id))
	}
	fail := ""
	if path, weight, ok := r.coreQueue(a.queue); !ok {
		fail = fmt.Sprintf("the RM restarted without its queue %q (loom.queues, or its scheduler's queue tree)", a.queue)
	} else if !a.done() {
		// Labels the RM no longer has: the app runs in the default
		// partition rather than not at all.
		var err error
		if a.label, a.amLabel, err = r.submittedLabels(a.ctx, path); err != nil {
			r.log.Warn().Err(err).Str("app", rpc.AppIDString(a.yid)).Msg("recovered app runs in the default node label")
			a.label, a.amLabel = "", ""
		}
		if err := r.step(rm.AppAdded{App: a.id, Queue: path, Weight: weight, User: a.user, Label: a.label}); err != nil {
			return nil, err
		}
		if rec.PromisedMs > 0 {
			a.promisedAt, a.promised = time.UnixMilli(rec.PromisedAtMs), time.Duration(rec.PromisedMs)*time.Millisecond
			if err := r.step(rm.AppPromise{App: a.id, At: a.promisedAt.Sub(r.start), Span: a.promised}); err != nil {
				// A record the core refuses (a clock set back past the
				// promise, say): the app is promised afresh.
				r.log.Warn().Err(err).Str("app", rpc.AppIDString(a.yid)).Msg("recovered app's first promise not restored")
				a.promisedAt, a.promised = time.Time{}, 0
			}
		}
	}
	// The lifecycle core says how the app goes on: a new attempt if its
	// last failed, its AM container asked for again if it was never
	// granted, or the attempt waits for a node to report that container
	// and for its AM (or an unmanaged AM) to register again.
	if err := r.lifeStep(lifecycle.Recovered{App: a.lc, Fail: fail}); err != nil {
		return nil, err
	}
	return a, nil
}

// adopt takes back the containers a node reports running after an RM
// restart, for apps the RM recovered: they keep running, in their apps'
// usage. It returns the ones no recovered app owns, for the node to
// clean up. Callers hold mu; the node is up in the core.
func (r *RM) adopt(n *nodeRec, statuses []*pb.NMContainerStatusProto) []*pb.ContainerIdProto {
	var cleanup []*pb.ContainerIdProto
	var ended []*pb.NMContainerStatusProto
	for _, cs := range statuses {
		cid := cs.GetContainerId()
		if r.contOf(cid, nil) != nil {
			continue
		}
		complete := cs.GetContainerState() == pb.ContainerStateProto_C_COMPLETE
		// Container ids are numbered per attempt on the wire; the core's
		// are the RM's own.
		id := r.core.LastContainerID() + 1
		appID := rpc.AppIDOf(cid)
		a, ok := r.apps[rm.AppID(appID.GetId())]
		var at *attemptRec
		if ok && !a.done() && a.yid.GetClusterTimestamp() == appID.GetClusterTimestamp() {
			if i := int(cid.GetAppAttemptId().GetAttemptId()) - 1; i >= 0 && i < len(a.attempts) {
				at = a.attempts[i]
			}
		}
		res, err := rpc.VectorFromResource(cs.GetResource())
		if at == nil || at != a.current() || err != nil {
			if !complete {
				cleanup = append(cleanup, cid)
			}
			continue
		}
		if key := (wireKey{at.n, cid.GetId()}); a.pendingRelease[key] {
			// Its AM released it before its node reported it (the AM
			// registered again first): stopped, not taken back.
			delete(a.pendingRelease, key)
			r.log.Info().Str("container", rpc.ContainerIDString(cid)).Str("node", n.key).Msg("container released by its AM before its node reported it: stopped")
			if !complete {
				cleanup = append(cleanup, cid)
			}
			continue
		}
		c := rm.Container{ID: id, App: a.id, Node: n.id, Resource: res, Priority: int(cs.GetPriority().GetPriority())}
		// Its ask's node label, as the NM reports it, else the node's
		// when the app runs in it (else it ran on lent room).
		switch {
		case cs.NodeLabelExpression != nil:
			c.Label = cs.GetNodeLabelExpression()
		case n.part == a.label:
			c.Label = n.part
		}
		if err := r.step(rm.ContainerRecovered{Container: c}); err != nil {
			r.log.Warn().Err(err).Str("container", rpc.ContainerIDString(cid)).Msg("could not recover a container")
			cleanup = append(cleanup, cid)
			continue
		}
		isAM := cid.GetId() == at.amWire
		if isAM {
			r.step(rm.AMContainer{Container: id})
		}
		if err := r.lifeStep(lifecycle.Adopted{Container: lifecycle.ContainerID(id), App: lifecycle.AppID(a.id), Attempt: at.n,
			Name: rpc.ContainerIDString(cid), IsAM: isAM, Created: time.UnixMilli(cs.GetCreationTime())}); err != nil {
			r.log.Warn().Err(err).Str("container", rpc.ContainerIDString(cid)).Msg("could not recover a container")
			r.step(rm.ContainerDone{Container: id})
			cleanup = append(cleanup, cid)
			continue
		}
		lc, _ := r.life.Container(lifecycle.ContainerID(id))
		cr := &contRec{c: c, yid: proto.Clone(cid).(*pb.ContainerIdProto), app: a, attempt: at, node: n, lc: lc}
		r.conts[id] = cr
		n.conts[id] = cr
		at.conts = append(at.conts, cr)
		a.track(cr)
		a.nodesUsed[n] = true
		if cr.lc.IsAM {
			at.lastSeen = time.Now()
		}
		r.log.Info().Str("container", rpc.ContainerIDString(cid)).Str("node", n.key).Bool("am", cr.lc.IsAM).Bool("completed", complete).Msg("container recovered")
		if complete {
			ended = append(ended, cs)
		}
	}
	// A container of a current attempt that ended while no RM was there
	// to hear it (an RM restart, a failover) ends now, as its heartbeat
	// would have said: an AM container's exit decides its attempt, a
	// task's reaches its AM.
	for _, cs := range ended {
		if cr := r.contOf(cs.GetContainerId(), nil); cr != nil {
			r.endContainer(cr.c.ID, cs.GetContainerExitStatus(), cs.GetDiagnostics(), false)
		}
	}
	return cleanup
}

// expireUnreportedAMs fails the recovered attempts whose AM container no
// node reported within the NodeManagers' liveness expiry of the restart:
// it died with its node. Callers hold mu.
func (r *RM) expireUnreportedAMs(now time.Time) {
	if now.Sub(r.start) <= r.cfg.NMExpiry {
		return
	}
	for _, a := range r.appOrder {
		a.pendingRelease = nil // every live node has registered by now
	}
	for _, a := range r.appOrder {
		if at := a.current(); at != nil && at.lc.AwaitingAM && !a.done() {
			// Lost with its node while the RM was away: not the AM's fault.
			r.lifeStepLogged(lifecycle.AMLost{App: lifecycle.AppID(a.id), Exit: ExitAborted,
				Diagnostics: fmt.Sprintf("AM container %d of %s was not reported by any NodeManager within %v of the RM's restart",
					at.amWire, rpc.AttemptIDString(at.yid), r.cfg.NMExpiry)})
		}
	}
}
