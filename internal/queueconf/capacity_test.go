package queueconf

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loomrm/loom/internal/hadoopconf"
)

// capConf loads key/value pairs as capacity-scheduler.xml; keys without
// "yarn." get the yarn.scheduler.capacity. prefix.
func capConf(t testing.TB, kv ...string) *hadoopconf.Conf {
	t.Helper()
	var b strings.Builder
	b.WriteString("<configuration>\n")
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i]
		if !strings.HasPrefix(k, "yarn.") {
			k = CapacityPrefix + k
		}
		v := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(kv[i+1])
		fmt.Fprintf(&b, "<property><name>%s</name><value>%s</value></property>\n", k, v)
	}
	b.WriteString("</configuration>\n")
	c := hadoopconf.New(nil)
	if err := c.Load("capacity-scheduler.xml", strings.NewReader(b.String())); err != nil {
		t.Fatal(err)
	}
	return c
}

func pctAmount(f float64) Amount {
	return frac(&f, "memory-mb", f, "vcores", f)
}

func TestFromCapacity(t *testing.T) {
	c := capConf(t,
		"maximum-applications", "1000",
		"maximum-am-resource-percent", "0.2",
		"root.queues", "a, b",
		"root.acl_submit_applications", " ",
		"root.acl_administer_queue", "admin",
		"root.a.capacity", "40",
		"root.a.maximum-capacity", "60",
		"root.a.queues", "x,y",
		"root.a.x.capacity", "50",
		"root.a.x.maximum-capacity", "50",
		"root.a.x.user-limit-factor", "2",
		"root.a.x.acl_submit_applications", "alice",
		"root.a.y.capacity", "50.0",
		"root.a.y.ordering-policy", "fair",
		"root.a.y.maximum-applications", "7",
		"root.a.y.state", "stopped",
		"root.b.capacity", "60",
		"root.b.queues", "p,q,r",
		"root.b.acl_administer_queue", "bob ops",
		"root.b.ordering-policy", "priority-utilization",
		"root.b.p.capacity", "2w",
		"root.b.q.capacity", "1w",
		"root.b.r.capacity", "1.0w",
		"root.b.r.maximum-am-resource-percent", "0.5",
		"root.b.r.maximum-capacity", "-1",
	)
	tree, err := FromCapacity(c)
	if err != nil {
		t.Fatal(err)
	}
	nobody := ACL{}
	whole := pctAmount(1)
	want := []qv{
		{Name: "root", Children: []string{"root.a", "root.b"}, Weight: 100, Min: whole, Max: whole,
			MaxAMShare: 0.2, Policy: "fair", UserLimitFactor: 1, Submit: nobody, Admin: ACL{Users: []string{"admin"}},
			IsParent: true, State: "RUNNING", Mode: "percent"},
		{Name: "root.a", Parent: "root", Children: []string{"root.a.x", "root.a.y"}, Weight: 40,
			Min: pctAmount(0.4), Max: pctAmount(0.6), MaxAMShare: 0.2, Policy: "fair", UserLimitFactor: 1,
			Submit: nobody, Admin: nobody, IsParent: true, State: "RUNNING", Mode: "percent"},
		{Name: "root.a.x", Parent: "root.a", Weight: 50, Min: pctAmount(0.2), Max: pctAmount(0.3),
			MaxRunningApps: 200, MaxAMShare: 0.2, Policy: "fifo", UserLimitFactor: 2,
			Submit: ACL{Users: []string{"alice"}}, Admin: nobody, State: "RUNNING", Mode: "percent"},
		{Name: "root.a.y", Parent: "root.a", Weight: 50, Min: pctAmount(0.2), Max: pctAmount(0.6),
			MaxRunningApps: 7, MaxAMShare: 0.2, Policy: "fair", UserLimitFactor: 1,
			Submit: nobody, Admin: nobody, State: "STOPPED", Mode: "percent"},
		{Name: "root.b", Parent: "root", Children: []string{"root.b.p", "root.b.q", "root.b.r"}, Weight: 60,
			Min: pctAmount(0.6), Max: whole, MaxAMShare: 0.2, Policy: "fair", UserLimitFactor: 1,
			Submit: nobody, Admin: ACL{Users: []string{"bob"}, Groups: []string{"ops"}},
			IsParent: true, State: "RUNNING", Mode: "percent"},
		{Name: "root.b.p", Parent: "root.b", Weight: 2, Min: pctAmount(0.3), Max: whole,
			MaxRunningApps: 300, MaxAMShare: 0.2, Policy: "fifo", UserLimitFactor: 1,
			Submit: nobody, Admin: nobody, State: "RUNNING", Mode: "weight"},
		{Name: "root.b.q", Parent: "root.b", Weight: 1, Min: pctAmount(0.15), Max: whole,
			MaxRunningApps: 150, MaxAMShare: 0.2, Policy: "fifo", UserLimitFactor: 1,
			Submit: nobody, Admin: nobody, State: "RUNNING", Mode: "weight"},
		{Name: "root.b.r", Parent: "root.b", Weight: 1, Min: pctAmount(0.15), Max: whole,
			MaxRunningApps: 150, MaxAMShare: 0.5, Policy: "fifo", UserLimitFactor: 1,
			Submit: nobody, Admin: nobody, State: "RUNNING", Mode: "weight"},
	}
	if d := cmp.Diff(want, views(tree), cmpOpts...); d != "" {
		t.Errorf("queues (-want +got):\n%s", d)
	}
	if tree.Kind != "capacity" || tree.Source != "capacity-scheduler.xml" || tree.Placement != nil {
		t.Errorf("Kind %q Source %q Placement %v", tree.Kind, tree.Source, tree.Placement)
	}

	finds := []struct{ in, want string }{
		{"x", "root.a.x"}, {"a.x", "root.a.x"}, {"root.a.x", "root.a.x"},
		{"r", "root.b.r"}, {"a", "root.a"}, {"nosuch", ""}, {"b.x", ""},
	}
	for _, f := range finds {
		got := ""
		if q := tree.Find(f.in); q != nil {
			got = q.Name
		}
		if got != f.want {
			t.Errorf("Find(%q) = %q, want %q", f.in, got, f.want)
		}
	}

	runPlace(t, tree, []placeCase{
		{name: "short name", requested: "x", user: "alice", leaf: "root.a.x"},
		{name: "full path", requested: "root.b.q", user: "alice", leaf: "root.b.q"},
		{name: "stopped", requested: "y", user: "alice", err: ErrStopped,
			msg: "queue is stopped: root.a.y is STOPPED and accepts no new apps"},
		{name: "parent", requested: "a", user: "alice", err: ErrNotLeaf,
			msg: "not a leaf queue: root.a is a parent queue; apps go to leaf queues"},
		{name: "none requested", requested: "", user: "alice", err: ErrNoQueue,
			msg: `no such queue: "default" (the capacity scheduler does not create queues on submission)`},
	})

	acls := []struct {
		queue, user string
		groups      []string
		submit, adm bool
	}{
		{"root.a.x", "alice", nil, true, false},
		{"root.a.y", "alice", nil, false, false},
		{"root.b.p", "bob", nil, true, true}, // an administrator may submit
		{"root.b.p", "carol", []string{"ops"}, true, true},
		{"root.a.x", "bob", nil, false, false},
		{"root.a.y", "admin", nil, true, true}, // root's administrator
	}
	for _, a := range acls {
		q := tree.Find(a.queue)
		if got := q.MaySubmit(a.user, a.groups); got != a.submit {
			t.Errorf("%s.MaySubmit(%q) = %v, want %v", a.queue, a.user, got, a.submit)
		}
		if got := q.MayAdminister(a.user, a.groups); got != a.adm {
			t.Errorf("%s.MayAdminister(%q) = %v, want %v", a.queue, a.user, got, a.adm)
		}
	}
}

