package nm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

type containerState int

const (
	stateLocalizing containerState = iota // reported as C_NEW
	stateRunning
	stateDone
)

// application is what the NM keeps per application: its user, its
// containers here and its localised resources.
type application struct {
	id       *pb.ApplicationIdProto
	idStr    string
	user     string
	conts    map[string]*container
	cache    map[string]*cacheEntry
	cleaning bool
	exec     *appExecutor // its executor on this node, if it has had one (mu)
}

// container is one container, from its start request to its removal.
// Fields below mu are guarded by NodeManager.mu.
type container struct {
	id       *pb.ContainerIdProto
	idStr    string
	app      *application
	user     string
	token    *pb.ContainerTokenIdentifierProto
	launch   *pb.ContainerLaunchContextProto
	resource *pb.ResourceProto
	memLimit int64 // bytes; 0 for none
	created  time.Time

	// Chosen at start: the working dir, the log dir given as <LOG_DIR>,
	// every local dir's app dir and every log dir's container dir.
	workDir, logDir  string
	appDirs, logDirs []string

	ctx    context.Context // ends localisation when the container is killed
	cancel context.CancelFunc
	exited chan struct{} // closed when the process has been reaped
	exec   *appExecutor  // a lease's executor; nil for a process container
	// settled is closed when a lease's grant has been tried, so that
	// startContainers answers only once the AM can start tasks on it.
	settled chan struct{}

	// mu: NodeManager.mu
	state      containerState
	pid        int
	killing    bool
	killStatus int32
	exitStatus int32
	diag       []string
	acked      bool // the RM has seen its completed status
	ackedAt    time.Time
	// relaunch: the process is being stopped to be launched again;
	// rollback is the launch context a re-initialisation replaced, until
	// it is committed (nil when there is none).
	relaunch bool
	rollback *pb.ContainerLaunchContextProto
}

func (c *container) addDiag(s string) {
	if s != "" {
		c.diag = append(c.diag, s)
	}
}

// status is the container as getContainerStatuses and heartbeats report
// it. Callers hold mu.
func (c *container) status() *pb.ContainerStatusProto {
	st := &pb.ContainerStatusProto{ContainerId: c.id, Diagnostics: proto.String(strings.Join(c.diag, "\n")),
		Capability: c.resource, ExecutionType: pb.ExecutionTypeProto_GUARANTEED.Enum()}
	switch c.state {
	case stateLocalizing:
		st.State = pb.ContainerStateProto_C_NEW.Enum()
		st.ContainerSubState = pb.ContainerSubStateProto_CSS_SCHEDULED.Enum()
		st.ExitStatus = ptr(int32(ExitInvalid))
	case stateRunning:
		st.State = pb.ContainerStateProto_C_RUNNING.Enum()
		st.ContainerSubState = pb.ContainerSubStateProto_CSS_RUNNING.Enum()
		st.ExitStatus = ptr(int32(ExitInvalid))
	default:
		st.State = pb.ContainerStateProto_C_COMPLETE.Enum()
		st.ContainerSubState = pb.ContainerSubStateProto_CSS_DONE.Enum()
		st.ExitStatus = ptr(c.exitStatus)
	}
	return st
}

// nmStatus is the container as a (re-)registration reports it. Callers
// hold mu.
func (c *container) nmStatus() *pb.NMContainerStatusProto {
	st := c.status()
	created := c.token.GetCreationTime()
	if created == 0 {
		created = c.created.UnixMilli()
	}
	return &pb.NMContainerStatusProto{ContainerId: c.id, ContainerState: st.State, Resource: c.resource,
		Priority: c.token.GetPriority(), Diagnostics: st.Diagnostics, ContainerExitStatus: st.ExitStatus,
		CreationTime: ptr(created), NodeLabelExpression: c.token.NodeLabelExpression,
		Version: ptr(c.token.GetVersion()), ExecutionType: pb.ExecutionTypeProto_GUARANTEED.Enum(),
		AllocationRequestId: ptr(c.token.GetAllocationRequestId()), AllocationTags: c.token.GetAllocationTags()}
}

