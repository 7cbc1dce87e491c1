package queueconf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// qv is a queue without its pointers, for comparing.
type qv struct {
	Name, Parent           string
	Children               []string
	Weight                 float64
	Min, Max               Amount
	MaxChild, MaxContainer Amount
	MaxRunningApps         int
	MaxAMShare             float64
	Policy                 string
	UserLimitFactor        float64
	Submit, Admin          ACL
	IsParent, Implicit     bool
	Reservable             bool
	State, Mode            string
	MinTO, FairTO          time.Duration
	Threshold              float64
	Allow                  bool
}

func view(q *Queue) qv {
	v := qv{
		Name: q.Name, Weight: q.Weight, Min: q.Min, Max: q.Max,
		MaxChild: q.MaxChildResources, MaxContainer: q.MaxContainerAllocation,
		MaxRunningApps: q.MaxRunningApps, MaxAMShare: q.MaxAMShare, Policy: q.Policy,
		UserLimitFactor: q.UserLimitFactor, Submit: q.SubmitACL, Admin: q.AdminACL,
		IsParent: q.IsParent, Implicit: q.Implicit, Reservable: q.Reservable,
		State: q.State, Mode: q.CapacityMode,
		MinTO: q.MinSharePreemptionTimeout, FairTO: q.FairSharePreemptionTimeout,
		Threshold: q.FairSharePreemptionThreshold, Allow: q.AllowPreemptionFrom,
	}
	if q.Parent != nil {
		v.Parent = q.Parent.Name
	}
	for _, c := range q.Children {
		v.Children = append(v.Children, c.Name)
	}
	return v
}

func views(t *Tree) []qv {
	var out []qv
	t.Walk(func(q *Queue) { out = append(out, view(q)) })
	return out
}

var cmpOpts = []cmp.Option{cmpopts.EquateEmpty(), cmpopts.EquateApprox(0, 1e-12)}

// abs, frac build expected amounts.
func abs(others *float64, kv ...any) Amount {
	a := Amount{Set: true, Abs: map[string]float64{}}
	for i := 0; i < len(kv); i += 2 {
		a.Abs[kv[i].(string)] = toF(kv[i+1])
	}
	if others != nil {
		a.Others, a.OthersSet = *others, true
	}
	return a
}

func frac(others *float64, kv ...any) Amount {
	a := Amount{Set: true, Frac: map[string]float64{}}
	for i := 0; i < len(kv); i += 2 {
		a.Frac[kv[i].(string)] = toF(kv[i+1])
	}
	if others != nil {
		a.Others, a.OthersSet = *others, true
	}
	return a
}

func toF(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	panic("bad test value")
}

func f64(f float64) *float64 { return &f }

func readFairString(t *testing.T, body string) (*Tree, error) {
	t.Helper()
	return ReadFair(strings.NewReader(body), "fair-scheduler.xml")
}

