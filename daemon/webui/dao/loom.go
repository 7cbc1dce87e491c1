package dao

import "github.com/loomrm/loom/fairness"

// Loom's own views, under /ws/v1/loom. Resource vectors are objects keyed
// by YARN's resource type names ("memory-mb", "vcores", "loom.io/disk",
// ...), as fairness.Vector writes them. A DAG and its tasks keep the
// names of the AM's history file.

// DAG is /ws/v1/loom/apps/{appid}/dag.
type DAG struct {
	App           string  `json:"app"`
	Job           string  `json:"job"`
	Attempt       int     `json:"attempt"`
	State         string  `json:"state"`
	Diagnostics   string  `json:"diagnostics,omitempty"`
	StartUnixMs   int64   `json:"start_unix_ms"`
	UpdatedUnixMs int64   `json:"updated_unix_ms"`
	Stages        []Stage `json:"stages"`
}

// Stage is one stage of a DAG and how far it got.
type Stage struct {
	Name       string          `json:"name"`
	Tasks      int             `json:"tasks"`
	Parents    []string        `json:"parents"` // never null
	DurationMs int64           `json:"duration_ms"`
	Demand     fairness.Vector `json:"demand"`
	State      string          `json:"state"` // WAITING, RUNNABLE, RUNNING, SUCCEEDED or FAILED
	Succeeded  int             `json:"succeeded"`
	Running    int             `json:"running"`
	Failed     int             `json:"failed"` // failed attempts
}

// Tasks is /ws/v1/loom/apps/{appid}/tasks.
type Tasks struct {
	App         string `json:"app"`
	StartUnixMs int64  `json:"start_unix_ms"`
	Tasks       []Task `json:"tasks"`
}

// Task is one task attempt. Times count from the AM's start (StartMs,
// EndMs) and from the epoch (StartUnixMs, EndUnixMs); the ends are 0 while
// it runs.
type Task struct {
	Stage       string `json:"stage"`
	Task        int    `json:"task"`
	Attempt     int    `json:"attempt"`
	Container   int64  `json:"container"`
	Node        string `json:"node"`
	StartMs     int64  `json:"start_ms"`
	EndMs       int64  `json:"end_ms"`
	StartUnixMs int64  `json:"start_unix_ms"`
	EndUnixMs   int64  `json:"end_unix_ms"`
	Kind        string `json:"kind"`  // DEFAULT or ALTRUISTIC
	State       string `json:"state"` // RUNNING, SUCCEEDED or FAILED
}

// Scheduler is /ws/v1/loom/scheduler.
type Scheduler struct {
	Policy        string  `json:"policy"`
	PAltruism     float64 `json:"pAltruism"`
	LeftoverOrder string  `json:"leftoverOrder"`
	LeftoverCap   float64 `json:"leftoverCap"`
	Recall        float64 `json:"recall"`
	PromiseSlack  float64 `json:"promiseSlack"`
	// ShareGrowth: Carbyne's AMs plan against their share as it is
	// projected to grow while other apps finish.
	ShareGrowth bool            `json:"shareGrowth"`
	Capacity    fairness.Vector `json:"capacity"`
	Used        fairness.Vector `json:"used"`
	Leftover    fairness.Vector `json:"leftover"`
	Apps        []AppShare      `json:"apps"`
	Queues      []QueueShare    `json:"queues"`
	// RESTWrites says whether REST calls may change state
	// (loom.webapp.rest-write.enabled, or authenticated callers).
	RESTWrites bool `json:"restWrites"`
	// Placements are every container granted since the RM started, by
	// where it sits against its ask's locality.
	Placements Placements `json:"placements"`
}

// Placements counts granted containers by where each sits against its
// ask's locality: nodeLocal on a host the ask named, rackLocal on a rack
// it named, offSwitch elsewhere (delay scheduling gave up waiting), any
// when the ask named no host or rack (an AM's, and every ask of an AM
// that does not ask for locality). The shares are of withLocality, the
// containers whose asks named hosts or racks, as the simulator's are of
// the tasks that read an input; all three are 0 when withLocality is 0,
// since then locality does not apply.
type Placements struct {
	NodeLocal      int     `json:"nodeLocal"`
	RackLocal      int     `json:"rackLocal"`
	OffSwitch      int     `json:"offSwitch"`
	Any            int     `json:"any"`
	WithLocality   int     `json:"withLocality"`
	NodeLocalShare float64 `json:"nodeLocalShare"`
	RackLocalShare float64 `json:"rackLocalShare"`
	OffSwitchShare float64 `json:"offSwitchShare"`
}

// AppPlacements is /ws/v1/loom/apps/{appid}/placements: one app's
// containers by placement, finished apps' included.
type AppPlacements struct {
	App        string     `json:"app"`
	Placements Placements `json:"placements"`
}

// AppShare is one running app as the scheduler sees it.
type AppShare struct {
	ID                string          `json:"id"`
	Name              string          `json:"name"`
	Queue             string          `json:"queue"`
	User              string          `json:"user"`
	Share             fairness.Vector `json:"share"`
	DominantShare     float64         `json:"dominantShare"`
	Usage             fairness.Vector `json:"usage"`
	DominantUsage     float64         `json:"dominantUsage"`
	Demand            fairness.Vector `json:"demand"`
	RemainingWork     float64         `json:"remainingWork"`
	PendingDefault    int             `json:"pendingDefault"`
	PendingAltruistic int             `json:"pendingAltruistic"`
	Running           int             `json:"running"`
	Placements        Placements      `json:"placements"`
	// Promise is the app's first promise (Carbyne's promise slack), when
	// the RM keeps one for it.
	Promise *Promise `json:"promise,omitempty"`
}

