package bench

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/loomrm/loom/tool/mini"
)

// TestStartRMProcessRetriesATakenPort: another process holds the client
// port picked for the RM when it starts; the RM ends, and the load test
// picks other ports and gets an RM that serves.
func TestStartRMProcessRetriesATakenPort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an RM")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "loom")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/loom").CombinedOutput(); err != nil {
		t.Fatalf("building loom: %v\n%s", err, out)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	picks := 0
	pickRMAddrs = func(n int) ([]string, error) {
		picks++
		a, err := mini.FreeAddrs(n)
		if picks == 1 && err == nil {
			a[0] = taken.Addr().String()
		}
		return a, err
	}
	defer func() { pickRMAddrs = mini.FreeAddrs }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := startRMProcess(ctx, []string{bin, "rm"}, map[string]string{"loom.history.dir": filepath.Join(dir, "history")})
	if err != nil {
		t.Fatalf("startRMProcess: %v", err)
	}
	defer c.stop()
	if picks != 2 || c.addr("client") == taken.Addr().String() {
		t.Errorf("picked ports %d times, client address %s (the taken one %s); want 2 picks and another port", picks, c.addr("client"), taken.Addr())
	}
}
