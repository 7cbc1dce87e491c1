package integration

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLoadWithTheRMInItsOwnProcess: `loom bench load --rm-process` runs a
// real `loom rm` as a child, drives it over the real RPC, and reports the
// RM's CPU and peak RSS apart from the simulated NMs' and AMs' (issue 19:
// "report the RM's memory and CPU"); nothing is lost on the way.
func TestLoadWithTheRMInItsOwnProcess(t *testing.T) {
	out, err := exec.Command(loomBin, "bench", "load", "--nodes", "20", "--apps", "4", "--tasks", "200",
		"--task-ms", "200", "--heartbeat", "200ms", "--async", "10ms", "--rm-process", "--quiet").CombinedOutput()
	if err != nil {
		t.Fatalf("loom bench load --rm-process: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`the RM's process: peak RSS (\d+) MiB, CPU ([0-9.]+) s`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no RM process figures in:\n%s", out)
	}
	if rss, _ := strconv.Atoi(string(m[1])); rss < 5 {
		t.Errorf("the RM's peak RSS %d MiB is not a running RM's", rss)
	}
	if cpu, _ := strconv.ParseFloat(string(m[2]), 64); cpu <= 0 {
		t.Errorf("the RM used %v s of CPU: not measured", cpu)
	}
	for _, want := range []string{"4/4", "200/200"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}
