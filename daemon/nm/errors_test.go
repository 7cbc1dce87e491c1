package nm

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

func startReq(reqs ...*pb.StartContainerRequestProto) *pb.StartContainersRequestProto {
	return &pb.StartContainersRequestProto{StartContainerRequest: reqs}
}

func TestBadTokensFailTheWholeCallAndStartNothing(t *testing.T) {
	n, _, cm := startRegistered(t, nil)
	good := &pb.StartContainerRequestProto{ContainerLaunchContext: launch("exec sleep 30", nil, nil),
		ContainerToken: token(t, n, containerID(20, 1), 128)}
	otherNode, _ := newContainerToken(&pb.ContainerTokenIdentifierProto{ContainerId: containerID(20, 3),
		NmHostAddr: proto.String("elsewhere:45454"), AppSubmitter: proto.String("alice")}, "elsewhere:45454", testMasterKey)
	// Tokens the RM did not sign: none, forged with a guessed key, and
	// signed with another key id.
	unsigned := token(t, n, containerID(20, 4), 128)
	unsigned.Password = []byte{}
	forged, _ := newContainerToken(&pb.ContainerTokenIdentifierProto{ContainerId: containerID(20, 5), NmHostAddr: proto.String(n.NodeID()),
		AppSubmitter: proto.String("alice")}, n.NodeID(), &pb.MasterKeyProto{KeyId: testMasterKey.KeyId, Bytes: []byte("guess")})
	otherKey, _ := newContainerToken(&pb.ContainerTokenIdentifierProto{ContainerId: containerID(20, 6), NmHostAddr: proto.String(n.NodeID()),
		AppSubmitter: proto.String("alice")}, n.NodeID(), &pb.MasterKeyProto{KeyId: proto.Int32(99), Bytes: testMasterKey.Bytes})
	for _, tc := range []struct {
		name  string
		tok   *hadooppb.TokenProto
		class string
		msg   string
	}{
		{"missing", nil, rpc.ClassYarnException, "Invalid ContainerToken"},
		{"garbage identifier", &hadooppb.TokenProto{Identifier: []byte{0xff, 0xff, 0xff}, Password: []byte{},
			Kind: proto.String(containerTokenKind), Service: proto.String(n.NodeID())}, rpc.ClassYarnException, "Invalid ContainerToken"},
		{"no container in the identifier", &hadooppb.TokenProto{Identifier: []byte{0x12, 0x01, 0x78}, Password: []byte{},
			Kind: proto.String(containerTokenKind), Service: proto.String(n.NodeID())}, rpc.ClassYarnException, "names no container"},
		{"for another node", otherNode, classInvalidToken, "not valid for current Node manager. Expected : " + n.NodeID()},
		{"unsigned", unsigned, classInvalidToken, "its password is not the RM's signature"},
		{"forged", forged, classInvalidToken, "its password is not the RM's signature"},
		{"another master key", otherKey, classInvalidToken, "signed with master key 99, but the RM's current key is 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := &pb.StartContainerRequestProto{ContainerLaunchContext: launch("true", nil, nil), ContainerToken: tc.tok}
			_, err := cm.StartContainers(context.Background(), startReq(good, bad))
			if !rpc.IsClass(err, tc.class) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got %v, want %s with %q", err, tc.class, tc.msg)
			}
		})
	}
	// The good container in those batches never started.
	resp, err := cm.GetContainerStatuses(context.Background(), &pb.GetContainerStatusesRequestProto{
		ContainerId: []*pb.ContainerIdProto{containerID(20, 1)}})
	if err != nil || len(resp.GetFailedRequests()) != 1 ||
		!strings.Contains(resp.GetFailedRequests()[0].GetException().GetMessage(), "is not handled by this NodeManager") {
		t.Errorf("a container from a refused batch exists: %v, %v", resp, err)
	}
}

