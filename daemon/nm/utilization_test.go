package nm

import (
	"os"
	"testing"
	"time"
)

func TestParseMemInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want memInfo
		err  bool
	}{
		{"with MemAvailable", "MemTotal:       16384000 kB\nMemFree:         1000000 kB\nMemAvailable:    8192000 kB\nBuffers: 10 kB\nSwapTotal: 2048 kB\nSwapFree: 1024 kB\n",
			memInfo{total: 16384000, available: 8192000, swapTotal: 2048, swapFree: 1024}, false},
		// A kernel before 3.14: free + buffers + cached.
		{"without MemAvailable", "MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 20 kB\nCached: 300 kB\n",
			memInfo{total: 1000, available: 420}, false},
		{"no total", "MemFree: 100 kB\n", memInfo{}, true},
		{"garbage number", "MemTotal: lots kB\n", memInfo{}, true},
	} {
		got, err := parseMemInfo([]byte(tc.in))
		if (err != nil) != tc.err || !tc.err && got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v (error %v)", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice:
	// busy = 100+5+50+3+2+1 = 161 of 161+1000+40; guest fields are
	// already counted in user and nice.
	got, err := parseProcStat([]byte("cpu  100 5 50 1000 40 3 2 1 77 88\ncpu0 1 2 3 4\n"))
	if err != nil || got != (cpuTimes{busy: 161, total: 1201}) {
		t.Errorf("got %+v, %v; want busy 161 of 1201", got, err)
	}
	for _, bad := range []string{"", "intr 1 2 3\n", "cpu 1 2 x 4 5\n"} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestSamplerCountsContainerCPU: a container's CPU is the growth of its
// processes' utime+stime over the interval; a process seen for the first
// time after the first reading counts whole; one shared by two trees
// counts once.
func TestSamplerCountsContainerCPU(t *testing.T) {
	page := int64(os.Getpagesize())
	t0 := time.Unix(1000, 0)
	a := &proc{pid: 10, utime: 100, stime: 50, rss: 1024 * 1024 * 1024 / page, vsize: 2 << 30}
	var s utilSampler
	_, c, err := s.sample(t0, nil, [][]*proc{{a}})
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if c.CPU != 0 || c.PmemMB != 1024 || c.VmemMB != 2048 {
		t.Errorf("first reading %+v, want 0 CPU, 1024 MB resident, 2048 MB virtual", c)
	}
	// 2 s later: pid 10 used 300 more ticks (3 s of CPU), pid 11 is new
	// with 100 ticks, and appears in two trees.
	a2 := &proc{pid: 10, utime: 300, stime: 150, rss: a.rss, vsize: a.vsize}
	b := &proc{pid: 11, utime: 60, stime: 40}
	_, c, err = s.sample(t0.Add(2*time.Second), nil, [][]*proc{{a2, b}, {b}})
	if err != nil {
		t.Fatal(err)
	}
	// (300 + 100) ticks / 100 per second / 2 s = 2 cores.
	if c.CPU != 2 {
		t.Errorf("containers' CPU %v cores, want 2", c.CPU)
	}
	// pid 10 restarted under the same pid with fewer ticks: counts whole.
	a3 := &proc{pid: 10, utime: 20, stime: 0}
	_, c, _ = s.sample(t0.Add(3*time.Second), nil, [][]*proc{{a3}})
	if c.CPU != 0.2 {
		t.Errorf("after a pid's reuse, CPU %v cores, want 0.2", c.CPU)
	}
}

// TestSamplerMeasuresThisNode: the node's figures come from this
// machine's /proc and are within what it has.
func TestSamplerMeasuresThisNode(t *testing.T) {
	mb, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Skipf("no /proc/meminfo: %v", err)
	}
	m, err := parseMemInfo(mb)
	if err != nil {
		t.Fatal(err)
	}
	var s utilSampler
	t0 := time.Now()
	if _, _, err := s.sample(t0, nil, nil); err != nil {
		t.Fatal(err)
	}
	// Burn some CPU so that the node is visibly busy.
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
	}
	n, _, err := s.sample(time.Now(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n.PmemMB <= 0 || int64(n.PmemMB) > m.total>>10 || n.VmemMB < n.PmemMB {
		t.Errorf("node memory %+v against MemTotal %d kB", n, m.total)
	}
	if n.CPU <= 0 {
		t.Errorf("node CPU %v cores after a busy loop", n.CPU)
	}
}
