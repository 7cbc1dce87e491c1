package queueconf

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseACL(t *testing.T) {
	tests := []struct {
		in   string
		want ACL
	}{
		{"*", ACL{All: true}},
		{" *", ACL{All: true}},
		{"alice *", ACL{All: true}},
		{"alice,bob admins", ACL{Users: []string{"alice", "bob"}, Groups: []string{"admins"}}},
		{"alice", ACL{Users: []string{"alice"}}},
		{"alice, bob", ACL{Users: []string{"alice"}, Groups: []string{"bob"}}}, // Hadoop splits at the first space
		{" admins,ops", ACL{Groups: []string{"admins", "ops"}}},
		{" ", ACL{}},
		{"", ACL{}},
		{"alice,,alice ,bob", ACL{Users: []string{"alice"}, Groups: []string{"bob"}}},
		{" a , b ,, c  g1", ACL{Groups: []string{"a", "b", "c  g1"}}},
		{"*,alice", ACL{Users: []string{"*", "alice"}}},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, ParseACL(tt.in), cmpOpts...); d != "" {
			t.Errorf("ParseACL(%q) (-want +got):\n%s", tt.in, d)
		}
	}
}

func TestACLAllows(t *testing.T) {
	tests := []struct {
		acl    string
		user   string
		groups []string
		want   bool
	}{
		{"*", "anyone", nil, true},
		{" ", "anyone", []string{"g"}, false},
		{"alice,bob admins", "bob", nil, true},
		{"alice,bob admins", "carol", []string{"staff", "admins"}, true},
		{"alice,bob admins", "carol", []string{"staff"}, false},
		{"alice,bob admins", "admins", nil, false}, // a group name is not a user
		{"*,alice", "bob", nil, false},
		{" admins", "", []string{""}, false},
	}
	for _, tt := range tests {
		if got := ParseACL(tt.acl).Allows(tt.user, tt.groups); got != tt.want {
			t.Errorf("ParseACL(%q).Allows(%q, %q) = %v, want %v", tt.acl, tt.user, tt.groups, got, tt.want)
		}
	}
}

// TestACLInheritance: a user allowed on a queue or any ancestor is allowed;
// administrators may submit too.
func TestACLInheritance(t *testing.T) {
	tree, err := ReadFairFile("testdata/three-level.xml")
	if err != nil {
		t.Fatal(err)
	}
	// root: submit nobody, administer "admin admins"; root.eng: submit
	// "bob engineers"; root.eng.etl: submit carol; root.ops: submit " ops".
	tests := []struct {
		queue       string
		user        string
		groups      []string
		submit, adm bool
	}{
		{"root.eng.etl", "carol", nil, true, false},
		{"root.eng.etl", "bob", nil, true, false},
		{"root.eng.etl", "dave", []string{"engineers"}, true, false},
		{"root.eng.etl", "dave", []string{"ops"}, false, false},
		{"root.eng.adhoc", "carol", nil, false, false},
		{"root.eng.adhoc", "bob", nil, true, false},
		{"root.eng", "bob", nil, true, false},
		{"root.ops", "dave", []string{"ops"}, true, false},
		{"root.ops", "carol", nil, false, false},
		{"root.default", "admin", nil, true, true},
		{"root.eng.etl", "erin", []string{"admins"}, true, true},
		{"root", "bob", nil, false, false},
		{"root", "admin", nil, true, true},
	}
	for _, tt := range tests {
		q := tree.Find(tt.queue)
		if q == nil {
			t.Fatalf("no queue %s", tt.queue)
		}
		if got := q.MaySubmit(tt.user, tt.groups); got != tt.submit {
			t.Errorf("%s.MaySubmit(%q, %q) = %v, want %v", tt.queue, tt.user, tt.groups, got, tt.submit)
		}
		if got := q.MayAdminister(tt.user, tt.groups); got != tt.adm {
			t.Errorf("%s.MayAdminister(%q, %q) = %v, want %v", tt.queue, tt.user, tt.groups, got, tt.adm)
		}
	}

	// Without ACLs, root's default "*" lets everyone in everywhere.
	open, err := readFairString(t, `<allocations><queue name="a"><queue name="b"/></queue></allocations>`)
	if err != nil {
		t.Fatal(err)
	}
	b := open.Find("a.b")
	if !b.MaySubmit("anyone", nil) || !b.MayAdminister("anyone", nil) {
		t.Errorf("root.a.b: default ACLs should let anyone in")
	}
	if b.SubmitACL.Allows("anyone", nil) {
		t.Errorf("root.a.b's own submit ACL should be nobody")
	}
}
