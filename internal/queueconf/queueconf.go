// Package queueconf reads a cluster's queue hierarchy, as an existing YARN
// installation configures it, into one neutral tree: either the Fair
// Scheduler's allocation file (fair-scheduler.xml, see ReadFair) or the
// Capacity Scheduler's yarn.scheduler.capacity.* keys (capacity-scheduler.xml,
// see FromCapacity). The ResourceManager turns the tree into its policy
// core's queues; this package only reads, checks and answers questions about
// the configuration (Find, Place, MaySubmit).
//
// The meaning of every element and key, and every default, follows Hadoop:
// the Fair Scheduler's FairScheduler.md, AllocationFileParser,
// AllocationFileQueueParser, AllocationConfiguration,
// FairSchedulerConfiguration.parseResourceConfigValue, QueuePlacementPolicy
// and the placement rules (SpecifiedPlacementRule, UserPlacementRule, ...);
// the Capacity Scheduler's CapacityScheduler.md and
// CapacitySchedulerConfiguration. Where this package is stricter than Hadoop
// (Hadoop often logs and ignores), the doc comment of the function says so.
//
// Errors name the file (or the key and the file it came from), the queue's
// full path, the element or key, and what is wrong. Nothing here panics on
// any input.
package queueconf

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Resource type names, as YARN spells them.
const (
	Memory = "memory-mb"
	VCores = "vcores"
)

// Scheduling policies, as a Queue's Policy.
const (
	PolicyFair = "fair"
	PolicyDRF  = "drf"
	PolicyFIFO = "fifo"
)

// Queue states (capacity; fair queues are always running).
const (
	StateRunning = "RUNNING"
	StateStopped = "STOPPED"
)

// Capacity modes of a capacity queue's capacity key.
const (
	ModePercent  = "percent"
	ModeWeight   = "weight"
	ModeAbsolute = "absolute"
)

// MaxDepth is the deepest a queue may be: root is depth 1.
const MaxDepth = 64

// Tree is a scheduler's queue configuration.
type Tree struct {
	Root   *Queue
	Kind   string // "fair" or "capacity"
	Source string // the file (fair) or "capacity-scheduler.xml"

	// Placement is the fair queuePlacementPolicy; capacity: nil. Without a
	// queuePlacementPolicy element it is Hadoop's default,
	// DefaultPlacement(true, true) (specified, then user, both creating
	// queues), and PlacementDefaulted is true so that a caller who reads
	// yarn.scheduler.fair.user-as-default-queue and
	// yarn.scheduler.fair.allow-undeclared-pools from yarn-site.xml can
	// replace it with DefaultPlacement(userAsDefault, allowUndeclared).
	Placement          []Rule
	PlacementDefaulted bool

	UserMaxApps        map[string]int // fair: <user name="..."><maxRunningApps>
	UserMaxAppsDefault int            // fair: userMaxAppsDefault; 0 = unlimited

	// Fair: the defaults a queue the placement rules create at run time
	// gets (Hadoop applies them to every queue without its own value; they
	// are already applied to the queues in this tree).
	QueueMaxAppsDefault      int     // queueMaxAppsDefault; 0 = unlimited
	QueueMaxResourcesDefault Amount  // queueMaxResourcesDefault; unset = unlimited
	QueueMaxAMShareDefault   float64 // queueMaxAMShareDefault; 0.5 unless given
	DefaultPolicy            string  // defaultQueueSchedulingPolicy; "fair" unless given

	// Ignored lists what the configuration sets that Hadoop knows but Loom
	// does not use (reservation settings, ...), one line each, naming the
	// file and line or key, for the caller to log.
	Ignored []string
}

