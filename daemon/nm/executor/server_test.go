package executor

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/execproto"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// serve runs an executor behind a real rpc.Server on loopback and returns
// a client of it.
func serve(t testing.TB, opts Options) (execproto.Client, *Executor) {
	t.Helper()
	q := NewCompletions()
	opts.Report = q.Add
	e := New(opts)
	srv := rpc.NewServer(rpc.ServerOptions{})
	srv.Register(Protocol(e, q))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	c := rpc.NewClient(ln.Addr().String(), rpc.ClientOptions{User: "am"})
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		e.Close()
	})
	return execproto.Client{C: c}, e
}

func cid(id int64) *pb.ContainerIdProto {
	a := &pb.ApplicationIdProto{Id: proto.Int32(1), ClusterTimestamp: proto.Int64(1)}
	return &pb.ContainerIdProto{AppId: a, AppAttemptId: &pb.ApplicationAttemptIdProto{ApplicationId: a, AttemptId: proto.Int32(1)},
		Id: proto.Int64(id)}
}

func res(mb int64, vcores int32) *pb.ResourceProto {
	return &pb.ResourceProto{Memory: proto.Int64(mb), VirtualCores: proto.Int32(vcores)}
}

// collect waits for n completions through WaitCompletions, returning them
// and the number of calls that carried them.
func collect(t testing.TB, c execproto.Client, n int) ([]execproto.Completion, int) {
	t.Helper()
	var all []execproto.Completion
	calls := 0
	deadline := time.Now().Add(20 * time.Second)
	for len(all) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d completions, want %d: %v", len(all), n, all)
		}
		cs, err := c.WaitCompletions(context.Background(), time.Second, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) > 0 {
			calls++
		}
		all = append(all, cs...)
	}
	return all, calls
}

