package nm

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	pb "github.com/loomrm/loom/rpc/yarnpb"
	"google.golang.org/protobuf/proto"
)

// Utilization is what the node and its containers use, as YARN's
// ResourceUtilizationProto counts it: memory in MB, CPU in vcores busy
// (1.5 is one and a half cores' worth of time over the last interval).
type Utilization struct {
	PmemMB, VmemMB int32
	CPU            float32
}

func (u Utilization) proto() *pb.ResourceUtilizationProto {
	return &pb.ResourceUtilizationProto{Pmem: proto.Int32(u.PmemMB), Vmem: proto.Int32(u.VmemMB), Cpu: proto.Float32(u.CPU)}
}

// memInfo is what /proc/meminfo says, in kB.
type memInfo struct {
	total, available, swapTotal, swapFree int64
}

// parseMemInfo reads /proc/meminfo's fields that YARN's node monitor
// uses. A kernel without MemAvailable (before 3.14) gives free + buffers
// + cached instead.
func parseMemInfo(b []byte) (memInfo, error) {
	var m memInfo
	fields := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("meminfo: %s: %v", name, err)
		}
		fields[name] = v
	}
	total, ok := fields["MemTotal"]
	if !ok || total <= 0 {
		return m, fmt.Errorf("meminfo has no MemTotal")
	}
	m.total = total
	if avail, ok := fields["MemAvailable"]; ok {
		m.available = avail
	} else {
		m.available = fields["MemFree"] + fields["Buffers"] + fields["Cached"]
	}
	m.swapTotal, m.swapFree = fields["SwapTotal"], fields["SwapFree"]
	return m, nil
}

// cpuTimes is the first line of /proc/stat, in clock ticks: busy is
// everything but idle and iowait.
type cpuTimes struct{ busy, total uint64 }

func parseProcStat(b []byte) (cpuTimes, error) {
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("/proc/stat does not start with the cpu line: %q", line)
	}
	var t cpuTimes
	for i, s := range f[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("/proc/stat cpu field %d: %v", i+1, err)
		}
		// guest and guest_nice (fields 9 and 10) are already in user and
		// nice.
		if i >= 8 {
			break
		}
		t.total += v
		if i != 3 && i != 4 { // idle, iowait
			t.busy += v
		}
	}
	return t, nil
}

// utilSampler turns successive readings into rates. It is used by the
// monitor loop only.
type utilSampler struct {
	at       time.Time
	cpu      cpuTimes
	ticks    map[int]uint64 // container processes' utime+stime at the last reading
	haveLast bool
}

// sample measures the node (from /proc/meminfo and /proc/stat) and the
// given container process trees, and returns both utilisations. CPU is
// over the time since the last call; the first call reports 0.
func (s *utilSampler) sample(now time.Time, procs map[int]*proc, trees [][]*proc) (node, conts Utilization, err error) {
	mb, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return node, conts, err
	}
	m, err := parseMemInfo(mb)
	if err != nil {
		return node, conts, err
	}
	sb, err := os.ReadFile("/proc/stat")
	if err != nil {
		return node, conts, err
	}
	cpu, err := parseProcStat(sb)
	if err != nil {
		return node, conts, err
	}
	used := m.total - m.available
	swap := max(0, m.swapTotal-m.swapFree)
	node.PmemMB, node.VmemMB = int32(used>>10), int32((used+swap)>>10)

	page := int64(os.Getpagesize())
	ticks := map[int]uint64{}
	var rss, vsize int64
	var delta uint64
	for _, tree := range trees {
		for _, p := range tree {
			if _, seen := ticks[p.pid]; seen {
				continue
			}
			t := p.utime + p.stime
			ticks[p.pid] = t
			rss += p.rss * page
			vsize += int64(p.vsize)
			if prev, ok := s.ticks[p.pid]; ok && prev <= t {
				delta += t - prev
			} else if s.haveLast {
				delta += t // started since the last reading
			}
		}
	}
	conts.PmemMB, conts.VmemMB = int32(rss>>20), int32(vsize>>20)

	if s.haveLast {
		if secs := now.Sub(s.at).Seconds(); secs > 0 {
			conts.CPU = float32(float64(delta) / clockTicks / secs)
		}
		if d := cpu.total - s.cpu.total; cpu.total > s.cpu.total {
			node.CPU = float32(float64(cpu.busy-min(cpu.busy, s.cpu.busy)) / float64(d) * float64(runtime.NumCPU()))
		}
	}
	s.at, s.cpu, s.ticks, s.haveLast = now, cpu, ticks, true
	return node, conts, nil
}
