package queueconf

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type placeCase struct {
	name      string
	requested string
	user      string
	groups    []string
	leaf      string
	created   bool
	err       error  // errors.Is target, nil for success
	msg       string // the whole error message, when err is set
}

func runPlace(t *testing.T, tree *Tree, tests []placeCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leaf, created, err := tree.Place(tt.requested, tt.user, tt.groups)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Place(%q, %q, %q) = %q, %v, %v; want error %v", tt.requested, tt.user, tt.groups, leaf, created, err, tt.err)
				}
				if err.Error() != tt.msg {
					t.Errorf("error\n got: %s\nwant: %s", err, tt.msg)
				}
				return
			}
			if err != nil || leaf != tt.leaf || created != tt.created {
				t.Errorf("Place(%q, %q, %q) = %q, %v, %v; want %q, %v", tt.requested, tt.user, tt.groups, leaf, created, err, tt.leaf, tt.created)
			}
		})
	}
}

// TestPlaceThreeLevel: specified (create=false), primaryGroup
// (create=false), nestedUserQueue under secondaryGroupExistingQueue,
// default queue=eng.adhoc.
func TestPlaceThreeLevel(t *testing.T) {
	tree, err := ReadFairFile("testdata/three-level.xml")
	if err != nil {
		t.Fatal(err)
	}
	runPlace(t, tree, []placeCase{
		{name: "specified short path", requested: "eng.etl", user: "x", groups: []string{"g"}, leaf: "root.eng.etl"},
		{name: "specified full path", requested: "root.ops", user: "x", groups: []string{"g"}, leaf: "root.ops"},
		{name: "specified missing, primary group", requested: "nosuch", user: "x", groups: []string{"ops"}, leaf: "root.ops"},
		{name: "default rule", requested: "", user: "u", groups: []string{"nogroup"}, leaf: "root.eng.adhoc"},
		{name: "nested user under secondary group", requested: "default", user: "first.last", groups: []string{"staff", "eng"},
			leaf: "root.eng.first_dot_last", created: true},
		{name: "secondary group is a leaf", requested: "", user: "u", groups: []string{"staff", "ops"}, leaf: "root.eng.adhoc"},
		{name: "primary group not used as secondary", requested: "", user: "u", groups: []string{"staff"}, leaf: "root.eng.adhoc"},
		{name: "primary group is a parent", requested: "", user: "u", groups: []string{"eng"}, err: ErrNotLeaf,
			msg: "placement rule 2 (primaryGroup): not a leaf queue: root.eng is a parent queue; apps go to leaf queues"},
		{name: "parent requested", requested: "eng", user: "u", groups: []string{"g"}, err: ErrNotLeaf,
			msg: "placement rule 1 (specified): not a leaf queue: root.eng is a parent queue; apps go to leaf queues"},
		{name: "type=parent requested", requested: "root.eng.users", user: "u", groups: []string{"g"}, err: ErrNotLeaf,
			msg: "placement rule 1 (specified): not a leaf queue: root.eng.users is a parent queue; apps go to leaf queues"},
		{name: "illegal name", requested: ".a", user: "u", groups: []string{"g"}, err: ErrQueueName,
			msg: `placement rule 1 (specified): illegal queue name: requested queue ".a"`},
		{name: "double period", requested: "a..b", user: "u", groups: []string{"g"}, err: ErrQueueName,
			msg: `placement rule 1 (specified): illegal queue name: requested queue "a..b": the queue name has an empty component (a leading, trailing or double period)`},
		{name: "no groups", requested: "", user: "u", err: ErrNoGroups,
			msg: `placement rule 2 (primaryGroup): user has no groups: user "u"`},
	})
}

func TestPlaceCreateAndReject(t *testing.T) {
	tree, err := readFairString(t, `<allocations>
  <queue name="users" type="parent"/>
  <queue name="leafq"/>
  <queuePlacementPolicy>
    <rule name="specified"/>
    <rule name="user" create="false"/>
    <rule name="reject"/>
  </queuePlacementPolicy>
</allocations>`)
	if err != nil {
		t.Fatal(err)
	}
	runPlace(t, tree, []placeCase{
		{name: "specified creates", requested: "newq", user: "u", leaf: "root.newq", created: true},
		{name: "specified creates deep", requested: "users.team.x", user: "u", leaf: "root.users.team.x", created: true},
		{name: "specified existing", requested: "leafq", user: "u", leaf: "root.leafq"},
		{name: "under a leaf", requested: "leafq.sub", user: "u", err: ErrCannotMake,
			msg: "placement rule 1 (specified): queue cannot be created: root.leafq.sub would be under root.leafq, a leaf queue"},
		{name: "user create=false existing", requested: "", user: "leafq", leaf: "root.leafq"},
		{name: "user create=false missing, reject", requested: "default", user: "zed", err: ErrRejected,
			msg: "placement rule 3 (reject): rejected by the placement policy"},
		{name: "user with a space", requested: "", user: "a b", err: ErrQueueName,
			msg: `placement rule 2 (user): illegal queue name: user "a b": the queue name contains white space or a control character`},
	})
}

