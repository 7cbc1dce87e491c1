package integration

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestSecuritySuite runs, against real `loom rm` and `loom nm` processes,
// each row of the table issue 21 found when Loom was tried as an attacker
// and a careful operator would, and checks the safe outcome. The README's
// "Securing Loom" section says how an operator gets each of them.
func TestSecuritySuite(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, 2, "-D", "yarn.nm.liveness-monitor.expiry-interval-ms=1500",
		// Service-level authorization: the test's own client user and
		// this OS user (loom submit) may use the client protocol.
		"-D", "hadoop.security.authorization=true",
		"-D", "security.applicationclient.protocol.acl=tester,"+me.Username,
		// The RPC per-address caps apply to loopback too, and the web
		// port gives a request 2 s, so that the rows below run quickly.
		"-D", "loom.rpc.limit-loopback=true", "-D", "loom.webapp.read-timeout-ms=2000")
	w := web{t, "http://" + c.web}
	// The RM lifts its open-file limit to the hard limit and says so.
	if out := c.rm.out.String(); !strings.Contains(out, "open-file limit") {
		t.Errorf("the RM does not say its open-file limit:\n%s", out)
	}

	t.Run("anonymous REST submission of an AM command is refused", func(t *testing.T) {
		ran := filepath.Join(c.dir, "rest-command-ran")
		body := fmt.Sprintf(`{"application-id": "application_1_0001", "application-name": "x",
		  "am-container-spec": {"commands": {"command": "touch %s"}}, "resource": {"memory": 256, "vCores": 1}}`, ran)
		msg := w.remoteException("POST", "/ws/v1/cluster/apps", body, 403, "ForbiddenException")
		if !strings.Contains(msg, "loom.webapp.rest-write.enabled") {
			t.Errorf("refusal %q does not name the key that allows it", msg)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Error("the command ran")
		}
	})

	nodes := c.nodes(t)
	tracker := rpc.NewClient(c.tracker, rpc.ClientOptions{User: "yarn", Retries: -1})
	t.Cleanup(func() { tracker.Close() })
	rt := rpc.ResourceTrackerClient{C: tracker}

	t.Run("anonymous unRegisterNodeManager of a real node is refused", func(t *testing.T) {
		_, err := rt.UnRegisterNodeManager(context.Background(), &pb.UnRegisterNodeManagerRequestProto{NodeId: nodes[0].GetNodeId()})
		if !rpc.IsClass(err, rpc.ClassAccessControl) {
			t.Errorf("unRegisterNodeManager: %v, want AccessControlException", err)
		}
	})

	t.Run("anonymous registration of a 1 PB node is refused", func(t *testing.T) {
		resp, err := rt.RegisterNodeManager(context.Background(), &pb.RegisterNodeManagerRequestProto{
			NodeId: &pb.NodeIdProto{Host: proto.String("127.0.0.1"), Port: proto.Int32(1)}, HttpPort: proto.Int32(8042),
			Resource: &pb.ResourceProto{Memory: proto.Int64(1 << 30), VirtualCores: proto.Int32(1000000)}})
		// YARN refuses a node with NodeAction SHUTDOWN and a diagnostic.
		if err == nil && (resp.GetNodeAction() != pb.NodeActionProto_SHUTDOWN || resp.GetDiagnosticsMessage() == "") {
			t.Errorf("registering a 1 PB node: %v, %v; want SHUTDOWN with a reason", resp.GetNodeAction(), resp.GetDiagnosticsMessage())
		}
		t.Logf("registering a 1 PB node: %v %q, %v", resp.GetNodeAction(), resp.GetDiagnosticsMessage(), err)
		if n := len(c.nodes(t)); n != 2 {
			t.Errorf("%d nodes after the refused registration, want 2", n)
		}
	})

	t.Run("service-level ACLs and proxy users refuse strangers", func(t *testing.T) {
		for _, o := range []rpc.ClientOptions{{User: "mallory"}, {User: "tester", RealUser: "mallory"}} {
			cl := rpc.NewClient(c.client, rpc.ClientOptions{User: o.User, RealUser: o.RealUser, Retries: -1})
			_, err := rpc.ApplicationClient{C: cl}.GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{})
			cl.Close()
			if !rpc.IsClass(err, rpc.ClassAuthorization) {
				t.Errorf("%s via %q: %v, want AuthorizationException", o.User, o.RealUser, err)
			}
			t.Logf("%s via %q: %v", o.User, o.RealUser, err)
		}
		if _, err := c.ac.GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{}); err != nil {
			t.Errorf("the allowed user: %v", err)
		}
	})

	t.Run("an AM lost with its node does not count as a failed attempt", func(t *testing.T) {
		id := c.submitWith(t, "lost-am", "exec sleep 600", func(sc *pb.ApplicationSubmissionContextProto) {
			sc.MaxAppAttempts = proto.Int32(1)
		})
		var victim int
		c.waitFor(t, "the AM to run on a node", func() bool {
			victim = c.nodeRunning(id)
			return victim >= 0
		})
		killMachine(t, c.nms[victim], filepath.Join(c.dir, fmt.Sprintf("nm%d", victim)))
		c.waitWithin(t, 30*time.Second, "a second attempt on the other node", func() bool {
			rep := c.report(t, id)
			if rep.GetYarnApplicationState() == pb.YarnApplicationStateProto_FAILED {
				t.Fatalf("the app FAILED: %s", rep.GetDiagnostics())
			}
			return rep.GetCurrentApplicationAttemptId().GetAttemptId() == 2
		})
		if _, err := c.ac.ForceKillApplication(context.Background(), &pb.KillApplicationRequestProto{ApplicationId: id}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("idle unauthenticated connections are capped per address, and others still get in", func(t *testing.T) {
		const idle = 80 // the cap is 64 not set up per address
		refused := 0
		var conns []net.Conn
		for range idle {
			nc, err := dialFrom(c.client, "127.0.0.2")
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, nc)
			nc.Write(rpc.AppendPreamble(nil, rpc.Preamble{Version: rpc.Version}))
		}
		// Read them all at once: a refused one has its FATAL reply
		// waiting; one being served waits for its context until the
		// deadline.
		got := make(chan bool, idle)
		for _, nc := range conns {
			go func() {
				defer nc.Close()
				nc.SetReadDeadline(time.Now().Add(2 * time.Second))
				msg, err := readFatal(nc)
				got <- err == nil && strings.Contains(msg, "that have not sent their connection context (limit 64)")
			}()
		}
		for range idle {
			if <-got {
				refused++
			}
		}
		t.Logf("%d of %d idle connections from 127.0.0.2 refused", refused, idle)
		if refused < idle-64 {
			t.Errorf("%d of %d idle connections from one address refused, want at least %d", refused, idle, idle-64)
		}
		if _, err := c.ac.GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{}); err != nil {
			t.Errorf("a client from another address during the flood: %v", err)
		}
	})

	t.Run("huge frames before authentication are refused without being held", func(t *testing.T) {
		before := rssMB(t, c.rm.cmd.Process.Pid)
		for i := range 16 {
			nc, err := dialFrom(c.client, "127.0.0.3")
			if err != nil {
				t.Fatal(err)
			}
			b := rpc.AppendPreamble(nil, rpc.Preamble{Version: rpc.Version})
			nc.Write(binary.BigEndian.AppendUint32(b, 60<<20))
			nc.Write(make([]byte, 1<<20))
			nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			msg, err := readFatal(nc)
			nc.Close()
			if err != nil || !strings.Contains(msg, "over the 65536-byte limit") {
				t.Errorf("peer %d: %q, %v; want a FATAL refusal of the frame", i, msg, err)
			}
		}
		if after := rssMB(t, c.rm.cmd.Process.Pid); after-before > 64 {
			t.Errorf("the RM grew from %d to %d MB", before, after)
		}
	})

	t.Run("a slow request body is cut off at the read timeout", func(t *testing.T) {
		nc, err := net.Dial("tcp", c.web)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		fmt.Fprintf(nc, "POST /ws/v1/cluster/apps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n")
		start := time.Now()
		closed := make(chan struct{})
		go func() {
			io.Copy(io.Discard, nc)
			close(closed)
		}()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-closed:
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("closed after %v, want about the 2 s read timeout", d)
				}
				return
			case <-tick.C:
				nc.Write([]byte("{"))
				if time.Since(start) > 10*time.Second {
					t.Fatal("a body trickled at 5 bytes a second is still being read after 10 s")
				}
			}
		}
	})

	t.Run("a job of ten million tasks is refused before it is submitted", func(t *testing.T) {
		file := filepath.Join(c.dir, "huge.json")
		doc := `{"name": "huge", "stages": [{"name": "s", "tasks": 10000000, "duration_ms": 5, "demand": {"memory-mb": 64, "vcores": 1}}]}`
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		before := len(c.apps(t))
		out, err := exec.Command(loomBin, "submit", "--rm", c.client, "--workload", file, "--detach").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "more than the limit of 1000000 tasks per job (loom.job.max-tasks)") {
			t.Errorf("loom submit: %v\n%s", err, out)
		}
		if after := len(c.apps(t)); after != before {
			t.Errorf("%d apps after the refused job, %d before", after, before)
		}
	})

	t.Run("a damaged or emptied store is refused at restart", func(t *testing.T) {
		for _, damage := range []struct {
			name string
			do   func(path string) error
			want string
		}{
			{"a corrupted page", func(path string) error {
				f, err := os.OpenFile(path, os.O_RDWR, 0)
				if err != nil {
					return err
				}
				defer f.Close()
				// Every page after the two meta pages: the data, wherever
				// bbolt put it.
				st, err := f.Stat()
				if err != nil || st.Size() <= 2*4096 {
					return fmt.Errorf("the store is %v bytes (%v)", st.Size(), err)
				}
				junk := make([]byte, st.Size()-2*4096)
				for i := range junk {
					junk[i] = byte(i*7 + 3)
				}
				_, err = f.WriteAt(junk, 2*4096)
				return err
			}, "rmstate.db"},
			{"truncated to 0 bytes", func(path string) error { return os.Truncate(path, 0) }, "rmstate.db.marker"},
		} {
			t.Run(damage.name, func(t *testing.T) {
				dir := t.TempDir()
				s := startCluster(t, 0, "-D", "yarn.resourcemanager.recovery.enabled=true", "-D", "loom.store.dir="+dir)
				s.submit(t, "kept", "exec sleep 600")
				s.rm.stop()
				if err := damage.do(filepath.Join(dir, "rmstate.db")); err != nil {
					t.Fatal(err)
				}
				again := start(t, "rm-again", s.rmArgs...)
				select {
				case err := <-again.done:
					out := again.out.String()
					if err == nil || strings.Contains(out, "panic") || !strings.Contains(out, damage.want) {
						t.Errorf("the RM on a store %s: exit %v, output:\n%s", damage.name, err, out)
					}
					t.Logf("refused: %s", lastLine(out))
				case <-time.After(20 * time.Second):
					t.Fatalf("the RM started on a store %s:\n%s", damage.name, again.out.String())
				}
			})
		}
	})
}