// Promise is an app's first promise: the fluid span it was promised when
// it first had a share, its fluid finish now measured from that instant,
// the line past which it is late (1 + promise slack times the span), all
// in milliseconds, and whether it is late (it then moves up the
// leftover's order).
type Promise struct {
	SpanMs   int64 `json:"spanMs"`
	FinishMs int64 `json:"finishMs"`
	LimitMs  int64 `json:"limitMs"`
	Late     bool  `json:"late"`
}

// QueueShare is one queue's weight and usage. With a queue tree every
// queue is listed, root first, parents before their children, and the
// fields after Apps say where it sits and what it is given; without one
// they are left out.
type QueueShare struct {
	Name      string          `json:"name"`
	Weight    float64         `json:"weight"`
	PAltruism float64         `json:"pAltruism"`
	Override  bool            `json:"pAltruismOverride"`
	Usage     fairness.Vector `json:"usage"`
	Apps      int             `json:"apps"`

	// Path is the queue's full path ("root.eng.etl"), Parent its
	// parent's ("" for root), Depth how far below root it is (root 0).
	Path   string `json:"path,omitempty"`
	Parent string `json:"parent,omitempty"`
	Depth  int    `json:"depth,omitempty"`
	Leaf   bool   `json:"leaf,omitempty"`
	// Queue is the name apps and overrides of P(Altruism) give a leaf
	// (the Fair Scheduler's full path, the Capacity Scheduler's own
	// name).
	Queue string `json:"queue,omitempty"`
	// Share is its DRF share now, Min its guarantee, Max its maximum (the
	// cluster when it has none), Demand what its apps ask for.
	Share          *fairness.Vector `json:"share,omitempty"`
	Min            *fairness.Vector `json:"min,omitempty"`
	Max            *fairness.Vector `json:"max,omitempty"`
	Demand         *fairness.Vector `json:"demand,omitempty"`
	MaxRunningApps int              `json:"maxRunningApps,omitempty"` // 0: unlimited
	Policy         string           `json:"policy,omitempty"`         // fair, drf or fifo
	SubmitACL      string           `json:"submitACL,omitempty"`
	AdminACL       string           `json:"adminACL,omitempty"`
}

// Timeline is /ws/v1/loom/timeline: the cluster about once a second,
// oldest first.
type Timeline struct {
	Samples []Sample `json:"samples"`
}

// Sample is the cluster at one instant.
type Sample struct {
	UnixMs            int64           `json:"unixMs"`
	Utilisation       fairness.Vector `json:"utilisation"` // each in [0, 1]
	Jain              float64         `json:"jain"`
	RunningApps       int             `json:"runningApps"`
	PendingDefault    int             `json:"pendingDefault"`
	PendingAltruistic int             `json:"pendingAltruistic"`
	Yielded           float64         `json:"yielded"`       // dominant share of the cluster
	HeldOverShare     float64         `json:"heldOverShare"` // dominant share of the cluster
	AltruisticPerSec  float64         `json:"altruisticPerSec"`
	BehindShare       int             `json:"behindShare"`
}

// AppTimeline is /ws/v1/loom/apps/{appid}/timeline.
type AppTimeline struct {
	App     string      `json:"app"`
	Samples []AppSample `json:"samples"`
}

// AppSample is one app's dominant share and usage at one instant.
type AppSample struct {
	UnixMs        int64   `json:"unixMs"`
	DominantShare float64 `json:"dominantShare"`
	DominantUsage float64 `json:"dominantUsage"`
}

// Altruism is /ws/v1/loom/scheduler/altruism: P(Altruism) now and every
// change of it, oldest first.
type Altruism struct {
	P float64 `json:"p"`
	// Queues are the queues' overrides of P.
	Queues  map[string]float64 `json:"queues"`
	Changes []AltruismChange   `json:"changes"`
}

// AltruismChange is one setting of P(Altruism), the cluster's or a
// queue's (queue set; cleared when its override was removed).
type AltruismChange struct {
	UnixMs  int64   `json:"unixMs"`
	P       float64 `json:"p"`
	Who     string  `json:"who"`
	Queue   string  `json:"queue,omitempty"`
	Cleared bool    `json:"cleared,omitempty"`
}

// AltruismUpdate is the body of PUT /ws/v1/loom/scheduler/altruism:
// {"p": 0.5} for the cluster, {"p": 0.5, "queue": "etl"} for a queue's
// override, {"queue": "etl", "clear": true} to remove it.
type AltruismUpdate struct {
	P     *float64 `json:"p"`
	Queue string   `json:"queue"`
	Clear bool     `json:"clear"`
}

// AppLogs is /ws/v1/loom/apps/{appid}/logs: an app's aggregated log
// files, or why there are none.
type AppLogs struct {
	App     string    `json:"app"`
	Status  string    `json:"logAggregationStatus"`
	Logs    []LogFile `json:"logs"`
	Message string    `json:"message,omitempty"`
}

// LogFile is one container's log file.
type LogFile struct {
	Node       string `json:"node"`
	Container  string `json:"container"`
	File       string `json:"file"`
	Size       int64  `json:"size"`
	ModifiedMs int64  `json:"modifiedMs"`
}
