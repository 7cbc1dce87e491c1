package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/loomrm/loom/tool/mini"
)

// rmChild is an RM the load test runs as a process of its own.
type rmChild struct {
	cmd   *exec.Cmd
	addrs map[string]string
	log   *bytes.Buffer
	done  chan error
}

func (c *rmChild) addr(role string) string { return c.addrs[role] }

// startRMProcess starts command (the loom binary and "rm") with keys as -D
// overrides and free loopback ports for its four addresses, and waits for
// its web port to serve /metrics.
//
// Another process may bind a port picked for the RM before the RM does;
// the RM then ends at once, and new ports are picked, three times in all.
func startRMProcess(ctx context.Context, command []string, keys map[string]string) (*rmChild, error) {
	var err error
	for range 3 {
		var c *rmChild
		if c, err = startRMOnce(ctx, command, keys); !errors.Is(err, errPortTaken) {
			return c, err
		}
	}
	return nil, err
}

// pickRMAddrs picks the RM's four addresses (tests take one first).
var pickRMAddrs = mini.FreeAddrs

// errPortTaken says the RM could not bind a port picked for it.
var errPortTaken = errors.New("a port picked for the RM was taken before it started")

func startRMOnce(ctx context.Context, command []string, keys map[string]string) (*rmChild, error) {
	c := &rmChild{addrs: map[string]string{}, log: &bytes.Buffer{}, done: make(chan error, 1)}
	args := append([]string(nil), command[1:]...)
	for k, v := range keys {
		args = append(args, "-D", k+"="+v)
	}
	addrs, err := pickRMAddrs(4)
	if err != nil {
		return nil, err
	}
	for i, r := range []struct{ role, key string }{{"client", "yarn.resourcemanager.address"}, {"scheduler", "yarn.resourcemanager.scheduler.address"},
		{"tracker", "yarn.resourcemanager.resource-tracker.address"}, {"web", "yarn.resourcemanager.webapp.address"}} {
		c.addrs[r.role] = addrs[i]
		args = append(args, "-D", r.key+"="+addrs[i])
	}
	c.cmd = exec.Command(command[0], args...)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the RM (%s): %w", strings.Join(command, " "), err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	url := "http://" + c.addrs["web"] + "/metrics"
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case err := <-c.done:
			if tail := lastLines(c.log.String(), 5); strings.Contains(tail, "address already in use") {
				return nil, fmt.Errorf("%w: %s", errPortTaken, tail)
			}
			return nil, fmt.Errorf("the RM process ended before it served (%v): %s", err, lastLines(c.log.String(), 5))
		case <-ctx.Done():
			c.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c, nil
			}
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("the RM process did not serve %s within 30 s: %s", url, lastLines(c.log.String(), 5))
		}
	}
}

// stop asks the RM to stop (SIGTERM) and kills it after 10 s.
func (c *rmChild) stop() {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// procTicks is a process's CPU time (user and system) in clock ticks;
// ok is false for pid 0 or without /proc.
func procTicks(pid int) (ticks int64, ok bool) {
	if pid <= 0 {
		return 0, false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command may hold spaces: fields count from its closing paren.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	g := strings.Fields(string(stat[i+1:]))
	if len(g) < 13 {
		return 0, false
	}
	for _, v := range g[11:13] { // utime, stime
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return ticks, true
}

// peakRSSOf is a process's peak resident set (VmHWM), 0 if unknown.
func peakRSSOf(pid int) uint64 {
	n, _ := vmHWM("/proc/" + strconv.Itoa(pid) + "/status")
	return n
}

func vmHWM(path string) (uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, err
			}
			return kb * 1024, nil
		}
	}
	return 0, errors.New("no VmHWM in " + path)
}
