package executor

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/execproto"
	lpb "github.com/loomrm/loom/rpc/loompb"
)

// FuzzExecutorRequests decodes the same bytes as each ExecutorProtocol
// request and hands what decodes to the handlers, in the order an AM and
// its NM would call them, on a fresh executor: none may panic or hang.
// Command templates are turned into sleeps, so that the fuzzer never runs
// processes.
func FuzzExecutorRequests(f *testing.F) {
	for _, m := range []proto.Message{
		&lpb.GrantLeaseRequestProto{ContainerId: cid(1), Resource: res(1024, 1)},
		&lpb.InstallTemplateRequestProto{Id: proto.String("t"), Kind: proto.String(execproto.KindSynthetic), Demand: res(512, 1), DurationMs: proto.Int64(1)},
		&lpb.StartTasksRequestProto{Tasks: []*lpb.TaskStartProto{{Template: proto.String("t"), Index: proto.Int32(0), Lease: proto.Int64(1)}}},
		&lpb.WaitCompletionsRequestProto{MaxWaitMs: proto.Int64(1), Max: proto.Int32(3)},
	} {
		b, _ := proto.Marshal(m)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		q := NewCompletions()
		e := New(Options{Report: q.Add})
		defer e.Close()
		s := &service{e: e, q: q}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		var grant lpb.GrantLeaseRequestProto
		if proto.Unmarshal(data, &grant) == nil {
			s.grantLease(ctx, &grant)
		}
		var install lpb.InstallTemplateRequestProto
		if proto.Unmarshal(data, &install) == nil {
			if install.GetKind() == execproto.KindCommand {
				install.Kind = proto.String(execproto.KindSleep)
			}
			s.installTemplate(ctx, &install)
		}
		var start lpb.StartTasksRequestProto
		if proto.Unmarshal(data, &start) == nil {
			if _, err := s.startTasks(ctx, &start); err != nil && !rpc.IsClass(err, execproto.ClassExecutorException) {
				t.Fatalf("startTasks failed with %v", err)
			}
		}
		var wait lpb.WaitCompletionsRequestProto
		if proto.Unmarshal(data, &wait) == nil {
			s.waitCompletions(ctx, &wait)
		}
		var revoke lpb.RevokeLeaseRequestProto
		if proto.Unmarshal(data, &revoke) == nil {
			s.revokeLease(ctx, &revoke)
		}
	})
}
