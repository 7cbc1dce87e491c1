package server

import (
	"slices"
	"time"

	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/internal/queueconf"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// Preemption, as YARN's schedulers configure it: the Fair Scheduler's
// yarn.scheduler.fair.preemption (each queue's timeouts and threshold
// from the allocation file, yarn.scheduler.fair.waitTimeBeforeKill the
// grace), or the Capacity Scheduler's preemption monitor
// (yarn.resourcemanager.scheduler.monitor.enable: a leaf below its
// guaranteed capacity for one monitoring_interval is starved, and
// max_wait_before_kill is the grace). The core picks the containers
// (rm/preemption.go); the RM names them to their AMs in a
// PreemptionMessage (a strict contract, as the Fair Scheduler sends) at
// every allocate until they end, and kills those still running after
// the grace, with exit status PREEMPTED (-102).

const (
	keyFairPreemption  = "yarn.scheduler.fair.preemption"
	keyFairWaitKill    = "yarn.scheduler.fair.waitTimeBeforeKill"
	keyMonitorEnable   = "yarn.resourcemanager.scheduler.monitor.enable"
	keyCSMaxWaitKill   = "yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill"
	keyCSMonitorPeriod = "yarn.resourcemanager.monitor.capacity.preemption.monitoring_interval"
)

// preemptionConfig reads whether and how the RM preempts, for a tree.
func preemptionConfig(c *hadoopconf.Conf, t *queueconf.Tree) (*rm.PreemptionConfig, time.Duration, error) {
	if t == nil {
		return nil, 0, nil
	}
	on, grace, period := keyFairPreemption, keyFairWaitKill, ""
	if t.Kind == queueconf.KindCapacity {
		on, grace, period = keyMonitorEnable, keyCSMaxWaitKill, keyCSMonitorPeriod
	}
	enabled, err := c.Bool(on)
	if err != nil || !enabled {
		return nil, 0, err
	}
	g, err := c.PositiveMillis(grace)
	if err != nil {
		return nil, 0, err
	}
	var starve time.Duration
	if period != "" {
		if starve, err = c.PositiveMillis(period); err != nil {
			return nil, 0, err
		}
	}
	return &rm.PreemptionConfig{Grace: g}, starve, nil
}

// preemptionTimes are a Fair Scheduler queue's starvation settings for
// the core, from the file (a Capacity Scheduler leaf is starved below its
// guarantee after one monitoring interval: coreQueues).
func preemptionTimes(q *queueconf.Queue) rm.PreemptionTimes {
	return rm.PreemptionTimes{MinShareTimeout: q.MinSharePreemptionTimeout, FairShareTimeout: q.FairSharePreemptionTimeout,
		FairShareThreshold: q.FairSharePreemptionThreshold, NoPreemptFrom: !q.AllowPreemptionFrom}
}

// preemptionAsked records a container to be named to its AM. Callers
// hold mu.
func (r *RM) preemptionAsked(a rm.PreemptionAsked) {
	cr := r.conts[a.Container.ID]
	if cr == nil {
		return
	}
	if cr.app.preempting == nil {
		cr.app.preempting = map[rm.ContainerID]bool{}
	}
	cr.app.preempting[a.Container.ID] = true
	r.log.Info().Str("container", rpc.ContainerIDString(cr.yid)).Dur("grace", a.Deadline-r.now()).Msg("container asked back from its AM for a starved queue, or for a node label that lent it")
}

// preempted kills a container the core took back. Callers hold mu.
func (r *RM) preempted(a rm.Preempted) {
	cr := r.conts[a.Container.ID]
	if cr == nil {
		return
	}
	delete(cr.app.preempting, a.Container.ID)
	r.metrics.preempted.WithLabelValues(a.Cause.String()).Inc()
	r.log.Info().Str("container", rpc.ContainerIDString(cr.yid)).Str("reason", a.Reason).Msg("container preempted")
	r.endContainer(a.Container.ID, ExitPreempted, "Container preempted by scheduler: "+a.Reason, true)
}

// preemptionMessage names the app's containers still to give back, or
// nil. Callers hold mu.
func (r *RM) preemptionMessage(a *appRec) *pb.PreemptionMessageProto {
	var ids []rm.ContainerID
	for id := range a.preempting {
		if _, running := r.core.Container(id); r.conts[id] == nil || !running {
			delete(a.preempting, id)
			continue
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	strict := &pb.StrictPreemptionContractProto{}
	for _, id := range ids {
		strict.Container = append(strict.Container, &pb.PreemptionContainerProto{Id: r.conts[id].yid})
	}
	return &pb.PreemptionMessageProto{StrictContract: strict}
}