// Queue is one queue of the tree.
type Queue struct {
	Name     string // full path: "root", "root.eng", "root.eng.etl"
	Parent   *Queue
	Children []*Queue

	// Weight: fair <weight> (default 1); capacity: the capacity percent of
	// the parent (ModePercent), the Nw weight (ModeWeight), or 0
	// (ModeAbsolute: the share is Min.Abs).
	Weight float64

	// Min, Max: fair minResources / maxResources (maxResources defaults to
	// queueMaxResourcesDefault). Capacity: capacity / maximum-capacity as
	// fractions of the whole cluster (multiplied down the tree), or
	// absolute amounts when configured as "[memory=...,vcores=...]".
	// Min unset means nothing guaranteed; Max unset means no limit.
	Min, Max Amount

	// Fair only: maxChildResources (the limit of each queue created under
	// this one at run time) and maxContainerAllocation.
	MaxChildResources      Amount
	MaxContainerAllocation Amount

	// MaxRunningApps: 0 = unlimited. Fair: maxRunningApps, else
	// queueMaxAppsDefault. Capacity: maximum-applications (see
	// FromCapacity for how Hadoop computes it when the key is not set).
	MaxRunningApps int

	// MaxAMShare: fair maxAMShare, else queueMaxAMShareDefault (0.5),
	// -1 = not checked; capacity: maximum-am-resource-percent (0.1).
	MaxAMShare float64

	// Capacity only: node labels. Labels are the partitions the queue's
	// apps may ask for (accessible-node-labels, "*" for all; nil
	// inherits the parent's, root's being all); LabelCapacity each
	// label's accessible-node-labels.<label>.capacity as a fraction
	// (of the parent's, as the key says); DefaultLabel the
	// default-node-label-expression ("" inherits).
	Labels        []string
	LabelCapacity map[string]float64
	DefaultLabel  string

	Policy          string  // "fair", "drf" or "fifo"
	UserLimitFactor float64 // capacity only (default 1, -1 = off); 0 for fair

	// ACLs of this queue alone; MaySubmit and MayAdminister look up the
	// tree. Defaults, in both schedulers: root "*", other queues nobody
	// (" "), so that by default everyone may do everything everywhere.
	SubmitACL, AdminACL ACL

	IsParent   bool   // has children, or fair type="parent"
	Implicit   bool   // fair root.default: Hadoop creates it when the file does not
	Reservable bool   // fair <reservation/>
	State      string // capacity state, inherited from the parent when not set; fair "RUNNING"

	// CapacityMode is how the capacity key is given: ModePercent,
	// ModeWeight or ModeAbsolute; "" for fair.
	CapacityMode string

	// Preemption settings (fair; zero for capacity). The timeouts are
	// inherited from the parent when not set, root's from
	// defaultMinSharePreemptionTimeout / defaultFairSharePreemptionTimeout;
	// 0 = off (Hadoop's Long.MAX_VALUE default). The threshold is
	// inherited likewise (default 0.5). AllowPreemptionFrom defaults to
	// true and is false under a parent that does not allow it.
	MinSharePreemptionTimeout, FairSharePreemptionTimeout time.Duration
	FairSharePreemptionThreshold                          float64
	AllowPreemptionFrom                                   bool
}

// ShortName is the last component of the queue's path.
func (q *Queue) ShortName() string {
	if i := strings.LastIndexByte(q.Name, '.'); i >= 0 {
		return q.Name[i+1:]
	}
	return q.Name
}

// Depth is 1 for root, 2 for its children, ...
func (q *Queue) Depth() int { return strings.Count(q.Name, ".") + 1 }

// Child returns the child with the given short name, or nil.
func (q *Queue) Child(short string) *Queue {
	for _, c := range q.Children {
		if c.ShortName() == short {
			return c
		}
	}
	return nil
}

// MaySubmit reports whether the user may submit apps to the queue: allowed
// by the submit ACL of the queue or of any ancestor, or allowed to
// administer it (an administrator may also submit, as Hadoop's RMAppManager
// checks SUBMIT_APPLICATIONS or ADMINISTER_QUEUE). Whether ACLs are enforced
// at all (yarn.acl.enable, off by default in Hadoop) and the cluster admin
// ACL (yarn.admin.acl) are the caller's business.
func (q *Queue) MaySubmit(user string, groups []string) bool {
	for x := q; x != nil; x = x.Parent {
		if x.SubmitACL.Allows(user, groups) {
			return true
		}
	}
	return q.MayAdminister(user, groups)
}

// MayAdminister reports whether the user may administer the queue (kill its
// apps): allowed by the administer ACL of the queue or of any ancestor.
func (q *Queue) MayAdminister(user string, groups []string) bool {
	for x := q; x != nil; x = x.Parent {
		if x.AdminACL.Allows(user, groups) {
			return true
		}
	}
	return false
}

// Walk calls fn for every queue, parents before children (pre-order), in
// the configuration's order.
func (t *Tree) Walk(fn func(*Queue)) {
	if t == nil || t.Root == nil {
		return
	}
	var walk func(q *Queue)
	walk = func(q *Queue) {
		fn(q)
		for _, c := range q.Children {
			walk(c)
		}
	}
	walk(t.Root)
}

