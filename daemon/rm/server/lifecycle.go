package server

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/lifecycle"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// The RM is a shell around two pure cores: the scheduling core (rm.Core)
// decides who gets what; the lifecycle core (lifecycle.Core) decides what
// an app, an attempt or a container becomes. This file feeds the second
// and carries out its actions: store writes, node clean-ups, AM launches,
// and the scheduling core's frees.

// lifeStep feeds the lifecycle core and carries out what it decided.
// Callers hold mu.
func (r *RM) lifeStep(ev lifecycle.Event) error {
	acts, err := r.life.Step(time.Now(), ev)
	if err != nil {
		return err
	}
	for _, act := range acts {
		r.carryOut(act)
	}
	// Records are retired once the step's actions are all carried out:
	// a container's Freed comes before its Completed, which still reads
	// its record.
	for len(r.retireDue) > 0 {
		a := r.retireDue[0]
		r.retireDue = r.retireDue[1:]
		switch {
		case r.apps[a.id] != a: // forgotten meanwhile
		case a.done():
			r.retire(a)
		default:
			r.retireEnded(a, r.cfg.MaxCompletedContainers)
		}
	}
	return nil
}

// lifeStepLogged is lifeStep for events the RM has checked: a refusal is
// a bug, logged.
func (r *RM) lifeStepLogged(ev lifecycle.Event) {
	if err := r.lifeStep(ev); err != nil {
		r.log.Error().Err(err).Str("event", fmt.Sprintf("%T", ev)).Msg("the lifecycle core refused an event")
	}
}

func (r *RM) carryOut(act lifecycle.Action) {
	switch act := act.(type) {
	case lifecycle.StoreApp:
		a := r.apps[rm.AppID(act.App.ID)]
		a.lc = act.App
		r.persistApp(a)
	case lifecycle.AttemptStarted:
		a := r.apps[rm.AppID(act.App.ID)]
		n := act.Attempt.N
		at := &attemptRec{n: n, yid: &pb.ApplicationAttemptIdProto{ApplicationId: a.yid, AttemptId: proto.Int32(n)}, lc: act.Attempt,
			lastSeen: time.Now()}
		a.attempts = append(a.attempts, at)
		a.lastResp = nil
		a.newConts, a.newKeys, a.completed = nil, nil, nil
		a.demand, a.work, a.critical = nil, 0, 0
		a.asks = map[askKey]int{}
		if !a.unmanaged() {
			a.asks[askKey{priority: amPriority, demand: a.amResource, kind: altruism.Default, label: a.amLabel}] = 1
		}
		r.pushAsks(a)
		r.persistAttempt(a, at)
	case lifecycle.AskAM:
		a := r.apps[rm.AppID(act.App.ID)]
		a.asks = map[askKey]int{{priority: amPriority, demand: a.amResource, kind: altruism.Default, label: a.amLabel}: 1}
		r.pushAsks(a)
	case lifecycle.LaunchAM:
		cr := r.conts[rm.ContainerID(act.Container.ID)]
		cr.lc = act.Container
		a, at := cr.app, cr.attempt
		at.amWire = cr.yid.GetId()
		if err := r.step(rm.AMContainer{Container: cr.c.ID}); err != nil {
			r.log.Error().Err(err).Msg("the core refused to mark an AM's container")
		}
		r.persistAttempt(a, at)
		a.asks, a.local = map[askKey]int{}, nil
		r.pushAsks(a)
		r.launches.Add(1)
		go r.launchAM(cr, r.launchRequest(cr))
	case lifecycle.Give:
		cr := r.conts[rm.ContainerID(act.Container.ID)]
		cr.lc = act.Container
		a, c := cr.app, cr.c
		key := askKey{priority: c.Priority, demand: c.Resource, kind: c.Kind, label: c.Label}
		a.newConts = append(a.newConts, cr)
		a.newKeys = append(a.newKeys, key)
		// The ask is outstanding for one container fewer, as in YARN's
		// AppSchedulingInfo: an AM that asks for the same count again (a
		// failed task's retry) is asking for more, not repeating itself.
		if a.asks[key] > 0 {
			a.asks[key]--
		}
		// So are its node's host and rack requests (YARN lowers them
		// with the "*" one).
		for _, name := range []string{cr.node.yid.GetHost(), cr.node.rack} {
			lk := localKey{priority: c.Priority, demand: c.Resource, name: name}
			if la, ok := a.local[lk]; ok && la.count > 0 {
				la.count--
				a.local[lk] = la
			}
		}
	case lifecycle.Stop:
		cr := r.conts[rm.ContainerID(act.Container.ID)]
		cr.node.mail.cleanupContainer(cr.yid)
	case lifecycle.Freed:
		r.freed(r.conts[rm.ContainerID(act.Container.ID)], act.Cause)
	case lifecycle.Completed:
		cr := r.conts[rm.ContainerID(act.Container.ID)]
		cr.app.completed = append(cr.app.completed, &pb.ContainerStatusProto{ContainerId: cr.yid,
			State: pb.ContainerStateProto_C_COMPLETE.Enum(), Diagnostics: proto.String(cr.lc.Diagnostics), ExitStatus: proto.Int32(cr.lc.Exit)})
	case lifecycle.AttemptEnded:
		a := r.apps[rm.AppID(act.App.ID)]
		at := a.attempts[act.Attempt.N-1]
		r.persistAttempt(a, at)
		r.log.Warn().Str("attempt", rpc.AttemptIDString(at.yid)).Int32("exit", at.lc.Exit).Bool("counts", at.lc.CountsAsFailure()).
			Str("why", at.lc.Diagnostics).Msg("attempt failed")
	case lifecycle.AppEnded:
		r.appEnded(r.apps[rm.AppID(act.App.ID)])
	}
}

