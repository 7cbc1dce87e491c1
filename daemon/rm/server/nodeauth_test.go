package server

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

const testClusterSecret = "0123456789abcdef-test-cluster-secret"

// testNodeToken is node's token under secret, as a NodeManager makes it
// (nm.NodeToken).
func testNodeToken(secret, node string) *hadooppb.TokenProto {
	id := nodeTokenIdentifier(node)
	return &hadooppb.TokenProto{Identifier: id, Password: rpc.TokenPassword([]byte(secret), id),
		Kind: proto.String("LoomNodeToken"), Service: proto.String("tracker")}
}

// trackerClient is a resource-tracker client of its own (its own RPC
// client, so its own session), authenticating with tok when set.
func trackerClient(t *testing.T, r *RM, tok *hadooppb.TokenProto) rpc.ResourceTrackerClient {
	t.Helper()
	cl := rpc.NewClient(r.Addr("tracker"), rpc.ClientOptions{User: "nm", Token: tok, Retries: -1})
	t.Cleanup(func() { cl.Close() })
	return rpc.ResourceTrackerClient{C: cl}
}

func nodeIDOf(key string) *pb.NodeIdProto {
	host, port, _ := strings.Cut(key, ":")
	var p int32
	for _, c := range port {
		p = p*10 + int32(c-'0')
	}
	return &pb.NodeIdProto{Host: proto.String(host), Port: proto.Int32(p)}
}

func registerNode(rt rpc.ResourceTrackerClient, key string, mem int64, cores int32) (*pb.RegisterNodeManagerResponseProto, error) {
	return rt.RegisterNodeManager(context.Background(), &pb.RegisterNodeManagerRequestProto{NodeId: nodeIDOf(key), HttpPort: proto.Int32(8042),
		Resource: &pb.ResourceProto{Memory: proto.Int64(mem), VirtualCores: proto.Int32(cores)}})
}

func heartbeatNode(rt rpc.ResourceTrackerClient, key string) (*pb.NodeHeartbeatResponseProto, error) {
	return rt.NodeHeartbeat(context.Background(), &pb.NodeHeartbeatRequestProto{NodeStatus: &pb.NodeStatusProto{NodeId: nodeIDOf(key), ResponseId: proto.Int32(0)}})
}

func unregisterNode(rt rpc.ResourceTrackerClient, key string) error {
	_, err := rt.UnRegisterNodeManager(context.Background(), &pb.UnRegisterNodeManagerRequestProto{NodeId: nodeIDOf(key)})
	return err
}

func nodeState(r *RM, key string) pb.NodeStateProto {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.nodes[key]; n != nil {
		return n.state
	}
	return pb.NodeStateProto(0)
}

// wantRefused checks that err is a RemoteError of class whose message
// holds every part.
func wantRefused(t *testing.T, what string, err error, class string, parts ...string) {
	t.Helper()
	t.Logf("%s: %v", what, err)
	if !rpc.IsClass(err, class) {
		t.Fatalf("%s: got %v, want %s", what, err, class)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %q does not say %q", what, err, p)
		}
	}
}

// The node token's bytes are a contract with the NodeManager
// (nm/nodeauth_test.go pins the same).
func TestNodeTokenBytesArePinned(t *testing.T) {
	tok := testNodeToken("0123456789abcdef", "node1.example.com:8041")
	if got := string(tok.GetIdentifier()); got != "LoomNodeToken:node1.example.com:8041" {
		t.Errorf("identifier %q", got)
	}
	if got, want := hex.EncodeToString(tok.GetPassword()), "d723653d86f20f0ab1d663e0e4fedffdbf6ae5f7"; got != want {
		t.Errorf("password %s, want %s", got, want)
	}
	for _, bad := range []string{"", "LoomNodeToken:", "LoomNodeToken:host", "LoomNodeToken::80", "LoomNodeToken:h:0", "LoomNodeToken:h:99999", "NMToken:h:80"} {
		if _, err := parseNodeTokenIdentifier([]byte(bad)); err == nil {
			t.Errorf("%q parsed as a node token", bad)
		}
	}
}