// Leaves returns the queues apps can be submitted to (those that are not
// parents: a fair type="parent" queue without children is not a leaf), in
// tree order.
func (t *Tree) Leaves() []*Queue {
	var out []*Queue
	t.Walk(func(q *Queue) {
		if !q.IsParent {
			out = append(out, q)
		}
	})
	return out
}

// Find returns a queue by full path ("root.a.b"), by path without "root."
// ("a.b"), or, in a capacity tree (where leaf names are unique), by a
// leaf's short name; nil if none. It walks the tree, so it also finds
// queues the caller added.
func (t *Tree) Find(name string) *Queue {
	if t == nil || t.Root == nil || name == "" {
		return nil
	}
	if q := t.lookup(name); q != nil {
		return q
	}
	if name != t.Root.Name && !strings.HasPrefix(name, t.Root.Name+".") {
		if q := t.lookup(t.Root.Name + "." + name); q != nil {
			return q
		}
	}
	if t.Kind == KindCapacity && !strings.Contains(name, ".") {
		var found *Queue
		n := 0
		for _, q := range t.Leaves() {
			if q.ShortName() == name {
				found = q
				n++
			}
		}
		if n == 1 {
			return found
		}
	}
	return nil
}

// lookup finds a queue by its exact full path.
func (t *Tree) lookup(path string) *Queue {
	parts := strings.Split(path, ".")
	if t.Root == nil || parts[0] != t.Root.Name {
		return nil
	}
	q := t.Root
	for _, p := range parts[1:] {
		if q = q.Child(p); q == nil {
			return nil
		}
	}
	return q
}

// Tree kinds.
const (
	KindFair     = "fair"
	KindCapacity = "capacity"
)

// Amount is a resource amount: absolute amounts and/or fractions of the
// whole cluster, each keyed by YARN resource type name ("memory-mb",
// "vcores", other names as written). Set is false when nothing was given.
//
// A type named in neither Abs nor Frac gets Others (a fraction of the
// cluster) when OthersSet, else the field's default (nothing for a
// minimum, no limit for a maximum). This is how Hadoop's forms differ:
// "50%" is half of every type; the old forms "1024 mb, 4 vcores" and
// "50% memory, 25% cpu" give every other type zero; the new form
// "vcores=50%, memory-mb=20%" gives every other type 100%; the new form
// "memory-mb=1024, vcores=4" leaves the others to the default.
type Amount struct {
	Abs       map[string]float64
	Frac      map[string]float64 // 0.5 = half of the cluster's amount of that type
	Others    float64
	OthersSet bool
	Set       bool
}

// Of is the amount on a cluster of the given totals: Abs plus Frac times
// the total, per type; types of the cluster named in neither get Others
// times the total when OthersSet, and are left out otherwise (the caller's
// default applies).
func (a Amount) Of(cluster map[string]float64) map[string]float64 {
	out := map[string]float64{}
	if !a.Set {
		return out
	}
	for t, v := range a.Abs {
		out[t] += v
	}
	for t, f := range a.Frac {
		out[t] += f * cluster[t]
	}
	if a.OthersSet {
		for t, total := range cluster {
			if _, ok := a.Abs[t]; ok {
				continue
			}
			if _, ok := a.Frac[t]; ok {
				continue
			}
			out[t] = a.Others * total
		}
	}
	return out
}

// Clone returns a copy that shares no maps with a.
func (a Amount) Clone() Amount {
	a.Abs = maps.Clone(a.Abs)
	a.Frac = maps.Clone(a.Frac)
	return a
}

// Scale returns the amount times f (a fraction), as a child's share of its
// parent.
func (a Amount) Scale(f float64) Amount {
	if !a.Set {
		return a
	}
	out := Amount{Set: true, OthersSet: a.OthersSet, Others: a.Others * f}
	if a.Abs != nil {
		out.Abs = map[string]float64{}
		for t, v := range a.Abs {
			out.Abs[t] = v * f
		}
	}
	if a.Frac != nil {
		out.Frac = map[string]float64{}
		for t, v := range a.Frac {
			out.Frac[t] = v * f
		}
	}
	return out
}

