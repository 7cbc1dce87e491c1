package nm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/loomrm/loom/daemon/nm/executor"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/execproto"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// A container whose launch context sets LeaseEnv to "1" is a task lease:
// it runs no process of its own but is handed to its app's executor on
// this node, which the NM starts for the app's first lease here.
const (
	LeaseEnv = "LOOM_EXECUTOR"
	// ExecutorMetaKey is the services_meta_data key under which
	// startContainers returns the executor's address.
	ExecutorMetaKey = "loom.executor"
)

// executorStartTimeout bounds how long an executor may take to listen.
const executorStartTimeout = 10 * time.Second

// leaseCallTimeout bounds a grant or revoke.
const leaseCallTimeout = 10 * time.Second

// appExecutor is an app's executor process on this node. Fields after
// ready are guarded by NodeManager.mu.
type appExecutor struct {
	app      *application
	owner    *container // its logs go in this lease's log dir
	addrFile string
	ready    chan struct{} // closed once addr or err is set
	addr     string
	err      error
	client   *rpc.Client
	ec       execproto.Client

	pid      int
	exited   chan struct{}
	leases   map[string]*container // every lease ever given it, done ones too
	stopping bool                  // a kill was asked for
	dead     bool
}

func isLease(clc *pb.ContainerLaunchContextProto) bool {
	for _, kv := range clc.GetEnvironment() {
		if kv.GetKey() == LeaseEnv {
			return kv.GetValue() == "1"
		}
	}
	return false
}

// executorForLocked is the app's live executor, started for c when there
// is none. Callers hold mu.
func (n *NodeManager) executorForLocked(app *application, c *container) *appExecutor {
	if x := app.exec; x != nil && !x.stopping && !x.dead {
		x.leases[c.idStr] = c
		return x
	}
	n.seq++
	x := &appExecutor{app: app, owner: c, ready: make(chan struct{}), exited: make(chan struct{}),
		leases:   map[string]*container{c.idStr: c},
		addrFile: filepath.Join(filepath.Dir(c.workDir), fmt.Sprintf(".executor-%d.addr", n.seq))}
	app.exec = x
	n.work.Add(1)
	go n.runExecutor(x)
	return x
}

// runExecutor starts an executor process, waits for its address, and
// when it exits completes every lease it still holds.
func (n *NodeManager) runExecutor(x *appExecutor) {
	defer n.work.Done()
	c := x.owner
	log := n.log.With().Str("app", x.app.idStr).Logger()
	fail := func(err error) {
		n.mu.Lock()
		x.err, x.dead = err, true
		close(x.ready)
		close(x.exited)
		n.finishLeasesLocked(x, ExitInvalid, err.Error())
		n.mu.Unlock()
		log.Warn().Err(err).Msg("the app's executor did not start")
	}
	ru, err := n.cfg.RunAs.resolve(c.user)
	if err != nil {
		fail(fmt.Errorf("cannot run the executor as a user (%s): %v", keyExecutorClass, err))
		return
	}
	for _, d := range append(append([]string{}, c.appDirs...), c.logDirs...) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			fail(fmt.Errorf("cannot make the executor's directories: %v", err))
			return
		}
	}
	if err := os.MkdirAll(c.workDir, 0o750); err != nil {
		fail(fmt.Errorf("cannot make the container's working directory: %v", err))
		return
	}
	var files []*os.File
	for _, name := range []string{"stdout", "stderr"} {
		f, err := os.OpenFile(filepath.Join(c.logDir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			fail(fmt.Errorf("cannot open the executor's %s: %v", name, err))
			return
		}
		files = append(files, f)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	cmd := exec.Command(n.executorBin, "executor", "--listen", "127.0.0.1:0", "--addr-file", x.addrFile)
	cmd.Dir = filepath.Dir(c.workDir)
	cmd.Env = append(n.containerEnv(c), executor.AddrFileEnv+"="+x.addrFile)
	cmd.Stdout, cmd.Stderr = files[0], files[1]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if ru != nil {
		if err := ru.own(append([]string{c.workDir, c.logDir}, c.appDirs...)...); err != nil {
			fail(err)
			return
		}
		cmd.SysProcAttr.Credential = ru.credential()
	}

	// As for a container's process: SIGKILL if this thread, so the NM,
	// dies.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n.mu.Lock()
	if x.stopping {
		n.mu.Unlock()
		fail(fmt.Errorf("the executor was stopped before it started"))
		return
	}
	if err := cmd.Start(); err != nil {
		n.mu.Unlock()
		fail(fmt.Errorf("cannot start the app's executor %s: %v", n.executorBin, err))
		return
	}
	x.pid = cmd.Process.Pid
	n.mu.Unlock()
	log.Info().Int("pid", x.pid).Str("container", c.idStr).Msg("executor started")

	waited := make(chan struct{})
	var werr error
	go func() { werr = cmd.Wait(); close(waited) }()
	addr, err := waitAddr(x.addrFile, waited, executorStartTimeout)
	n.mu.Lock()
	if err != nil {
		x.err = err
		_ = syscall.Kill(-x.pid, syscall.SIGKILL)
	} else {
		x.addr = addr
		x.client = rpc.NewClient(addr, rpc.ClientOptions{User: "nodemanager", DialTimeout: 5 * time.Second, Retries: -1})
		x.ec = execproto.Client{C: x.client}
	}
	close(x.ready)
	n.mu.Unlock()
	if err == nil {
		log.Info().Str("address", addr).Msg("executor listening")
	}

	<-waited
	close(x.exited)
	_ = syscall.Kill(-x.pid, syscall.SIGKILL) // what it left in its group
	code := exitCode(cmd.ProcessState, werr)
	n.mu.Lock()
	x.dead = true
	if x.client != nil {
		x.client.Close()
	}
	diag := fmt.Sprintf("The app's executor (pid %d) exited with code %d", x.pid, code)
	if err != nil {
		diag = fmt.Sprintf("The app's executor (pid %d) did not start: %v; it exited with code %d. Last 4096 bytes of its stderr :\n%s",
			x.pid, err, code, tail(filepath.Join(c.logDir, "stderr"), 4096))
	}
	status := int32(code)
	if code == 0 {
		status = ExitAborted
	}
	n.finishLeasesLocked(x, status, diag)
	n.mu.Unlock()
	os.Remove(x.addrFile)
	log.Info().Int("pid", x.pid).Int("exit_code", code).Msg("executor exited")
}

// waitAddr waits for an executor's address file.
func waitAddr(path string, exited <-chan struct{}, timeout time.Duration) (string, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b)), nil
		}
		select {
		case <-exited:
			return "", fmt.Errorf("it exited before listening")
		case <-deadline.C:
			return "", fmt.Errorf("it did not listen within %v", timeout)
		case <-tick.C:
		}
	}
}

