package integration

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

const clusterSecret = "integration-test-cluster-secret-0123456789"

// startNMWith starts a NodeManager with extra arguments (-D keys).
func (c *cluster) startNMWith(t *testing.T, name string, extra ...string) *proc {
	dir := filepath.Join(c.dir, name)
	args := append([]string{"nm", "--rm", c.tracker, "--address", "127.0.0.1:0",
		"--memory-mb", "4096", "--vcores", "4", "--local-dirs", filepath.Join(dir, "local"), "--log-dirs", filepath.Join(dir, "logs")}, extra...)
	return start(t, name, args...)
}

// nodes lists the cluster's nodes in every state.
func (c *cluster) nodes(t *testing.T) []*pb.NodeReportProto {
	t.Helper()
	resp, err := c.ac.GetClusterNodes(context.Background(), &pb.GetClusterNodesRequestProto{NodeStates: []pb.NodeStateProto{
		pb.NodeStateProto_NS_NEW, pb.NodeStateProto_NS_RUNNING, pb.NodeStateProto_NS_UNHEALTHY, pb.NodeStateProto_NS_DECOMMISSIONED,
		pb.NodeStateProto_NS_LOST, pb.NodeStateProto_NS_REBOOTED, pb.NodeStateProto_NS_SHUTDOWN}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetNodeReports()
}

func TestNodesAuthenticateWithTheClusterSecret(t *testing.T) {
	c := startCluster(t, 0, "-D", "loom.cluster.secret="+clusterSecret)
	nm := c.startNMWith(t, "nm-good", "-D", "loom.cluster.secret="+clusterSecret)
	stranger := c.startNMWith(t, "nm-wrong", "-D", "loom.cluster.secret=not-the-secret-of-this-cluster")
	anonymous := c.startNMWith(t, "nm-none")
	var node *pb.NodeReportProto
	c.waitFor(t, "the NodeManager with the secret to register", func() bool {
		ns := c.nodes(t)
		if len(ns) == 1 && ns[0].GetNodeState() == pb.NodeStateProto_NS_RUNNING {
			node = ns[0]
		}
		return node != nil
	})
	if !strings.Contains(c.rm.out.String(), "NodeManagers authenticate with the cluster secret") {
		t.Errorf("the RM does not say nodes authenticate:\n%s", c.rm.out.String())
	}

	// A job runs on it.
	id := c.submit(t, "hello", "echo hello; exit 0")
	if rep := c.waitState(t, id, pb.YarnApplicationStateProto_FINISHED); rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Errorf("the job: %v (%s)", rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}

	// Strangers cannot unregister it, nor add a node.
	key := net.JoinHostPort(node.GetNodeId().GetHost(), strconv.Itoa(int(node.GetNodeId().GetPort())))
	cl := rpc.NewClient(c.tracker, rpc.ClientOptions{User: "yarn", Retries: -1})
	defer cl.Close()
	rt := rpc.ResourceTrackerClient{C: cl}
	_, err := rt.UnRegisterNodeManager(context.Background(), &pb.UnRegisterNodeManagerRequestProto{NodeId: node.GetNodeId()})
	want := fmt.Sprintf("unRegisterNodeManager for node %s is refused: the connection is not authenticated", key)
	if !rpc.IsClass(err, rpc.ClassAccessControl) || !strings.Contains(err.Error(), want) {
		t.Errorf("an anonymous unRegisterNodeManager: %v, want AccessControlException %q", err, want)
	}
	t.Logf("anonymous unRegisterNodeManager: %v", err)
	_, err = rt.RegisterNodeManager(context.Background(), &pb.RegisterNodeManagerRequestProto{
		NodeId: &pb.NodeIdProto{Host: proto.String("127.0.0.1"), Port: proto.Int32(1)}, HttpPort: proto.Int32(8042),
		Resource: &pb.ResourceProto{Memory: proto.Int64(1 << 30), VirtualCores: proto.Int32(1000000)}})
	if !rpc.IsClass(err, rpc.ClassAccessControl) {
		t.Errorf("an anonymous registration of a 1 PB node: %v, want AccessControlException", err)
	}
	time.Sleep(500 * time.Millisecond) // a few heartbeats
	if ns := c.nodes(t); len(ns) != 1 || ns[0].GetNodeState() != pb.NodeStateProto_NS_RUNNING {
		t.Fatalf("after the refused calls the nodes are %v, want the one RUNNING", ns)
	}

	// The NodeManagers without the secret never registered, and say why.
	for _, p := range []struct {
		proc *proc
		want string
	}{
		{stranger, "check that loom.cluster.secret holds the same secret as on the RM"},
		{anonymous, "this NodeManager has no cluster secret"},
	} {
		c.waitFor(t, p.proc.name+" to say why it is refused", func() bool { return strings.Contains(p.proc.out.String(), p.want) })
		if strings.Contains(p.proc.out.String(), "registered with the ResourceManager") {
			t.Errorf("%s registered", p.proc.name)
		}
	}

	// The node itself unregisters when it stops.
	nm.stop()
	c.waitWithin(t, 10*time.Second, "the node to be SHUTDOWN", func() bool {
		ns := c.nodes(t)
		return len(ns) == 1 && ns[0].GetNodeState() == pb.NodeStateProto_NS_SHUTDOWN
	})
}

// Without a secret the RM warns, nodes register as before, and still a
// stranger cannot unregister one.
func TestWithoutASecretAStrangerCannotUnregisterANode(t *testing.T) {
	c := startCluster(t, 1)
	if !strings.Contains(c.rm.out.String(), "NODEMANAGERS ARE NOT AUTHENTICATED") {
		t.Errorf("the RM does not warn that nodes are not authenticated:\n%s", c.rm.out.String())
	}
	ns := c.nodes(t)
	cl := rpc.NewClient(c.tracker, rpc.ClientOptions{User: "yarn", Retries: -1})
	defer cl.Close()
	_, err := rpc.ResourceTrackerClient{C: cl}.UnRegisterNodeManager(context.Background(),
		&pb.UnRegisterNodeManagerRequestProto{NodeId: ns[0].GetNodeId()})
	if !rpc.IsClass(err, rpc.ClassAccessControl) || !strings.Contains(err.Error(), "does not come from the RPC client that registered the node") {
		t.Errorf("an anonymous unRegisterNodeManager: %v", err)
	}
	t.Logf("anonymous unRegisterNodeManager without a secret: %v", err)
	id := c.submit(t, "hello", "echo hello; exit 0")
	if rep := c.waitState(t, id, pb.YarnApplicationStateProto_FINISHED); rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Errorf("the job: %v (%s)", rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}
	if ns := c.nodes(t); len(ns) != 1 || ns[0].GetNodeState() != pb.NodeStateProto_NS_RUNNING {
		t.Fatalf("the nodes are %v, want the one RUNNING", ns)
	}
}
