package server

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// metrics are the RM's Prometheus series. Counters and the histogram are
// updated as things happen; the gauges are read from the RM's state at
// scrape time (collect), so they are never stale.
type metrics struct {
	reg         *prometheus.Registry
	allocations *prometheus.CounterVec // by kind
	placements  *prometheus.CounterVec // by locality: NODE_LOCAL, RACK_LOCAL, OFF_SWITCH, ANY
	asks        *prometheus.CounterVec // by kind: asks received
	decision    prometheus.Histogram
	preempted   *prometheus.CounterVec // by rm.PreemptCause
	completed   *prometheus.CounterVec // by container (AM or task) and exit status
	// rpcQueue and rpcProcessing time the RPC calls the RM's handlers
	// ran, by protocol and method (rpc.ServerOptions.Observe).
	rpcQueue, rpcProcessing *prometheus.HistogramVec
	// allocCount is the sum of allocations, for the per-second rate;
	// altruisticCount those for ALTRUISTIC asks.
	allocCount, altruisticCount float64

	appsDesc, pendingDesc, leftoverDesc, pDesc, rateDesc, nodesDesc *prometheus.Desc
	yieldedDesc, overShareDesc, belowShareDesc, lateDesc            *prometheus.Desc
	r                                                               *RM
}

func newMetrics(r *RM) *metrics {
	m := &metrics{r: r, reg: prometheus.NewRegistry()}
	m.allocations = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loom_allocations_total",
		Help: "Containers allocated to apps (AM containers included), by the kind of ask they served."}, []string{"kind"})
	m.placements = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loom_container_placements_total",
		Help: "Containers allocated, by how they sit against their asks' host and rack requests: NODE_LOCAL, RACK_LOCAL, OFF_SWITCH, or ANY for asks that named none."}, []string{"locality"})
	m.asks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loom_asks_total",
		Help: "Containers asked for by AMs (increases of outstanding asks), by kind."}, []string{"kind"})
	m.preempted = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loom_containers_preempted_total",
		Help: "Containers the RM took back, by cause: queue_starved (for a starved queue, after its AM's grace period), recall_below_share (leftover-paid containers recalled for an app below its share whose asks waited), recall_late_for_promise (the same for an app late for its first promise, which takes its whole deficit at once)."},
		[]string{"cause"})
	m.completed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loom_containers_completed_total",
		Help: "Containers that ended, by container (AM or TASK) and exit status: YARN's ContainerExitStatus name (SUCCESS, ABORTED, PREEMPTED, KILLED_BY_APPMASTER, ...), or NONZERO for the process's own exit code. The RM keeps no record of a finished app's task containers; this is their count."},
		[]string{"container", "exit_status"})
	m.decision = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "loom_heartbeat_decision_seconds",
		Help:    "Time the scheduler took to decide on one NodeManager heartbeat.",
		Buckets: prometheus.ExponentialBuckets(10e-6, 2, 14)}) // 10 µs to 82 ms
	// Hadoop's RPC metrics (RpcQueueTime, RpcProcessingTime), per method.
	rpcBuckets := prometheus.ExponentialBuckets(25e-6, 2, 19) // 25 µs to 6.6 s
	m.rpcQueue = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "loom_rpc_queue_seconds",
		Help:    "RPC calls the RM ran, by protocol and method: time from the call being read whole to its handler starting (Hadoop's RpcQueueTime). Time in the socket before the RM reads the call is not counted.",
		Buckets: rpcBuckets}, []string{"protocol", "method"})
	m.rpcProcessing = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "loom_rpc_processing_seconds",
		Help:    "RPC calls the RM ran, by protocol and method: time in the handler, the reply's encoding included (Hadoop's RpcProcessingTime).",
		Buckets: rpcBuckets}, []string{"protocol", "method"})
	m.appsDesc = prometheus.NewDesc("loom_apps", "Applications the RM knows, by YARN state.", []string{"state"}, nil)
	m.pendingDesc = prometheus.NewDesc("loom_pending_asks", "Containers asked for and not yet allocated, by kind.", []string{"kind"}, nil)
	m.leftoverDesc = prometheus.NewDesc("loom_leftover", "Resources no container holds (the leftover pool ALTRUISTIC asks are served from), by resource.", []string{"resource"}, nil)
	m.pDesc = prometheus.NewDesc("loom_p_altruism", "P(Altruism): the probability that an AM yields what it does not need now.", nil, nil)
	m.rateDesc = prometheus.NewDesc("loom_allocations_per_second", "Containers allocated per second over the last timeline sample.", nil, nil)
	m.nodesDesc = prometheus.NewDesc("loom_nodes", "NodeManagers by state.", []string{"state"}, nil)
	// What altruism is doing now.
	m.yieldedDesc = prometheus.NewDesc("loom_yielded", "Resources within running apps' fair shares that they neither hold nor ask for as DEFAULT: what they yield now, by resource.", []string{"resource"}, nil)
	m.overShareDesc = prometheus.NewDesc("loom_held_over_share", "Resources running apps hold beyond their fair shares: leftover handed out, by resource.", []string{"resource"}, nil)
	m.belowShareDesc = prometheus.NewDesc("loom_apps_waiting_below_share", "Running apps that hold less than their fair share of their dominant resource while DEFAULT asks of theirs wait: apps behind their fair-share pace.", nil, nil)
	m.lateDesc = prometheus.NewDesc("loom_apps_late_for_first_promise", "Running apps whose fluid finish lies past 1 + loom.scheduler.promise-slack times the span they were first promised: they move up the leftover's order.", nil, nil)
	for _, k := range []altruism.AskKind{altruism.Default, altruism.Altruistic} {
		m.allocations.WithLabelValues(k.String())
		m.asks.WithLabelValues(k.String())
	}
	for _, p := range []rm.Placement{rm.Anywhere, rm.NodeLocal, rm.RackLocal, rm.OffSwitch} {
		m.placements.WithLabelValues(p.String())
	}
	for _, c := range []string{"AM", "TASK"} {
		m.completed.WithLabelValues(c, exitStatusName(0))
	}
	for _, c := range []rm.PreemptCause{rm.ForQueue, rm.RecallBelowShare, rm.RecallLate} {
		m.preempted.WithLabelValues(c.String())
	}
	m.reg.MustRegister(m.allocations, m.placements, m.asks, m.decision, m.preempted, m.completed, m.rpcQueue, m.rpcProcessing, m,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observeRPC times a call an RM handler ran (rpc.ServerOptions.Observe);
// the protocol is named as its Java interface, without its package and
// "PB" suffix (ApplicationClientProtocol).
func (m *metrics) observeRPC(protocol, method string, queued, processing time.Duration) {
	protocol = strings.TrimSuffix(protocol[strings.LastIndexByte(protocol, '.')+1:], "PB")
	m.rpcQueue.WithLabelValues(protocol, method).Observe(queued.Seconds())
	m.rpcProcessing.WithLabelValues(protocol, method).Observe(processing.Seconds())
}

// allocated counts a container. Callers hold the RM's mu.
func (m *metrics) allocated(k altruism.AskKind, p rm.Placement) {
	m.allocations.WithLabelValues(k.String()).Inc()
	m.placements.WithLabelValues(p.String()).Inc()
	m.allocCount++
	if k == altruism.Altruistic {
		m.altruisticCount++
	}
}

// ended counts a container that ended with exit. Callers hold the RM's mu.
func (m *metrics) ended(am bool, exit int32) {
	c := "TASK"
	if am {
		c = "AM"
	}
	m.completed.WithLabelValues(c, exitStatusName(exit)).Inc()
}

// exitStatusName is YARN's ContainerExitStatus constant for exit, or
// NONZERO for a process's own exit code: a label with few values.
func exitStatusName(exit int32) string {
	switch exit {
	case ExitSuccess:
		return "SUCCESS"
	case ExitInvalid:
		return "INVALID"
	case ExitAborted:
		return "ABORTED"
	case ExitDisksFailed:
		return "DISKS_FAILED"
	case ExitPreempted:
		return "PREEMPTED"
	case -103:
		return "KILLED_EXCEEDED_VMEM"
	case -104:
		return "KILLED_EXCEEDED_PMEM"
	case ExitKilledByAM:
		return "KILLED_BY_APPMASTER"
	case ExitKilledByRM:
		return "KILLED_BY_RESOURCEMANAGER"
	case ExitKilledAppDone:
		return "KILLED_AFTER_APP_COMPLETION"
	}
	return "NONZERO"
}

// altruismNow is what altruism does now, over the running apps: what they
// yield (within their shares, neither held nor asked for as DEFAULT), what
// they hold beyond their shares, and how many hold less than their share
// of their dominant resource while DEFAULT asks of theirs wait. Callers
// hold the RM's mu.
func (r *RM) altruismNow() (yielded, over fairness.Vector, below int) {
	capacity := r.core.Capacity()
	for _, a := range r.appOrder {
		if a.done() {
			continue
		}
		var asked fairness.Vector
		for k, n := range a.asks {
			if k.kind == altruism.Default {
				asked = asked.Add(k.demand.Scale(float64(n)))
			}
		}
		share, err1 := r.core.Share(a.id)
		usage, err2 := r.core.Usage(a.id)
		if err1 != nil || err2 != nil {
			continue
		}
		yielded = yielded.Add(share.Sub(usage).Sub(asked).ClampZero())
		over = over.Add(usage.Sub(share).ClampZero())
		if d := dominant(share, capacity); asked != (fairness.Vector{}) && share[d] > 0 && usage[d] < 0.99*share[d] {
			below++
		}
	}
	return yielded, over, below
}

// lateApps counts the running apps late for their first promise
// (rm.Core.Promise). Callers hold the RM's mu.
func (r *RM) lateApps() int {
	n := 0
	for _, a := range r.appOrder {
		if a.done() {
			continue
		}
		if p, err := r.core.Promise(a.id); err == nil && p.Late {
			n++
		}
	}
	return n
}

func (m *metrics) observeDecision(d time.Duration) { m.decision.Observe(d.Seconds()) }

// Describe and Collect make the state gauges a collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.appsDesc, m.pendingDesc, m.leftoverDesc, m.pDesc, m.rateDesc, m.nodesDesc,
		m.yieldedDesc, m.overShareDesc, m.belowShareDesc, m.lateDesc} {
		ch <- d
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	r := m.r
	r.mu.Lock()
	apps := map[string]int{}
	for _, s := range pb.YarnApplicationStateProto_name {
		apps[s] = 0
	}
	var pending [2]int
	for _, a := range r.appOrder {
		apps[a.state().String()]++
		if a.done() {
			continue
		}
		for k, n := range a.asks {
			pending[k.kind] += n
		}
	}
	yielded, over, below := r.altruismNow()
	late := r.lateApps()
	nodes := map[string]int{}
	for _, n := range r.nodes {
		nodes[n.state.String()]++
	}
	left := r.core.Capacity().Sub(r.core.Used()).ClampZero()
	p := r.core.PAltruism()
	rate := r.timeline.rate
	r.mu.Unlock()
	for s, n := range apps {
		ch <- prometheus.MustNewConstMetric(m.appsDesc, prometheus.GaugeValue, float64(n), s)
	}
	for _, k := range []altruism.AskKind{altruism.Default, altruism.Altruistic} {
		ch <- prometheus.MustNewConstMetric(m.pendingDesc, prometheus.GaugeValue, float64(pending[k]), k.String())
	}
	for k := fairness.Kind(0); k < fairness.NumKinds; k++ {
		ch <- prometheus.MustNewConstMetric(m.leftoverDesc, prometheus.GaugeValue, left[k], k.String())
	}
	for s, n := range nodes {
		ch <- prometheus.MustNewConstMetric(m.nodesDesc, prometheus.GaugeValue, float64(n), s)
	}
	for k := fairness.Kind(0); k < fairness.NumKinds; k++ {
		ch <- prometheus.MustNewConstMetric(m.yieldedDesc, prometheus.GaugeValue, yielded[k], k.String())
		ch <- prometheus.MustNewConstMetric(m.overShareDesc, prometheus.GaugeValue, over[k], k.String())
	}
	ch <- prometheus.MustNewConstMetric(m.belowShareDesc, prometheus.GaugeValue, float64(below))
	ch <- prometheus.MustNewConstMetric(m.lateDesc, prometheus.GaugeValue, float64(late))
	ch <- prometheus.MustNewConstMetric(m.pDesc, prometheus.GaugeValue, p)
	ch <- prometheus.MustNewConstMetric(m.rateDesc, prometheus.GaugeValue, rate)
}

// dominant is the resource kind on which v is the largest share of
// capacity.
func dominant(v, capacity fairness.Vector) fairness.Kind {
	best, at := -1.0, fairness.Kind(0)
	for k := fairness.Kind(0); k < fairness.NumKinds; k++ {
		if capacity[k] > 0 && v[k]/capacity[k] > best {
			best, at = v[k]/capacity[k], k
		}
	}
	return at
}