// finishLeasesLocked completes every lease x still holds: a lease being
// killed with its kill's status, the others with status and diag.
// Callers hold mu.
func (n *NodeManager) finishLeasesLocked(x *appExecutor, status int32, diag string) {
	for _, c := range x.leases {
		if c.state == stateDone {
			continue
		}
		if c.killing {
			n.finishLocked(c, c.killStatus)
			continue
		}
		c.addDiag(diag)
		n.finishLocked(c, status)
	}
}

// stopExecutorLocked kills an executor: SIGTERM to its process group,
// SIGKILL after the kill delay. Its live leases complete with status and
// diag once it has exited. Callers hold mu.
func (n *NodeManager) stopExecutorLocked(x *appExecutor, status int32, diag string) {
	if x.stopping || x.dead {
		return
	}
	x.stopping = true
	for _, c := range x.leases {
		if c.state != stateDone && !c.killing {
			c.killing, c.killStatus = true, status
			c.addDiag(diag)
			c.cancel()
		}
	}
	if x.pid == 0 {
		return // runExecutor sees stopping before it starts the process
	}
	n.log.Info().Str("app", x.app.idStr).Int("pid", x.pid).Int32("exit_status", status).Msg("killing executor")
	n.terminate(x.pid, x.exited)
}

// runLease hands a lease container to its app's executor once the
// executor listens; the container is RUNNING while granted.
func (n *NodeManager) runLease(c *container) {
	defer n.work.Done()
	defer close(c.settled)
	x := c.exec
	select {
	case <-x.ready:
	case <-c.ctx.Done():
	}
	n.mu.Lock()
	if c.state == stateDone {
		n.mu.Unlock()
		return
	}
	if c.killing {
		n.finishLocked(c, c.killStatus)
		n.mu.Unlock()
		return
	}
	select {
	case <-x.ready:
	default:
		n.mu.Unlock()
		return // c.ctx ended with the NM: shutdown completes it
	}
	if x.err != nil {
		n.mu.Unlock()
		return // runExecutor completes it
	}
	ec := x.ec
	n.mu.Unlock()

	ctx, cancel := context.WithTimeout(n.ctx, leaseCallTimeout)
	err := ec.GrantLease(ctx, c.id, c.resource)
	cancel()
	n.mu.Lock()
	defer n.mu.Unlock()
	if c.state == stateDone {
		return
	}
	if err != nil {
		if c.killing {
			n.finishLocked(c, c.killStatus)
			return
		}
		c.addDiag(fmt.Sprintf("The app's executor at %s refused lease %s: %v", x.addr, c.idStr, err))
		n.finishLocked(c, ExitInvalid)
		return
	}
	c.state = stateRunning
	n.log.Info().Str("container", c.idStr).Str("executor", x.addr).Msg("lease granted")
	if c.killing {
		// Killed while it was being granted.
		n.revokeLocked(c)
	}
}

// killLeaseLocked is killLocked for a lease: the lease is revoked, which
// stops its task, and completes with status. Callers hold mu.
func (n *NodeManager) killLeaseLocked(c *container, status int32, diag string) {
	if c.state == stateDone || c.killing {
		return
	}
	c.killing, c.killStatus = true, status
	c.addDiag(diag)
	c.cancel()
	if c.state != stateRunning {
		return // runLease completes it
	}
	n.revokeLocked(c)
}

// revokeLocked revokes a granted lease in the background and completes
// it. Callers hold mu.
func (n *NodeManager) revokeLocked(c *container) {
	x := c.exec
	if x.stopping || x.dead {
		return // the executor's exit completes it
	}
	ec := x.ec
	n.log.Info().Str("container", c.idStr).Int32("exit_status", c.killStatus).Msg("revoking lease")
	n.work.Add(1)
	go func() {
		defer n.work.Done()
		ctx, cancel := context.WithTimeout(context.Background(), leaseCallTimeout)
		err := ec.RevokeLease(ctx, c.id)
		cancel()
		if err != nil {
			n.log.Warn().Err(err).Str("container", c.idStr).Msg("revoking a lease failed; completing it anyway")
		}
		n.mu.Lock()
		if c.state != stateDone {
			n.finishLocked(c, c.killStatus)
		}
		n.mu.Unlock()
	}()
}

// waitExecutorAddr waits (bounded) for an executor's address, "" if it
// has none.
func waitExecutorAddr(x *appExecutor) string {
	t := time.NewTimer(executorStartTimeout + time.Second)
	defer t.Stop()
	select {
	case <-x.ready:
		return x.addr // set before ready closed
	case <-t.C:
		return ""
	}
}