// bound says what the amount gives type t: a value, whether it is an
// absolute amount (else a fraction), and whether the amount says at all.
func (a Amount) bound(t string) (v float64, abs, known bool) {
	if !a.Set {
		return 0, false, false
	}
	if v, ok := a.Abs[t]; ok {
		return v, true, true
	}
	if v, ok := a.Frac[t]; ok {
		return v, false, true
	}
	if a.OthersSet {
		return a.Others, false, true
	}
	return 0, false, false
}

// exceeds returns a type for which min is surely above max, comparing only
// what needs no cluster size: absolute with absolute, fraction with
// fraction, anything above an amount of zero.
func exceeds(min, max Amount) (string, bool) {
	types := map[string]bool{}
	for _, m := range []map[string]float64{min.Abs, min.Frac, max.Abs, max.Frac} {
		for t := range m {
			types[t] = true
		}
	}
	for _, t := range slices.Sorted(maps.Keys(types)) {
		lo, loAbs, ok1 := min.bound(t)
		hi, hiAbs, ok2 := max.bound(t)
		if !ok1 || !ok2 || lo <= 0 {
			continue
		}
		if hi == 0 || (loAbs == hiAbs && lo > hi*(1+1e-9)+1e-12) {
			return t, true
		}
	}
	return "", false
}

// String renders the amount for messages: "memory-mb=1024, vcores=50%".
func (a Amount) String() string {
	if !a.Set {
		return "unset"
	}
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(a.Abs)) {
		parts = append(parts, t+"="+fmtNum(a.Abs[t]))
	}
	for _, t := range slices.Sorted(maps.Keys(a.Frac)) {
		parts = append(parts, t+"="+fmtNum(a.Frac[t]*100)+"%")
	}
	if a.OthersSet {
		parts = append(parts, "others="+fmtNum(a.Others*100)+"%")
	}
	return strings.Join(parts, ", ")
}

func fmtNum(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}

// ACL is an access control list in Hadoop's AccessControlList syntax: "*"
// is everyone; "user1,user2 group1,group2" (users, one space, groups);
// " group1" only groups; " " (or "") nobody.
type ACL struct {
	All           bool
	Users, Groups []string
}

// ParseACL parses an ACL as Hadoop's AccessControlList does: the string is
// split at its first space into users and groups, each a comma-separated
// list whose entries are trimmed (empty ones dropped); either part being
// "*" (after trimming) means everyone. Note that "alice, bob" is user
// alice and group bob, as in Hadoop.
func ParseACL(s string) ACL {
	parts := strings.SplitN(s, " ", 2)
	for _, p := range parts {
		if strings.TrimSpace(p) == "*" {
			return ACL{All: true}
		}
	}
	a := ACL{Users: aclList(parts[0])}
	if len(parts) == 2 {
		a.Groups = aclList(parts[1])
	}
	return a
}

func aclList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e != "" && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// Allows reports whether the ACL lets the user, a member of the given
// groups, in.
func (a ACL) Allows(user string, groups []string) bool {
	if a.All {
		return true
	}
	if user != "" && slices.Contains(a.Users, user) {
		return true
	}
	for _, g := range groups {
		if g != "" && slices.Contains(a.Groups, g) {
			return true
		}
	}
	return false
}

// String renders the ACL in Hadoop's syntax.
func (a ACL) String() string {
	if a.All {
		return "*"
	}
	return strings.Join(a.Users, ",") + " " + strings.Join(a.Groups, ",")
}

// Errors Place wraps, for callers to tell the cases apart with errors.Is.
var (
	ErrRejected   = errors.New("rejected by the placement policy")
	ErrNoRule     = errors.New("no placement rule placed the app")
	ErrNotLeaf    = errors.New("not a leaf queue")
	ErrNoQueue    = errors.New("no such queue")
	ErrStopped    = errors.New("queue is stopped")
	ErrQueueName  = errors.New("illegal queue name")
	ErrNoGroups   = errors.New("user has no groups")
	ErrCannotMake = errors.New("queue cannot be created")
)

// Error is an error in an allocation file: the file, the line, the queue
// (full path) and the element it is about, and what is wrong.
type Error struct {
	File    string
	Line    int    // 0 when unknown
	Queue   string // "" when not about a queue
	Element string // "" when not about an element
	Reason  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Queue != "" {
		fmt.Fprintf(&b, "queue %s: ", e.Queue)
	}
	if e.Element != "" {
		fmt.Fprintf(&b, "<%s>: ", e.Element)
	}
	b.WriteString(e.Reason)
	return b.String()
}
