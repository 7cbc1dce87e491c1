package driver

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/workload"
)

const (
	app      = "application_1700000000000_0001"
	attempt2 = "appattempt_1700000000000_0001_000002"
)

// twoStages: extract (2 tasks) feeds load (1 task).
func twoStages() *workload.Job {
	core := fairness.New(64, 1)
	return &workload.Job{Name: "etl", Stages: []workload.Stage{
		{Name: "extract", Tasks: 2, Demand: core, Duration: time.Second},
		{Name: "load", Tasks: 1, Demand: core, Duration: time.Second, Parents: []string{"extract"}},
	}}
}

// firstAttempt is what attempt 1 of the app wrote: extract done, load
// running when it died, 4 s after it started a minute ago.
func firstAttempt(start time.Time) am.History {
	return am.History{Job: "etl", App: app, Attempt: 1, State: am.StateRunning,
		StartUnixMs: start.UnixMilli(), UpdatedUnixMs: start.UnixMilli() + 4000,
		Stages: []am.HistoryStage{{Name: "extract", Tasks: 2}, {Name: "load", Tasks: 1, Parents: []string{"extract"}}},
		Tasks: []am.HistoryTask{
			{Stage: "extract", Task: 0, Attempt: 1, Container: 2, Node: "n1:1", StartMs: 100, EndMs: 1100, Kind: "DEFAULT", State: am.StateSucceeded, Succeeded: true, AMAttempt: 1},
			{Stage: "extract", Task: 1, Attempt: 1, Container: 3, Node: "n1:1", StartMs: 100, EndMs: 1200, Kind: "DEFAULT", State: am.StateSucceeded, Succeeded: true, AMAttempt: 1},
			{Stage: "load", Task: 0, Attempt: 1, Container: 4, Node: "n1:1", StartMs: 1300, Kind: "ALTRUISTIC", State: am.StateRunning, AMAttempt: 1},
		}}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readHistory(t *testing.T, path string) am.History {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var h am.History
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

func newRunner(t *testing.T, path, attempt string) *Runner {
	t.Helper()
	d, err := am.NewDAG(twoStages(), am.Config{AMAttempt: AttemptNumber(attempt)})
	if err != nil {
		t.Fatal(err)
	}
	return &Runner{Client: &Client{attempt: attempt}, DAG: d, HistoryPath: path, Log: zerolog.Nop()}
}

func TestRecoverHistory(t *testing.T) {
	start := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	tests := []struct {
		name    string
		file    any // written as JSON; a string as it is; nil: no file
		attempt string
		err     string // "": no error
		from    int    // the attempt recovered from, 0: none
	}{
		{name: "no history yet", attempt: attempt2},
		{name: "attempt 1's", file: firstAttempt(start), attempt: attempt2, from: 1},
		{name: "another app's", attempt: attempt2, file: func() am.History {
			h := firstAttempt(start)
			h.App = "application_1700000000000_0002"
			return h
		}()},
		{name: "this attempt's own", attempt: "appattempt_1700000000000_0001_000001", file: firstAttempt(start),
			err: "was written by attempt 1 of " + app + ", not an earlier one than this attempt 1"},
		{name: "corrupt", attempt: attempt2, file: `{"job": "etl", "tasks": [{"sta`, err: "is corrupt (unexpected end of JSON input); attempt 2 of " + app},
		{name: "another job", attempt: attempt2, file: func() am.History {
			h := firstAttempt(start)
			h.Job = "q5"
			return h
		}(), err: `the history is of job "q5", not "etl"`},
		{name: "a stage the job lacks", attempt: attempt2, file: func() am.History {
			h := firstAttempt(start)
			h.Stages[1].Name = "publish"
			return h
		}(), err: `the history's stage "publish" is not a stage of job "etl"`},
		{name: "no start", attempt: attempt2, file: func() am.History {
			h := firstAttempt(start)
			h.StartUnixMs = 0
			return h
		}(), err: "has no start_unix_ms"},
		{name: "not an attempt id", attempt: "tester", file: firstAttempt(start)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), app+".json")
			switch f := tc.file.(type) {
			case string:
				os.WriteFile(path, []byte(f), 0o644)
			case nil:
			default:
				writeJSON(t, path, f)
			}
			r := newRunner(t, path, tc.attempt)
			r.start = time.Now()
			r.attemptStart = r.start
			err := r.recoverHistory()
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("recoverHistory = %v, want %q", err, tc.err)
			}
			if err != nil && !strings.Contains(err.Error(), path) {
				t.Errorf("the error %q does not name the file", err)
			}
			from := 0
			if r.recovered != nil {
				from = r.recovered.From
			}
			if from != tc.from {
				t.Errorf("recovered from attempt %d, want %d", from, tc.from)
			}
			if from == 0 && r.start != r.attemptStart {
				t.Errorf("a fresh start moved the time base")
			}
		})
	}
}

