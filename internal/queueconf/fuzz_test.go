package queueconf

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadFair: no input makes ReadFair panic, and a tree it returns is
// well formed.
func FuzzReadFair(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.xml")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, c := range fairErrorCases {
		f.Add([]byte(c.xml))
	}
	for _, s := range []string{
		`<allocations/>`,
		`<allocations><queue name="root"><queue name="a" type="parent"/></queue></allocations>`,
		`<allocations><pool name="a"><minResources>50%</minResources><maxResources>vcores=10%, memory-mb=50%</maxResources></pool></allocations>`,
		`<allocations><queuePlacementPolicy><rule name="nestedUserQueue"><rule name="primaryGroup" create="false"/></rule><rule name="reject"/></queuePlacementPolicy></allocations>`,
		`<allocations><queue name="a"><queue name="b"><weight>2</weight></queue></queue><user name="u"><maxRunningApps>1</maxRunningApps></user></allocations>`,
		"<allocations>\n<queue name=\"a\">\n<weight>2</weigh",
		`<?xml version="1.0" encoding="ISO-8859-1"?><allocations/>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, err := ReadFair(strings.NewReader(string(data)), "fuzz.xml")
		if err != nil {
			if tree != nil {
				t.Fatalf("a tree and an error")
			}
			if !strings.HasPrefix(err.Error(), "fuzz.xml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		checkTree(t, tree)
		for _, req := range []string{"", "default", "a", "root.a.b", ".x", "root"} {
			tree.Place(req, "user.name", []string{"g1", "g2"})
			tree.Place(req, "u", nil)
		}
	})
}

func checkTree(t *testing.T, tree *Tree) {
	t.Helper()
	if tree.Root == nil || tree.Root.Name != "root" || tree.Root.Parent != nil {
		t.Fatalf("bad root %+v", tree.Root)
	}
	n := 0
	tree.Walk(func(q *Queue) {
		n++
		if q.Name != "root" && !strings.HasPrefix(q.Name, "root.") {
			t.Fatalf("queue %q does not start with root", q.Name)
		}
		for _, c := range q.Children {
			if c.Parent != q {
				t.Fatalf("%s: parent pointer of child %s is wrong", q.Name, c.Name)
			}
			if c.Name != q.Name+"."+c.ShortName() || c.ShortName() == "" {
				t.Fatalf("%s: child %s is not named under it", q.Name, c.Name)
			}
		}
		if len(q.Children) > 0 && !q.IsParent {
			t.Fatalf("%s has children but is not a parent", q.Name)
		}
		if tree.Find(q.Name) != q {
			t.Fatalf("Find(%q) does not find it", q.Name)
		}
		if q.Weight < 0 || math.IsNaN(q.Weight) || q.MaxRunningApps < 0 {
			t.Fatalf("%s: weight %v, max apps %d", q.Name, q.Weight, q.MaxRunningApps)
		}
		switch q.Policy {
		case PolicyFair, PolicyDRF, PolicyFIFO:
		default:
			t.Fatalf("%s: policy %q", q.Name, q.Policy)
		}
		if q.IsParent && q.Policy == PolicyFIFO {
			t.Fatalf("%s: fifo parent", q.Name)
		}
	})
	if n == 0 {
		t.Fatalf("empty tree")
	}
	if len(tree.Placement) == 0 || !tree.Placement[len(tree.Placement)-1].terminal() {
		t.Fatalf("placement %v does not end with a terminal rule", tree.Placement)
	}
}

// FuzzParseResources: no input makes ParseResources panic, and an amount
// it returns is set, with finite, non-negative values.
func FuzzParseResources(f *testing.F) {
	for _, s := range []string{
		"1024 mb, 4 vcores", "4 vcores,1024mb", "1024.5 MB, 2 VCORES", "50%", "50% memory, 25% cpu",
		"memory-mb=1024, vcores=4", "vcores=50%, memory-mb=20%", "yarn.io/gpu=2", "", "=", "%", "-1 mb, 1 vcores",
		"memory-mb=9999999999999999999", "1e9 mb, 1 vcores", "50%%", "İ%", "\xff mb",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseResources(s)
		if err != nil {
			if a.Set {
				t.Fatalf("error %v with a set amount", err)
			}
			return
		}
		if !a.Set {
			t.Fatalf("ParseResources(%q): unset amount without an error", s)
		}
		for _, m := range []map[string]float64{a.Abs, a.Frac} {
			for k, v := range m {
				if k == "" || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("ParseResources(%q): %q = %v", s, k, v)
				}
			}
		}
		if a.Others < 0 || math.IsNaN(a.Others) {
			t.Fatalf("ParseResources(%q): others %v", s, a.Others)
		}
		_ = a.String()
		_ = a.Of(map[string]float64{Memory: 1000, VCores: 10, "yarn.io/gpu": 2})
	})
}
