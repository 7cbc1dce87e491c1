package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomrm/loom/workload"
)

// run executes loom with args in-process and returns what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestSimTables(t *testing.T) {
	dir := t.TempDir()
	out, err := run(t, "sim", "--catalogue", "tpch:50g", "--jobs", "6", "--machines", "3",
		"--policies", "drf,carbyne", "--quiet", "--plots", dir, "--decisions", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"6 jobs drawn from tpch:50g", "factor of improvement", "drf", "carbyne", "plots:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"jct-cdf.svg", "utilisation.svg", "fairness.svg", "decisions-drf.log", "decisions-carbyne.log"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestSimJSONFromFile(t *testing.T) {
	dir := t.TempDir()
	doc := `{"jobs": [
	  {"name": "a", "arrival_ms": 0, "stages": [{"name": "s", "tasks": 4, "duration_ms": 1000, "demand": {"memory-mb": 1024, "vcores": 1}}]},
	  {"name": "b", "arrival_ms": 500, "stages": [{"name": "s", "tasks": 2, "duration_ms": 2000, "demand": {"memory-mb": 1024, "vcores": 1}}]}]}`
	path := filepath.Join(dir, "dags.json")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "sim", "--workload", path, "--machines", "1", "--json", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Workload string
		Policies []struct {
			Policy string
			Jobs   []struct {
				Name    string
				Arrival float64 `json:"arrival_s"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	// The file's own arrival times are kept.
	if len(rep.Policies) != 4 || rep.Policies[0].Jobs[1].Name != "b" || rep.Policies[0].Jobs[1].Arrival != 0.5 {
		t.Errorf("report %+v", rep)
	}
}

func TestCommandErrors(t *testing.T) {
	dir := t.TempDir()
	cyclic := filepath.Join(dir, "cyclic.json")
	os.WriteFile(cyclic, []byte(`{"name": "c", "stages": [
	  {"name": "x", "tasks": 1, "duration_ms": 1, "demand": {"vcores": 1}, "parents": ["y"]},
	  {"name": "y", "tasks": 1, "duration_ms": 1, "demand": {"vcores": 1}, "parents": ["x"]}]}`), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--catalogue", "tpcx"}, `unknown catalogue "tpcx"`},
		{[]string{"sim", "--catalogue", "tpch:7g"}, `tpch: unknown scale "7g"`},
		{[]string{"sim", "--policies", "drf,fifo", "--quiet"}, `unknown policy "fifo"`},
		{[]string{"sim", "--leftover-order", "fastest"}, `unknown leftover order "fastest"`},
		{[]string{"sim", "--workload", filepath.Join(dir, "missing.json")}, "missing.json: no such file"},
		{[]string{"sim", "--workload", cyclic}, `job "c": cycle: x -> y -> x`},
		{[]string{"sim", "--arrivals", "soon"}, `unknown arrival process "soon"`},
		{[]string{"sim", "--misestimate", "90", "--quiet"}, "misestimation 90% must be between -50 and 50"},
		{[]string{"bench", "warp"}, `unknown bench target "warp"`},
		{[]string{"workload", "stats", "tpcds:2"}, `unsupported TPC-DS scale factor 2 (valid: 1, 100, 1000, 3000)`},
	}
	for _, tc := range tests {
		_, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("loom %s: error %v, want it to say %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

func TestWorkloadCommands(t *testing.T) {
	out, err := run(t, "workload", "stats", "tpch:50g")
	if err != nil || !strings.Contains(out, "tpch:50g") || !strings.Contains(out, "stages p50") {
		t.Errorf("stats: %v\n%s", err, out)
	}
	out, err = run(t, "workload", "export", "tpch:50g")
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := workload.ParseJSON([]byte(out))
	if err != nil || len(jobs) != 22 {
		t.Errorf("export parses to %d jobs, %v", len(jobs), err)
	}
}

// TestAMRefusesABadTimeScale: loom am says what is wrong with a time
// scale it cannot plan with, before it looks for its job or its RM.
func TestAMRefusesABadTimeScale(t *testing.T) {
	for _, v := range []string{"0", "-0.5", "NaN", "+Inf"} {
		_, err := run(t, "am", "--catalogue", "tpch:100g", "--name", "q5", "--time-scale", v)
		if err == nil || !strings.Contains(err.Error(), "--time-scale") || !strings.Contains(err.Error(), "must be a positive number") {
			t.Errorf("--time-scale %s: %v", v, err)
		}
	}
}