func TestReadFairThreeLevel(t *testing.T) {
	tree, err := ReadFairFile("testdata/three-level.xml")
	if err != nil {
		t.Fatal(err)
	}
	nobody := ACL{}
	m10, m2 := 10*time.Minute, 2*time.Minute
	want := []qv{
		{
			Name: "root", Children: []string{"root.eng", "root.ops", "root.default"},
			Weight: 1, MaxRunningApps: 50, MaxAMShare: 0.4, Policy: "drf",
			Submit: nobody, Admin: ACL{Users: []string{"admin"}, Groups: []string{"admins"}},
			IsParent: true, State: "RUNNING", MinTO: m10, Threshold: 0.6, Allow: true,
		},
		{
			Name: "root.eng", Parent: "root", Children: []string{"root.eng.etl", "root.eng.adhoc", "root.eng.users"},
			Weight: 3, Min: abs(f64(0), "memory-mb", 10000, "vcores", 10),
			Max:            frac(f64(0.9), "memory-mb", 0.9, "vcores", 0.9),
			MaxRunningApps: 50, MaxAMShare: 0.4, Policy: "drf",
			Submit: ACL{Users: []string{"bob"}, Groups: []string{"engineers"}}, Admin: nobody,
			IsParent: true, State: "RUNNING", MinTO: m10, FairTO: m2, Threshold: 0.6, Allow: true,
		},
		{
			Name: "root.eng.etl", Parent: "root.eng",
			Weight: 2, Min: abs(nil, "memory-mb", 4096, "vcores", 4),
			Max:            frac(f64(1), "memory-mb", 0.4, "vcores", 0.5),
			MaxRunningApps: 10, MaxAMShare: 0.4, Policy: "fifo",
			Submit: ACL{Users: []string{"carol"}}, Admin: nobody,
			State: "RUNNING", MinTO: m10, FairTO: m2, Threshold: 0.6, Allow: true,
		},
		{
			Name: "root.eng.adhoc", Parent: "root.eng",
			Weight: 1, Max: frac(f64(0), "memory-mb", 0.6, "vcores", 0.3),
			MaxRunningApps: 50, MaxAMShare: 0.2, Policy: "drf",
			Submit: nobody, Admin: nobody,
			State: "RUNNING", MinTO: m10, FairTO: m2, Threshold: 0.6, Allow: false,
		},
		{
			Name: "root.eng.users", Parent: "root.eng",
			Weight: 1, MaxChild: abs(f64(0), "memory-mb", 4096, "vcores", 4),
			MaxRunningApps: 50, MaxAMShare: 0.4, Policy: "drf",
			Submit: nobody, Admin: nobody, IsParent: true,
			State: "RUNNING", MinTO: m10, FairTO: m2, Threshold: 0.6, Allow: true,
		},
		{
			Name: "root.ops", Parent: "root",
			Weight: 1.5, Max: abs(nil, "memory-mb", 20480, "vcores", 20, "yarn.io/gpu", 2),
			MaxRunningApps: 50, MaxAMShare: 0.4, Policy: "fair",
			Submit: ACL{Groups: []string{"ops"}}, Admin: nobody,
			State: "RUNNING", MinTO: m10, Threshold: 0.6, Allow: true,
		},
		{
			Name: "root.default", Parent: "root", Implicit: true,
			Weight: 1, MaxRunningApps: 50, MaxAMShare: 0.4, Policy: "drf",
			Submit: nobody, Admin: nobody,
			State: "RUNNING", MinTO: m10, Threshold: 0.6, Allow: true,
		},
	}
	if d := cmp.Diff(want, views(tree), cmpOpts...); d != "" {
		t.Errorf("queues (-want +got):\n%s", d)
	}
	if tree.Kind != "fair" || tree.Source != "testdata/three-level.xml" {
		t.Errorf("Kind, Source = %q, %q", tree.Kind, tree.Source)
	}
	wantRules := []Rule{
		{Name: "specified"},
		{Name: "primaryGroup"},
		{Name: "nestedUserQueue", Create: true, Nested: &Rule{Name: "secondaryGroupExistingQueue"}},
		{Name: "default", Create: true, Queue: "root.eng.adhoc"},
	}
	if d := cmp.Diff(wantRules, tree.Placement); d != "" || tree.PlacementDefaulted {
		t.Errorf("placement (-want +got), defaulted %v:\n%s", tree.PlacementDefaulted, d)
	}
	if d := cmp.Diff(map[string]int{"alice": 30}, tree.UserMaxApps); d != "" {
		t.Errorf("UserMaxApps: %s", d)
	}
	if tree.UserMaxAppsDefault != 5 || tree.QueueMaxAppsDefault != 50 || tree.QueueMaxAMShareDefault != 0.4 ||
		tree.DefaultPolicy != "drf" || tree.QueueMaxResourcesDefault.Set {
		t.Errorf("defaults: %d %d %v %q %v", tree.UserMaxAppsDefault, tree.QueueMaxAppsDefault,
			tree.QueueMaxAMShareDefault, tree.DefaultPolicy, tree.QueueMaxResourcesDefault)
	}
	var leaves []string
	for _, q := range tree.Leaves() {
		leaves = append(leaves, q.Name)
	}
	if d := cmp.Diff([]string{"root.eng.etl", "root.eng.adhoc", "root.ops", "root.default"}, leaves); d != "" {
		t.Errorf("Leaves: %s", d)
	}
	if len(tree.Ignored) != 0 {
		t.Errorf("Ignored: %q", tree.Ignored)
	}
}

