package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTuneCommand runs `loom tune` on a small SLS trace against a cluster
// shape read from a REST nodes list, and checks its table, its
// recommendation and its refusals.
func TestTuneCommand(t *testing.T) {
	nodes := `{"nodes": {"node": [
	  {"state": "RUNNING", "usedMemoryMB": 1024, "availMemoryMB": 7168, "usedVirtualCores": 1, "availableVirtualCores": 7},
	  {"state": "RUNNING", "usedMemoryMB": 0, "availMemoryMB": 8192, "usedVirtualCores": 0, "availableVirtualCores": 8},
	  {"state": "LOST", "usedMemoryMB": 0, "availMemoryMB": 99999, "usedVirtualCores": 0, "availableVirtualCores": 99}]}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ws/v1/cluster/nodes" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(nodes))
	}))
	defer srv.Close()
	var trace strings.Builder
	for i := range 12 {
		fmt.Fprintf(&trace, `{"job.id": "j%d", "job.start.ms": %d,
		  "job.tasks": [{"count": 6, "duration.ms": 3000, "container.memory": 2048}, {"count": 2, "duration.ms": 5000, "container.type": "reduce"}]}`+"\n",
			i, 2000*i)
	}
	file := filepath.Join(t.TempDir(), "sls.json")
	if err := os.WriteFile(file, []byte(trace.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := newRoot()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"tune", "--workload", file, "--rm-web", srv.URL, "--quiet", "--max-slowed", "50"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("loom tune: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"12 jobs from " + file + " (sls)", "on 2 machines of <memory-mb=8192, vcores=8>",
		"P(Altruism)  leftover cap", "recommended: P(Altruism)", "took "} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", "--workload", file, "--machines", "0"}, "--machines 0"},
		{[]string{"tune", "--workload", file, "--p-altruism", "0,x"}, `--p-altruism: "x" is not a number`},
		{[]string{"tune", "--workload", file, "--machine-memory-mb", "4096"}, "go together"},
		{[]string{"tune", "--workload", file, "--rm-web", srv.URL + "/nothing"}, "answered 404"},
	} {
		cmd := newRoot()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(append(tc.args, "--quiet"))
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}