// TestFromCapacityAbsolute: absolute resources, a percent child of an
// absolute parent, a 0% queue, a stopped parent, and keys of queues that
// are not configured.
func TestFromCapacityAbsolute(t *testing.T) {
	c := capConf(t,
		"root.queues", "a,b",
		"root.a.capacity", "[memory=10240, vcores=12]",
		"root.a.maximum-capacity", "[memory=20Gi,vcores=24]",
		"root.a.queues", "x",
		"root.a.x.capacity", "100",
		"root.a.state", "STOPPED",
		"root.b.capacity", "[memory=4096,vcores=2,yarn.io/gpu=1]",
		"root.c.capacity", "10",
		"root.a.x.ordering-policy.fair.enable-size-based-weight", "true",
	)
	tree, err := FromCapacity(c)
	if err != nil {
		t.Fatal(err)
	}
	nobody := ACL{}
	whole := pctAmount(1)
	want := []qv{
		{Name: "root", Children: []string{"root.a", "root.b"}, Weight: 100, Min: whole, Max: whole,
			MaxAMShare: 0.1, Policy: "fair", UserLimitFactor: 1, Submit: ACL{All: true}, Admin: ACL{All: true},
			IsParent: true, State: "RUNNING", Mode: "percent"},
		{Name: "root.a", Parent: "root", Children: []string{"root.a.x"},
			Min: abs(f64(0), "memory-mb", 10240, "vcores", 12), Max: abs(nil, "memory-mb", 20480, "vcores", 24),
			MaxAMShare: 0.1, Policy: "fair", UserLimitFactor: 1, Submit: nobody, Admin: nobody,
			IsParent: true, State: "STOPPED", Mode: "absolute"},
		{Name: "root.a.x", Parent: "root.a", Weight: 100,
			Min: abs(f64(0), "memory-mb", 10240, "vcores", 12), Max: abs(nil, "memory-mb", 20480, "vcores", 24),
			MaxAMShare: 0.1, Policy: "fifo", UserLimitFactor: 1, Submit: nobody, Admin: nobody,
			State: "STOPPED", Mode: "percent"},
		{Name: "root.b", Parent: "root",
			Min: abs(f64(0), "memory-mb", 4096, "vcores", 2, "yarn.io/gpu", 1), Max: whole,
			MaxAMShare: 0.1, Policy: "fifo", UserLimitFactor: 1, Submit: nobody, Admin: nobody,
			State: "RUNNING", Mode: "absolute"},
	}
	if d := cmp.Diff(want, views(tree), cmpOpts...); d != "" {
		t.Errorf("queues (-want +got):\n%s", d)
	}
	wantIgnored := []string{
		"capacity-scheduler.xml: yarn.scheduler.capacity.root.c.capacity: ignored: root.c is not a configured queue (not in yarn.scheduler.capacity.root.queues)",
	}
	if d := cmp.Diff(wantIgnored, tree.Ignored); d != "" {
		t.Errorf("Ignored (-want +got):\n%s", d)
	}
	runPlace(t, tree, []placeCase{
		{name: "under a stopped parent", requested: "x", user: "u", err: ErrStopped,
			msg: "queue is stopped: root.a.x is under root.a, which is STOPPED; it accepts no new apps"},
		{name: "absolute leaf", requested: "b", user: "u", leaf: "root.b"},
	})
}

