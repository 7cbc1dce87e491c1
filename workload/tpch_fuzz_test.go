package workload

import (
	"slices"
	"testing"
	"time"
)

func FuzzTPCHParseGraphs(f *testing.F) {
	f.Add(tpchQueriesYAML)
	f.Add([]byte("graphs:\n  - name: Q1\n    graph:\n      - name: 0\n        children: [1]\n      - name: 1\n"))
	f.Add([]byte("graphs:\n  - name: Q2\n    graph:\n      - name: 1\n        children: [0]\n      - name: 0\n        children: [1]\n"))
	f.Add([]byte("graphs: [{name: Q3, graph: [{name: 0, children: [0]}]}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		graphs, err := tpchParseGraphs(data)
		if err != nil {
			return
		}
		// Whatever parses must be a well-formed node list: the builder
		// relies on sorted unique ids and parents that exist.
		for q, nodes := range graphs {
			if len(nodes) == 0 {
				t.Errorf("%s: no nodes", q)
			}
			ids := make(map[int]bool, len(nodes))
			for i, n := range nodes {
				if i > 0 && nodes[i-1].id >= n.id {
					t.Errorf("%s: ids not strictly increasing at #%d", q, i)
				}
				ids[n.id] = true
			}
			for _, n := range nodes {
				for _, p := range n.parents {
					if !ids[p] || p == n.id {
						t.Errorf("%s: node %d has bad parent %d", q, n.id, p)
					}
				}
				if !slices.IsSorted(n.parents) {
					t.Errorf("%s: node %d: parents %v not sorted", q, n.id, n.parents)
				}
			}
		}
	})
}

func FuzzTPCHParseProfiles(f *testing.F) {
	f.Add([]byte(`{"tpch_q1_100g_maxCores_50": [{"stage_id": 0, "stage_name": "x", "num_tasks": 593, "average_runtime_ms": 8924.66}, {"stage_id": 1, "num_tasks": 1, "average_runtime_ms": 702.0}]}`))
	f.Add([]byte(`{"tpch_q22_500g_maxCores_200": [{"stage_id": 3, "num_tasks": 1, "average_runtime_ms": 0.4}]}`))
	f.Add([]byte(`{"tpch_q1_100g_maxCores_50": [{"stage_id": 0, "num_tasks": 1, "average_runtime_ms": 9.2e12}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		profiles, err := tpchParseProfiles(data)
		if err != nil {
			return
		}
		for k, stages := range profiles {
			if _, ok := tpchCanonQuery(k.query); !ok || !slices.Contains(tpchScaleList, k.scale) || !slices.Contains(tpchCoreList, k.cores) {
				t.Errorf("key %+v outside the catalogue", k)
			}
			for _, s := range stages {
				if s.tasks <= 0 || s.runtime < time.Millisecond {
					t.Errorf("%v: stage %+v: want tasks > 0 and runtime ≥ 1ms", k, s)
				}
			}
		}
	})
}

func FuzzTPCHQueryName(f *testing.F) {
	for _, s := range []string{"q5", "Q5", "5", "q05", "q0", "q23", "", "q", "-1", "q+1"} {
		f.Add(s, "100g")
	}
	f.Fuzz(func(t *testing.T, query, scale string) {
		j, err := TPCH(query, scale)
		if err != nil {
			return
		}
		if _, err := j.Graph(); err != nil {
			t.Errorf("TPCH(%q, %q): %v", query, scale, err)
		}
	})
}