func TestPerContainerRefusalsGoInFailedRequests(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	dup := containerID(21, 1)
	start(t, cm, token(t, n, dup, 128), launch("true", nil, nil))

	expired, _ := newContainerToken(&pb.ContainerTokenIdentifierProto{ContainerId: containerID(21, 2), NmHostAddr: proto.String(n.NodeID()),
		AppSubmitter: proto.String("alice"), ExpiryTimeStamp: proto.Int64(time.Now().Add(-time.Minute).UnixMilli())}, n.NodeID(), testMasterKey)
	oldRM, _ := newContainerToken(&pb.ContainerTokenIdentifierProto{ContainerId: containerID(21, 3), NmHostAddr: proto.String(n.NodeID()),
		AppSubmitter: proto.String("alice"), RmIdentifier: proto.Int64(42)}, n.NodeID(), testMasterKey)
	badUser, _ := newContainerToken(&pb.ContainerTokenIdentifierProto{ContainerId: containerID(21, 4), NmHostAddr: proto.String(n.NodeID()),
		AppSubmitter: proto.String("../root")}, n.NodeID(), testMasterKey)
	aux := launch("true", nil, nil)
	aux.ServiceData = []*pb.StringBytesMapProto{{Key: proto.String("mapreduce_shuffle"), Value: []byte{0, 0}}}
	escape := launch("true", nil, map[string]*pb.LocalResourceProto{"../x": fileResource("/etc/hostname", pb.LocalResourceTypeProto_FILE)})
	ok := containerID(21, 7)

	resp, err := cm.StartContainers(context.Background(), startReq(
		&pb.StartContainerRequestProto{ContainerLaunchContext: launch("true", nil, nil), ContainerToken: token(t, n, dup, 128)},
		&pb.StartContainerRequestProto{ContainerLaunchContext: launch("true", nil, nil), ContainerToken: expired},
		&pb.StartContainerRequestProto{ContainerLaunchContext: launch("true", nil, nil), ContainerToken: oldRM},
		&pb.StartContainerRequestProto{ContainerLaunchContext: launch("true", nil, nil), ContainerToken: badUser},
		&pb.StartContainerRequestProto{ContainerLaunchContext: aux, ContainerToken: token(t, n, containerID(21, 5), 128)},
		&pb.StartContainerRequestProto{ContainerLaunchContext: escape, ContainerToken: token(t, n, containerID(21, 6), 128)},
		&pb.StartContainerRequestProto{ContainerLaunchContext: launch("true", nil, nil), ContainerToken: token(t, n, ok, 128)},
	))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetSucceededRequests()) != 1 || !proto.Equal(resp.GetSucceededRequests()[0], ok) {
		t.Errorf("succeeded %v, want only %s", resp.GetSucceededRequests(), ContainerIDString(ok))
	}
	want := []struct {
		seq        int64
		class, msg string
	}{
		{1, rpc.ClassYarnException, "Attempt to relaunch the same container with id " + ContainerIDString(dup)},
		{2, rpc.ClassYarnException, "This token is expired"},
		{3, classInvalidContainer, "rejected as it is allocated by a previous RM"},
		{4, rpc.ClassYarnException, `user "../root"`},
		{5, rpc.ClassInvalidAuxServiceException, "The auxService:mapreduce_shuffle does not exist"},
		{6, rpc.ClassYarnException, `"../x"`},
	}
	if len(resp.GetFailedRequests()) != len(want) {
		t.Fatalf("failed_requests %v", resp.GetFailedRequests())
	}
	for i, w := range want {
		f := resp.GetFailedRequests()[i]
		if f.GetContainerId().GetId() != w.seq || f.GetException().GetClassName() != w.class ||
			!strings.Contains(f.GetException().GetMessage(), w.msg) {
			t.Errorf("failure %d: %v, want container %d, %s with %q", i, f, w.seq, w.class, w.msg)
		}
	}
	stub.completed(t, ok, 10*time.Second)
}