// TestFromCapacityLimits: maximum-applications and the zero-sum cases.
func TestFromCapacityLimits(t *testing.T) {
	tests := []struct {
		name string
		kv   []string
		want map[string]int // queue -> MaxRunningApps
	}{
		{"0% queue takes at least one app",
			[]string{"root.queues", "a,b", "root.a.capacity", "100", "root.b.capacity", "0"},
			map[string]int{"root.a": 10000, "root.b": 1}},
		{"global per-queue limit",
			[]string{"global-queue-max-application", "42", "root.queues", "a,b", "root.a.capacity", "99.97", "root.b.capacity", "0.03"},
			map[string]int{"root.a": 42, "root.b": 42}},
		{"per-queue key wins; -1 is unset",
			[]string{"global-queue-max-application", "42", "root.queues", "a,b", "root.a.capacity", "50", "root.b.capacity", "50",
				"root.a.maximum-applications", "5", "root.b.maximum-applications", "-1"},
			map[string]int{"root.a": 5, "root.b": 42}},
		{"children of a 0% parent may sum to 0",
			[]string{"root.queues", "a,b", "root.a.capacity", "100", "root.b.capacity", "0", "root.b.queues", "x",
				"root.b.x.capacity", "0"},
			map[string]int{"root.a": 10000, "root.b": 0, "root.b.x": 1}},
		{"allow-zero-capacity-sum",
			[]string{"root.queues", "a", "root.a.capacity", "100", "root.a.queues", "x,y", "root.a.allow-zero-capacity-sum", "true"},
			map[string]int{"root.a.x": 1, "root.a.y": 1}},
		{"max below capacity relative, not absolute",
			// root.a.x: capacity 25% of the cluster, maximum 40%: Hadoop compares these.
			[]string{"root.queues", "a,b", "root.a.capacity", "50", "root.b.capacity", "50",
				"root.a.queues", "x,y", "root.a.x.capacity", "50", "root.a.x.maximum-capacity", "40", "root.a.y.capacity", "50"},
			map[string]int{"root.a.x": 2500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree, err := FromCapacity(capConf(t, tt.kv...))
			if err != nil {
				t.Fatal(err)
			}
			for q, n := range tt.want {
				if got := tree.Find(q).MaxRunningApps; got != n {
					t.Errorf("%s.MaxRunningApps = %d, want %d", q, got, n)
				}
			}
		})
	}
}

