package queueconf

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/loomrm/loom/internal/hadoopconf"
)

// CapacityPrefix starts every Capacity Scheduler key.
const CapacityPrefix = "yarn.scheduler.capacity."

// Hadoop's defaults (CapacitySchedulerConfiguration).
const (
	defaultMaxSystemApps   = 10000 // yarn.scheduler.capacity.maximum-applications
	defaultAMPercent       = 0.1   // yarn.scheduler.capacity.maximum-am-resource-percent
	defaultUserLimitFactor = 1.0   // yarn.scheduler.capacity.user-limit-factor
	maxWeight              = 10000 // CapacitySchedulerConfiguration: weights are 0 to 10000
	capacityPrecision      = 0.05  // percent; ParentQueue's PRECISION of 0.0005 as a fraction
)

// FromCapacity reads the Capacity Scheduler's queues from its keys
// (capacity-scheduler.xml, already loaded into c), as
// CapacityScheduler.md and CapacitySchedulerConfiguration describe them:
//
//   - yarn.scheduler.capacity.root.queues and <path>.queues list the
//     children (root must have some). A leaf's name must be unique across
//     the tree (apps name their queue by it); paths are at most MaxDepth
//     deep.
//
//   - <path>.capacity: a percent of the parent (default 0), a weight "Nw"
//     (0 to 10000; the share is the weight over the siblings' sum), or
//     absolute resources "[memory=10240,vcores=12]" (memory in MB, or with
//     a unit such as Gi; memory must be given). Siblings use one form. Percent
//     siblings sum to 100, within Hadoop's precision of 0.05, or to 0 when the
//     parent's capacity is 0 or <parent>.allow-zero-capacity-sum is true.
//     Min is this as a fraction of the whole cluster (multiplied down the
//     tree) or as absolute amounts; root's is 100%.
//
//   - <path>.maximum-capacity: a percent of the parent's maximum (default
//     100; -1 means 100) or absolute resources; Max as for Min. The
//     queue's maximum must not be below its capacity, compared on the
//     whole cluster as Hadoop's CSQueueUtils does (where both are fractions,
//     or both absolute).
//
//   - maximum-applications (MaxRunningApps): <path>.maximum-applications;
//     else, for a leaf, yarn.scheduler.capacity.global-queue-max-application
//     when positive; else yarn.scheduler.capacity.maximum-applications
//     (default 10000) times the leaf's absolute capacity, cut to an
//     integer, as Hadoop's LeafQueue computes it. A computed 0 (a queue of
//     0% capacity, which Hadoop lets take no app) is made 1, since 0 means
//     unlimited here; for a queue with absolute resources the share of the
//     cluster is not known, so the limit is left unlimited unless the key
//     is set. A parent only has the limit its own key sets.
//
//   - user-limit-factor (<path>., else yarn.scheduler.capacity.user-limit-factor,
//     else 1; -1 turns it off), maximum-am-resource-percent (likewise,
//     default 0.1) into MaxAMShare.
//
//   - acl_submit_applications / acl_administer_queue: default "*" for root,
//     nobody for the others (see MaySubmit for how they combine).
//
//   - state: RUNNING or STOPPED, inherited from the parent when not set; a
//     queue set RUNNING under a STOPPED parent is an error, as in Hadoop.
//
//   - ordering-policy: for a leaf fifo (default; fifo-with-partitions and
//     fifo-for-pending-apps too) → "fifo", fair → "fair"; for a parent
//     utilization (default, inherited from the parent) or
//     priority-utilization → "fair" (children served least-used first,
//     relative to their capacity).
//
//   - node labels: accessible-node-labels, accessible-node-labels.<l>.capacity,
//     default-node-label-expression (labels).
//
// Not read: queue mappings (yarn.scheduler.capacity.queue-mappings),
// accessible-node-labels.<l>.maximum-capacity, auto-created queues, capacity vectors mixing units in one
// "[...]", preemption. Keys under yarn.scheduler.capacity.root. that name no
// configured queue are listed in Tree.Ignored.
//
// Note: hadoopconf trims every value it loads, so an ACL written " group1"
// (groups only) in capacity-scheduler.xml reads as the user group1; Hadoop
// keeps the leading space.
func FromCapacity(c *hadoopconf.Conf) (*Tree, error) {
	if c == nil {
		return nil, fmt.Errorf("capacity-scheduler.xml: no configuration")
	}
	b := &capBuilder{c: c, leaves: map[string]*Queue{}, orderRaw: map[*Queue]string{}, zeroCap: map[*Queue]bool{}}
	var err error
	if b.sysApps, err = b.intKey(CapacityPrefix+"maximum-applications", defaultMaxSystemApps); err != nil {
		return nil, err
	}
	if b.sysApps < 0 {
		return nil, b.errf(CapacityPrefix+"maximum-applications", "%d must not be negative", b.sysApps)
	}
	if b.globalQueueApps, err = b.intKey(CapacityPrefix+"global-queue-max-application", -1); err != nil {
		return nil, err
	}
	if b.ulf, err = b.userLimitFactor(CapacityPrefix+"user-limit-factor", defaultUserLimitFactor); err != nil {
		return nil, err
	}
	if b.amPercent, err = b.amShare(CapacityPrefix+"maximum-am-resource-percent", defaultAMPercent); err != nil {
		return nil, err
	}
	t := &Tree{Kind: KindCapacity, Source: "capacity-scheduler.xml"}
	b.tree = t
	whole := Amount{Set: true, Frac: map[string]float64{Memory: 1, VCores: 1}, Others: 1, OthersSet: true}
	root := &Queue{Name: "root", Weight: 100, CapacityMode: ModePercent, Min: whole, Max: whole.Clone()}
	for _, k := range []string{"capacity", "maximum-capacity"} {
		key := CapacityPrefix + "root." + k
		if v, ok := c.Raw(key); ok && v != "100" && v != "-1" && v != "" {
			t.Ignored = append(t.Ignored, fmt.Sprintf("%s: %s: ignored: root always has the whole cluster", c.Source(key), key))
		}
	}
	names, err := b.queueList(root)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, b.errf(CapacityPrefix+"root.queues", "not set: the capacity scheduler needs at least one queue under root")
	}
	root.IsParent = true
	if err := b.props(root); err != nil {
		return nil, err
	}
	if err := b.build(root, names); err != nil {
		return nil, err
	}
	t.Root = root
	b.orphans()
	return t, nil
}