// freed closes a container's record: its node and app no longer hold it,
// its usage is counted, and the scheduling core frees it (unless it did
// already, or frees the whole app at once).
func (r *RM) freed(cr *contRec, cause lifecycle.Cause) {
	id := cr.c.ID
	a := cr.app
	delete(a.live, id)
	delete(cr.node.conts, id)
	if cause != lifecycle.CauseApp {
		if _, live := r.core.Container(id); live {
			if err := r.step(rm.ContainerDone{Container: id}); err != nil {
				r.log.Error().Err(err).Int64("container", int64(id)).Msg("core refused a finished container")
			}
		}
	}
	r.metrics.ended(cr.lc.IsAM, cr.lc.Exit)
	held := cr.lc.Finished.Sub(cr.lc.Created).Seconds()
	a.memSec += cr.c.Resource[fairness.Memory] * held
	a.vcoreSec += cr.c.Resource[fairness.VCores] * held
	if !cr.lc.IsAM && cr.attempt != nil {
		cr.attempt.ended++
		if cause != lifecycle.CauseApp && !a.done() {
			r.maybeRetireEnded(a, cr.attempt)
		}
	}
}

// appEnded: the app reached a final state; its containers have ended.
func (r *RM) appEnded(a *appRec) {
	r.recordReplay(a)
	for n := range a.nodesUsed {
		n.mail.cleanupApp(a.yid)
	}
	if _, err := r.core.Usage(a.id); err == nil {
		if err := r.step(rm.AppRemoved{App: a.id}); err != nil {
			r.log.Error().Err(err).Str("app", rpc.AppIDString(a.yid)).Msg("core refused app removal")
		}
	}
	r.persistApp(a)
	if at := a.current(); at != nil {
		r.persistAttempt(a, at)
	}
	r.retireLater(a)
	r.forgetCompleted()
	r.log.Info().Str("app", rpc.AppIDString(a.yid)).Str("state", a.lc.State.String()).Str("final", a.lc.Final.String()).Msg("application done")
}