// run takes a container from localisation to its exit.
func (n *NodeManager) run(c *container) {
	defer n.work.Done()
	log := n.log.With().Str("container", c.idStr).Logger()
	// The process gets SIGKILL if this thread, and so the NM, dies
	// (Pdeathsig): Loom's NM does not recover containers after a restart,
	// so one that outlived its NM would run unmanaged. The thread stays
	// locked until the process is reaped, which holds it anyway (wait4).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for {
		if !n.runOnce(c, log) {
			return
		}
		log.Info().Msg("container relaunching (restart or re-initialisation)")
	}
}

// runOnce localises, launches and reaps the container's process once.
// It reports true when the process was stopped to be launched again
// (restartContainer, reInitializeContainer, rollback); otherwise the
// container is done.
func (n *NodeManager) runOnce(c *container, log zerolog.Logger) bool {
	cmd, files, err := n.prepare(c)
	if err != nil {
		for _, f := range files {
			f.Close()
		}
		n.mu.Lock()
		if c.killing {
			n.finishLocked(c, c.killStatus)
		} else {
			c.addDiag(err.Error())
			n.finishLocked(c, ExitInvalid)
		}
		n.mu.Unlock()
		log.Warn().Err(err).Msg("container failed before its launch")
		return false
	}

	n.mu.Lock()
	if c.killing {
		n.finishLocked(c, c.killStatus)
		n.mu.Unlock()
		for _, f := range files {
			f.Close()
		}
		return false
	}
	err = cmd.Start()
	if err != nil {
		c.addDiag(fmt.Sprintf("Exception from container-launch.\nContainer id: %s\n%v", c.idStr, err))
		n.finishLocked(c, ExitInvalid)
		n.mu.Unlock()
		for _, f := range files {
			f.Close()
		}
		log.Warn().Err(err).Msg("container launch failed")
		return false
	}
	c.state, c.pid, c.relaunch = stateRunning, cmd.Process.Pid, false
	exited := c.exited
	n.mu.Unlock()
	log.Info().Int("pid", c.pid).Str("user", c.user).Str("dir", c.workDir).Msg("container running")

	werr := cmd.Wait()
	close(exited)
	// What the container left in its process group goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	for _, f := range files {
		f.Close()
	}
	code := exitCode(cmd.ProcessState, werr)

	n.mu.Lock()
	defer n.mu.Unlock()
	if c.relaunch && !c.killing {
		c.pid, c.exited = 0, make(chan struct{})
		return true
	}
	if c.killing {
		c.addDiag(fmt.Sprintf("Container killed on request. Exit code is %d", code))
		if code != 0 {
			c.addDiag(fmt.Sprintf("Container exited with a non-zero exit code %d. ", code))
		}
		n.finishLocked(c, c.killStatus)
	} else {
		if code != 0 {
			c.addDiag(fmt.Sprintf("Exception from container-launch.\nContainer id: %s\nExit code: %d\n\n"+
				"Container exited with a non-zero exit code %d. Last 4096 bytes of stderr :\n%s",
				c.idStr, code, code, tail(filepath.Join(c.logDir, "stderr"), 4096)))
		}
		n.finishLocked(c, int32(code))
	}
	log.Info().Int32("exit_status", c.exitStatus).Msg("container completed")
	return false
}

// relaunchLocked stops a running container's process to launch it
// again with launch (its own for a restart, a new one to re-initialise):
// SIGTERM to its process group, SIGKILL after the kill delay. Callers
// hold mu.
func (n *NodeManager) relaunchLocked(c *container, launch *pb.ContainerLaunchContextProto) error {
	switch {
	case c.exec != nil:
		return rpc.Errorf(rpc.ClassYarnException, "Container %s is a lease on its app's executor: it has no process of its own to relaunch", c.idStr)
	case c.state != stateRunning || c.killing || c.pid <= 0 || c.relaunch:
		return rpc.Errorf(rpc.ClassYarnException, "Container %s is not in RUNNING state: it cannot be re-initialized or restarted", c.idStr)
	}
	c.launch, c.relaunch = launch, true
	n.terminate(c.pid, c.exited)
	return nil
}

