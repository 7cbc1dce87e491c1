// Package webui serves the ResourceManager's web port (8088): YARN's REST
// API under /ws/v1/cluster, Loom's own views under /ws/v1/loom, the web UI
// at / and Prometheus metrics at /metrics.
//
// It holds no scheduler state. YARN's resources are answered by the same
// ApplicationClientProtocol handlers the RPC port serves (a REST call runs
// them as its user), so the two can never disagree; Loom's views come from
// the Backend's snapshots.
package webui

import (
	"context"
	"errors"

	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/workload"
)

// Backend is what the web server reads and changes. daemon/rm/server implements
// it.
type Backend interface {
	// ApplicationClientServer answers YARN's resources: apps, attempts,
	// nodes, queues, cluster metrics, new-application, submit and kill.
	// The context carries the REST caller as an rpc.CallInfo (see
	// rpc.WithCall), with User from the user.name query parameter.
	rpc.ApplicationClientServer

	// Info is the cluster's identity, for /ws/v1/cluster/info.
	Info() ClusterInfo
	// Scheduler is the scheduler's state now.
	Scheduler() Scheduler
	// SetAltruism sets P(Altruism) for the next decisions; who is logged
	// and kept in AltruismChanges. The context carries the caller, as for
	// the client protocol: the backend refuses one who is not an admin
	// with an rpc.ClassAccessControl error.
	SetAltruism(ctx context.Context, set AltruismSet, who string) error
	// AltruismChanges lists every change of P(Altruism), oldest first,
	// starting with the configured value.
	AltruismChanges() []AltruismChange
	// Timeline is the cluster sampled about once a second, oldest first,
	// over a bounded window.
	Timeline() []Sample
	// AppTimeline is one app's share and usage over the same window. An
	// unknown app id gives an error wrapping ErrNotFound.
	AppTimeline(appID string) ([]AppSample, error)
	// AppPlacements counts the containers granted to one app by where
	// each sits against its ask's locality, for any app the RM still
	// remembers, finished ones included. An unknown app id gives an
	// error wrapping ErrNotFound.
	AppPlacements(appID string) (Placements, error)
	// AppHistory is a DAG app's latest history (its DAG and tasks), as its
	// AM wrote it. An unknown app gives an error wrapping ErrNotFound; an
	// app whose AM wrote none (a stock YARN AM) gives ErrNoHistory.
	AppHistory(appID string) (*am.History, error)
	// RecordedJobs are the finished DAG jobs the RM recorded, as the
	// simulator replays them (am.History.Replay), in order of submission,
	// the first arriving at 0: what `loom tune --rm-history` replays.
	RecordedJobs() []*workload.Job
	// RESTWritesEnabled reports whether REST calls that change state
	// (submit, new-application, kill: every route but a GET, apart from
	// P(Altruism), which has the admin credential as its own check) are
	// served (loom.webapp.rest-write.enabled). When it is false they are
	// refused with a 403 before they reach the Backend.
	RESTWritesEnabled() bool
	// NodeVersions is each registered node's NodeManager version, by
	// node id (host:port), for /nodes' version.
	NodeVersions() map[string]string
	// RecentGrants are the scheduler's last grants, oldest first, for
	// /ws/v1/cluster/scheduler/activities.
	RecentGrants() []Grant
	// UpdateNodeResource sets what a node offers (YARN's
	// updateNodeResource), for an admin; it returns the node's new
	// capacity. An unknown node wraps ErrNotFound.
	UpdateNodeResource(ctx context.Context, node string, capacity fairness.Vector) (fairness.Vector, error)
	// ChangeNodeLabels is an admin's change to the cluster's node labels
	// (YARN's add, remove and replace calls); nothing changes on an
	// error. A caller who is not an admin gets an rpc.ClassAccessControl
	// error; with node labels off, YARN's refusal.
	ChangeNodeLabels(ctx context.Context, ch LabelChange) error
}

// LabelChange is one admin call on node labels: labels to add (name to
// exclusive), to remove, and nodes (host or host:port) to move to a label
// ("" for none). Op names the call, for refusals and the log.
type LabelChange struct {
	Op      string
	Add     map[string]bool
	Remove  []string
	Replace map[string]string
}

