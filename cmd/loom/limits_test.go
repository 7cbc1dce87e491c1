package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeJob writes a one-job JSON DAG with the given stages' task counts.
func writeJob(t *testing.T, dir, name string, tasks ...int) string {
	t.Helper()
	var stages []string
	for i, n := range tasks {
		stages = append(stages, fmt.Sprintf(`{"name": "s%d", "tasks": %d, "duration_ms": 1000, "demand": {"memory-mb": 1024, "vcores": 1}}`, i, n))
	}
	path := filepath.Join(dir, name+".json")
	doc := fmt.Sprintf(`{"name": %q, "stages": [%s]}`, name, strings.Join(stages, ", "))
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSubmitRefusesJobsOverTheLimits: an over-limit job is refused by
// loom submit before it connects to anything (the RM here is a port no
// one listens on, so reaching it would be a different error).
func TestSubmitRefusesJobsOverTheLimits(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HADOOP_CONF_DIR", "")
	big := writeJob(t, dir, "x", 10_000_000)
	small := writeJob(t, dir, "small", 10)
	const unreachable = "unreachable at 127.0.0.1:1"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"ten million tasks", []string{"--workload", big},
			`jobs[0]: job "x": 10000000 tasks is more than the limit of 1000000 tasks per job (loom.job.max-tasks)`},
		{"a small job gets as far as the RM", []string{"--workload", small}, unreachable},
		{"the limit raised", []string{"--workload", big, "-D", "loom.job.max-tasks=20000000"}, unreachable},
		{"the limit lowered", []string{"--workload", small, "-D", "loom.job.max-tasks=5"},
			`job "small": 10 tasks is more than the limit of 5 tasks per job (loom.job.max-tasks)`},
		{"a catalogue query under a low stage limit", []string{"tpch", "q5", "-D", "loom.job.max-stages=2"},
			`stages is more than the limit of 2 stages per job (loom.job.max-stages)`},
		{"a bad limit", []string{"--workload", small, "-D", "loom.job.max-stages=0"}, "loom.job.max-stages"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, append([]string{"submit", "--rm", "127.0.0.1:1", "--detach"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestAMRefusesJobsOverTheLimits: the AM holds its job to the limits of
// its config dir before building it.
func TestAMRefusesJobsOverTheLimits(t *testing.T) {
	dir := t.TempDir()
	big := writeJob(t, dir, "x", 10_000_000)
	conf := filepath.Join(dir, "conf")
	if err := os.Mkdir(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "loom-site.xml"), []byte(`<configuration>
  <property><name>loom.job.max-tasks</name><value>20000000</value></property>
</configuration>`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		confDir  string
		file     string
		catalog  string
		wantErr  string
		wantName string
	}{
		{"ten million tasks", "", big, "", `jobs[0]: job "x": 10000000 tasks is more than the limit of 1000000 tasks per job (loom.job.max-tasks)`, ""},
		{"the limit raised in loom-site.xml", conf, big, "", "", "x"},
		{"a catalogue job", "", "", "tpch:100g", "", "tpch-q1-100g"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HADOOP_CONF_DIR", tc.confDir)
			name := ""
			if tc.catalog != "" {
				name = tc.wantName
			}
			j, err := amJob(tc.file, tc.catalog, name)
			switch {
			case tc.wantErr != "":
				if err == nil || err.Error() != big+": "+tc.wantErr {
					t.Errorf("error %v, want %q", err, tc.wantErr)
				}
			case err != nil:
				t.Errorf("refused: %v", err)
			case j.Name != tc.wantName:
				t.Errorf("job %q, want %q", j.Name, tc.wantName)
			}
		})
	}
}
