package nm

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

func TestRegistersAndHeartbeatsAtTheRMsInterval(t *testing.T) {
	stub := newRMStub(t, 150)
	n := startNM(t, testConfig(t, stub.addr, nil), nil)
	stub.waitFor(t, "6 heartbeats", 10*time.Second, func() bool { return len(stub.hbs) >= 6 })

	stub.mu.Lock()
	defer stub.mu.Unlock()
	if len(stub.regs) != 1 {
		t.Fatalf("%d registrations, want 1", len(stub.regs))
	}
	reg := stub.regs[0]
	_, port, _ := net.SplitHostPort(n.Addr())
	if got, want := reg.GetNodeId().GetHost(), "127.0.0.1"; got != want {
		t.Errorf("registered host %q, want %q", got, want)
	}
	if got := strconv.Itoa(int(reg.GetNodeId().GetPort())); got != port || port == "0" {
		t.Errorf("registered port %s, the NM listens on %s", got, port)
	}
	if n.NodeID() != "127.0.0.1:"+port {
		t.Errorf("NodeID %q", n.NodeID())
	}
	r := reg.GetResource()
	if r.GetMemory() != 4096 || r.GetVirtualCores() != 4 {
		t.Errorf("registered resource %v, want 4096 MB and 4 vcores", r)
	}
	disk := false
	for _, ri := range r.GetResourceValueMap() {
		if ri.GetKey() == "loom.io/disk" && ri.GetValue() == 200 {
			disk = true
		}
		if ri.GetKey() == "loom.io/network" {
			t.Errorf("network offered though not configured: %v", ri)
		}
	}
	if !disk {
		t.Errorf("registered resource %v lacks loom.io/disk 200", r)
	}
	// The web port is 0 in tests: the port registered is the one bound.
	_, webPort, _ := net.SplitHostPort(n.WebAddr())
	if !strings.HasPrefix(reg.GetNmVersion(), "loom-") || strconv.Itoa(int(reg.GetHttpPort())) != webPort || webPort == "0" {
		t.Errorf("nm_version %q, http_port %d, the web services listen on %s", reg.GetNmVersion(), reg.GetHttpPort(), n.WebAddr())
	}
	if reg.GetPhysicalResource().GetMemory() <= 0 {
		t.Errorf("physical resource %v", reg.GetPhysicalResource())
	}

	// Each heartbeat echoes the last response id; the gaps are the
	// interval the RM gave.
	var gaps []time.Duration
	for i, hb := range stub.hbs {
		st := hb.req.GetNodeStatus()
		if st.GetResponseId() != int32(i) {
			t.Errorf("heartbeat %d carries response_id %d, want %d", i, st.GetResponseId(), i)
		}
		if st.GetNodeId().GetPort() != reg.GetNodeId().GetPort() || !st.GetNodeHealthStatus().GetIsNodeHealthy() {
			t.Errorf("heartbeat %d: node %v, health %v", i, st.GetNodeId(), st.GetNodeHealthStatus())
		}
		if i > 0 {
			gaps = append(gaps, hb.at.Sub(stub.hbs[i-1].at))
		}
	}
	slices.Sort(gaps)
	if med := gaps[len(gaps)/2]; med < 140*time.Millisecond || med > 400*time.Millisecond {
		t.Errorf("median heartbeat gap %v, want about 150ms (gaps %v)", med, gaps)
	}
	if gaps[0] < 140*time.Millisecond {
		t.Errorf("a heartbeat came %v after the last, sooner than the interval", gaps[0])
	}
}

func TestRetriesAnUnreachableRMThenRegisters(t *testing.T) {
	// A port nothing listens on yet.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	var logs syncBuffer
	n := startNM(t, testConfig(t, addr, nil), &logs)
	cm := cmClient(t, n)
	time.Sleep(400 * time.Millisecond)
	if !strings.Contains(logs.String(), "cannot reach the ResourceManager's resource tracker at "+addr) {
		t.Errorf("no log line naming where the RM was looked for:\n%s", logs.String())
	}
	// Containers wait for the registration.
	_, err = cm.StartContainers(context.Background(), &pb.StartContainersRequestProto{
		StartContainerRequest: []*pb.StartContainerRequestProto{{ContainerLaunchContext: launch("true", nil, nil),
			ContainerToken: token(t, n, containerID(1, 1), 128)}}})
	if !rpc.IsClass(err, rpc.ClassNMNotYetReady) {
		t.Errorf("start before registration: %v, want NMNotYetReadyException", err)
	}

	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	stub := serveRMStub(t, ln, 100)
	select {
	case <-n.Registered():
	case <-time.After(5 * time.Second):
		t.Fatalf("the NM did not register once the RM came up:\n%s", logs.String())
	}
	stub.waitFor(t, "a heartbeat", 5*time.Second, func() bool { return len(stub.hbs) > 0 })
}