func TestNodesProveTheClusterSecret(t *testing.T) {
	r := startRM(t, "loom.cluster.secret="+testClusterSecret)
	const a, b = "127.0.0.1:40001", "127.0.0.1:40002"

	// No token: SIMPLE auth is refused at the call, with what to do.
	_, err := registerNode(trackerClient(t, r, nil), a, 8192, 8)
	wantRefused(t, "registration without a token", err, rpc.ClassAccessControl,
		"registerNodeManager for node 127.0.0.1:40001 is refused: the connection is not authenticated", "loom.cluster.secret", "node token")
	// A token made with another secret: refused in the handshake.
	_, err = registerNode(trackerClient(t, r, testNodeToken("not-the-cluster-secret!", a)), a, 8192, 8)
	wantRefused(t, "a forged node token", err, rpc.ClassSasl, "Mismatched response")
	// A token of another kind.
	other := testNodeToken(testClusterSecret, a)
	other.Identifier = []byte("NMToken:" + a)
	_, err = registerNode(trackerClient(t, r, other), a, 8192, 8)
	wantRefused(t, "another kind of token", err, rpc.ClassInvalidToken, "not a Loom node token")
	if st := nodeState(r, a); st != 0 {
		t.Fatalf("node %s is %v after refused registrations", a, st)
	}

	// Each node registers on its own session.
	rtA := trackerClient(t, r, testNodeToken(testClusterSecret, a))
	rtB := trackerClient(t, r, testNodeToken(testClusterSecret, b))
	for _, c := range []struct {
		rt  rpc.ResourceTrackerClient
		key string
	}{{rtA, a}, {rtB, b}} {
		resp, err := registerNode(c.rt, c.key, 8192, 8)
		if err != nil || resp.GetNodeAction() != pb.NodeActionProto_NORMAL {
			t.Fatalf("register %s: %v %v", c.key, resp, err)
		}
	}

	// B's session cannot speak for A.
	_, err = registerNode(rtB, a, 1<<20, 64)
	wantRefused(t, "registering A on B's session", err, rpc.ClassAccessControl,
		"registerNodeManager for node 127.0.0.1:40001 is refused: the connection authenticated as node 127.0.0.1:40002")
	_, err = heartbeatNode(rtB, a)
	wantRefused(t, "a heartbeat for A on B's session", err, rpc.ClassAccessControl,
		"nodeHeartbeat for node 127.0.0.1:40001 is refused: the connection authenticated as node 127.0.0.1:40002",
		"may register, heartbeat and unregister only its own node")
	err = unregisterNode(rtB, a)
	wantRefused(t, "unregistering A on B's session", err, rpc.ClassAccessControl,
		"unRegisterNodeManager for node 127.0.0.1:40001 is refused: the connection authenticated as node 127.0.0.1:40002")
	err = unregisterNode(trackerClient(t, r, nil), a)
	wantRefused(t, "an anonymous unregistration of A", err, rpc.ClassAccessControl, "is not authenticated")
	if st := nodeState(r, a); st != pb.NodeStateProto_NS_RUNNING {
		t.Fatalf("node A is %v after refused calls, want RUNNING", st)
	}
	r.mu.Lock()
	if c := r.nodes[a].capacity; c.String() != r.nodes[b].capacity.String() {
		t.Errorf("A's capacity changed to %v", c)
	}
	r.mu.Unlock()

	// A's own session heartbeats and unregisters it.
	if resp, err := heartbeatNode(rtA, a); err != nil || resp.GetNodeAction() != pb.NodeActionProto_NORMAL {
		t.Fatalf("A's heartbeat: %v %v", resp, err)
	}
	if err := unregisterNode(rtA, a); err != nil {
		t.Fatalf("A's unregistration: %v", err)
	}
	if st := nodeState(r, a); st != pb.NodeStateProto_NS_SHUTDOWN {
		t.Errorf("A is %v after unregistering, want SHUTDOWN", st)
	}
	if st := nodeState(r, b); st != pb.NodeStateProto_NS_RUNNING {
		t.Errorf("B is %v, want RUNNING", st)
	}
}

// Without a secret nodes are not authenticated, but a node's heartbeats
// and unregistration count only from the client that registered it.
func TestWithoutASecretOnlyTheRegisteringClientSpeaksForTheNode(t *testing.T) {
	r := startRM(t)
	nm := startNM(t, r.Addr("tracker"), 8192, 8)
	key := nodeKey(nm.id)
	ac := clientOf(t, r, "alice")
	submit(t, ac, "default", 1024)
	nm.beat()
	start := nm.waitStarts(1)[0]

	stranger := trackerClient(t, r, nil)
	err := unregisterNode(stranger, key)
	wantRefused(t, "an anonymous unregistration", err, rpc.ClassAccessControl,
		"unRegisterNodeManager for node "+key+" is refused: the call does not come from the RPC client that registered the node",
		"loom.cluster.secret")
	resp, err := heartbeatNode(stranger, key)
	if err != nil || resp.GetNodeAction() != pb.NodeActionProto_RESYNC || !strings.Contains(resp.GetDiagnosticsMessage(), "registered by another RPC client") {
		t.Fatalf("a stranger's heartbeat: %v %v, want RESYNC", resp, err)
	}
	if st := nodeState(r, key); st != pb.NodeStateProto_NS_RUNNING {
		t.Fatalf("the node is %v, want RUNNING", st)
	}
	// Its AM container still runs: the stranger ended nothing.
	if got := nm.beat(); got.GetNodeAction() != pb.NodeActionProto_NORMAL || len(got.GetContainersToCleanup()) != 0 {
		t.Fatalf("the node's own heartbeat: %v", got)
	}
	r.mu.Lock()
	cr := r.contOf(containerOf(t, start), nil)
	r.mu.Unlock()
	if cr == nil || cr.state() == pb.ContainerStateProto_C_COMPLETE {
		t.Fatalf("the AM container ended")
	}
	if err := unregisterNode(nm.rt, key); err != nil {
		t.Fatalf("the node's own unregistration: %v", err)
	}
	if st := nodeState(r, key); st != pb.NodeStateProto_NS_SHUTDOWN {
		t.Errorf("the node is %v after unregistering, want SHUTDOWN", st)
	}
}

