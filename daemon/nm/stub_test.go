package nm

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
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

// rmStub is a ResourceTracker served over a real rpc.Server on loopback:
// it records what the NM sends and answers as a script says.
type rmStub struct {
	addr string
	srv  *rpc.Server

	mu           sync.Mutex
	interval     int64 // ms, sent as nextHeartBeatInterval
	rmIdentifier int64
	regs         []*pb.RegisterNodeManagerRequestProto
	hbs          []heartbeat
	respID       int32
	regAction    pb.NodeActionProto
	regDiag      string
	// Sent once, with the next heartbeat response.
	action      pb.NodeActionProto
	cleanup     []*pb.ContainerIdProto
	appsCleanup []*pb.ApplicationIdProto
	signals     []*pb.SignalContainerRequestProto
	removeFrom  []*pb.ContainerIdProto
	changed     chan struct{}
	// nmTokenKey, when set, replaces testNMKey: a roll.
	nmTokenKey *pb.MasterKeyProto
}

type heartbeat struct {
	at  time.Time
	req *pb.NodeHeartbeatRequestProto
}

func newRMStub(t *testing.T, intervalMS int64) *rmStub {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveRMStub(t, ln, intervalMS)
}

func serveRMStub(t *testing.T, ln net.Listener, intervalMS int64) *rmStub {
	s := &rmStub{addr: ln.Addr().String(), interval: intervalMS, rmIdentifier: 1700000000000, changed: make(chan struct{}, 1)}
	s.srv = rpc.NewServer(rpc.ServerOptions{})
	s.srv.Register(rpc.ResourceTrackerService(s))
	go s.srv.Serve(ln)
	t.Cleanup(func() { s.srv.Close() })
	return s
}

func (s *rmStub) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *rmStub) RegisterNodeManager(ctx context.Context, req *pb.RegisterNodeManagerRequestProto) (*pb.RegisterNodeManagerResponseProto, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notify()
	s.regs = append(s.regs, req)
	s.respID = 0
	action := s.regAction
	return &pb.RegisterNodeManagerResponseProto{NodeAction: action.Enum(), RmIdentifier: proto.Int64(s.rmIdentifier),
		RmVersion: proto.String("stub"), DiagnosticsMessage: proto.String(s.regDiag), ContainerTokenMasterKey: testMasterKey, NmTokenMasterKey: s.nmKey()}, nil
}

func (s *rmStub) UnRegisterNodeManager(ctx context.Context, req *pb.UnRegisterNodeManagerRequestProto) (*pb.UnRegisterNodeManagerResponseProto, error) {
	return &pb.UnRegisterNodeManagerResponseProto{}, nil
}

func (s *rmStub) NodeHeartbeat(ctx context.Context, req *pb.NodeHeartbeatRequestProto) (*pb.NodeHeartbeatResponseProto, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notify()
	s.hbs = append(s.hbs, heartbeat{time.Now(), req})
	resp := &pb.NodeHeartbeatResponseProto{NodeAction: s.action.Enum(), NextHeartBeatInterval: proto.Int64(s.interval)}
	if s.action != pb.NodeActionProto_NORMAL {
		s.action = pb.NodeActionProto_NORMAL
		return resp, nil
	}
	s.respID = req.GetNodeStatus().GetResponseId() + 1
	resp.ResponseId = proto.Int32(s.respID)
	resp.ContainersToCleanup, resp.ApplicationsToCleanup, resp.ContainersToBeRemovedFromNm = s.cleanup, s.appsCleanup, s.removeFrom
	resp.ContainersToSignal = s.signals
	s.cleanup, s.appsCleanup, s.removeFrom, s.signals = nil, nil, nil, nil
	if k := s.nmKey(); req.GetLastKnownNmTokenMasterKey().GetKeyId() != k.GetKeyId() {
		resp.NmTokenMasterKey = k
	}
	return resp, nil
}