func TestResyncReregistersWithRunningContainers(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	cid := containerID(1, 2)
	start(t, cm, token(t, n, cid, 128), launch("exec sleep 30", nil, nil))
	stub.waitFor(t, "the container running", 5*time.Second, func() bool {
		for _, cs := range stub.last().GetContainersStatuses() {
			if cs.GetState() == pb.ContainerStateProto_C_RUNNING {
				return true
			}
		}
		return false
	})
	stub.mu.Lock()
	stub.action = pb.NodeActionProto_RESYNC
	stub.mu.Unlock()
	stub.waitFor(t, "a second registration", 5*time.Second, func() bool { return len(stub.regs) == 2 })
	stub.mu.Lock()
	reg := stub.regs[1]
	stub.mu.Unlock()
	if len(reg.GetContainerStatuses()) != 1 {
		t.Fatalf("re-registration reports %d containers, want 1: %v", len(reg.GetContainerStatuses()), reg)
	}
	cs := reg.GetContainerStatuses()[0]
	if ContainerIDString(cs.GetContainerId()) != ContainerIDString(cid) || cs.GetContainerState() != pb.ContainerStateProto_C_RUNNING ||
		cs.GetResource().GetMemory() != 128 {
		t.Errorf("re-registration reports %v", cs)
	}
	if len(reg.GetRunningApplications()) != 1 {
		t.Errorf("running applications %v", reg.GetRunningApplications())
	}
	// Heartbeats start again from response id 0.
	stub.waitFor(t, "a heartbeat after the resync", 5*time.Second, func() bool {
		return len(stub.hbs) > 0 && stub.last().GetResponseId() == 0
	})
}

func TestShutdownFromTheRMKillsContainersAndStops(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	cid := containerID(1, 3)
	start(t, cm, token(t, n, cid, 128), launch("echo $$ > <LOG_DIR>/pid; exec sleep 30", nil, nil))
	pid, _ := strconv.Atoi(strings.TrimSpace(waitFile(t, logDir(n, cid)+"/pid", 5*time.Second)))
	stub.mu.Lock()
	stub.action = pb.NodeActionProto_SHUTDOWN
	stub.mu.Unlock()
	select {
	case <-n.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the NM did not stop on SHUTDOWN")
	}
	if !errors.Is(n.Err(), ErrShutdownByRM) {
		t.Errorf("Err() = %v, want ErrShutdownByRM", n.Err())
	}
	if alive(pid) {
		t.Errorf("container process %d survived the shutdown", pid)
	}
}

func TestRegistrationRefusedStopsTheNM(t *testing.T) {
	stub := newRMStub(t, 100)
	stub.regAction = pb.NodeActionProto_SHUTDOWN
	stub.regDiag = "node too small"
	n := startNM(t, testConfig(t, stub.addr, nil), nil)
	select {
	case <-n.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the NM did not stop when its registration was refused")
	}
	if err := n.Err(); !errors.Is(err, ErrShutdownByRM) || !strings.Contains(err.Error(), "node too small") {
		t.Errorf("Err() = %v", err)
	}
}

// TestResyncReportsCompletedContainers: a container that ended, and whose
// end an RM already heard in a heartbeat, is still reported when the node
// registers again (a new RM after a failover): the RM that heard it may
// have died before its AM did, and the new one learns it only here.
func TestResyncReportsCompletedContainers(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	cid := containerID(1, 4)
	start(t, cm, token(t, n, cid, 128), launch("exit 3", nil, nil))
	stub.waitFor(t, "the container's end in a heartbeat", 5*time.Second, func() bool {
		for _, cs := range stub.last().GetContainersStatuses() {
			if cs.GetState() == pb.ContainerStateProto_C_COMPLETE {
				return true
			}
		}
		return false
	})
	// A few more heartbeats: the RM has seen it.
	seen := len(stub.hbs)
	stub.waitFor(t, "more heartbeats", 5*time.Second, func() bool { return len(stub.hbs) >= seen+2 })
	stub.mu.Lock()
	stub.action = pb.NodeActionProto_RESYNC
	stub.mu.Unlock()
	stub.waitFor(t, "a second registration", 5*time.Second, func() bool { return len(stub.regs) == 2 })
	stub.mu.Lock()
	reg := stub.regs[1]
	stub.mu.Unlock()
	if len(reg.GetContainerStatuses()) != 1 {
		t.Fatalf("re-registration reports %d containers, want the completed one: %v", len(reg.GetContainerStatuses()), reg)
	}
	if cs := reg.GetContainerStatuses()[0]; cs.GetContainerState() != pb.ContainerStateProto_C_COMPLETE || cs.GetContainerExitStatus() != 3 {
		t.Errorf("re-registration reports %v", cs)
	}
}