// retire drops the records of a finished app's ended task containers, as
// YARN's RM keeps none once a container completes (the timeline server
// has its history): an RM remembering yarn.resourcemanager.max-completed-
// applications apps of thousands of containers each would otherwise hold
// millions. What they held stays counted (memSec, vcoreSec, and
// loom_containers_completed_total); each attempt keeps its AM container
// for its report; getContainers and getContainerReport answer for the
// rest as YARN's RM does (none, and ContainerNotFoundException). A
// finished app takes no allocate call, so its last reply and anything
// waiting for its AM go too.
func (r *RM) retire(a *appRec) {
	r.retireEnded(a, 0)
	a.lastResp = nil
	a.newConts, a.newKeys, a.completed = nil, nil, nil
}

// retireEnded drops the records of an app's ended task containers but the
// newest keep of each attempt (lifecycle.Retire), from the lifecycle core
// and the RM's indexes alike.
func (r *RM) retireEnded(a *appRec, keep int) {
	r.lifeStepLogged(lifecycle.Retire{App: lifecycle.AppID(a.id), Keep: keep})
	for _, at := range a.attempts {
		kept := at.conts[:0]
		for _, cr := range at.conts {
			if _, ok := r.life.Container(lifecycle.ContainerID(cr.c.ID)); ok {
				kept = append(kept, cr)
				continue
			}
			delete(r.conts, cr.c.ID)
			delete(cr.node.conts, cr.c.ID)
			delete(a.byWire, wireKey{cr.yid.GetAppAttemptId().GetAttemptId(), cr.yid.GetId()})
		}
		clear(at.conts[len(kept):])
		at.conts = kept
		at.ended = 0
		for _, cr := range kept {
			if !cr.lc.IsAM && cr.lc.State == lifecycle.ContainerComplete {
				at.ended++
			}
		}
	}
}

// maybeRetireEnded bounds the ended task containers a running attempt
// keeps records of to loom.resourcemanager.app.max-completed-containers:
// a long-running app (a session, a service, a DAG of a million tasks)
// would otherwise grow the RM's memory with every container it ever had.
// They are dropped in batches, oldest first, when twice as many (and at
// least 64) have ended, so that an app pays once per batch, not per
// container.
func (r *RM) maybeRetireEnded(a *appRec, at *attemptRec) {
	if at.ended > max(2*r.cfg.MaxCompletedContainers, 64) {
		r.retireLater(a)
	}
}

// retireLater retires a's records at the end of the lifecycle step under
// way (lifeStep).
func (r *RM) retireLater(a *appRec) {
	if !slices.Contains(r.retireDue, a) {
		r.retireDue = append(r.retireDue, a)
	}
}

// endContainer ends a container the RM knows, if it has not ended:
// stop also tells its node to stop it. Callers hold mu.
func (r *RM) endContainer(id rm.ContainerID, exit int32, diag string, stop bool) {
	cr, ok := r.conts[id]
	if !ok || cr.lc == nil || cr.lc.State == lifecycle.ContainerComplete {
		return
	}
	r.lifeStepLogged(lifecycle.Ended{Container: lifecycle.ContainerID(id), Exit: exit, Diagnostics: diag, Stop: stop})
}

// maxAttempts is how often an app may fail, and which setting says so:
// its own max_app_attempts when in [1, the cluster's], else the
// cluster's yarn.resourcemanager.am.max-attempts.
func (r *RM) maxAttempts(a *appRec) (int, string) {
	sc := a.ctx
	if n := int(sc.GetMaxAppAttempts()); sc.MaxAppAttempts != nil && n >= 1 && n < r.cfg.MaxAttempts {
		return n, "the app's max_app_attempts"
	}
	return r.cfg.MaxAttempts, "the maximum, yarn.resourcemanager.am.max-attempts"
}

// lifecycleApp is an app as the lifecycle core starts it.
func (r *RM) lifecycleApp(a *appRec) *lifecycle.App {
	max, why := r.maxAttempts(a)
	return &lifecycle.App{ID: lifecycle.AppID(a.id), Name: rpc.AppIDString(a.yid), Unmanaged: a.unmanaged(),
		KeepContainers: a.keepsContainers(), MaxAttempts: max, MaxWhy: why,
		FailuresValidity: time.Duration(a.ctx.GetAttemptFailuresValidityInterval()) * time.Millisecond}
}

