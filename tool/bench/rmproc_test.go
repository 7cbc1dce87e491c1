package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
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
	bin := buildLoom(t)
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

var loomBin struct {
	once      sync.Once
	dir, path string
	err       error
}

// buildLoom builds the loom binary once for the package's tests.
func buildLoom(t *testing.T) string {
	t.Helper()
	loomBin.once.Do(func() {
		if loomBin.dir, loomBin.err = os.MkdirTemp("", "loom-bench-test-"); loomBin.err != nil {
			return
		}
		loomBin.path = filepath.Join(loomBin.dir, "loom")
		if out, err := exec.Command("go", "build", "-o", loomBin.path, "../../cmd/loom").CombinedOutput(); err != nil {
			loomBin.err = fmt.Errorf("building loom: %v\n%s", err, out)
		}
	})
	if loomBin.err != nil {
		t.Fatal(loomBin.err)
	}
	return loomBin.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if loomBin.dir != "" {
		os.RemoveAll(loomBin.dir)
	}
	os.Exit(code)
}

// TestLoadSimProcs: with the RM in a process of its own, the simulation
// runs with SimProcs Ps and SimGCPercent's GOGC, says so in the table,
// and gives the process its GOMAXPROCS and GOGC back afterwards.
func TestLoadSimProcs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an RM")
	}
	before := runtime.GOMAXPROCS(0)
	gcBefore := debug.SetGCPercent(100)
	debug.SetGCPercent(gcBefore)
	o := DefaultLoadOptions()
	o.Nodes, o.Apps, o.Tasks = 20, 2, 40
	o.TaskTime, o.Heartbeat, o.AMInterval = 100*time.Millisecond, 100*time.Millisecond, 50*time.Millisecond
	o.Timeout = time.Minute
	o.RMCommand = []string{buildLoom(t), "rm"}
	o.SimProcs = before + 3
	o.SimGCPercent = 777
	var gcDuring int
	o.Progress = func(done, total int) {
		if gcDuring == 0 {
			gcDuring = debug.SetGCPercent(777)
		}
	}
	rep, err := RunLoad(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if f := rep.Failures(); len(f) > 0 {
		t.Fatalf("failures: %v", f)
	}
	if rep.SimProcs != before+3 {
		t.Errorf("the simulation ran with GOMAXPROCS %d, want %d", rep.SimProcs, before+3)
	}
	if now := runtime.GOMAXPROCS(0); now != before {
		t.Errorf("GOMAXPROCS is %d after the run, was %d", now, before)
	}
	if gcDuring != 777 {
		t.Errorf("GOGC during the run %d, want 777", gcDuring)
	}
	if now := debug.SetGCPercent(gcBefore); now != gcBefore {
		t.Errorf("GOGC is %d after the run, was %d", now, gcBefore)
	}
	var out strings.Builder
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("the simulation's (GOMAXPROCS %d, GOGC 777)", before+3), "garbage collections during the run"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if rep.RMCollections < 0 || rep.SimCollections < 0 {
		t.Errorf("collections: the RM %d, the simulation %d", rep.RMCollections, rep.SimCollections)
	}
}