// TestRecoveredHistoryIsWritten: the history this attempt writes is
// attempt 1's merged with its own, on attempt 1's time base.
func TestRecoveredHistoryIsWritten(t *testing.T) {
	start := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	path := filepath.Join(t.TempDir(), app+".json")
	writeJSON(t, path, firstAttempt(start))
	r := newRunner(t, path, attempt2)
	r.start = time.Now()
	r.attemptStart = r.start
	if err := r.recoverHistory(); err != nil {
		t.Fatal(err)
	}
	if r.start.UnixMilli() != start.UnixMilli() {
		t.Errorf("time base %v, want attempt 1's start %v", r.start, start)
	}
	if now := r.now(); now < time.Minute || now > 2*time.Minute {
		t.Errorf("now = %v, want a minute or so since attempt 1 started", now)
	}
	if err := r.writeHistory(); err != nil {
		t.Fatal(err)
	}
	h := readHistory(t, path)
	if h.App != app || h.Attempt != 2 || h.RecoveredFrom != 1 || h.StartUnixMs != start.UnixMilli() ||
		h.AttemptStartMs < 59_000 || h.AttemptStartMs > 120_000 {
		t.Errorf("history header %+v", h)
	}
	if len(h.Tasks) != 3 || h.Tasks[2].State != am.StateKilled || h.Tasks[2].EndMs != 4000 || h.Tasks[0].StartMs != 100 {
		t.Errorf("tasks %+v", h.Tasks)
	}
	if h.Stages[0].State != am.StateSucceeded || h.Stages[1].State != am.StateRunnable || h.Stages[1].Killed != 1 {
		t.Errorf("stages %+v", h.Stages)
	}
}

// fakeRM answers an AM's allocate and finish calls and records them.
type fakeRM struct {
	mu        sync.Mutex
	allocates int
	finish    *pb.FinishApplicationMasterRequestProto
}

func (f *fakeRM) start(t *testing.T) string {
	srv := rpc.NewServer(rpc.ServerOptions{})
	srv.Register(rpc.Protocol{Name: rpc.ApplicationMasterProtocol, Methods: []rpc.Method{
		rpc.Unary("allocate", func(ctx context.Context, req *pb.AllocateRequestProto) (*pb.AllocateResponseProto, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.allocates++
			if len(req.GetAsk()) > 0 {
				t.Errorf("asked for %v with nothing left to run", req.GetAsk())
			}
			return &pb.AllocateResponseProto{ResponseId: proto.Int32(req.GetResponseId() + 1)}, nil
		}),
		rpc.Unary("finishApplicationMaster", func(ctx context.Context, req *pb.FinishApplicationMasterRequestProto) (*pb.FinishApplicationMasterResponseProto, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.finish = req
			return &pb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(true)}, nil
		})}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestRunRecoversAnEndedJob: attempt 1 ended the job but died before it
// unregistered. Attempt 2 asks for nothing and unregisters as attempt 1
// would have: SUCCEEDED when every task had succeeded, FAILED when a task
// had failed as often as it may.
func TestRunRecoversAnEndedJob(t *testing.T) {
	start := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	done := firstAttempt(start)
	done.Tasks[2].State, done.Tasks[2].EndMs, done.Tasks[2].Succeeded = am.StateSucceeded, 2300, true
	failed := firstAttempt(start)
	failed.Tasks = failed.Tasks[:2]
	for a := 1; a <= 4; a++ {
		failed.Tasks = append(failed.Tasks, am.HistoryTask{Stage: "load", Task: 0, Attempt: a, Container: int64(3 + a), Node: "n1:1",
			StartMs: int64(1000 * a), EndMs: int64(1000*a + 500), Kind: "DEFAULT", State: am.StateFailed, AMAttempt: 1})
	}
	tests := []struct {
		name  string
		h     am.History
		final pb.FinalApplicationStatusProto
		diag  string
		state string
	}{
		{"succeeded", done, pb.FinalApplicationStatusProto_APP_SUCCEEDED, "recovered from attempt 1: 3 tasks done before", am.StateSucceeded},
		{"failed", failed, pb.FinalApplicationStatusProto_APP_FAILED, `task 0 of stage "load" failed 4 times`, am.StateFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), app+".json")
			writeJSON(t, path, tc.h)
			rm := &fakeRM{}
			cl := Dial(Launch{Addr: rm.start(t), Attempt: attempt2})
			defer cl.Close()
			r := newRunner(t, path, attempt2)
			r.Client = cl
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := r.Run(ctx)
			if (err == nil) != (tc.final == pb.FinalApplicationStatusProto_APP_SUCCEEDED) {
				t.Fatalf("Run = %v", err)
			}
			rm.mu.Lock()
			defer rm.mu.Unlock()
			if rm.finish.GetFinalApplicationStatus() != tc.final || !strings.Contains(rm.finish.GetDiagnostics(), tc.diag) {
				t.Errorf("finish %v, want %v with %q", rm.finish, tc.final, tc.diag)
			}
			got := readHistory(t, path)
			if got.State != tc.state || got.Attempt != 2 || got.RecoveredFrom != 1 || len(got.Tasks) != len(tc.h.Tasks) {
				t.Errorf("history %+v", got)
			}
		})
	}
}

// TestRunRefusesACorruptHistory: the attempt fails before its first
// allocate, and the file is left as it was for someone to look at.
func TestRunRefusesACorruptHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), app+".json")
	os.WriteFile(path, []byte("{not json"), 0o644)
	rm := &fakeRM{}
	cl := Dial(Launch{Addr: rm.start(t), Attempt: attempt2})
	defer cl.Close()
	r := newRunner(t, path, attempt2)
	r.Client = cl
	err := r.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "is corrupt") {
		t.Fatalf("Run = %v, want the corrupt history named", err)
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if rm.allocates != 0 || rm.finish != nil {
		t.Errorf("%d allocates, finish %v: the attempt should fail before it asks for anything", rm.allocates, rm.finish)
	}
	if b, _ := os.ReadFile(path); string(b) != "{not json" {
		t.Errorf("the corrupt history was replaced by %s", b)
	}
}

func TestAttemptNumber(t *testing.T) {
	for s, want := range map[string]int{attempt2: 2, "appattempt_1_0001_000013": 13, "tester": 0, "": 0} {
		if got := AttemptNumber(s); got != want {
			t.Errorf("AttemptNumber(%q) = %d, want %d", s, got, want)
		}
	}
}