// TestReadFairMinimal: an empty file is root with root.default and
// Hadoop's defaults everywhere.
func TestReadFairMinimal(t *testing.T) {
	tree, err := readFairString(t, `<?xml version="1.0" encoding="UTF-8"?><allocations/>`)
	if err != nil {
		t.Fatal(err)
	}
	want := []qv{
		{Name: "root", Children: []string{"root.default"}, Weight: 1, MaxAMShare: 0.5, Policy: "fair",
			Submit: ACL{All: true}, Admin: ACL{All: true}, IsParent: true, State: "RUNNING", Threshold: 0.5, Allow: true},
		{Name: "root.default", Parent: "root", Implicit: true, Weight: 1, MaxAMShare: 0.5, Policy: "fair",
			State: "RUNNING", Threshold: 0.5, Allow: true},
	}
	if d := cmp.Diff(want, views(tree), cmpOpts...); d != "" {
		t.Errorf("queues (-want +got):\n%s", d)
	}
	wantRules := []Rule{{Name: "specified", Create: true}, {Name: "user", Create: true}}
	if d := cmp.Diff(wantRules, tree.Placement); d != "" || !tree.PlacementDefaulted {
		t.Errorf("placement (-want +got), defaulted %v:\n%s", tree.PlacementDefaulted, d)
	}
}

// TestReadFairTopLevel: queues without a root element go under root; the
// older spellings (pool, schedulingMode, fairSharePreemptionTimeout at the
// top) are read; reservation settings are noted as ignored.
func TestReadFairTopLevel(t *testing.T) {
	tree, err := readFairString(t, `<allocations>
  <fairSharePreemptionTimeout>30</fairSharePreemptionTimeout>
  <queueMaxResourcesDefault>memory-mb=8192, vcores=8</queueMaxResourcesDefault>
  <reservation-agent>x</reservation-agent>
  <pool name=" default ">
    <schedulingMode>FIFO</schedulingMode>
    <minSharePreemptionTimeout>5</minSharePreemptionTimeout>
    <fairSharePreemptionThreshold>1.5</fairSharePreemptionThreshold>
  </pool>
  <queue name="r">
    <reservation></reservation>
    <aclSubmitReservations>*</aclSubmitReservations>
    <maxAMShare>-1</maxAMShare>
  </queue>
</allocations>`)
	if err != nil {
		t.Fatal(err)
	}
	m8 := abs(nil, "memory-mb", 8192, "vcores", 8)
	want := []qv{
		{Name: "root", Children: []string{"root.default", "root.r"}, Weight: 1, Max: m8, MaxAMShare: 0.5, Policy: "fair",
			Submit: ACL{All: true}, Admin: ACL{All: true}, IsParent: true, State: "RUNNING",
			FairTO: 30 * time.Second, Threshold: 0.5, Allow: true},
		{Name: "root.default", Parent: "root", Weight: 1, Max: m8, MaxAMShare: 0.5, Policy: "fifo",
			State: "RUNNING", MinTO: 5 * time.Second, FairTO: 30 * time.Second, Threshold: 1, Allow: true},
		{Name: "root.r", Parent: "root", Weight: 1, Max: m8, MaxAMShare: -1, Policy: "fair", Reservable: true,
			State: "RUNNING", FairTO: 30 * time.Second, Threshold: 0.5, Allow: true},
	}
	if d := cmp.Diff(want, views(tree), cmpOpts...); d != "" {
		t.Errorf("queues (-want +got):\n%s", d)
	}
	wantIgnored := []string{
		"fair-scheduler.xml:4: <reservation-agent>: ignored: reservations are not supported by Loom",
		"fair-scheduler.xml:12: queue root.r: <aclSubmitReservations>: ignored: reservations are not supported by Loom",
	}
	if d := cmp.Diff(wantIgnored, tree.Ignored); d != "" {
		t.Errorf("Ignored (-want +got):\n%s", d)
	}
}

