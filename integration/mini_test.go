package integration

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMini runs the main job small: loom mini starts its own RM and NMs,
// runs two jobs, prints the summary, leaves the histories and stops
// every process it started.
func TestMini(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(loomBin, "mini", "--nodes", "2", "--jobs", "2", "--catalogue", "tpch:50g", "--arrivals", "batch",
		"--task-kind", "noop", "--dir", dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("loom mini: %v\n%s", err, out)
	}
	for _, want := range []string{"SUCCEEDED", "avg JCT", "makespan", "Jain avg", "altruistic", "carbyne (P=1)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	hs, _ := filepath.Glob(filepath.Join(dir, "nm*", "logs", "application_*", "container_*", "history.json"))
	if len(hs) != 2 {
		t.Errorf("%d history files, want 2", len(hs))
	}
	// Nothing it started is left running.
	time.Sleep(200 * time.Millisecond)
	if ps, _ := exec.Command("pgrep", "-f", dir).Output(); len(strings.TrimSpace(string(ps))) > 0 {
		t.Errorf("processes left behind: %s", ps)
	}
}
