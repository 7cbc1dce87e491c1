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
	req := d.Decide(0, core.Scale(6), core.Scale(100), 0)
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
	if want := map[string]int{"/r1": 3, "/r2": 3}; !maps.Equal(s0.Racks, want) {
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
	req = d.Decide(0, core.Scale(6), core.Scale(100), 0)
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
