package nm

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc (100 on
// every Linux platform Go runs on).
const clockTicks = 100

// proc is one process as /proc/<pid>/stat describes it.
type proc struct {
	pid, ppid, pgrp, session int
	comm                     string
	utime, stime             uint64 // clock ticks
	vsize                    uint64 // bytes
	rss                      int64  // pages
}

// parseStat reads /proc/<pid>/stat. The command name sits in parentheses
// and may hold spaces and parentheses itself, so fields are counted from
// the last ')'.
func parseStat(b []byte) (*proc, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return nil, fmt.Errorf("malformed stat %q", b)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:open])))
	if err != nil {
		return nil, fmt.Errorf("malformed stat pid %q", b[:open])
	}
	// Fields from 3 (state) on; f[i] is field i+3 of proc(5).
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 22 {
		return nil, fmt.Errorf("stat of %d has %d fields", pid, len(f)+2)
	}
	p := &proc{pid: pid, comm: string(b[open+1 : end])}
	ints := []*int{&p.ppid, &p.pgrp, &p.session}
	for i, dst := range ints {
		if *dst, err = strconv.Atoi(f[1+i]); err != nil {
			return nil, fmt.Errorf("stat of %d: field %d: %v", pid, 4+i, err)
		}
	}
	p.utime, _ = strconv.ParseUint(f[11], 10, 64)
	p.stime, _ = strconv.ParseUint(f[12], 10, 64)
	p.vsize, _ = strconv.ParseUint(f[20], 10, 64)
	if p.rss, err = strconv.ParseInt(f[21], 10, 64); err != nil {
		return nil, fmt.Errorf("stat of %d: rss: %v", pid, err)
	}
	return p, nil
}

// readProcs reads every process's stat. Processes that exit while being
// read are skipped.
func readProcs() (map[int]*proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	procs := make(map[int]*proc, len(ents))
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if p, err := parseStat(b); err == nil {
			procs[p.pid] = p
		}
	}
	return procs, nil
}

// processTree is a container's processes: its process group (the
// container's leader is the group's leader) and every descendant of the
// leader, in case one started a group of its own. Sorted by pid.
func processTree(procs map[int]*proc, leader int) []*proc {
	children := map[int][]int{}
	in := map[int]bool{}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p.pid)
		if p.pgrp == leader {
			in[p.pid] = true
		}
	}
	queue := []int{leader}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if _, ok := procs[pid]; ok {
			in[pid] = true
		}
		queue = append(queue, children[pid]...)
	}
	tree := make([]*proc, 0, len(in))
	for pid := range in {
		tree = append(tree, procs[pid])
	}
	slices.SortFunc(tree, func(a, b *proc) int { return a.pid - b.pid })
	return tree
}

// monitorLoop measures the node and its containers and checks every
// running container's memory each interval.
func (n *NodeManager) monitorLoop() {
	defer n.loops.Done()
	t := time.NewTicker(n.cfg.MonitorInterval)
	defer t.Stop()
	var s utilSampler
	warned := false
	for {
		select {
		case <-n.ctx.Done():
			return
		case now := <-t.C:
			procs, err := readProcs()
			if err != nil {
				if !warned {
					n.log.Warn().Err(err).Msg("cannot read /proc: container memory is not checked and utilisation is not reported")
					warned = true
				}
				continue
			}
			n.measure(&s, now, procs)
			n.checkMemory(procs)
		}
	}
}

// measure records the node's and its containers' utilisation, which
// the next heartbeat reports.
func (n *NodeManager) measure(s *utilSampler, now time.Time, procs map[int]*proc) {
	var leaders []int
	n.mu.Lock()
	for _, c := range n.containers {
		if c.state == stateRunning && c.exec == nil && c.pid > 0 {
			leaders = append(leaders, c.pid)
		}
	}
	for _, a := range n.apps {
		if x := a.exec; x != nil && x.pid > 0 && !x.dead {
			leaders = append(leaders, x.pid)
		}
	}
	n.mu.Unlock()
	trees := make([][]*proc, 0, len(leaders))
	for _, pid := range leaders {
		trees = append(trees, processTree(procs, pid))
	}
	node, conts, err := s.sample(now, procs, trees)
	if err != nil {
		n.log.Debug().Err(err).Msg("cannot measure the node's utilisation")
		return
	}
	n.mu.Lock()
	n.nodeUtil, n.contUtil, n.utilMeasured = node, conts, true
	n.mu.Unlock()
}