// The lifecycle's states as YARN's protos name them, and back.

func (a *appRec) state() pb.YarnApplicationStateProto {
	return [...]pb.YarnApplicationStateProto{pb.YarnApplicationStateProto_SUBMITTED, pb.YarnApplicationStateProto_ACCEPTED,
		pb.YarnApplicationStateProto_RUNNING, pb.YarnApplicationStateProto_FINISHED, pb.YarnApplicationStateProto_FAILED,
		pb.YarnApplicationStateProto_KILLED}[a.lc.State]
}

func (a *appRec) final() pb.FinalApplicationStatusProto {
	return [...]pb.FinalApplicationStatusProto{pb.FinalApplicationStatusProto_APP_UNDEFINED, pb.FinalApplicationStatusProto_APP_SUCCEEDED,
		pb.FinalApplicationStatusProto_APP_FAILED, pb.FinalApplicationStatusProto_APP_KILLED, pb.FinalApplicationStatusProto_APP_ENDED}[a.lc.Final]
}

func (at *attemptRec) state() pb.YarnApplicationAttemptStateProto {
	return [...]pb.YarnApplicationAttemptStateProto{pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_SCHEDULED,
		pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_ALLOCATED, pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_LAUNCHED,
		pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_RUNNING, pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FINISHED,
		pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED, pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_KILLED}[at.lc.State]
}

func (cr *contRec) state() pb.ContainerStateProto {
	return [...]pb.ContainerStateProto{pb.ContainerStateProto_C_NEW, pb.ContainerStateProto_C_RUNNING,
		pb.ContainerStateProto_C_COMPLETE}[cr.lc.State]
}

// storedAppState reads a stored app state (YARN's name); the states
// before ACCEPTED are all SUBMITTED to the lifecycle.
func storedAppState(name string) (lifecycle.AppState, bool) {
	switch v, ok := pb.YarnApplicationStateProto_value[name]; {
	case !ok:
		return 0, false
	case v <= int32(pb.YarnApplicationStateProto_SUBMITTED):
		return lifecycle.AppSubmitted, true
	default:
		return lifecycle.AppState(v - int32(pb.YarnApplicationStateProto_SUBMITTED)), true
	}
}

func storedFinal(name string) (lifecycle.FinalStatus, bool) {
	v, ok := pb.FinalApplicationStatusProto_value[name]
	if !ok || v > int32(pb.FinalApplicationStatusProto_APP_ENDED) {
		return 0, false
	}
	return lifecycle.FinalStatus(v), true
}

// storedAttemptState reads a stored attempt state (YARN's name).
func storedAttemptState(name string) (lifecycle.AttemptState, bool) {
	switch name {
	case "APP_ATTEMPT_NEW", "APP_ATTEMPT_SUBMITTED", "APP_ATTEMPT_SCHEDULED":
		return lifecycle.AttemptScheduled, true
	case "APP_ATTEMPT_ALLOCATED_SAVING", "APP_ATTEMPT_ALLOCATED":
		return lifecycle.AttemptAllocated, true
	case "APP_ATTEMPT_LAUNCHED":
		return lifecycle.AttemptLaunched, true
	case "APP_ATTEMPT_RUNNING", "APP_ATTEMPT_FINISHING":
		return lifecycle.AttemptRunning, true
	case "APP_ATTEMPT_FINISHED":
		return lifecycle.AttemptFinished, true
	case "APP_ATTEMPT_FAILED":
		return lifecycle.AttemptFailed, true
	case "APP_ATTEMPT_KILLED":
		return lifecycle.AttemptKilled, true
	}
	return 0, false
}

// amID is the attempt's AM container's core id while the lifecycle knows
// it, 0 otherwise.
func (at *attemptRec) amID() rm.ContainerID {
	if at.lc.AM == nil {
		return 0
	}
	return rm.ContainerID(at.lc.AM.ID)
}

func first[T, U any](t T, _ U) T { return t }