func TestFromCapacityErrors(t *testing.T) {
	deep := []string{"root.queues", "q"}
	path := "root.q"
	for i := 0; i < 63; i++ {
		deep = append(deep, path+".capacity", "100", path+".queues", "q")
		path += ".q"
	}
	deepPath := strings.TrimSuffix(path, ".q")

	two := func(kv ...string) []string {
		return append([]string{"root.queues", "a,b", "root.a.capacity", "50", "root.b.capacity", "50"}, kv...)
	}
	const p = "capacity-scheduler.xml: yarn.scheduler.capacity."
	tests := []struct {
		name string
		kv   []string
		want string
	}{
		{"no queues", nil,
			p + `root.queues: not set: the capacity scheduler needs at least one queue under root`},
		{"sum not 100", []string{"root.queues", "a,b", "root.a.capacity", "40", "root.b.capacity", "50"},
			p + `root.queues: the capacities of the children of root sum to 90, not 100 (a=40, b=50)`},
		{"sum 0", []string{"root.queues", "a,b"},
			p + `root.queues: the capacities of the children of root sum to 0, not 100 (a=0, b=0)`},
		{"children of a 0% parent sum to 50", two("root.queues", "a,b,c", "root.c.capacity", "0", "root.c.queues", "x,y", "root.c.x.capacity", "50"),
			p + `root.c.queues: the capacities of the children of root.c sum to 50, not 100 (x=50, y=0)`},
		{"mixed forms", []string{"root.queues", "a,b", "root.a.capacity", "40", "root.b.capacity", "2w"},
			p + `root.b.capacity: "2w" is a weight, but its sibling's yarn.scheduler.capacity.root.a.capacity is "40", a percent: the children of root must all use one form (percent, weight or absolute resources)`},
		{"maximum below capacity", two("root.a.maximum-capacity", "30"),
			p + `root.a.maximum-capacity: queue root.a: maximum-capacity "30" comes to 30% of the cluster for memory-mb, less than capacity "50" (50% of the cluster)`},
		{"absolute maximum below capacity", []string{"root.queues", "a", "root.a.capacity", "[memory=4096,vcores=4]", "root.a.maximum-capacity", "[memory=2048,vcores=4]"},
			p + `root.a.maximum-capacity: queue root.a: maximum-capacity "[memory=2048,vcores=4]" comes to 2048 for memory-mb, less than capacity "[memory=4096,vcores=4]" (4096)`},
		{"capacity above 100", two("root.a.capacity", "120"),
			p + `root.a.capacity: "120": a percent is from 0 to 100`},
		{"negative capacity", two("root.a.capacity", "-50"),
			p + `root.a.capacity: "-50": a percent is from 0 to 100`},
		{"capacity not a number", two("root.a.capacity", "half"),
			p + `root.a.capacity: "half" is not a percent (as 40 or 12.5), a weight (2w) or absolute resources ([memory=10240,vcores=12])`},
		{"negative weight", []string{"root.queues", "a", "root.a.capacity", "-1w"},
			p + `root.a.capacity: "-1w": a weight is from 0 to 10000`},
		{"weight not a number", []string{"root.queues", "a", "root.a.capacity", "heavyw"},
			p + `root.a.capacity: "heavyw" is not a weight (a number followed by w, as 2.5w)`},
		{"weight maximum", two("root.a.maximum-capacity", "2w"),
			p + `root.a.maximum-capacity: "2w": maximum-capacity has no weight form; give a percent of the parent or absolute resources`},
		{"maximum above 100", two("root.a.maximum-capacity", "101"),
			p + `root.a.maximum-capacity: "101": a percent is from 0 to 100`},
		{"leaf name twice", two("root.a.queues", "x", "root.a.x.capacity", "100", "root.b.queues", "x", "root.b.x.capacity", "100"),
			p + `root.b.queues: leaf queue name "x" is used twice, by root.a.x and root.b.x; leaf queue names must be unique`},
		{"listed twice", []string{"root.queues", "a, a"},
			p + `root.queues: queue root.a is listed twice`},
		{"name with a period", []string{"root.queues", "a.b"},
			p + `root.queues: queue name "a.b" contains a period: list only the child's own name`},
		{"too deep", deep,
			p + deepPath + `.queues: queue ` + deepPath + `.q would be deeper than 64 levels`},
		{"running under stopped", two("root.a.state", "STOPPED", "root.a.queues", "x", "root.a.x.capacity", "100", "root.a.x.state", "RUNNING"),
			p + `root.a.x.state: queue root.a.x is RUNNING, but its parent root.a is STOPPED`},
		{"bad state", two("root.a.state", "DRAINING"),
			p + `root.a.state: "DRAINING": a queue's state is RUNNING or STOPPED`},
		{"leaf with a parent policy", two("root.a.ordering-policy", "utilization"),
			p + `root.a.ordering-policy: "utilization": a leaf queue (root.a) orders its apps by fifo or fair`},
		{"parent with a leaf policy", two("root.a.ordering-policy", "fifo", "root.a.queues", "x", "root.a.x.capacity", "100"),
			p + `root.a.ordering-policy: "fifo": a parent queue (root.a) orders its children by utilization or priority-utilization`},
		{"zero maximum-applications", two("root.a.maximum-applications", "0"),
			p + `root.a.maximum-applications: 0 is not supported: in Hadoop it lets the queue take no app, in Loom 0 means unlimited; stop the queue (state STOPPED) instead`},
		{"maximum-applications not a number", two("root.a.maximum-applications", "many"),
			p + `root.a.maximum-applications: "many" is not an integer`},
		{"system maximum-applications", []string{"maximum-applications", "lots"},
			p + `maximum-applications: "lots" is not an integer`},
		{"user-limit-factor", two("root.b.user-limit-factor", "-2"),
			p + `root.b.user-limit-factor: -2: the user limit factor is 0 or more, or -1 for no limit`},
		{"am percent", two("root.b.maximum-am-resource-percent", "10"),
			p + `root.b.maximum-am-resource-percent: 10: the AM resource share is a fraction from 0 to 1 (0.1 = 10%)`},
		{"absolute without memory", []string{"root.queues", "a", "root.a.capacity", "[vcores=2]"},
			p + `root.a.capacity: "[vcores=2]": memory must be given`},
		{"absolute unit on vcores", []string{"root.queues", "a", "root.a.capacity", "[memory=1024,vcores=2k]"},
			p + `root.a.capacity: "[memory=1024,vcores=2k]": vcores=2k: only memory takes a unit`},
		{"absolute milli unit", []string{"root.queues", "a", "root.a.capacity", "[memory=1024m,vcores=2]"},
			p + `root.a.capacity: "[memory=1024m,vcores=2]": memory=1024m: unknown unit "m" (k, M, G, T, P, Ki, Mi, Gi, Ti, Pi; none means MB)`},
		{"capacity vector", []string{"root.queues", "a", "root.a.capacity", "[memory=50%,vcores=2w]"},
			p + `root.a.capacity: "[memory=50%,vcores=2w]": capacity vectors with percentages or weights inside [...] are not supported`},
		{"absolute unclosed", []string{"root.queues", "a", "root.a.capacity", "[memory=1024"},
			p + `root.a.capacity: "[memory=1024": absolute resources are written [memory=10240,vcores=12]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromCapacity(capConf(t, tt.kv...))
			if err == nil {
				t.Fatalf("no error; want %s", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
			var he *hadoopconf.Error
			if !errors.As(err, &he) {
				t.Errorf("error is a %T, not a *hadoopconf.Error", err)
			}
		})
	}
	if _, err := FromCapacity(nil); err == nil {
		t.Errorf("FromCapacity(nil): no error")
	}
}

// TestFromCapacityLabels reads node-label settings: a queue's accessible
// labels, its capacity in each, its default label, and inheritance.
func TestFromCapacityLabels(t *testing.T) {
	c := capConf(t,
		"root.queues", "a,b",
		"root.a.capacity", "50", "root.b.capacity", "50",
		"root.a.queues", "x",
		"root.a.x.capacity", "100",
		"root.a.accessible-node-labels", "gpu, fast,gpu",
		"root.a.accessible-node-labels.gpu.capacity", "75",
		"root.a.default-node-label-expression", "gpu",
		"root.b.accessible-node-labels", " ",
	)
	tr, err := FromCapacity(c)
	if err != nil {
		t.Fatal(err)
	}
	a, x, b := tr.Find("root.a"), tr.Find("root.a.x"), tr.Find("root.b")
	if diff := cmp.Diff([]string{"gpu", "fast"}, a.Labels); diff != "" {
		t.Errorf("root.a labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"gpu": 0.75}, a.LabelCapacity); diff != "" {
		t.Errorf("root.a label capacities (-want +got):\n%s", diff)
	}
	if a.DefaultLabel != "gpu" {
		t.Errorf("root.a default label %q, want gpu", a.DefaultLabel)
	}
	if x.Labels != nil || x.DefaultLabel != "" {
		t.Errorf("root.a.x sets nothing and must inherit (nil, \"\"): %v %q", x.Labels, x.DefaultLabel)
	}
	if b.Labels == nil || len(b.Labels) != 0 {
		t.Errorf("root.b accessible-node-labels \" \" is none (empty, not nil): %#v", b.Labels)
	}
	for _, tt := range []struct{ kv []string }{
		{[]string{"root.a.accessible-node-labels.gpu.capacity", "150"}},
		{[]string{"root.a.accessible-node-labels.gpu.capacity", "lots"}},
		{[]string{"root.a.default-node-label-expression", "gpu&&fast"}},
	} {
		kv := append([]string{"root.queues", "a", "root.a.capacity", "100", "root.a.accessible-node-labels", "gpu"}, tt.kv...)
		if _, err := FromCapacity(capConf(t, kv...)); err == nil || !strings.Contains(err.Error(), tt.kv[0]) {
			t.Errorf("%v: error %v, want one naming the key", tt.kv, err)
		}
	}
}