type capBuilder struct {
	c    *hadoopconf.Conf
	tree *Tree

	sysApps, globalQueueApps int64
	ulf, amPercent           float64

	leaves   map[string]*Queue // leaf short name -> queue
	orderRaw map[*Queue]string // a parent's queue ordering policy, as configured or inherited
	zeroCap  map[*Queue]bool   // the queue's own capacity is 0
}

// errf makes an error about key, naming the file it came from
// (capacity-scheduler.xml for a key that is not set).
func (b *capBuilder) errf(key, format string, args ...any) error {
	err := b.c.Errorf(key, format, args...)
	if e, ok := err.(*hadoopconf.Error); ok && e.Source == "default" {
		e.Source = "capacity-scheduler.xml"
	}
	return err
}

func (b *capBuilder) key(q *Queue, prop string) string { return CapacityPrefix + q.Name + "." + prop }

// str returns a key's expanded, trimmed value and whether it is set (and
// not blank).
func (b *capBuilder) str(key string) (string, bool, error) {
	if _, ok := b.c.Raw(key); !ok {
		return "", false, nil
	}
	v, err := b.c.String(key)
	if err != nil {
		return "", false, err
	}
	v = strings.TrimSpace(v)
	return v, v != "", nil
}

func (b *capBuilder) intKey(key string, def int64) (int64, error) {
	if _, ok, err := b.str(key); err != nil || !ok {
		return def, err
	}
	return b.c.Int(key)
}

func (b *capBuilder) floatKey(key string, def float64) (float64, error) {
	if _, ok, err := b.str(key); err != nil || !ok {
		return def, err
	}
	f, err := b.c.Float(key)
	if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
		err = b.errf(key, "%v is not a finite number", f)
	}
	return f, err
}

func (b *capBuilder) userLimitFactor(key string, def float64) (float64, error) {
	f, err := b.floatKey(key, def)
	if err == nil && f < 0 && f != -1 {
		err = b.errf(key, "%s: the user limit factor is 0 or more, or -1 for no limit", fmtNum(f))
	}
	return f, err
}

func (b *capBuilder) amShare(key string, def float64) (float64, error) {
	f, err := b.floatKey(key, def)
	if err == nil && (f < 0 || f > 1) {
		err = b.errf(key, "%s: the AM resource share is a fraction from 0 to 1 (0.1 = 10%%)", fmtNum(f))
	}
	return f, err
}