// Grant is one container the scheduler placed, and why.
type Grant struct {
	UnixMs    int64
	Node      string // host:port
	Container string
	App       string
	Queue     string
	User      string
	Priority  int
	// Kind is the ask's: DEFAULT (needed now) or ALTRUISTIC (yielded by
	// its AM, runnable early); Phase what paid for it: in-share (the
	// app's DRF share), over-share or leftover.
	Kind, Phase string
	Resource    fairness.Vector
}

var (
	// ErrNotFound: no such app.
	ErrNotFound = errors.New("not found")
	// ErrNoHistory: the app is not a DAG job, or its AM has not written
	// a history yet.
	ErrNoHistory = errors.New("no job history")
)

// ClusterInfo is the cluster's identity.
type ClusterInfo struct {
	ID          int64 // the cluster timestamp, as YARN's id
	StartedOnMs int64
	State       string // STARTED
	HAState     string // ACTIVE
	Version     string
	// LoginUser is who runs the RM (/userinfo's rmLoginUser).
	LoginUser string
	// StateStore names the store the RM keeps its apps in, as YARN's
	// rmStateStoreName does ("NullRMStateStore" with recovery off).
	StateStore string
	// HAZKState is the HA elector's ZooKeeper connection state; empty
	// without RM HA.
	HAZKState string
}

// Scheduler is the scheduler's state at one instant.
type Scheduler struct {
	Policy        string  // carbyne, drf, tetris or sjf
	PAltruism     float64 // P(Altruism)
	LeftoverOrder string  // srtf, efficiency-first or jct-first
	LeftoverCap   float64 // 0: none
	Recall        float64 // Carbyne's recall (rm.PolicyConfig.Recall); 0: off
	PromiseSlack  float64 // Carbyne's first-promise slack (rm.PolicyConfig.PromiseSlack); 0: off
	ShareGrowth   bool    // Carbyne's AMs plan against their projected share (rm.PolicyConfig.ShareGrowth)
	Capacity      fairness.Vector
	Used          fairness.Vector
	// Leftover is what the last decisions left after every app's share:
	// the pool ALTRUISTIC asks are served from.
	Leftover fairness.Vector
	Apps     []AppShare
	Queues   []QueueShare
	// Placements counts every container granted since the RM started
	// by where it sits against its ask's locality.
	Placements Placements
}

// Placements counts granted containers by where each sits against its
// ask's locality (rm.Placement), as delay scheduling placed it: on a
// host the ask named, on a rack it named, or elsewhere once it gave up
// waiting. Any counts those whose asks named no host or rack (an AM's
// ask, and every ask of an AM that does not ask for locality), for which
// none of the three applies.
type Placements struct {
	NodeLocal, RackLocal, OffSwitch int
	Any                             int
}

// WithLocality counts the containers whose asks named hosts or racks:
// what the node-local, rack-local and off-switch shares are of.
func (p Placements) WithLocality() int { return p.NodeLocal + p.RackLocal + p.OffSwitch }

// AppShare is one running app as the scheduler sees it.
type AppShare struct {
	ID    string
	Name  string
	Queue string
	User  string
	// Share is A_k, the app's DRF share, as a resource vector, and
	// DominantShare its dominant fraction of the cluster.
	Share         fairness.Vector
	DominantShare float64
	// Usage is what its containers hold now.
	Usage         fairness.Vector
	DominantUsage float64
	Demand        fairness.Vector
	RemainingWork float64
	// Pending asks, by kind, and what they ask for in all.
	PendingDefault    int
	PendingAltruistic int
	Pending           fairness.Vector
	Running           int // containers
	// Placements counts the containers it was granted (since the RM
	// started) by where each sits against its ask's locality.
	Placements Placements
	// Promise is its first promise as the core keeps it (Carbyne's
	// promise slack; rm.Core.Promise).
	Promise rm.PromiseState
}

