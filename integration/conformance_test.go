package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// protoMethod is one `rpc name (Req) returns (Resp)` line of a protocol's
// .proto file.
type protoMethod struct {
	name      string
	req, resp protoreflect.MessageType
}

var rpcLine = regexp.MustCompile(`(?m)^\s*rpc\s+(\w+)\s*\(\s*([\w.]+)\s*\)\s*returns\s*\(\s*([\w.]+)\s*\)`)

// protoMethods reads every method a .proto file (under proto/yarn)
// declares, with its request and response types from the registry of
// the generated code.
func protoMethods(t *testing.T, file string) []protoMethod {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	src, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "proto", "yarn", file))
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(name string) protoreflect.MessageType {
		if !strings.Contains(name, ".") {
			name = "hadoop.yarn." + name // the files' package
		}
		mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name))
		if err != nil {
			t.Fatalf("%s: %s: %v", file, name, err)
		}
		return mt
	}
	var ms []protoMethod
	for _, m := range rpcLine.FindAllStringSubmatch(string(src), -1) {
		ms = append(ms, protoMethod{name: m[1], req: lookup(m[2]), resp: lookup(m[3])})
	}
	if len(ms) == 0 {
		t.Fatalf("%s declares no rpc", file)
	}
	return ms
}

// minimal is an empty request with its required fields (proto2) set to
// their defaults, recursively, so that it can be sent at all.
func minimal(mt protoreflect.MessageType) proto.Message {
	m := mt.New()
	fillRequired(m)
	return m.Interface()
}

func fillRequired(m protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.Cardinality() != protoreflect.Required {
			continue
		}
		if fd.Message() != nil {
			fillRequired(m.Mutable(fd).Message())
			continue
		}
		m.Set(fd, fd.Default())
	}
}

// TestConformance calls every method of YARN's four protocols, as the
// .proto files list them, on a real `loom rm` and `loom nm` with a
// minimal request over the wire. None of the RM's may answer
// RpcNoSuchMethodException; any other answer (an error for an empty
// request, a refusal for a caller without the right token) is fine and
// logged. The NodeManager's container manager is another package's: the
// methods it does not serve yet are reported, not failed.
func TestConformance(t *testing.T) {
	c := startCluster(t, 1)
	ctx := context.Background()

	// A stock AM, its AMRM token, and an NMToken for the node from a
	// container it is granted: the callers of the scheduler and
	// container-manager protocols.
	_, attempt, am := c.stockAM(t, "conformance")
	if _, err := am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{Host: proto.String("127.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	respID := int32(0)
	ask := []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(1)}}
	var nmAddr string
	var nmToken *hadooppb.TokenProto
	c.waitFor(t, "a container and its NMToken", func() bool {
		resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(respID), Ask: ask})
		if err != nil {
			t.Fatal(err)
		}
		ask, respID = nil, resp.GetResponseId()
		for _, nt := range resp.GetNmTokens() {
			nmAddr = net.JoinHostPort(nt.GetNodeId().GetHost(), fmt.Sprint(nt.GetNodeId().GetPort()))
			nmToken = nt.GetToken()
		}
		return nmToken != nil
	})

	client := c.ac.C
	tracker := rpc.NewClient(c.tracker, rpc.ClientOptions{User: "yarn", Retries: -1})
	nm := rpc.NewClient(nmAddr, rpc.ClientOptions{User: attempt, Token: nmToken, Retries: -1})
	t.Cleanup(func() { tracker.Close(); nm.Close() })
	protocols := []struct {
		file, name string
		caller     rpc.Caller
		nm         bool // the NodeManager's: missing methods are reported
	}{
		{"applicationclient_protocol.proto", rpc.ApplicationClientProtocol, client, false},
		// Last but one: finishApplicationMaster unregisters the AM.
		{"ResourceTracker.proto", rpc.ResourceTrackerProtocol, tracker, false},
		{"containermanagement_protocol.proto", rpc.ContainerManagementProtocol, nm, false},
		{"applicationmaster_protocol.proto", rpc.ApplicationMasterProtocol, am.C, false},
	}
	var missing []string
	answers := map[string]int{}
	total := 0
	for _, p := range protocols {
		for _, m := range protoMethods(t, p.file) {
			total++
			callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := p.caller.Call(callCtx, p.name, m.name, minimal(m.req), m.resp.New().Interface())
			cancel()
			short := p.name[strings.LastIndex(p.name, ".")+1:] + "." + m.name
			var re *rpc.RemoteError
			switch {
			case err == nil:
				answers["OK"]++
				t.Logf("%-60s OK", short)
			case errors.As(err, &re) && re.Class == rpc.ClassNoSuchMethod:
				if !p.nm {
					t.Errorf("%s: %v", short, err)
				}
				missing = append(missing, short)
			case errors.As(err, &re):
				answers[re.Class]++
				t.Logf("%-60s %s", short, err)
			default:
				t.Errorf("%s: no answer from the server: %v", short, err)
			}
		}
	}
	classes := make([]string, 0, len(answers))
	for k, n := range answers {
		classes = append(classes, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(classes)
	t.Logf("%d methods called: %s", total, strings.Join(classes, ", "))
	if len(missing) > 0 {
		t.Logf("not served yet (RpcNoSuchMethodException), on the NodeManager: %s", strings.Join(missing, ", "))
	}
}
