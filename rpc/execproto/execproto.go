// Package execproto is ExecutorProtocol, the wire between an app's
// executor and the daemons that drive it: the NodeManager grants and
// revokes leases (the app's containers on the node); the AM installs each
// stage's task template once, starts tasks with tiny messages naming the
// template, the task index and the lease, and long-polls for batches of
// completions.
//
// It holds the protocol's name, its task kinds, the Go types of its
// requests and replies, their encoding to and from rpc/loompb, and the
// typed Client. The executor that serves it is daemon/nm/executor; the AM
// (daemon/am/driver) and the NodeManager (daemon/nm) call it through Client, so
// neither daemon imports the other.
package execproto

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/resource"
	"github.com/loomrm/loom/rpc"
	lpb "github.com/loomrm/loom/rpc/loompb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// ProtocolName is ExecutorProtocol's name on the wire.
const ProtocolName = "org.loom.executor.ExecutorProtocolPB"

// ClassExecutorException is the class of the executor's refusals.
const ClassExecutorException = "org.loom.executor.ExecutorException"

// Task kinds.
const (
	// KindNoop does nothing: it measures the executor itself.
	KindNoop = "noop"
	// KindSynthetic really uses its demand for its duration: it holds its
	// memory, touched, and keeps its vcores busy.
	KindSynthetic = "synthetic"
	// KindSleep waits for its duration without using its demand, like a
	// task blocked on I/O: for demos on a machine far smaller than the
	// cluster it stands in for (touching a task's memory costs more CPU
	// in page faults than a small machine has to spare).
	KindSleep = "sleep"
	// KindCommand runs a process.
	KindCommand = "command"
)

// Template is a stage's task, installed once.
type Template struct {
	ID       string
	Kind     string
	Demand   resource.Vector
	Duration time.Duration
	// Command is a command task's argv; "{index}" in it becomes the
	// task's index.
	Command []string
}

// LeaseID names a lease: the id of the container it came from.
type LeaseID int64

// TaskID names one task of a template.
type TaskID struct {
	Template string
	Index    int32
	Attempt  int32
}

// Completion reports a finished task.
type Completion struct {
	Task           TaskID
	Lease          LeaseID
	Started, Ended time.Time
	Exit           int
	Err            string
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

// TemplateFromProto decodes an installTemplate request.
func TemplateFromProto(req *lpb.InstallTemplateRequestProto) (Template, error) {
	v, err := rpc.VectorFromResource(req.GetDemand())
	if err != nil {
		return Template{}, fmt.Errorf("template %s: %v", req.GetId(), err)
	}
	return Template{ID: req.GetId(), Kind: req.GetKind(), Demand: v,
		Duration: time.Duration(req.GetDurationMs()) * time.Millisecond, Command: req.GetCommand()}, nil
}

// TaskStartFromProto decodes one task of a startTasks request.
func TaskStartFromProto(p *lpb.TaskStartProto) TaskStart {
	return TaskStart{Lease: LeaseID(p.GetLease()),
		Task: TaskID{Template: p.GetTemplate(), Index: p.GetIndex(), Attempt: p.GetAttempt()}}
}

// CompletionProto encodes a completion for a waitCompletions reply.
func CompletionProto(c Completion) *lpb.CompletionProto {
	p := &lpb.CompletionProto{Template: proto.String(c.Task.Template), Index: proto.Int32(c.Task.Index),
		Attempt: proto.Int32(c.Task.Attempt), Lease: proto.Int64(int64(c.Lease)),
		StartUs: proto.Int64(c.Started.UnixMicro()), EndUs: proto.Int64(c.Ended.UnixMicro()), Exit: proto.Int32(int32(c.Exit))}
	if c.Err != "" {
		p.Error = proto.String(c.Err)
	}
	return p
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