// fairErrorCases are allocation files ReadFair refuses, with the error;
// FuzzReadFair starts from them too.
var fairErrorCases = []struct {
	name, xml, want string
}{
	{"not XML", `hello`,
		`fair-scheduler.xml:1: malformed XML: text outside the top-level element`},
	{"truncated", "<allocations>\n  <queue name=\"a\">\n    <weight>2</weigh",
		`fair-scheduler.xml:3: malformed XML: the file ends inside <weight> (opened at line 3): truncated?`},
	{"unclosed", "<allocations>\n  <queue name=\"a\">\n",
		`fair-scheduler.xml:3: malformed XML: the file ends inside <queue> (opened at line 2): truncated?`},
	{"mismatched tags", "<allocations>\n<queue name=\"a\"></pool>\n</allocations>",
		`fair-scheduler.xml:2: malformed XML: element <queue> closed by </pool>`},
	{"empty file", ``,
		`fair-scheduler.xml: not an allocation file: no XML element found`},
	{"wrong top element", "<configuration>\n</configuration>",
		`fair-scheduler.xml:1: <configuration>: the top-level element is <configuration>, not <allocations>: not a Fair Scheduler allocation file`},
	{"two top elements", "<allocations/>\n<allocations/>",
		`fair-scheduler.xml:2: <allocations>: a second top-level element after <allocations>`},
	{"queue listed twice", "<allocations>\n<queue name=\"a\"/>\n<pool name=\"a\"/>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <pool>: the queue is defined twice (also at line 2)`},
	{"nested queue listed twice", "<allocations>\n<queue name=\"a\">\n<queue name=\"b\"/>\n<queue name=\"b\"/>\n</queue>\n</allocations>",
		`fair-scheduler.xml:4: queue root.a.b: <queue>: the queue is defined twice (also at line 3)`},
	{"name with a period", "<allocations>\n<queue name=\"a\">\n<queue name=\"b.c\"/>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a.b.c: <queue>: queue name "b.c" contains a period: nest <queue> elements instead`},
	{"empty name", "<allocations>\n<queue name=\"  \"/>\n</allocations>",
		`fair-scheduler.xml:2: queue root.?: <queue>: the queue name is empty or only white space`},
	{"no name", "<allocations>\n<queue/>\n</allocations>",
		`fair-scheduler.xml:2: queue root.?: <queue>: a queue needs a name attribute`},
	{"name with a space", "<allocations>\n<queue name=\"a b\"/>\n</allocations>",
		`fair-scheduler.xml:2: queue root.a b: <queue>: queue name "a b" contains white space or a control character`},
	{"negative weight", "<allocations>\n<queue name=\"a\">\n<weight>-1</weight>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <weight>: -1: a weight must not be negative`},
	{"weight not a number", "<allocations>\n<queue name=\"a\">\n<weight>heavy</weight>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <weight>: "heavy" is not a number`},
	{"weight NaN", "<allocations>\n<queue name=\"a\">\n<weight>NaN</weight>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <weight>: "NaN" is not a finite number`},
	{"negative maxRunningApps", "<allocations>\n<queue name=\"a\">\n<maxRunningApps>-3</maxRunningApps>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <maxRunningApps>: "-3" must not be negative`},
	{"zero maxRunningApps", "<allocations>\n<queue name=\"a\">\n<maxRunningApps>0</maxRunningApps>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <maxRunningApps>: 0 is not supported: in Hadoop it lets no app run, in Loom 0 means unlimited; leave the element out for no limit`},
	{"negative resources", "<allocations>\n<queue name=\"a\">\n<minResources>-1024 mb, 1 vcores</minResources>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <minResources>: "-1024 mb, 1 vcores": -1024 mb must not be negative`},
	{"negative timeout", "<allocations>\n<queue name=\"a\">\n<minSharePreemptionTimeout>-5</minSharePreemptionTimeout>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <minSharePreemptionTimeout>: "-5": a timeout must not be negative`},
	{"negative threshold", "<allocations>\n<defaultFairSharePreemptionThreshold>-0.1</defaultFairSharePreemptionThreshold>\n</allocations>",
		`fair-scheduler.xml:2: <defaultFairSharePreemptionThreshold>: -0.1: the threshold is a fraction from 0 to 1`},
	{"bad AM share", "<allocations>\n<queueMaxAMShareDefault>-0.5</queueMaxAMShareDefault>\n</allocations>",
		`fair-scheduler.xml:2: <queueMaxAMShareDefault>: -0.5: the AM share is a fraction from 0 to 1, or -1 for no limit`},
	{"min above max", "<allocations>\n<queue name=\"a\">\n<minResources>4096 mb, 4 vcores</minResources>\n<maxResources>2048 mb, 8 vcores</maxResources>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <minResources>: minResources (memory-mb=4096, vcores=4, others=0%) is above maxResources (memory-mb=2048, vcores=8, others=0%) for memory-mb`},
	{"min above max percent", "<allocations>\n<queue name=\"a\">\n<maxResources>vcores=10%, memory-mb=50%</maxResources>\n<minResources>vcores=20%, memory-mb=50%</minResources>\n</queue>\n</allocations>",
		`fair-scheduler.xml:4: queue root.a: <minResources>: minResources (memory-mb=50%, vcores=20%, others=100%) is above maxResources (memory-mb=50%, vcores=10%, others=100%) for vcores`},
	{"min above default max", "<allocations>\n<queueMaxResourcesDefault>1024 mb, 1 vcores</queueMaxResourcesDefault>\n<queue name=\"a\">\n<minResources>memory-mb=2048</minResources>\n</queue>\n</allocations>",
		`fair-scheduler.xml:4: queue root.a: <minResources>: minResources (memory-mb=2048) is above queueMaxResourcesDefault (memory-mb=1024, vcores=1, others=0%) for memory-mb`},
	{"unknown policy", "<allocations>\n<queue name=\"a\">\n<schedulingPolicy>lifo</schedulingPolicy>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <schedulingPolicy>: unknown scheduling policy "lifo" (fair, drf or fifo; custom policy classes are not supported)`},
	{"fifo on a parent", "<allocations>\n<queue name=\"a\">\n<schedulingPolicy>fifo</schedulingPolicy>\n<queue name=\"b\"/>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <schedulingPolicy>: fifo is only for leaf queues; a parent queue takes fair or drf`},
	{"fifo on a type=parent queue", "<allocations>\n<queue name=\"a\" type=\"parent\">\n<schedulingPolicy>fifo</schedulingPolicy>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <schedulingPolicy>: fifo is only for leaf queues; a parent queue takes fair or drf`},
	{"fifo default", "<allocations>\n<defaultQueueSchedulingPolicy>fifo</defaultQueueSchedulingPolicy>\n</allocations>",
		`fair-scheduler.xml:2: <defaultQueueSchedulingPolicy>: the default policy can't be fifo (it would apply to parent queues, and fifo is for leaf queues only)`},
	{"drf under fair", "<allocations>\n<queue name=\"a\">\n<schedulingPolicy>drf</schedulingPolicy>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <schedulingPolicy>: drf can't be used under a parent queue (root) whose policy is fair: make the parent drf, or use fair or fifo here`},
	{"drf default under a fair root", "<allocations>\n<defaultQueueSchedulingPolicy>drf</defaultQueueSchedulingPolicy>\n<queue name=\"root\">\n<schedulingPolicy>fair</schedulingPolicy>\n</queue>\n</allocations>",
		`fair-scheduler.xml:2: queue root.default: <defaultQueueSchedulingPolicy>: drf can't be used under a parent queue (root) whose policy is fair: make the parent drf, or use fair or fifo here`},
	{"leaf type with children", "<allocations>\n<queue name=\"a\" type=\"leaf\">\n<queue name=\"b\"/>\n</queue>\n</allocations>",
		`fair-scheduler.xml:2: queue root.a: <queue>: type="leaf", but the queue has child queues`},
	{"unknown type", "<allocations>\n<queue name=\"a\" type=\"Parent\"/>\n</allocations>",
		`fair-scheduler.xml:2: queue root.a: <queue>: type="Parent": the type is "parent" or "leaf"`},
	{"reservation on a parent", "<allocations>\n<queue name=\"a\" type=\"parent\">\n<reservation/>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <reservation>: a parent queue (one with child queues or type="parent") can't have <reservation>: it applies to leaf queues only`},
	{"maxAMShare on a parent", "<allocations>\n<queue name=\"a\">\n<maxAMShare>0.3</maxAMShare>\n<queue name=\"b\"/>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <maxAMShare>: a parent queue (one with child queues or type="parent") can't have <maxAMShare>: it applies to leaf queues only`},
	{"unknown queue element", "<allocations>\n<queue name=\"a\">\n<maxRunningApp>3</maxRunningApp>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <maxRunningApp>: unknown element in a queue`},
	{"wrong case", "<allocations>\n<queue name=\"a\">\n<MaxRunningApps>3</MaxRunningApps>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <MaxRunningApps>: unknown element in a queue (did you mean <maxRunningApps>? names are case-sensitive)`},
	{"unknown top element", "<allocations>\n<queueMaxApps>3</queueMaxApps>\n</allocations>",
		`fair-scheduler.xml:2: <queueMaxApps>: unknown element in <allocations>`},
	{"field twice", "<allocations>\n<queue name=\"a\">\n<weight>1</weight>\n<weight>2</weight>\n</queue>\n</allocations>",
		`fair-scheduler.xml:4: queue root.a: <weight>: given twice (also at line 3)`},
	{"policy and mode", "<allocations>\n<queue name=\"a\">\n<schedulingPolicy>fair</schedulingPolicy>\n<schedulingMode>fair</schedulingMode>\n</queue>\n</allocations>",
		`fair-scheduler.xml:4: queue root.a: <schedulingMode>: given twice (also at line 3)`},
	{"top field twice", "<allocations>\n<userMaxAppsDefault>1</userMaxAppsDefault>\n<userMaxAppsDefault>2</userMaxAppsDefault>\n</allocations>",
		`fair-scheduler.xml:3: <userMaxAppsDefault>: given twice (also at line 2)`},
	{"empty value", "<allocations>\n<queue name=\"a\">\n<weight></weight>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <weight>: the value is empty`},
	{"element in a value", "<allocations>\n<queue name=\"a\">\n<weight><b>1</b></weight>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <weight>: expects a value, not the element <b>`},
	{"text in a queue", "<allocations>\n<queue name=\"a\">oops</queue>\n</allocations>",
		`fair-scheduler.xml:2: queue root.a: <queue>: unexpected text "oops"`},
	{"unknown attribute", "<allocations>\n<queue name=\"a\" weight=\"2\"/>\n</allocations>",
		`fair-scheduler.xml:2: queue root.a: <queue>: unknown attribute weight="2" (allowed: name, type)`},
	{"root beside others", "<allocations>\n<queue name=\"root\"/>\n<queue name=\"a\"/>\n</allocations>",
		`fair-scheduler.xml:2: queue root: <queue>: when the root queue is configured, every other queue must be inside it (2 top-level queue elements)`},
	{"Root in capitals", "<allocations>\n<queue name=\"Root\"/>\n</allocations>",
		`fair-scheduler.xml:2: <queue>: queue name "Root": write the root queue as "root"`},
	{"root as a leaf", "<allocations>\n<queue name=\"root\" type=\"leaf\"/>\n</allocations>",
		`fair-scheduler.xml:2: queue root: <queue>: the root queue can't be a leaf`},
	{"multi-line ACL", "<allocations>\n<queue name=\"a\">\n<aclSubmitApps>\n  alice\n</aclSubmitApps>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <aclSubmitApps>: the ACL "alice" is not on one line: Hadoop splits users from groups at the first space, so write "user1,user2 group1,group2" (or " group1") on one line`},
	{"empty ACL", "<allocations>\n<queue name=\"a\">\n<aclAdministerApps/>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <aclAdministerApps>: the ACL is empty; write "*" for everyone or a single space for nobody`},
	{"bad boolean", "<allocations>\n<queue name=\"a\">\n<allowPreemptionFrom>no</allowPreemptionFrom>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <allowPreemptionFrom>: "no" is not true or false`},
	{"zero timeout", "<allocations>\n<defaultMinSharePreemptionTimeout>0</defaultMinSharePreemptionTimeout>\n</allocations>",
		`fair-scheduler.xml:2: <defaultMinSharePreemptionTimeout>: 0 seconds is not supported: in Loom a timeout of 0 means never; write 1 to preempt as soon as possible`},
	{"user without name", "<allocations>\n<user>\n<maxRunningApps>3</maxRunningApps>\n</user>\n</allocations>",
		`fair-scheduler.xml:2: <user>: a user element needs a name attribute`},
	{"user twice", "<allocations>\n<user name=\"u\"/>\n<user name=\"u\"/>\n</allocations>",
		`fair-scheduler.xml:3: <user>: user u is given twice (also at line 2)`},
	{"unknown user element", "<allocations>\n<user name=\"u\">\n<weight>3</weight>\n</user>\n</allocations>",
		`fair-scheduler.xml:3: <weight>: unknown element in <user name="u">`},
	{"resources unreadable", "<allocations>\n<queue name=\"a\">\n<maxResources>lots</maxResources>\n</queue>\n</allocations>",
		`fair-scheduler.xml:3: queue root.a: <maxResources>: "lots": cannot read "lots" (write "1024 mb, 4 vcores", "50%" or "memory-mb=1024, vcores=4")`},
	{"too deep", "<allocations>" + strings.Repeat("<queue name=\"q\">", 80) + strings.Repeat("</queue>", 80) + "</allocations>",
		`fair-scheduler.xml:1: <queue>: elements nest deeper than 72 levels`},
	{"queues too deep", "<allocations>" + strings.Repeat("<queue name=\"q\">", 64) + strings.Repeat("</queue>", 64) + "</allocations>",
		`fair-scheduler.xml:1: queue root` + strings.Repeat(".q", 64) + `: <queue>: queues nest deeper than 64 levels`},
	{"unsupported encoding", `<?xml version="1.0" encoding="EBCDIC"?><allocations/>`,
		`fair-scheduler.xml:1: malformed XML: xml: opening charset "EBCDIC": encoding "EBCDIC" is not supported (use UTF-8)`},
}

func TestReadFairErrors(t *testing.T) {
	tests := fairErrorCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readFairString(t, tt.xml)
			if err == nil {
				t.Fatalf("no error; want %s", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.File != "fair-scheduler.xml" {
				t.Errorf("error %T does not name the file", err)
			}
		})
	}
}

func TestReadFairPlacementErrors(t *testing.T) {
	wrap := func(rules string) string {
		return "<allocations><queue name=\"p\" type=\"parent\"/><queue name=\"l\"/>\n<queuePlacementPolicy>\n" + rules + "</queuePlacementPolicy>\n</allocations>"
	}
	tests := []struct {
		name, rules, want string
	}{
		{"empty", "",
			`fair-scheduler.xml:2: <queuePlacementPolicy>: the placement policy has no rules`},
		{"unreachable", "<rule name=\"user\"/>\n<rule name=\"default\"/>\n",
			`fair-scheduler.xml:3: <rule>: rule 1 (user) always places the app, so the rules after it can never be reached`},
		{"not terminal", "<rule name=\"specified\"/>\n<rule name=\"primaryGroup\" create=\"false\"/>\n",
			`fair-scheduler.xml:4: <rule>: the last rule (primaryGroup create="false") can pass the app on, leaving it nowhere: end with reject, or a default, user or primaryGroup rule that may create its queue`},
		{"nested not terminal", "<rule name=\"nestedUserQueue\">\n<rule name=\"secondaryGroupExistingQueue\"/>\n</rule>\n",
			`fair-scheduler.xml:3: <rule>: the last rule (nestedUserQueue(secondaryGroupExistingQueue)) can pass the app on, leaving it nowhere: end with reject, or a default, user or primaryGroup rule that may create its queue`},
		{"unknown rule", "<rule name=\"group\"/>\n",
			`fair-scheduler.xml:3: <rule>: unknown rule "group" (one of specified, user, primaryGroup, secondaryGroupExistingQueue, nestedUserQueue, default, reject)`},
		{"wrong case rule", "<rule name=\"primarygroup\"/>\n",
			`fair-scheduler.xml:3: <rule>: unknown rule "primarygroup" (did you mean "primaryGroup"? names are case-sensitive)`},
		{"no name", "<rule/>\n",
			`fair-scheduler.xml:3: <rule>: a rule needs a name attribute (one of specified, user, primaryGroup, secondaryGroupExistingQueue, nestedUserQueue, default, reject)`},
		{"bad create", "<rule name=\"user\" create=\"yes\"/>\n",
			`fair-scheduler.xml:3: <rule>: rule user: create="yes" is not true or false`},
		{"nested without inner", "<rule name=\"nestedUserQueue\"/>\n",
			`fair-scheduler.xml:3: <rule>: rule nestedUserQueue needs a nested <rule> that gives the parent queue`},
		{"nested reject", "<rule name=\"nestedUserQueue\">\n<rule name=\"reject\"/>\n</rule>\n",
			`fair-scheduler.xml:4: <rule>: rule reject can't be nested in another rule`},
		{"nested user in nestedUserQueue", "<rule name=\"nestedUserQueue\">\n<rule name=\"user\"/>\n</rule>\n",
			`fair-scheduler.xml:4: <rule>: rule user can't be nested in a rule of the same kind (nestedUserQueue)`},
		{"specified with nested", "<rule name=\"specified\">\n<rule name=\"user\"/>\n</rule>\n<rule name=\"reject\"/>\n",
			`fair-scheduler.xml:4: <rule>: rule specified takes no nested rule`},
		{"two nested", "<rule name=\"user\">\n<rule name=\"primaryGroup\"/>\n<rule name=\"specified\"/>\n</rule>\n",
			`fair-scheduler.xml:5: <rule>: rule user has more than one nested rule`},
		{"default queue attribute bad", "<rule name=\"default\" queue=\".a\"/>\n",
			`fair-scheduler.xml:3: <rule>: rule default: queue=".a": the queue name has an empty component (a leading, trailing or double period)`},
		{"default queue is a parent", "<rule name=\"default\" queue=\"p\"/>\n",
			`fair-scheduler.xml:3: <rule>: rule default: queue root.p: not a leaf queue: root.p is a parent queue; apps go to leaf queues`},
		{"default queue under a leaf", "<rule name=\"default\" queue=\"l.x\"/>\n",
			`fair-scheduler.xml:3: <rule>: rule default: queue root.l.x: queue cannot be created: root.l.x would be under root.l, a leaf queue`},
		{"queue attribute elsewhere", "<rule name=\"user\" queue=\"a\"/>\n",
			`fair-scheduler.xml:3: <rule>: rule user: the queue attribute only applies to the default rule`},
		{"not a rule", "<rules name=\"user\"/>\n",
			`fair-scheduler.xml:3: <rules>: unknown element in <queuePlacementPolicy>: rules are written <rule name="..."/>`},
		{"typo attribute", "<rule name=\"user\" crate=\"false\"/>\n",
			`fair-scheduler.xml:3: <rule>: unknown attribute crate="false" (allowed: name, create, queue)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readFairString(t, wrap(tt.rules))
			if err == nil {
				t.Fatalf("no error; want %s", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
		})
	}
}

func TestReadFairFileMissing(t *testing.T) {
	_, err := ReadFairFile(filepath.Join(t.TempDir(), "nope.xml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want a not-exist error", err)
	}
}

func TestReadFairLatin1(t *testing.T) {
	body := "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<allocations><queue name=\"caf\xe9\"/></allocations>"
	tree, err := readFairString(t, body)
	if err != nil {
		t.Fatal(err)
	}
	if tree.Find("café") == nil {
		t.Errorf("root.café not found")
	}
}