// last is the latest heartbeat's node status (nil before any). Callers
// hold mu.
func (s *rmStub) last() *pb.NodeStatusProto {
	if len(s.hbs) == 0 {
		return nil
	}
	return s.hbs[len(s.hbs)-1].req.GetNodeStatus()
}

// waitFor polls cond until it holds, failing the test after timeout.
func (s *rmStub) waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		ok := cond()
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-s.changed:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
	}
}

// completed waits until a heartbeat reports the container completed, and
// returns that status.
func (s *rmStub) completed(t *testing.T, cid *pb.ContainerIdProto, timeout time.Duration) *pb.ContainerStatusProto {
	t.Helper()
	var st *pb.ContainerStatusProto
	s.waitFor(t, "completion of "+ContainerIDString(cid), timeout, func() bool {
		for _, hb := range s.hbs {
			for _, cs := range hb.req.GetNodeStatus().GetContainersStatuses() {
				if proto.Equal(cs.GetContainerId(), cid) && cs.GetState() == pb.ContainerStateProto_C_COMPLETE {
					st = cs
					return true
				}
			}
		}
		return false
	})
	return st
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// testConfig is a small node on loopback, in a temp dir, with a short
// monitor interval.
func testConfig(t *testing.T, tracker string, overrides map[string]string) *Config {
	t.Helper()
	dir := t.TempDir()
	c := hadoopconf.New(Defaults)
	for k, v := range map[string]string{
		"yarn.nodemanager.hostname":                      "127.0.0.1",
		"yarn.nodemanager.webapp.address":                "127.0.0.1:0",
		"yarn.resourcemanager.resource-tracker.address":  tracker,
		"yarn.nodemanager.resource.memory-mb":            "4096",
		"yarn.nodemanager.resource.cpu-vcores":           "4",
		"loom.nodemanager.resource.disk-mbps":            "200",
		"yarn.nodemanager.local-dirs":                    filepath.Join(dir, "local"),
		"yarn.nodemanager.log-dirs":                      filepath.Join(dir, "logs"),
		"yarn.nodemanager.container-monitor.interval-ms": "100",
		"yarn.nodemanager.sleep-delay-before-sigkill.ms": "200",
		"yarn.resourcemanager.connect.retry-interval.ms": "1000",
		// These tests are about containers, and start many apps' over
		// one connection; NMToken auth has tests of its own
		// (nmtoken_test.go), with this off.
		"loom.nodemanager.simple-auth.enabled": "true",
	} {
		c.Set(k, v)
	}
	for k, v := range overrides {
		c.Set(k, v)
	}
	cfg, err := LoadConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startNM starts a NodeManager and stops it when the test ends.
func startNM(t *testing.T, cfg *Config, logs *syncBuffer) *NodeManager {
	t.Helper()
	var w = zerolog.Nop()
	if logs != nil {
		w = zerolog.New(logs)
	} else if testing.Verbose() {
		w = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: "15:04:05.000"}).With().Timestamp().Logger()
	}
	n, err := New(cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return n
}

// startRegistered starts an NM against a fresh stub and waits for its
// registration.
func startRegistered(t *testing.T, overrides map[string]string) (*NodeManager, *rmStub, rpc.ContainerManagementClient) {
	t.Helper()
	stub := newRMStub(t, 100)
	n := startNM(t, testConfig(t, stub.addr, overrides), nil)
	select {
	case <-n.Registered():
	case <-time.After(10 * time.Second):
		t.Fatal("the NM did not register")
	}
	return n, stub, cmClient(t, n)
}

func cmClient(t *testing.T, n *NodeManager) rpc.ContainerManagementClient {
	client := rpc.NewClient(n.Addr(), rpc.ClientOptions{User: "appattempt_1_0001_000001"})
	t.Cleanup(func() { client.Close() })
	return rpc.ContainerManagementClient{C: client}
}

const testClusterTS = 1700000000000

// testNMKey is the NMToken master key the stub RM hands the NM first.
var testNMKey = &pb.MasterKeyProto{KeyId: proto.Int32(11), Bytes: []byte("the stub RM's NMToken master key")}

// nmKey is the NMToken master key the stub hands out now. Callers hold
// mu.
func (s *rmStub) nmKey() *pb.MasterKeyProto {
	if s.nmTokenKey != nil {
		return s.nmTokenKey
	}
	return testNMKey
}

// testMasterKey is the container-token master key the stub RM hands the
// NM; tests sign their tokens with it, as the RM would.
var testMasterKey = &pb.MasterKeyProto{KeyId: proto.Int32(7), Bytes: []byte("the stub RM's container-token master key")}

func containerID(app int32, seq int64) *pb.ContainerIdProto {
	a := &pb.ApplicationIdProto{Id: proto.Int32(app), ClusterTimestamp: proto.Int64(testClusterTS)}
	return &pb.ContainerIdProto{AppId: a, AppAttemptId: &pb.ApplicationAttemptIdProto{ApplicationId: a, AttemptId: proto.Int32(1)},
		Id: proto.Int64(seq)}
}

// token is the container token the RM would issue for cid on n.
func token(t *testing.T, n *NodeManager, cid *pb.ContainerIdProto, memMB int64) *hadooppb.TokenProto {
	t.Helper()
	tok, err := newContainerToken(&pb.ContainerTokenIdentifierProto{ContainerId: cid, NmHostAddr: proto.String(n.NodeID()),
		AppSubmitter: proto.String("alice"), Resource: &pb.ResourceProto{Memory: proto.Int64(memMB), VirtualCores: proto.Int32(1)},
		ExpiryTimeStamp: proto.Int64(time.Now().Add(10 * time.Minute).UnixMilli()), RmIdentifier: proto.Int64(1700000000000),
		CreationTime: proto.Int64(time.Now().UnixMilli())}, n.NodeID(), testMasterKey)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func launch(command string, env map[string]string, res map[string]*pb.LocalResourceProto) *pb.ContainerLaunchContextProto {
	clc := &pb.ContainerLaunchContextProto{Command: []string{command}}
	for _, k := range sortedKeys(env) {
		clc.Environment = append(clc.Environment, &pb.StringStringMapProto{Key: proto.String(k), Value: proto.String(env[k])})
	}
	for _, k := range sortedKeys(res) {
		clc.LocalResources = append(clc.LocalResources, &pb.StringLocalResourceMapProto{Key: proto.String(k), Value: res[k]})
	}
	return clc
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// start starts one container and fails the test unless it is accepted.
func start(t *testing.T, cm rpc.ContainerManagementClient, tok *hadooppb.TokenProto, clc *pb.ContainerLaunchContextProto) {
	t.Helper()
	resp, err := cm.StartContainers(context.Background(), &pb.StartContainersRequestProto{
		StartContainerRequest: []*pb.StartContainerRequestProto{{ContainerLaunchContext: clc, ContainerToken: tok}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetFailedRequests()) > 0 || len(resp.GetSucceededRequests()) != 1 {
		t.Fatalf("start: %v", resp)
	}
}

func fileResource(path string, typ pb.LocalResourceTypeProto) *pb.LocalResourceProto {
	return &pb.LocalResourceProto{Resource: &pb.URLProto{Scheme: proto.String("file"), File: proto.String(path)},
		Type: typ.Enum(), Visibility: pb.LocalResourceVisibilityProto_APPLICATION.Enum()}
}

// logDir is a container's log dir on a test NM (one log dir).
func logDir(n *NodeManager, cid *pb.ContainerIdProto) string {
	return filepath.Join(n.cfg.LogDirs[0], ApplicationIDString(rpc.AppIDOf(cid)), ContainerIDString(cid))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitFile waits for a file to exist with content, returning it.
func waitFile(t *testing.T, path string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 && bytes.HasSuffix(b, []byte("\n")) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive says whether a process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	p, err := parseStat(b)
	if err != nil {
		return false
	}
	s := string(b)
	state := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
	return p.pid == pid && state != "Z" && state != "X"
}
