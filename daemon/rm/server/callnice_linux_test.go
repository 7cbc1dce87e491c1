package server

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestClientAndAMCallsRunNiced: with loom.resourcemanager.call-nice the
// RM serves clients' and AMs' calls on call-threads threads at that nice
// (a client call and an AM's register and allocate are answered, each
// handler on such a thread), says so in its log, and the threads end with
// the RM; at 0 there are none and the calls run on their connections'
// goroutines. The test counts threads at a nice no other test uses.
func TestClientAndAMCallsRunNiced(t *testing.T) {
	base := threadNice(t)
	const nice, threads = 12, 3
	if base+nice > 19 {
		t.Skipf("the test runs at nice %d: cannot lower by %d", base, nice)
	}
	// A pool thread may be the main thread, which Go never ends (it stays
	// parked at the nice once its goroutine ends): it counts while the
	// RM runs, and the other threads must end with the RM.
	all := func() int {
		n := threadsAt(t, base+nice)
		if mainThreadAt(t, base+nice) {
			n++
		}
		return n
	}
	waitFor := func(what string, count func() int, want int) {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			n := count()
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d threads at nice %d, want %d", what, n, base+nice, want)
			}
		}
	}
	before, beforeAll := threadsAt(t, base+nice), all()
	var logged logBuffer
	r, err := New(testConfig(t, "loom.resourcemanager.call-nice=12", "loom.resourcemanager.call-threads=3"), zerolog.New(&logged))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor("an RM with call-nice 12 running", all, beforeAll+threads)
	if line := `"threads":3,"nice":12,"message":"clients' and AMs' calls run on threads of their own at a lower priority than node heartbeats`; !strings.Contains(logged.String(), line) {
		t.Errorf("the log does not say the calls run at nice 12:\n%s", logged.String())
	}
	// Each handler runs on one of the pool's threads.
	var seen []int
	r.calls.run(func() { seen = append(seen, threadNice(t)) })
	if len(seen) != 1 || seen[0] != base+nice {
		t.Errorf("work on the pool ran at nice %v, want [%d]", seen, base+nice)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A client's calls and an AM's, each run by the pool.
	ran := r.calls.ran.Load()
	ac := clientOf(t, r, "alice")
	if _, err := ac.GetClusterMetrics(ctx, &pb.GetClusterMetricsRequestProto{}); err != nil {
		t.Errorf("a client call through the pool: %v", err)
	}
	nm := startNM(t, r.Addr("tracker"), 8192, 8)
	submit(t, ac, "default", 1024)
	nm.beat()
	am := amClient(t, r, nm.waitStarts(1)[0])
	if _, err := am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{}); err != nil {
		t.Fatal(err)
	}
	if _, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0)}); err != nil {
		t.Fatal(err)
	}
	// getClusterMetrics, getNewApplication, submitApplication,
	// registerApplicationMaster, allocate.
	if n := r.calls.ran.Load() - ran; n < 5 {
		t.Errorf("the pool ran %d calls, want at least 5", n)
	}
	r.Stop(ctx)
	waitFor("after it stopped", func() int { return threadsAt(t, base+nice) }, before)
	// Once closed, the pool runs work on the caller's goroutine.
	done := false
	r.calls.run(func() { done = true })
	if !done {
		t.Error("a closed pool did not run the work")
	}

	r0 := startRM(t, "loom.resourcemanager.call-nice=0", "loom.resourcemanager.call-threads=3")
	if r0.calls != nil {
		t.Error("call-nice 0 started a pool")
	}
	if _, err := clientOf(t, r0, "bob").GetClusterMetrics(ctx, &pb.GetClusterMetricsRequestProto{}); err != nil {
		t.Errorf("a client call without the pool: %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	waitFor("an RM with call-nice 0 running", func() int { return threadsAt(t, base+nice) }, before)
}

// mainThreadAt says whether the process's main thread is at nice at.
func mainThreadAt(t *testing.T, at int) bool {
	t.Helper()
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return 20-raw == at
}
