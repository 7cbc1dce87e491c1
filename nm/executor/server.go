package executor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	lpb "github.com/loomrm/loom/rpc/loompb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// ProtocolName is ExecutorProtocol's name on the wire.
const ProtocolName = "org.loom.executor.ExecutorProtocolPB"

// ClassExecutorException is the class of the executor's refusals.
const ClassExecutorException = "org.loom.executor.ExecutorException"

// maxWait caps a WaitCompletions long poll, below the rpc client's
// default call timeout.
const maxWait = 30 * time.Second

// Completions buffers reported batches until a WaitCompletions call takes
// them. Its Add is an executor's Options.Report.
type Completions struct {
	mu     sync.Mutex
	queued []Completion
	more   chan struct{} // closed, and replaced, when completions arrive
}

// NewCompletions makes an empty buffer.
func NewCompletions() *Completions { return &Completions{more: make(chan struct{})} }

// Add queues a batch.
func (q *Completions) Add(batch []Completion) {
	if len(batch) == 0 {
		return
	}
	q.mu.Lock()
	q.queued = append(q.queued, batch...)
	close(q.more)
	q.more = make(chan struct{})
	q.mu.Unlock()
}

// Take waits until at least one completion is queued, or wait has passed,
// and returns up to max of them (every one when max <= 0).
func (q *Completions) Take(ctx context.Context, wait time.Duration, max int) []Completion {
	var timer <-chan time.Time
	for {
		q.mu.Lock()
		if n := len(q.queued); n > 0 {
			if max <= 0 || max > n {
				max = n
			}
			out := append([]Completion(nil), q.queued[:max]...)
			q.queued = append(q.queued[:0], q.queued[max:]...)
			q.mu.Unlock()
			return out
		}
		more := q.more
		q.mu.Unlock()
		if wait <= 0 {
			return nil
		}
		if timer == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-more:
		case <-timer:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// Protocol serves ExecutorProtocol over e; q must be e's Report.
func Protocol(e *Executor, q *Completions) rpc.Protocol {
	s := &service{e: e, q: q}
	return rpc.Protocol{Name: ProtocolName, Methods: []rpc.Method{
		rpc.Unary("grantLease", s.grantLease),
		rpc.Unary("revokeLease", s.revokeLease),
		rpc.Unary("installTemplate", s.installTemplate),
		rpc.Unary("startTasks", s.startTasks),
		rpc.Unary("waitCompletions", s.waitCompletions),
	}}
}

type service struct {
	e *Executor
	q *Completions
}

func refuse(err error) error {
	if err == nil {
		return nil
	}
	return rpc.Errorf(ClassExecutorException, "%v", err)
}

func (s *service) grantLease(ctx context.Context, req *lpb.GrantLeaseRequestProto) (*lpb.GrantLeaseResponseProto, error) {
	if req.GetContainerId() == nil {
		return nil, rpc.Errorf(ClassExecutorException, "grantLease: no container id")
	}
	v, err := rpc.VectorFromResource(req.GetResource())
	if err != nil {
		return nil, rpc.Errorf(ClassExecutorException, "grantLease: %v", err)
	}
	return &lpb.GrantLeaseResponseProto{}, refuse(s.e.Grant(LeaseID(req.GetContainerId().GetId()), v))
}

func (s *service) revokeLease(ctx context.Context, req *lpb.RevokeLeaseRequestProto) (*lpb.RevokeLeaseResponseProto, error) {
	if req.GetContainerId() == nil {
		return nil, rpc.Errorf(ClassExecutorException, "revokeLease: no container id")
	}
	return &lpb.RevokeLeaseResponseProto{}, refuse(s.e.Revoke(LeaseID(req.GetContainerId().GetId())))
}

func (s *service) installTemplate(ctx context.Context, req *lpb.InstallTemplateRequestProto) (*lpb.InstallTemplateResponseProto, error) {
	v, err := rpc.VectorFromResource(req.GetDemand())
	if err != nil {
		return nil, rpc.Errorf(ClassExecutorException, "template %s: %v", req.GetId(), err)
	}
	t := Template{ID: req.GetId(), Kind: req.GetKind(), Demand: v,
		Duration: time.Duration(req.GetDurationMs()) * time.Millisecond, Command: req.GetCommand()}
	return &lpb.InstallTemplateResponseProto{}, refuse(s.e.Install(t))
}

func (s *service) startTasks(ctx context.Context, req *lpb.StartTasksRequestProto) (*lpb.StartTasksResponseProto, error) {
	resp := &lpb.StartTasksResponseProto{}
	for i, ts := range req.GetTasks() {
		err := s.e.Start(LeaseID(ts.GetLease()), TaskID{Template: ts.GetTemplate(), Index: ts.GetIndex(), Attempt: ts.GetAttempt()})
		if err != nil {
			resp.Refused = append(resp.Refused, &lpb.TaskRefusalProto{Position: proto.Int32(int32(i)), Task: ts,
				Reason: proto.String(err.Error())})
		}
	}
	return resp, nil
}

func (s *service) waitCompletions(ctx context.Context, req *lpb.WaitCompletionsRequestProto) (*lpb.WaitCompletionsResponseProto, error) {
	wait := min(time.Duration(req.GetMaxWaitMs())*time.Millisecond, maxWait)
	cs := s.q.Take(ctx, wait, int(req.GetMax()))
	resp := &lpb.WaitCompletionsResponseProto{Completions: make([]*lpb.CompletionProto, len(cs))}
	for i, c := range cs {
		resp.Completions[i] = completionProto(c)
	}
	return resp, nil
}

func completionProto(c Completion) *lpb.CompletionProto {
	p := &lpb.CompletionProto{Template: proto.String(c.Task.Template), Index: proto.Int32(c.Task.Index),
		Attempt: proto.Int32(c.Task.Attempt), Lease: proto.Int64(int64(c.Lease)),
		StartUs: proto.Int64(c.Started.UnixMicro()), EndUs: proto.Int64(c.Ended.UnixMicro()), Exit: proto.Int32(int32(c.Exit))}
	if c.Err != "" {
		p.Error = proto.String(c.Err)
	}
	return p
}

// TaskStart is one task to start on a lease.
type TaskStart struct {
	Lease LeaseID
	Task  TaskID
}

// Refusal is a task the executor would not start, and why.
type Refusal struct {
	Task   TaskStart
	Reason string
}

// Client calls an executor's ExecutorProtocol: the NodeManager grants and
// revokes leases; the AM installs templates, starts tasks and waits for
// their completions.
type Client struct{ C rpc.Caller }

// GrantLease hands the executor container cid's resource.
func (c Client) GrantLease(ctx context.Context, cid *pb.ContainerIdProto, resource *pb.ResourceProto) error {
	return c.C.Call(ctx, ProtocolName, "grantLease", &lpb.GrantLeaseRequestProto{ContainerId: cid, Resource: resource},
		&lpb.GrantLeaseResponseProto{})
}

// RevokeLease takes container cid's lease back, stopping its task.
func (c Client) RevokeLease(ctx context.Context, cid *pb.ContainerIdProto) error {
	return c.C.Call(ctx, ProtocolName, "revokeLease", &lpb.RevokeLeaseRequestProto{ContainerId: cid},
		&lpb.RevokeLeaseResponseProto{})
}

// Install installs a template; installing the same one again is a no-op.
func (c Client) Install(ctx context.Context, t Template) error {
	return c.C.Call(ctx, ProtocolName, "installTemplate", &lpb.InstallTemplateRequestProto{Id: proto.String(t.ID),
		Kind: proto.String(t.Kind), Demand: rpc.ResourceFromVector(t.Demand), DurationMs: proto.Int64(t.Duration.Milliseconds()),
		Command: t.Command}, &lpb.InstallTemplateResponseProto{}, rpc.Idempotent())
}

// StartTasks starts a batch of tasks and returns those refused.
func (c Client) StartTasks(ctx context.Context, tasks []TaskStart) ([]Refusal, error) {
	req := &lpb.StartTasksRequestProto{Tasks: make([]*lpb.TaskStartProto, len(tasks))}
	for i, t := range tasks {
		req.Tasks[i] = &lpb.TaskStartProto{Lease: proto.Int64(int64(t.Lease)), Template: proto.String(t.Task.Template),
			Index: proto.Int32(t.Task.Index), Attempt: proto.Int32(t.Task.Attempt)}
	}
	var resp lpb.StartTasksResponseProto
	if err := c.C.Call(ctx, ProtocolName, "startTasks", req, &resp); err != nil {
		return nil, err
	}
	var out []Refusal
	for _, r := range resp.GetRefused() {
		pos := int(r.GetPosition())
		if pos < 0 || pos >= len(tasks) {
			return out, fmt.Errorf("startTasks: refusal of task %d of %d", pos, len(tasks))
		}
		out = append(out, Refusal{Task: tasks[pos], Reason: r.GetReason()})
	}
	return out, nil
}

// WaitCompletions returns the completions queued, waiting up to wait for
// the first one; at most max (every one when max <= 0).
func (c Client) WaitCompletions(ctx context.Context, wait time.Duration, max int) ([]Completion, error) {
	var resp lpb.WaitCompletionsResponseProto
	if err := c.C.Call(ctx, ProtocolName, "waitCompletions", &lpb.WaitCompletionsRequestProto{
		MaxWaitMs: proto.Int64(wait.Milliseconds()), Max: proto.Int32(int32(max))}, &resp); err != nil {
		return nil, err
	}
	out := make([]Completion, len(resp.GetCompletions()))
	for i, p := range resp.GetCompletions() {
		out[i] = Completion{Task: TaskID{Template: p.GetTemplate(), Index: p.GetIndex(), Attempt: p.GetAttempt()},
			Lease: LeaseID(p.GetLease()), Started: time.UnixMicro(p.GetStartUs()), Ended: time.UnixMicro(p.GetEndUs()),
			Exit: int(p.GetExit()), Err: p.GetError()}
	}
	return out, nil
}