func TestProtocolRunsTasksAndReportsCompletions(t *testing.T) {
	ctx := context.Background()
	c, _ := serve(t, Options{})
	dir := t.TempDir()
	for id := int64(1); id <= 3; id++ {
		if err := c.GrantLease(ctx, cid(id), res(1024, 1)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tpl := range []execproto.Template{
		{ID: "noop", Kind: execproto.KindNoop, Demand: fairness.New(512, 1)},
		{ID: "syn", Kind: execproto.KindSynthetic, Demand: fairness.New(16, 1), Duration: 20 * time.Millisecond},
		{ID: "cmd", Kind: execproto.KindCommand, Demand: fairness.New(128, 1),
			Command: []string{"sh", "-c", "echo {index} > " + filepath.Join(dir, "out-{index}") + "; exit {index}"}},
	} {
		if err := c.Install(ctx, tpl); err != nil {
			t.Fatal(err)
		}
		// Installing it again is fine.
		if err := c.Install(ctx, tpl); err != nil {
			t.Fatal(err)
		}
	}
	refused, err := c.StartTasks(ctx, []execproto.TaskStart{
		{Lease: 1, Task: execproto.TaskID{Template: "noop", Index: 0}},
		{Lease: 2, Task: execproto.TaskID{Template: "syn", Index: 1}},
		{Lease: 3, Task: execproto.TaskID{Template: "cmd", Index: 3}},
		{Lease: 9, Task: execproto.TaskID{Template: "noop", Index: 4}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) != 1 || refused[0].Task.Lease != 9 || !strings.Contains(refused[0].Reason, "lease 9 is not granted") {
		t.Fatalf("refused %v", refused)
	}
	all, _ := collect(t, c, 3)
	slices.SortFunc(all, func(a, b execproto.Completion) int { return int(a.Task.Index - b.Task.Index) })
	for i, want := range []struct {
		tpl  string
		exit int
	}{{"noop", 0}, {"syn", 0}, {"cmd", 3}} {
		got := all[i]
		if got.Task.Template != want.tpl || got.Exit != want.exit || got.Started.IsZero() || got.Ended.Before(got.Started) {
			t.Errorf("completion %d: %+v, want %s exiting %d", i, got, want.tpl, want.exit)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out-3")); string(b) != "3\n" {
		t.Errorf("the command task wrote %q", b)
	}
	// Nothing left: a short poll comes back empty after its wait.
	began := time.Now()
	if cs, err := c.WaitCompletions(ctx, 50*time.Millisecond, 0); err != nil || len(cs) != 0 {
		t.Errorf("empty poll: %v %v", cs, err)
	}
	if took := time.Since(began); took < 40*time.Millisecond {
		t.Errorf("an empty long poll returned after %v", took)
	}
}

func TestProtocolEnforcesLeasesAndRevokes(t *testing.T) {
	ctx := context.Background()
	c, _ := serve(t, Options{})
	if err := c.GrantLease(ctx, cid(1), res(256, 1)); err != nil {
		t.Fatal(err)
	}
	err := c.GrantLease(ctx, cid(1), res(256, 1))
	if !rpc.IsClass(err, execproto.ClassExecutorException) || !strings.Contains(err.Error(), "already granted") {
		t.Errorf("a second grant: %v", err)
	}
	c.Install(ctx, execproto.Template{ID: "big", Kind: execproto.KindNoop, Demand: fairness.New(1024, 1)})
	c.Install(ctx, execproto.Template{ID: "slow", Kind: execproto.KindCommand, Demand: fairness.New(128, 1), Command: []string{"sleep", "30"}})
	if err := c.Install(ctx, execproto.Template{ID: "big", Kind: execproto.KindNoop, Demand: fairness.New(2048, 1)}); err == nil {
		t.Error("another template under a used id was installed")
	}
	refused, err := c.StartTasks(ctx, []execproto.TaskStart{{Lease: 1, Task: execproto.TaskID{Template: "big"}}, {Lease: 1, Task: execproto.TaskID{Template: "slow", Index: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) != 1 || refused[0].Task.Task.Template != "big" || !strings.Contains(refused[0].Reason, "does not fit lease 1") {
		t.Fatalf("refused %v", refused)
	}
	if err := c.RevokeLease(ctx, cid(1)); err != nil {
		t.Fatal(err)
	}
	all, _ := collect(t, c, 1)
	if all[0].Exit != -1 || !strings.Contains(all[0].Err, "revoked") {
		t.Errorf("the revoked task: %+v", all[0])
	}
	if err := c.RevokeLease(ctx, cid(1)); err == nil {
		t.Error("a lease was revoked twice")
	}
}

func TestProtocolBatchesCompletions(t *testing.T) {
	ctx := context.Background()
	c, _ := serve(t, Options{BatchDelay: 20 * time.Millisecond})
	c.Install(ctx, execproto.Template{ID: "noop", Kind: execproto.KindNoop})
	var tasks []execproto.TaskStart
	for i := range 50 {
		c.GrantLease(ctx, cid(int64(i)), res(128, 1))
		tasks = append(tasks, execproto.TaskStart{Lease: execproto.LeaseID(i), Task: execproto.TaskID{Template: "noop", Index: int32(i)}})
	}
	if refused, err := c.StartTasks(ctx, tasks); err != nil || len(refused) > 0 {
		t.Fatal(refused, err)
	}
	all, calls := collect(t, c, 50)
	if len(all) != 50 || calls > 5 {
		t.Errorf("%d completions in %d calls, want 50 in a few batches", len(all), calls)
	}
}

// BenchmarkProtocolLeaseToTaskStart: over the real protocol on loopback,
// from the AM's StartTasks on a granted lease to the task's start as its
// completion reports it (p50-µs), and from the NodeManager's GrantLease
// call before it (p50-with-grant-µs, two round trips). Target: p50 under
// 100 µs.
func BenchmarkProtocolLeaseToTaskStart(b *testing.B) {
	ctx := context.Background()
	c, _ := serve(b, Options{BatchSize: 1})
	c.Install(ctx, execproto.Template{ID: "noop", Kind: execproto.KindNoop})
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	withGrant := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := c.GrantLease(ctx, cid(int64(i)), res(128, 1)); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if refused, err := c.StartTasks(ctx, []execproto.TaskStart{{Lease: execproto.LeaseID(i), Task: execproto.TaskID{Template: "noop", Index: int32(i)}}}); err != nil || len(refused) > 0 {
			b.Fatal(refused, err)
		}
		b.StopTimer()
		cs, _ := collect(b, c, 1)
		withGrant = append(withGrant, cs[0].Started.Sub(t0))
		samples = append(samples, cs[0].Started.Sub(t1))
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(samples)
	slices.Sort(withGrant)
	// The lease is the executor's once granted: from the AM's start
	// message to the task running is the lease-to-start figure; with the
	// NM's grant call in front of it, two round trips, it is reported too.
	b.ReportMetric(float64(samples[len(samples)/2])/float64(time.Microsecond), "p50-µs")
	b.ReportMetric(float64(withGrant[len(withGrant)/2])/float64(time.Microsecond), "p50-with-grant-µs")
	b.ReportMetric(100, "target-µs")
}
