package executor

import (
	"context"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/execproto"
	lpb "github.com/loomrm/loom/rpc/loompb"
)

// maxWait caps a WaitCompletions long poll, below the rpc client's
// default call timeout.
const maxWait = 30 * time.Second

// Completions buffers reported batches until a WaitCompletions call takes
// them. Its Add is an executor's Options.Report.
type Completions struct {
	mu     sync.Mutex
	queued []execproto.Completion
	more   chan struct{} // closed, and replaced, when completions arrive
}

// NewCompletions makes an empty buffer.
func NewCompletions() *Completions { return &Completions{more: make(chan struct{})} }

// Add queues a batch.
func (q *Completions) Add(batch []execproto.Completion) {
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
func (q *Completions) Take(ctx context.Context, wait time.Duration, max int) []execproto.Completion {
	var timer <-chan time.Time
	for {
		q.mu.Lock()
		if n := len(q.queued); n > 0 {
			if max <= 0 || max > n {
				max = n
			}
			out := append([]execproto.Completion(nil), q.queued[:max]...)
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
	return rpc.Protocol{Name: execproto.ProtocolName, Methods: []rpc.Method{
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
	return rpc.Errorf(execproto.ClassExecutorException, "%v", err)
}

func (s *service) grantLease(ctx context.Context, req *lpb.GrantLeaseRequestProto) (*lpb.GrantLeaseResponseProto, error) {
	if req.GetContainerId() == nil {
		return nil, rpc.Errorf(execproto.ClassExecutorException, "grantLease: no container id")
	}
	v, err := rpc.VectorFromResource(req.GetResource())
	if err != nil {
		return nil, rpc.Errorf(execproto.ClassExecutorException, "grantLease: %v", err)
	}
	return &lpb.GrantLeaseResponseProto{}, refuse(s.e.Grant(execproto.LeaseID(req.GetContainerId().GetId()), v))
}

func (s *service) revokeLease(ctx context.Context, req *lpb.RevokeLeaseRequestProto) (*lpb.RevokeLeaseResponseProto, error) {
	if req.GetContainerId() == nil {
		return nil, rpc.Errorf(execproto.ClassExecutorException, "revokeLease: no container id")
	}
	return &lpb.RevokeLeaseResponseProto{}, refuse(s.e.Revoke(execproto.LeaseID(req.GetContainerId().GetId())))
}

func (s *service) installTemplate(ctx context.Context, req *lpb.InstallTemplateRequestProto) (*lpb.InstallTemplateResponseProto, error) {
	t, err := execproto.TemplateFromProto(req)
	if err != nil {
		return nil, rpc.Errorf(execproto.ClassExecutorException, "%v", err)
	}
	return &lpb.InstallTemplateResponseProto{}, refuse(s.e.Install(t))
}

func (s *service) startTasks(ctx context.Context, req *lpb.StartTasksRequestProto) (*lpb.StartTasksResponseProto, error) {
	resp := &lpb.StartTasksResponseProto{}
	for i, ts := range req.GetTasks() {
		start := execproto.TaskStartFromProto(ts)
		if err := s.e.Start(start.Lease, start.Task); err != nil {
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
		resp.Completions[i] = execproto.CompletionProto(c)
	}
	return resp, nil
}
