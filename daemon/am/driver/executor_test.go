package driver

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/execproto"
	lpb "github.com/loomrm/loom/rpc/loompb"
)

// fakeExecutor serves waitCompletions from a channel, on a fixed address
// so that it can stop and come back.
func fakeExecutor(t *testing.T, addr string, completions chan *lpb.CompletionProto) (string, func()) {
	t.Helper()
	srv := rpc.NewServer(rpc.ServerOptions{})
	srv.Register(rpc.Protocol{Name: execproto.ProtocolName, Methods: []rpc.Method{
		rpc.Unary("waitCompletions", func(ctx context.Context, req *lpb.WaitCompletionsRequestProto) (*lpb.WaitCompletionsResponseProto, error) {
			select {
			case c := <-completions:
				return &lpb.WaitCompletionsResponseProto{Completions: []*lpb.CompletionProto{c}}, nil
			case <-time.After(time.Duration(req.GetMaxWaitMs()) * time.Millisecond):
				return &lpb.WaitCompletionsResponseProto{}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})}})
	var ln net.Listener
	var err error
	for range 50 { // the port may take a moment to be free again
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	return ln.Addr().String(), func() { srv.Close() }
}

// TestExecutorPollerSurvivesAndReportsLoss: the AM's reader of an
// executor's completions does not stop at the first failed call (it once
// did, and the tasks left on that executor never completed in the AM's
// eyes: jobs hung after an RM failover under load). A connection that
// comes back delivers what the executor held; an executor gone for
// executorLostAfter is reported, and its tasks are failed so that they
// run again and their containers are released.
func TestExecutorPollerSurvivesAndReportsLoss(t *testing.T) {
	defer func(d time.Duration) { executorLostAfter = d }(executorLostAfter)
	executorLostAfter = 1500 * time.Millisecond
	dag, err := am.NewDAG(twoStages(), am.Config{AMAttempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{Client: &Client{attempt: "appattempt_1_0001_000001"}, DAG: dag, Log: zerolog.Nop(), cancel: cancel,
		execs: map[string]*execConn{}, running: map[int64]*task{}, done: make(chan taskDone, 16), lost: make(chan string, 1),
		lastWhy: map[taskKey]string{}}
	defer r.close()

	completions := make(chan *lpb.CompletionProto, 1)
	addr, stop := fakeExecutor(t, "127.0.0.1:0", completions)
	if _, err := r.executor(ctx, addr); err != nil {
		t.Fatal(err)
	}
	stop() // the executor's port closes...
	time.Sleep(300 * time.Millisecond)
	_, stop = fakeExecutor(t, addr, completions) // ...and opens again
	completions <- &lpb.CompletionProto{Template: proto.String("scan"), Lease: proto.Int64(42)}
	select {
	case d := <-r.done:
		if d.container != 42 || !d.ok {
			t.Errorf("delivered %+v, want lease 42 succeeded", d)
		}
	case <-r.lost:
		t.Fatal("reported lost after a short outage")
	case <-time.After(5 * time.Second):
		t.Fatal("the completion held across the outage was not delivered")
	}

	// Gone for good: reported, forgotten, its task failed and released.
	r.running[7] = &task{rec: am.TaskRecord{Stage: "scan", Task: 0, Container: 7}, node: "n1", exec: addr}
	r.running[8] = &task{rec: am.TaskRecord{Stage: "scan", Task: 1, Container: 8}, node: "n2", exec: "127.0.0.1:1"}
	stop()
	select {
	case got := <-r.lost:
		if got != addr {
			t.Fatalf("lost %q, want %q", got, addr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an executor gone for good was never reported lost")
	}
	release := r.lostExecutor(addr)
	if len(release) != 1 || release[0] != 7 {
		t.Errorf("released %v, want the lost executor's container 7 only", release)
	}
	if _, ok := r.running[7]; ok {
		t.Error("the lost executor's task is still running")
	}
	if _, ok := r.running[8]; !ok {
		t.Error("another executor's task was failed")
	}
	if _, ok := r.execs[addr]; ok {
		t.Error("the lost executor is still known: a later start would reuse it")
	}
}