// queueList reads <path>.queues: the children's names.
func (b *capBuilder) queueList(q *Queue) ([]string, error) {
	key := b.key(q, "queues")
	v, ok, err := b.str(key)
	if err != nil || !ok {
		return nil, err
	}
	var names []string
	seen := map[string]bool{}
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			continue
		case strings.Contains(n, "."):
			return nil, b.errf(key, "queue name %q contains a period: list only the child's own name", n)
		case strings.IndexFunc(n, badNameRune) >= 0:
			return nil, b.errf(key, "queue name %q contains white space or a control character", n)
		case seen[n]:
			return nil, b.errf(key, "queue %s.%s is listed twice", q.Name, n)
		}
		seen[n] = true
		names = append(names, n)
	}
	if len(names) > 0 && q.Depth()+1 > MaxDepth {
		return nil, b.errf(key, "queue %s.%s would be deeper than %d levels", q.Name, names[0], MaxDepth)
	}
	return names, nil
}

// capSpec is a capacity or maximum-capacity value.
type capSpec struct {
	set  bool
	mode string // ModePercent, ModeWeight, ModeAbsolute
	val  float64
	abs  map[string]float64
	raw  string
	key  string
}

func (b *capBuilder) spec(q *Queue, prop string) (capSpec, error) {
	key := b.key(q, prop)
	s := capSpec{key: key, mode: ModePercent}
	v, ok, err := b.str(key)
	if err != nil || !ok {
		return s, err
	}
	s.set, s.raw = true, v
	switch {
	case strings.HasPrefix(v, "["):
		s.mode = ModeAbsolute
		s.abs, err = parseAbsolute(v)
		if err != nil {
			return s, b.errf(key, "%q: %v", v, err)
		}
	case strings.HasSuffix(v, "w"):
		if prop != "capacity" {
			return s, b.errf(key, "%q: maximum-capacity has no weight form; give a percent of the parent or absolute resources", v)
		}
		s.mode = ModeWeight
		f, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(v, "w")), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return s, b.errf(key, "%q is not a weight (a number followed by w, as 2.5w)", v)
		}
		if f < 0 || f > maxWeight {
			return s, b.errf(key, "%q: a weight is from 0 to %d", v, maxWeight)
		}
		s.val = f
	default:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return s, b.errf(key, "%q is not a percent (as 40 or 12.5), a weight (2w) or absolute resources ([memory=10240,vcores=12])", v)
		}
		if prop == "maximum-capacity" && f == -1 {
			f = 100
		}
		if f < 0 || f > 100 {
			return s, b.errf(key, "%q: a percent is from 0 to 100", v)
		}
		s.val = f
	}
	return s, nil
}