// submitWith submits a shell-command app after edit changes its context.
func (c *cluster) submitWith(t *testing.T, name, command string, edit func(*pb.ApplicationSubmissionContextProto)) *pb.ApplicationIdProto {
	t.Helper()
	ctx := context.Background()
	na, err := c.ac.GetNewApplication(ctx, &pb.GetNewApplicationRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	sc := &pb.ApplicationSubmissionContextProto{
		ApplicationId: na.GetApplicationId(), ApplicationName: proto.String(name), Queue: proto.String("default"),
		Resource:        &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		AmContainerSpec: &pb.ContainerLaunchContextProto{Command: []string{command}}}
	edit(sc)
	if _, err := c.ac.SubmitApplication(ctx, &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: sc}); err != nil {
		t.Fatal(err)
	}
	return na.GetApplicationId()
}

// nodeRunning is the index of the NM whose directory holds a process of
// the app, or -1.
func (c *cluster) nodeRunning(app *pb.ApplicationIdProto) int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err != nil || !strings.Contains(cwd, rpc.AppIDString(app)) {
			continue
		}
		for i := range c.nms {
			if strings.HasPrefix(cwd, filepath.Join(c.dir, fmt.Sprintf("nm%d", i))+string(filepath.Separator)) {
				return i
			}
		}
	}
	return -1
}

