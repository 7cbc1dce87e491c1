package mini

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/rm"
)

func buildLoom(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "loom")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/loom").CombinedOutput(); err != nil {
		t.Fatalf("building loom: %v\n%s", err, out)
	}
	return bin
}

// TestStartRetriesATakenPort: another process binds the client port
// picked for the RM before the RM starts; the RM exits, and Start picks
// other ports and brings the cluster up, its NodeManager registered.
func TestStartRetriesATakenPort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an RM and a NodeManager")
	}
	bin := buildLoom(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	picks := 0
	pickAddrs = func(n int) ([]string, error) {
		picks++
		a, err := FreeAddrs(n)
		if picks == 1 && err == nil {
			a[0] = taken.Addr().String()
		}
		return a, err
	}
	defer func() { pickAddrs = FreeAddrs }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Binary: bin, Dir: t.TempDir(), Nodes: 1, NodeMemoryMB: 1024, NodeVCores: 2,
		PolicyConfig: rm.DefaultPolicyConfig(), TaskKind: "noop", TimeScale: 1})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer c.Stop()
	if picks != 2 || c.ClientAddr == taken.Addr().String() {
		t.Errorf("picked ports %d times, client address %s (the taken one %s); want 2 picks and another port", picks, c.ClientAddr, taken.Addr())
	}
}

// TestStartReportsWhyTheRMExited: an RM that cannot start for another
// reason (its history directory is a file) is not retried, and the error
// quotes its log.
func TestStartReportsWhyTheRMExited(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an RM")
	}
	bin := buildLoom(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "history"), []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	picks := 0
	pickAddrs = func(n int) ([]string, error) { picks++; return FreeAddrs(n) }
	defer func() { pickAddrs = FreeAddrs }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Binary: bin, Dir: dir, Nodes: 1, NodeMemoryMB: 1024, NodeVCores: 2,
		PolicyConfig: rm.DefaultPolicyConfig(), TaskKind: "noop", TimeScale: 1})
	if err == nil {
		c.Stop()
		t.Fatal("Start succeeded with a file for the history directory")
	}
	if picks != 1 || !strings.Contains(err.Error(), "exited as it started") || !strings.Contains(err.Error(), "history") {
		t.Errorf("after %d picks: %v; want one pick and the RM's reason", picks, err)
	}
}