// build makes the children of q from their names.
func (b *capBuilder) build(q *Queue, names []string) error {
	if len(names) == 0 {
		return nil
	}
	queuesKey := b.key(q, "queues")
	kids := make([]*Queue, len(names))
	kidNames := make([][]string, len(names))
	specs := make([]capSpec, len(names))
	mode, modeFrom := "", -1
	for i, n := range names {
		k := &Queue{Name: q.Name + "." + n, Parent: q}
		kids[i] = k
		var err error
		if kidNames[i], err = b.queueList(k); err != nil {
			return err
		}
		k.IsParent = len(kidNames[i]) > 0
		if specs[i], err = b.spec(k, "capacity"); err != nil {
			return err
		}
		if !specs[i].set {
			continue
		}
		if mode == "" {
			mode, modeFrom = specs[i].mode, i
		} else if specs[i].mode != mode {
			return b.errf(specs[i].key, "%q is a %s, but its sibling's %s is %q, a %s: the children of %s must all use one form (percent, weight or absolute resources)",
				specs[i].raw, specs[i].mode, specs[modeFrom].key, specs[modeFrom].raw, mode, q.Name)
		}
	}
	if mode == "" {
		mode = ModePercent
	}

	// Min and Weight.
	var sum float64
	for i, k := range kids {
		s := specs[i]
		k.CapacityMode = mode
		switch mode {
		case ModePercent:
			k.Weight = s.val
			k.Min = q.Min.Scale(s.val / 100)
			sum += s.val
		case ModeWeight:
			k.Weight = s.val
			sum += s.val
		case ModeAbsolute:
			k.Weight = 0
			k.Min = Amount{Set: true, Abs: s.abs, Others: 0, OthersSet: true}
			if !s.set {
				k.Min = Amount{Set: true, Abs: map[string]float64{}, OthersSet: true}
			}
		}
		b.zeroCap[k] = mode != ModeAbsolute && s.val == 0
	}
	switch mode {
	case ModeWeight:
		for _, k := range kids {
			f := 0.0
			if sum > 0 {
				f = k.Weight / sum
			}
			k.Min = q.Min.Scale(f)
		}
	case ModePercent:
		ok := math.Abs(sum-100) <= capacityPrecision
		if !ok && sum == 0 {
			allow, err := b.boolKey(b.key(q, "allow-zero-capacity-sum"))
			if err != nil {
				return err
			}
			ok = allow || b.zeroCap[q]
		}
		if !ok {
			var parts []string
			for i, k := range kids {
				parts = append(parts, fmt.Sprintf("%s=%s", k.ShortName(), fmtNum(specs[i].val)))
			}
			return b.errf(queuesKey, "the capacities of the children of %s sum to %s, not 100 (%s)", q.Name, fmtNum(sum), strings.Join(parts, ", "))
		}
	}

	for i, k := range kids {
		ms, err := b.spec(k, "maximum-capacity")
		if err != nil {
			return err
		}
		switch {
		case ms.mode == ModeAbsolute:
			k.Max = Amount{Set: true, Abs: ms.abs}
		default:
			k.Max = q.Max.Scale(ms.val / 100)
			if !ms.set {
				k.Max = q.Max.Scale(1)
			}
		}
		if typ, bad := exceeds(k.Min, k.Max); bad {
			lo, loAbs, _ := k.Min.bound(typ)
			hi, hiAbs, _ := k.Max.bound(typ)
			maxDesc := "the default maximum-capacity (100% of the parent's maximum)"
			if ms.set {
				maxDesc = fmt.Sprintf("maximum-capacity %q", ms.raw)
			}
			return b.errf(ms.key, "queue %s: %s comes to %s for %s, less than %s (%s)",
				k.Name, maxDesc, share(hi, hiAbs), typ, capDesc(specs[i]), share(lo, loAbs))
		}
		if err := b.props(k); err != nil {
			return err
		}
		if !k.IsParent {
			if prev, dup := b.leaves[k.ShortName()]; dup {
				return b.errf(queuesKey, "leaf queue name %q is used twice, by %s and %s; leaf queue names must be unique", k.ShortName(), prev.Name, k.Name)
			}
			b.leaves[k.ShortName()] = k
		}
		q.Children = append(q.Children, k)
		if err := b.build(k, kidNames[i]); err != nil {
			return err
		}
	}
	return nil
}

func share(v float64, abs bool) string {
	if abs {
		return fmtNum(v)
	}
	return fmtNum(v*100) + "% of the cluster"
}

func capDesc(s capSpec) string {
	if !s.set {
		return "the default capacity (0)"
	}
	return fmt.Sprintf("capacity %q", s.raw)
}

func (b *capBuilder) boolKey(key string) (bool, error) {
	if _, ok, err := b.str(key); err != nil || !ok {
		return false, err
	}
	return b.c.Bool(key)
}

// labels reads a queue's node-label settings: accessible-node-labels
// (comma-separated, "*", or " " for none), each accessible label's
// capacity percent (of its parent's in that label; 0 when not set), and
// default-node-label-expression.
func (b *capBuilder) labels(q *Queue) error {
	key := b.key(q, "accessible-node-labels")
	if raw, ok := b.c.Raw(key); ok {
		q.Labels = []string{}
		for _, l := range strings.Split(raw, ",") {
			// The names are checked where the tree is used (the RM
			// core's rule, rm.ValidLabel).
			if l = strings.TrimSpace(l); l != "" && !slices.Contains(q.Labels, l) {
				q.Labels = append(q.Labels, l)
			}
		}
	}
	for _, l := range q.Labels {
		if l == "*" {
			continue
		}
		key := b.key(q, "accessible-node-labels."+l+".capacity")
		v, set, err := b.str(key)
		if err != nil || !set {
			if err != nil {
				return err
			}
			continue
		}
		pct, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if err != nil || pct < 0 || pct > 100 || math.IsNaN(pct) {
			return b.errf(key, "%q is not a percentage from 0 to 100", v)
		}
		if q.LabelCapacity == nil {
			q.LabelCapacity = map[string]float64{}
		}
		q.LabelCapacity[l] = pct / 100
	}
	key = b.key(q, "default-node-label-expression")
	v, _, err := b.str(key)
	if err != nil {
		return err
	}
	if v = strings.TrimSpace(v); strings.ContainsAny(v, "&|") {
		return b.errf(key, "%q: one label only; && and || are not supported, as in YARN", v)
	}
	q.DefaultLabel = v
	return nil
}