// QueueShare is one queue's weight and usage.
//
// Without a queue tree (loom.queues) every queue is a leaf directly under
// root, Name is the name apps give, Path and Parent are empty and the
// fields of the tree below are zero (nothing reads them). With a tree (a
// Fair Scheduler allocation file or a Capacity Scheduler tree), the
// backend lists every queue, root first, parents before children, in
// tree order (a parent's children in the order they are shown); Name is
// then the queue's own, last name ("etl" of "root.eng.etl").
//
// With a tree, an app's queue (AppShare.Queue) and a queue's override of
// P(Altruism) (AltruismSet.Queue, AltruismChange.Queue) name a leaf as its
// scheduler shows apps' queues: by its Path under the Fair Scheduler's
// layout, by its Name under the Capacity Scheduler's (Config.SchedulerLayout).
type QueueShare struct {
	Name   string
	Weight float64
	// PAltruism is what the queue's apps are told: its override
	// (Override) or the cluster's. It is a leaf's; a parent's is ignored.
	PAltruism float64
	Override  bool
	// Usage is what the queue's apps' containers hold now, and Apps how
	// many unfinished apps it holds: a parent's, its whole subtree's.
	Usage fairness.Vector
	Apps  int

	// Path is the queue's full path ("root", "root.eng",
	// "root.eng.etl"); empty without a tree.
	Path string
	// Parent is the parent's full path: "" for root, and without a tree.
	Parent string
	// Leaf says apps run in the queue (it has no children).
	Leaf bool
	// Share is the queue's DRF share now, as DRF divides the cluster
	// down the tree (for a parent, what its subtree is given); Min its
	// guarantee (minResources, or its capacity) and Max its maximum
	// (maxResources, or its maximum capacity), both as amounts on today's
	// cluster, Max the whole cluster when the queue has none; Demand what
	// its apps ask for in all (for a parent, its subtree's).
	Share, Min, Max, Demand fairness.Vector
	// MaxRunningApps bounds the apps running in the queue at once
	// (maxRunningApps); 0 is unlimited.
	MaxRunningApps int
	// Policy is how the queue divides among its children or apps:
	// "fair", "drf" or "fifo" (the Fair Scheduler's schedulingPolicy).
	Policy string
	// SubmitACL and AdminACL are who may submit to the queue and who may
	// administer it (aclSubmitApps, aclAdministerApps; the Capacity
	// Scheduler's acl_submit_applications, acl_administer_queue), as
	// configured, in Hadoop's ACL syntax ("users groups", "*" for all);
	// empty when not configured.
	SubmitACL, AdminACL string
	// UserLimitFactor is a Capacity Scheduler leaf's user-limit-factor
	// (-1 for none); 0 for a Fair Scheduler queue.
	UserLimitFactor float64
	// NodeLabels are the node labels the queue may ask for ("*" for
	// all; empty with labels off); DefaultNodeLabel its apps' label when
	// they name none.
	NodeLabels       []string
	DefaultNodeLabel string
}

// AltruismChange is one setting of P(Altruism): the cluster's, or a
// queue's override (Queue set; Cleared when the override was removed).
type AltruismChange struct {
	UnixMs  int64
	P       float64
	Who     string // "config" for the configured value
	Queue   string
	Cleared bool
}

// AltruismSet is a change of P(Altruism): the cluster's (Queue empty), a
// queue's override of it, or the removal of that override (Clear).
type AltruismSet struct {
	P     float64
	Queue string
	Clear bool
}

// Sample is the cluster at one instant.
type Sample struct {
	UnixMs int64
	// Utilisation is used / capacity per resource kind, each in [0, 1].
	Utilisation fairness.Vector
	// Jain is Jain's index over the running apps' dominant usage
	// normalised by their dominant share (1 when there is at most one).
	Jain              float64
	RunningApps       int
	PendingDefault    int
	PendingAltruistic int
	// What altruism does now: Yielded is what the running apps leave of
	// their fair shares, neither holding it nor asking for it as
	// DEFAULT, and HeldOverShare what they hold beyond their shares (the
	// leftover handed out), each as a dominant share of the cluster;
	// AltruisticPerSec is containers granted for ALTRUISTIC asks per
	// second since the last sample; BehindShare counts the apps holding
	// less than their share while DEFAULT asks of theirs wait.
	Yielded          float64
	HeldOverShare    float64
	AltruisticPerSec float64
	BehindShare      int
}

// AppSample is one app at one instant: dominant share and usage.
type AppSample struct {
	UnixMs        int64
	DominantShare float64
	DominantUsage float64
}