func (c *cluster) apps(t *testing.T) []*pb.ApplicationReportProto {
	t.Helper()
	resp, err := c.ac.GetApplications(context.Background(), &pb.GetApplicationsRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetApplications()
}

// dialFrom connects to addr from the local address ip (any of 127/8 on
// loopback), so that a test can play a peer of its own address.
func dialFrom(addr, ip string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return d.Dial("tcp", addr)
}

// readFatal reads one reply frame and returns its error message, as a
// Hadoop server's FATAL refusal carries it.
func readFatal(nc net.Conn) (string, error) {
	br := bufio.NewReader(nc)
	var n uint32
	if err := binary.Read(br, binary.BigEndian, &n); err != nil {
		return "", err
	}
	if n > 1<<20 {
		return "", fmt.Errorf("a %d-byte reply", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return "", err
	}
	size, k := protowire.ConsumeVarint(b)
	if k < 0 || uint64(len(b)-k) < size {
		return "", errors.New("a reply without a header")
	}
	var h hadooppb.RpcResponseHeaderProto
	if err := proto.Unmarshal(b[k:k+int(size)], &h); err != nil {
		return "", err
	}
	if h.GetStatus() != hadooppb.RpcResponseHeaderProto_FATAL {
		return "", fmt.Errorf("status %v, not FATAL", h.GetStatus())
	}
	return h.GetErrorMsg(), nil
}

// rssMB is a process's resident memory.
func rssMB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return kb / 1024
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