// props reads a queue's own settings; its parent's are already read.
func (b *capBuilder) props(q *Queue) error {
	c := b.c
	var err error
	if q.UserLimitFactor, err = b.userLimitFactor(b.key(q, "user-limit-factor"), b.ulf); err != nil {
		return err
	}
	if q.MaxAMShare, err = b.amShare(b.key(q, "maximum-am-resource-percent"), b.amPercent); err != nil {
		return err
	}
	if err := b.labels(q); err != nil {
		return err
	}
	q.SubmitACL, q.AdminACL = defaultACL(q), defaultACL(q)
	for _, a := range []struct {
		prop string
		acl  *ACL
	}{{"acl_submit_applications", &q.SubmitACL}, {"acl_administer_queue", &q.AdminACL}} {
		key := b.key(q, a.prop)
		if _, ok := c.Raw(key); ok {
			v, err := c.String(key)
			if err != nil {
				return err
			}
			*a.acl = ParseACL(v)
		}
	}

	// State, inherited.
	key := b.key(q, "state")
	v, set, err := b.str(key)
	if err != nil {
		return err
	}
	q.State = StateRunning
	if q.Parent != nil {
		q.State = q.Parent.State
	}
	if set {
		switch strings.ToUpper(v) {
		case StateRunning:
			if q.Parent != nil && q.Parent.State == StateStopped {
				return b.errf(key, "queue %s is RUNNING, but its parent %s is STOPPED", q.Name, q.Parent.Name)
			}
			q.State = StateRunning
		case StateStopped:
			q.State = StateStopped
		default:
			return b.errf(key, "%q: a queue's state is RUNNING or STOPPED", v)
		}
	}

	// Ordering policy.
	key = b.key(q, "ordering-policy")
	v, set, err = b.str(key)
	if err != nil {
		return err
	}
	if q.IsParent {
		raw := "utilization"
		if q.Parent != nil {
			raw = b.orderRaw[q.Parent]
		}
		if set {
			raw = v
		}
		b.orderRaw[q] = raw
		switch strings.ToLower(raw) {
		case "utilization", "priority-utilization",
			"org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.policy.priorityutilizationqueueorderingpolicy":
			q.Policy = PolicyFair
		default:
			if !set {
				key = b.key(q.Parent, "ordering-policy")
			}
			return b.errf(key, "%q: a parent queue (%s) orders its children by utilization or priority-utilization", raw, q.Name)
		}
	} else {
		raw := "fifo"
		if set {
			raw = v
		}
		switch strings.ToLower(raw) {
		case "fifo", "fifo-with-partitions", "fifo-for-pending-apps",
			"org.apache.hadoop.yarn.server.resourcemanager.scheduler.policy.fifoorderingpolicy",
			"org.apache.hadoop.yarn.server.resourcemanager.scheduler.policy.fifoorderingpolicyforpendingapps",
			"org.apache.hadoop.yarn.server.resourcemanager.scheduler.policy.fifoorderingpolicywithexclusivepartitions":
			q.Policy = PolicyFIFO
		case "fair", "org.apache.hadoop.yarn.server.resourcemanager.scheduler.policy.fairorderingpolicy":
			q.Policy = PolicyFair
		default:
			return b.errf(key, "%q: a leaf queue (%s) orders its apps by fifo or fair", raw, q.Name)
		}
	}

	// maximum-applications.
	key = b.key(q, "maximum-applications")
	n, err := b.intKey(key, -1)
	if err != nil {
		return err
	}
	switch {
	case n == 0:
		return b.errf(key, "0 is not supported: in Hadoop it lets the queue take no app, in Loom 0 means unlimited; stop the queue (state STOPPED) instead")
	case n > math.MaxInt32:
		return b.errf(key, "%d is too large", n)
	case n > 0:
		q.MaxRunningApps = int(n)
	case q.IsParent || q.Parent == nil:
		q.MaxRunningApps = 0
	case b.globalQueueApps > 0:
		q.MaxRunningApps = int(min(b.globalQueueApps, math.MaxInt32))
	case len(q.Min.Abs) > 0:
		q.MaxRunningApps = 0 // share of the cluster unknown until it runs
	default:
		abs := q.Min.Frac[Memory]
		q.MaxRunningApps = int(math.Min(math.Floor(float64(b.sysApps)*abs+1e-9), math.MaxInt32))
		if q.MaxRunningApps < 1 {
			q.MaxRunningApps = 1
		}
	}
	return nil
}

