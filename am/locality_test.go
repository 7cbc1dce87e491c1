package am

import (
	"maps"
	"testing"
)

// TestLocalityAsksAndBinds: with Inputs, asks count the pending tasks'
// input hosts and racks (by hand: S0's tasks 0, 1, 2 on {a,b}, {b,c},
// {c,d}; S1 names none), a container on host c goes to the first pending
// task with input there, a container on a host of a's rack to a task on
// that rack, and the counts follow the tasks bound.
func TestLocalityAsksAndBinds(t *testing.T) {
	inputs := map[int][][]string{0: {{"a", "b"}, {"b", "c"}, {"c", "d"}}}
	rackOf := map[string]string{"a": "/r1", "b": "/r1", "c": "/r2", "d": "/r2", "e": "/r1", "z": "/r9"}
	d := newDAG(t, Config{
		Inputs: func(stage, task int) []string {
			if task < len(inputs[stage]) {
				return inputs[stage][task]
			}
			return nil
		},
		RackOf: func(h string) string { return rackOf[h] },
	})
	req := d.Decide(0, core.Scale(6), core.Scale(100), 0, nil)
	var s0, s1 *Ask
	for i := range req.Asks {
		switch req.Asks[i].Priority {
		case d.rank[0]:
			s0 = &req.Asks[i]
		case d.rank[1]:
			s1 = &req.Asks[i]
		}
	}
	if s0 == nil || s1 == nil {
		t.Fatalf("asks %+v", req.Asks)
	}
	if want := map[string]int{"a": 1, "b": 2, "c": 2, "d": 1}; !maps.Equal(s0.Hosts, want) {
		t.Errorf("S0 asks for hosts %v, want %v", s0.Hosts, want)
	}
	// Each task once on each rack it has input on: tasks 0 and 1 on /r1,
	// 1 and 2 on /r2 (task 0's two replicas on /r1 are one task there).
	if want := map[string]int{"/r1": 2, "/r2": 2}; !maps.Equal(s0.Racks, want) {
		t.Errorf("S0 asks for racks %v, want %v", s0.Racks, want)
	}
	if s1.Hosts != nil || s1.Racks != nil {
		t.Errorf("S1 reads no input but asks for %v %v", s1.Hosts, s1.Racks)
	}

	bind := func(id int64, host string) TaskRecord {
		t.Helper()
		rec, ok := d.Bind(0, Grant{ID: id, Node: host + ":1", Host: host, Resource: core, Priority: d.rank[0]})
		if !ok || rec.Stage != "S0" {
			t.Fatalf("container on %s: %+v %v", host, rec, ok)
		}
		return rec
	}
	if rec := bind(1, "c"); rec.Task != 1 || rec.Locality != "NODE_LOCAL" {
		t.Errorf("a container on c ran task %d %s, want task 1 (first with input on c) node-local", rec.Task, rec.Locality)
	}
	if rec := bind(2, "e"); rec.Task != 0 || rec.Locality != "RACK_LOCAL" {
		t.Errorf("a container on e (rack /r1) ran task %d %s, want task 0 (input on a, b of /r1) rack-local", rec.Task, rec.Locality)
	}
	if rec := bind(3, "z"); rec.Task != 2 || rec.Locality != "OFF_SWITCH" {
		t.Errorf("a container on z ran task %d %s, want the last, task 2, off-switch", rec.Task, rec.Locality)
	}
	req = d.Decide(0, core.Scale(6), core.Scale(100), 0, nil)
	for _, a := range req.Asks {
		if a.Priority == d.rank[0] && (a.Hosts != nil || a.Count != 0) {
			t.Errorf("S0 still asks for %d containers on %v with every task bound", a.Count, a.Hosts)
		}
	}
	// A failed task is pending again, with its input counted again.
	if _, err := d.Completed(sec, 1, false); err != nil {
		t.Fatal(err)
	}
	hosts, _ := d.locality(0)
	if want := map[string]int{"b": 1, "c": 1}; !maps.Equal(hosts, want) {
		t.Errorf("after task 1 failed, S0's hosts %v, want %v", hosts, want)
	}
}

// TestUseInputsLater: inputs given after the DAG was made, with a task
// already running, count the pending tasks only (by hand: S0's task 0 on
// {a,b} runs, tasks 1 and 2 on {b,c} and {c,d} are pending); when task 0
// fails, its input counts again. A second set of inputs is refused.
func TestUseInputsLater(t *testing.T) {
	inputs := [][]string{{"a", "b"}, {"b", "c"}, {"c", "d"}}
	d := newDAG(t, Config{})
	d.Decide(0, core.Scale(6), core.Scale(100), 0, nil)
	rec, ok := d.Bind(0, Grant{ID: 1, Node: "a:1", Host: "a", Resource: core, Priority: d.rank[0]})
	if !ok || rec.Stage != "S0" || rec.Task != 0 || rec.Locality != "" {
		t.Fatalf("bound %+v %v, want S0's task 0 with no locality", rec, ok)
	}
	err := d.UseInputs(func(stage, task int) []string {
		if stage == 0 {
			return inputs[task]
		}
		return nil
	}, func(h string) string { return map[string]string{"a": "/r1", "b": "/r1", "c": "/r2", "d": "/r2"}[h] })
	if err != nil {
		t.Fatal(err)
	}
	hosts, racks := d.locality(0)
	if want := map[string]int{"b": 1, "c": 2, "d": 1}; !maps.Equal(hosts, want) {
		t.Errorf("S0's hosts %v, want %v", hosts, want)
	}
	// Task 1 on /r1 and /r2, task 2 on /r2 (both its replicas): one task
	// on /r1, two on /r2.
	if want := map[string]int{"/r1": 1, "/r2": 2}; !maps.Equal(racks, want) {
		t.Errorf("S0's racks %v, want %v", racks, want)
	}
	if rec, _ := d.Bind(0, Grant{ID: 2, Node: "d:1", Host: "d", Resource: core, Priority: d.rank[0]}); rec.Task != 2 || rec.Locality != "NODE_LOCAL" {
		t.Errorf("a container on d ran task %d %s, want task 2 node-local", rec.Task, rec.Locality)
	}
	if _, err := d.Completed(sec, 1, false); err != nil {
		t.Fatal(err)
	}
	hosts, _ = d.locality(0)
	if want := map[string]int{"a": 1, "b": 2, "c": 1}; !maps.Equal(hosts, want) {
		t.Errorf("after task 0 failed, S0's hosts %v, want %v", hosts, want)
	}
	if err := d.UseInputs(func(int, int) []string { return nil }, nil); err == nil {
		t.Error("a second UseInputs was accepted")
	}
}