// finishLocked marks a container done and asks for a heartbeat, so the
// RM hears of it without waiting a whole interval. Callers hold mu.
func (n *NodeManager) finishLocked(c *container, status int32) {
	c.state = stateDone
	c.exitStatus = status
	c.cancel()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// killLocked stops a container: its localisation if it has not started,
// else SIGTERM to its process group and SIGKILL after the configured
// delay. status is the exit status it will report. Callers hold mu.
func (n *NodeManager) killLocked(c *container, status int32, diag string) {
	if c.exec != nil {
		n.killLeaseLocked(c, status, diag)
		return
	}
	if c.state == stateDone || c.killing {
		return
	}
	c.killing, c.killStatus = true, status
	c.addDiag(diag)
	c.cancel()
	// Not yet launched, or between two launches (a relaunch): the run
	// loop sees killing before it starts a process.
	if c.state != stateRunning || c.pid <= 0 {
		return
	}
	n.log.Info().Str("container", c.idStr).Int32("exit_status", status).Msg("killing container")
	n.terminate(c.pid, c.exited)
}

// terminate sends a process group SIGTERM, and SIGKILL after the kill
// delay (yarn.nodemanager.sleep-delay-before-sigkill.ms) unless it has
// exited by then.
func (n *NodeManager) terminate(pid int, exited <-chan struct{}) {
	delay := n.cfg.KillDelay
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	go func() {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-exited:
		case <-t.C:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}()
}

// exitCode is a process's exit code as a shell reports it: 128+N when
// signal N ended it.
func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		return ExitInvalid
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if code := ps.ExitCode(); code >= 0 {
		return code
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return ExitInvalid
}

// tail returns the last n bytes of a file ("" if it cannot be read).
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return string(b)
}

// prepare makes the container's dirs, localises its resources, writes
// its tokens and builds its command. The files returned are the
// container's stdout and stderr, for the caller to close.
func (n *NodeManager) prepare(c *container) (*exec.Cmd, []*os.File, error) {
	// Who it runs as, checked before anything is made for it.
	ru, err := n.cfg.RunAs.resolve(c.user)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot run the container as a user (%s): %v", keyExecutorClass, err)
	}
	for _, d := range append(append([]string{}, c.appDirs...), c.logDirs...) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, fmt.Errorf("cannot make the container's directories: %v", err)
		}
	}
	if err := os.MkdirAll(c.workDir, 0o750); err != nil {
		return nil, nil, fmt.Errorf("cannot make the container's working directory: %v", err)
	}
	env := n.containerEnv(c)

	owned := []string{c.workDir, c.logDir}
	for _, lr := range c.launch.GetLocalResources() {
		key := lr.GetKey()
		path, err := n.localize(c, key, lr.GetValue())
		if err != nil {
			if c.ctx.Err() != nil {
				return nil, nil, c.ctx.Err()
			}
			return nil, nil, fmt.Errorf("Failed to localize resource %q from %s: %v", key, describeURL(lr.GetValue().GetResource()), err)
		}
		owned = append(owned, path)
		link := filepath.Join(c.workDir, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(link), 0o750); err != nil {
			return nil, nil, fmt.Errorf("Failed to link resource %q: %v", key, err)
		}
		os.Remove(link)
		if err := os.Symlink(path, link); err != nil {
			return nil, nil, fmt.Errorf("Failed to link resource %q: %v", key, err)
		}
	}

	if tok := c.launch.GetTokens(); len(tok) > 0 {
		path := filepath.Join(c.workDir, "container_tokens")
		if err := os.WriteFile(path, tok, 0o600); err != nil {
			return nil, nil, fmt.Errorf("cannot write the container's tokens: %v", err)
		}
		env = append(env, "HADOOP_TOKEN_FILE_LOCATION="+path)
	}

	stdout, err := os.OpenFile(filepath.Join(c.logDir, "stdout"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot open the container's stdout: %v", err)
	}
	stderr, err := os.OpenFile(filepath.Join(c.logDir, "stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, []*os.File{stdout}, fmt.Errorf("cannot open the container's stderr: %v", err)
	}
	cmd := exec.Command(bashPath(), "-c", n.containerCommand(c))
	cmd.Dir = c.workDir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if ru != nil {
		if err := ru.own(append(owned, c.appDirs...)...); err != nil {
			return nil, []*os.File{stdout, stderr}, err
		}
		cmd.SysProcAttr.Credential = ru.credential()
	}
	return cmd, []*os.File{stdout, stderr}, nil
}

func bashPath() string {
	if _, err := os.Stat("/bin/bash"); err == nil {
		return "/bin/bash"
	}
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	return "/bin/bash"
}