// Units Hadoop's UnitsConversionUtil knows, as multiples of a byte, for
// memory given with a unit (converted to MB, i.e. Mi).
var memUnits = map[string]float64{
	"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50,
}

// parseAbsolute reads "[memory=10240,vcores=12,yarn.io/gpu=2]".
func parseAbsolute(v string) (map[string]float64, error) {
	if !strings.HasSuffix(v, "]") || len(v) < 2 {
		return nil, fmt.Errorf("absolute resources are written [memory=10240,vcores=12]")
	}
	inner := strings.TrimSpace(v[1 : len(v)-1])
	if inner == "" {
		return nil, fmt.Errorf("no resources inside [...]")
	}
	if strings.ContainsAny(inner, "%") {
		return nil, fmt.Errorf("capacity vectors with percentages or weights inside [...] are not supported")
	}
	out := map[string]float64{}
	for _, kv := range strings.Split(inner, ",") {
		name, val, ok := strings.Cut(kv, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || strings.Contains(val, "=") {
			return nil, fmt.Errorf("%q: each resource is name=value", strings.TrimSpace(kv))
		}
		typ := name
		switch name {
		case "memory", Memory:
			typ = Memory
		case VCores:
		default:
			if err := checkResourceName(name); err != nil {
				return nil, err
			}
		}
		if _, dup := out[typ]; dup {
			return nil, fmt.Errorf("%s is given twice", typ)
		}
		i := 0
		for i < len(val) && val[i] >= '0' && val[i] <= '9' {
			i++
		}
		digits, unit := val[:i], val[i:]
		if digits == "" {
			if strings.HasSuffix(val, "w") && val != "w" {
				return nil, fmt.Errorf("capacity vectors with percentages or weights inside [...] are not supported")
			}
			return nil, fmt.Errorf("%s=%s: the value is a whole number, optionally with a unit (memory=4Gi)", name, val)
		}
		n, err := strconv.ParseFloat(digits, 64)
		if err != nil || n > maxResourceValue {
			return nil, fmt.Errorf("%s=%s: the value is too large", name, val)
		}
		if unit != "" {
			if typ != Memory {
				return nil, fmt.Errorf("%s=%s: only memory takes a unit", name, val)
			}
			f, ok := memUnits[unit]
			if !ok {
				if unit == "w" {
					return nil, fmt.Errorf("capacity vectors with percentages or weights inside [...] are not supported")
				}
				return nil, fmt.Errorf("%s=%s: unknown unit %q (k, M, G, T, P, Ki, Mi, Gi, Ti, Pi; none means MB)", name, val, unit)
			}
			n = math.Floor(n * f / (1 << 20))
			if n > maxResourceValue {
				return nil, fmt.Errorf("%s=%s: the value is too large", name, val)
			}
		}
		out[typ] = n
	}
	if _, ok := out[Memory]; !ok {
		return nil, fmt.Errorf("memory must be given")
	}
	return out, nil
}

// Properties of a queue whose names have dots, so that their keys are not
// taken for queues.
var dottedProps = []string{
	"accessible-node-labels", "ordering-policy", "user-settings",
	"leaf-queue-template", "auto-queue-creation-v2", "auto-create-child-queue",
	"intra-queue-preemption", "multi-node-sorting", "auto-queue-creation",
	"queue-priority", "disable_preemption",
}

// orphans notes keys under yarn.scheduler.capacity.root. that look like a
// property of a queue that is not configured.
func (b *capBuilder) orphans() {
	known := map[string]bool{}
	b.tree.Walk(func(q *Queue) { known[q.Name] = true })
	var notes []string
	for _, key := range b.c.Keys(CapacityPrefix + "root.") {
		rest := strings.TrimPrefix(key, CapacityPrefix)
		best := ""
		for i := len(rest) - 1; i > 0; i-- {
			if rest[i] == '.' && known[rest[:i]] {
				best = rest[:i]
				break
			}
		}
		if best == "" {
			continue
		}
		prop := rest[len(best)+1:]
		first, _, dotted := strings.Cut(prop, ".")
		if !dotted || slices.Contains(dottedProps, first) {
			continue
		}
		notes = append(notes, fmt.Sprintf("%s: %s: ignored: %s.%s is not a configured queue (not in %s.queues)",
			b.c.Source(key), key, best, first, CapacityPrefix+best))
	}
	slices.Sort(notes)
	b.tree.Ignored = append(b.tree.Ignored, notes...)
}