// checkMemory sums the resident memory of each running container's
// process tree and, with the pmem check on, kills a container over its
// limit with exit status -104 and YARN's diagnostic.
func (n *NodeManager) checkMemory(procs map[int]*proc) {
	type watched struct {
		c     *container
		pid   int
		limit int64
	}
	if !n.cfg.PmemCheck {
		return
	}
	var ws []watched
	n.mu.Lock()
	for _, c := range n.containers {
		if c.state == stateRunning && !c.killing && c.exec == nil && c.pid > 0 {
			ws = append(ws, watched{c, c.pid, c.memLimit})
		}
	}
	xs := n.watchedExecutorsLocked()
	n.mu.Unlock()
	if len(ws) == 0 && len(xs) == 0 {
		return
	}
	page := int64(os.Getpagesize())
	for _, w := range ws {
		tree := processTree(procs, w.pid)
		var rss int64
		for _, p := range tree {
			rss += p.rss * page
		}
		if !n.cfg.PmemCheck || w.limit <= 0 || rss <= w.limit {
			continue
		}
		diag := fmt.Sprintf("Container [pid=%d,containerID=%s] is running beyond physical memory limits. "+
			"Current usage: %s of %s physical memory used. Killing container.\nDump of the process-tree for %s :\n%s",
			w.pid, w.c.idStr, byteString(rss), byteString(w.limit), w.c.idStr, treeDump(tree))
		n.mu.Lock()
		if w.c.state == stateRunning && w.c.pid == w.pid {
			n.log.Warn().Str("container", w.c.idStr).Int64("rss_bytes", rss).Int64("limit_bytes", w.limit).
				Msg("container is over its physical memory limit")
			n.killLocked(w.c, ExitKilledExceededPmem, diag)
		}
		n.mu.Unlock()
	}
	page = int64(os.Getpagesize())
	for _, w := range xs {
		n.checkExecutorMemory(w, procs, page)
	}
}

// ExecutorOverheadBytes is the memory an executor may use beyond its
// leases' sum: its own process, measured at 10-20 MB, with room to spare.
const ExecutorOverheadBytes = 64 << 20

// watchedExecutor is an executor and the sum of its live leases' memory.
type watchedExecutor struct {
	x      *appExecutor
	pid    int
	limit  int64
	leases []string
}

// watchedExecutorsLocked are the executors whose memory is checked: every
// running one holding a live lease. Callers hold mu.
func (n *NodeManager) watchedExecutorsLocked() []watchedExecutor {
	var xs []watchedExecutor
	for _, a := range n.apps {
		x := a.exec
		if x == nil || x.pid == 0 || x.stopping || x.dead {
			continue
		}
		w := watchedExecutor{x: x, pid: x.pid}
		for _, c := range x.leases {
			if c.state == stateRunning && !c.killing {
				w.limit += c.memLimit
				w.leases = append(w.leases, c.idStr)
			}
		}
		if len(w.leases) > 0 {
			// The executor process itself (a Go runtime, its RPC server)
			// is the NodeManager's cost of running tasks this way, not the
			// app's: it is not charged to the leases.
			w.limit += ExecutorOverheadBytes
			slices.Sort(w.leases)
			xs = append(xs, w)
		}
	}
	return xs
}

// checkExecutorMemory kills an executor whose process tree is over the
// sum of its live leases' memory; every lease completes with -104 and
// YARN's diagnostic, naming the executor.
func (n *NodeManager) checkExecutorMemory(w watchedExecutor, procs map[int]*proc, page int64) {
	tree := processTree(procs, w.pid)
	var rss int64
	for _, p := range tree {
		rss += p.rss * page
	}
	if w.limit <= 0 || rss <= w.limit {
		return
	}
	diag := fmt.Sprintf("Container [pid=%d,containerID=%s] is running beyond physical memory limits. "+
		"Current usage: %s of %s physical memory used. Killing container.\n"+
		"The app's executor (pid %d) is over the sum of its leases %s; it and every lease are killed.\nDump of the process-tree for the executor :\n%s",
		w.pid, w.leases[0], byteString(rss), byteString(w.limit), w.pid, strings.Join(w.leases, ", "), treeDump(tree))
	n.mu.Lock()
	defer n.mu.Unlock()
	if w.x.stopping || w.x.dead {
		return
	}
	n.log.Warn().Str("app", w.x.app.idStr).Int("pid", w.pid).Int64("rss_bytes", rss).Int64("limit_bytes", w.limit).
		Msg("executor is over its leases' physical memory")
	n.stopExecutorLocked(w.x, ExitKilledExceededPmem, diag)
}

// treeDump is YARN's process-tree dump for a memory kill.
func treeDump(tree []*proc) string {
	var b strings.Builder
	b.WriteString("\t|- PID PPID PGRPID SESSID CMD_NAME USER_MODE_TIME(MILLIS) SYSTEM_TIME(MILLIS) VMEM_USAGE(BYTES) RSSMEM_USAGE(PAGES) FULL_CMD_LINE\n")
	for _, p := range tree {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.pid), "cmdline"))
		cl := strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
		fmt.Fprintf(&b, "\t|- %d %d %d %d (%s) %d %d %d %d %s\n", p.pid, p.ppid, p.pgrp, p.session, p.comm,
			p.utime*1000/clockTicks, p.stime*1000/clockTicks, p.vsize, p.rss, cl)
	}
	return b.String()
}

// byteString writes a byte count as YARN's TraditionalBinaryPrefix does
// ("64 MB", "205.3 MB", "1 GB").
func byteString(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	i, v := 0, int64(1024)
	for i < len(units)-1 && n >= v*1024 {
		i, v = i+1, v*1024
	}
	if n%v == 0 {
		return fmt.Sprintf("%d %cB", n/v, units[i])
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(v), units[i])
}