func TestPlaceNestedPrimaryGroup(t *testing.T) {
	tree, err := readFairString(t, `<allocations>
  <queue name="leafq"/>
  <queuePlacementPolicy>
    <rule name="nestedUserQueue">
      <rule name="primaryGroup"/>
    </rule>
  </queuePlacementPolicy>
</allocations>`)
	if err != nil {
		t.Fatal(err)
	}
	runPlace(t, tree, []placeCase{
		{name: "group queue created too", requested: "", user: "ann", groups: []string{"sales"}, leaf: "root.sales.ann", created: true},
		{name: "group dots", requested: "x", user: "ann", groups: []string{"a.b"}, leaf: "root.a_dot_b.ann", created: true},
		{name: "group queue is a leaf", requested: "", user: "ann", groups: []string{"leafq"}, err: ErrNoRule,
			msg: `no placement rule placed the app (queue "", user "ann"): rule 1 (nestedUserQueue): nested rule primaryGroup gives root.leafq, a leaf queue`},
	})
}

func TestPlaceDefaultPolicy(t *testing.T) {
	tree, err := readFairString(t, `<allocations><queue name="a" type="parent"/></allocations>`)
	if err != nil {
		t.Fatal(err)
	}
	runPlace(t, tree, []placeCase{
		{name: "user queue", requested: "", user: "bob", leaf: "root.bob", created: true},
		{name: "user default", requested: "default", user: "default", leaf: "root.default"},
		{name: "specified", requested: "a.b", user: "bob", leaf: "root.a.b", created: true},
		{name: "specified root", requested: "root", user: "bob", err: ErrNotLeaf,
			msg: "placement rule 1 (specified): not a leaf queue: root is a parent queue; apps go to leaf queues"},
	})
	// Hadoop's default policy with allow-undeclared-pools false: nothing is
	// created, root.default takes the rest.
	tree.Placement = DefaultPlacement(true, false)
	runPlace(t, tree, []placeCase{
		{name: "no create", requested: "zzz", user: "bob", leaf: "root.default"},
	})
}

func TestDefaultPlacement(t *testing.T) {
	tests := []struct {
		userAsDefault, allowUndeclared bool
		want                           []Rule
	}{
		{true, true, []Rule{{Name: "specified", Create: true}, {Name: "user", Create: true}}},
		{true, false, []Rule{{Name: "specified"}, {Name: "user"}, {Name: "default", Create: true, Queue: "root.default"}}},
		{false, true, []Rule{{Name: "specified", Create: true}, {Name: "default", Create: true, Queue: "root.default"}}},
		{false, false, []Rule{{Name: "specified"}, {Name: "default", Create: true, Queue: "root.default"}}},
	}
	for _, tt := range tests {
		got := DefaultPlacement(tt.userAsDefault, tt.allowUndeclared)
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("DefaultPlacement(%v, %v) (-want +got):\n%s", tt.userAsDefault, tt.allowUndeclared, d)
		}
		if !got[len(got)-1].terminal() {
			t.Errorf("DefaultPlacement(%v, %v): last rule not terminal", tt.userAsDefault, tt.allowUndeclared)
		}
	}
}

func TestFindFair(t *testing.T) {
	tree, err := ReadFairFile("testdata/three-level.xml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{"root.eng.etl", "root.eng.etl"},
		{"eng.etl", "root.eng.etl"},
		{"root", "root"},
		{"default", "root.default"},
		{"etl", ""}, // short names only in capacity trees
		{"", ""},
		{"root.nosuch", ""},
		{"root.", ""},
	}
	for _, tt := range tests {
		got := ""
		if q := tree.Find(tt.in); q != nil {
			got = q.Name
		}
		if got != tt.want {
			t.Errorf("Find(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestPlaceSecondaryGroup: secondaryGroupExistingQueue looks at the
// groups after the primary one, and only at configured queues.
func TestPlaceSecondaryGroup(t *testing.T) {
	tree, err := readFairString(t, `<allocations>
  <queue name="eng"/>
  <queue name="ops"/>
  <queuePlacementPolicy>
    <rule name="secondaryGroupExistingQueue"/>
    <rule name="default" queue="ops"/>
  </queuePlacementPolicy>
</allocations>`)
	if err != nil {
		t.Fatal(err)
	}
	runPlace(t, tree, []placeCase{
		{name: "primary group skipped", requested: "", user: "u", groups: []string{"eng", "staff"}, leaf: "root.ops"},
		{name: "first configured secondary group", requested: "", user: "u", groups: []string{"x", "staff", "eng", "ops"}, leaf: "root.eng"},
	})
}