func TestAbsurdNodeIsToldToShutDown(t *testing.T) {
	r := startRM(t)
	rt := trackerClient(t, r, nil)
	const key = "127.0.0.1:40003"
	resp, err := registerNode(rt, key, 1<<30, 1000000) // 1 PB, a million vcores
	if err != nil {
		t.Fatal(err)
	}
	want := "NodeManager from 127.0.0.1:40003 offers 1073741824 MB of memory, more than one node may offer (loom.resourcemanager.node.maximum-memory-mb = 67108864): no machine is that large"
	if resp.GetNodeAction() != pb.NodeActionProto_SHUTDOWN || !strings.Contains(resp.GetDiagnosticsMessage(), want) {
		t.Fatalf("got %v %q, want SHUTDOWN with %q", resp.GetNodeAction(), resp.GetDiagnosticsMessage(), want)
	}
	if st := nodeState(r, key); st != 0 {
		t.Fatalf("the absurd node is %v", st)
	}
	resp, _ = registerNode(rt, key, 8192, 1000000)
	if !strings.Contains(resp.GetDiagnosticsMessage(), "offers 1000000 vcores, more than one node may offer (loom.resourcemanager.node.maximum-vcores = 8192)") {
		t.Errorf("vcores: %v %q", resp.GetNodeAction(), resp.GetDiagnosticsMessage())
	}

	// The limit is the operator's.
	r2 := startRM(t, "loom.resourcemanager.node.maximum-vcores=64")
	rt2 := trackerClient(t, r2, nil)
	if resp, _ := registerNode(rt2, key, 8192, 65); resp.GetNodeAction() != pb.NodeActionProto_SHUTDOWN {
		t.Errorf("65 vcores over a limit of 64: %v", resp.GetNodeAction())
	}
	if resp, err := registerNode(rt2, key, 8192, 64); err != nil || resp.GetNodeAction() != pb.NodeActionProto_NORMAL {
		t.Errorf("64 vcores at a limit of 64: %v %v", resp, err)
	}
}

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestStartSaysWhetherNodesAreAuthenticated(t *testing.T) {
	for _, c := range []struct {
		overrides []string
		want      string
	}{
		{nil, "NODEMANAGERS ARE NOT AUTHENTICATED"},
		{[]string{"loom.cluster.secret=" + testClusterSecret}, "NodeManagers authenticate with the cluster secret"},
	} {
		var logs logBuffer
		r, err := New(testConfig(t, c.overrides...), zerolog.New(&logs))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r.Stop(ctx)
		cancel()
		if !strings.Contains(logs.String(), c.want) {
			t.Errorf("%v: the log does not say %q:\n%s", c.overrides, c.want, logs.String())
		}
	}
}

func TestClusterSecretConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "secret")
	if err := os.WriteFile(good, []byte(testClusterSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte(testClusterSecret), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	load := func(kv ...string) (Config, error) {
		c := hadoopconf.New(Defaults)
		c.Set("loom.history.dir", dir)
		for _, s := range kv {
			k, v, _ := strings.Cut(s, "=")
			c.Set(k, v)
		}
		return LoadConfig(c)
	}
	cfg, err := load("loom.cluster.secret-file=" + good)
	if err != nil || string(cfg.NodeAuth.Secret) != testClusterSecret || cfg.NodeAuth.SecretKey != "loom.cluster.secret-file" {
		t.Fatalf("the secret file: %q from %s, %v", cfg.NodeAuth.Secret, cfg.NodeAuth.SecretKey, err)
	}
	if cfg, err := load(); err != nil || cfg.NodeAuth.Secret != nil || cfg.NodeAuth.MaxNode.String() == "" {
		t.Fatalf("no secret: %q, %v", cfg.NodeAuth.Secret, err)
	}
	for _, c := range []struct {
		kv   []string
		want string
	}{
		{[]string{"loom.cluster.secret=short"}, "loom.cluster.secret: the cluster secret is 5 bytes: use at least 16"},
		{[]string{"loom.cluster.secret=" + testClusterSecret, "loom.cluster.secret-file=" + good}, "loom.cluster.secret-file: loom.cluster.secret is set too"},
		{[]string{"loom.cluster.secret-file=" + open}, "is open to every user (mode 0644)"},
		{[]string{"loom.cluster.secret-file=" + filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"loom.resourcemanager.node.maximum-vcores=0"}, "loom.resourcemanager.node.maximum-vcores: 0 must be positive"},
	} {
		_, err := load(c.kv...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.kv, err, c.want)
		}
	}
}