func TestUnknownContainersOnStopAndStatus(t *testing.T) {
	_, _, cm := startRegistered(t, nil)
	unknown := containerID(22, 9)
	stop, err := cm.StopContainers(context.Background(), &pb.StopContainersRequestProto{ContainerId: []*pb.ContainerIdProto{unknown}})
	if err != nil || len(stop.GetFailedRequests()) != 1 || len(stop.GetSucceededRequests()) != 0 {
		t.Fatalf("stop unknown: %v, %v", stop, err)
	}
	e := stop.GetFailedRequests()[0].GetException()
	if e.GetClassName() != rpc.ClassYarnException || e.GetMessage() != "Container "+ContainerIDString(unknown)+" is not handled by this NodeManager" {
		t.Errorf("stop unknown: %v", e)
	}
	st, err := cm.GetContainerStatuses(context.Background(), &pb.GetContainerStatusesRequestProto{ContainerId: []*pb.ContainerIdProto{unknown}})
	if err != nil || len(st.GetFailedRequests()) != 1 || len(st.GetStatus()) != 0 {
		t.Errorf("status of unknown: %v, %v", st, err)
	}
}

func TestMissingFileResourceFailsTheContainer(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	cid := containerID(23, 1)
	missing := t.TempDir() + "/no-such.jar"
	start(t, cm, token(t, n, cid, 128), launch("touch <LOG_DIR>/ran", nil, map[string]*pb.LocalResourceProto{
		"lib.jar": fileResource(missing, pb.LocalResourceTypeProto_FILE)}))
	cs := stub.completed(t, cid, 10*time.Second)
	if cs.GetExitStatus() != ExitInvalid {
		t.Errorf("exit status %d, want %d", cs.GetExitStatus(), ExitInvalid)
	}
	for _, want := range []string{`"lib.jar"`, "file://" + missing, "does not exist"} {
		if !strings.Contains(cs.GetDiagnostics(), want) {
			t.Errorf("diagnostics lack %q: %q", want, cs.GetDiagnostics())
		}
	}
}

func TestChangedFileResourceFailsTheContainer(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	cid := containerID(23, 2)
	lr := fileResource("/etc/hostname", pb.LocalResourceTypeProto_FILE)
	lr.Timestamp = proto.Int64(12345)
	start(t, cm, token(t, n, cid, 128), launch("true", nil, map[string]*pb.LocalResourceProto{"h": lr}))
	cs := stub.completed(t, cid, 10*time.Second)
	if cs.GetExitStatus() != ExitInvalid || !strings.Contains(cs.GetDiagnostics(), "changed on src filesystem (expected 12345") {
		t.Errorf("%v", cs)
	}
}

func TestUnreachableHDFSFailsTheContainerNamingTheURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now

	n, stub, cm := startRegistered(t, nil)
	cid := containerID(24, 1)
	lr := &pb.LocalResourceProto{Resource: &pb.URLProto{Scheme: proto.String("hdfs"), Host: proto.String("127.0.0.1"),
		Port: proto.Int32(int32(port)), File: proto.String("/apps/job.jar")}, Type: pb.LocalResourceTypeProto_FILE.Enum()}
	start(t, cm, token(t, n, cid, 128), launch("true", nil, map[string]*pb.LocalResourceProto{"job.jar": lr}))
	cs := stub.completed(t, cid, 20*time.Second)
	url := "hdfs://127.0.0.1:" + strconv.Itoa(port) + "/apps/job.jar"
	want := []string{url, `"job.jar"`, "cannot reach the HDFS namenode at 127.0.0.1:" + strconv.Itoa(port)}
	if cs.GetExitStatus() != ExitInvalid {
		t.Errorf("exit status %d", cs.GetExitStatus())
	}
	for _, w := range want {
		if !strings.Contains(cs.GetDiagnostics(), w) {
			t.Errorf("diagnostics lack %q: %q", w, cs.GetDiagnostics())
		}
	}
	// The NM is still serving.
	ok := containerID(24, 2)
	start(t, cm, token(t, n, ok, 128), launch("true", nil, nil))
	if cs := stub.completed(t, ok, 10*time.Second); cs.GetExitStatus() != 0 {
		t.Errorf("after the HDFS failure: %v", cs)
	}
}
