package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// threadNice is the nice value of the calling thread.
func threadNice(t *testing.T) int {
	t.Helper()
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	return 20 - raw
}

// threadsAt counts this process's threads whose nice value is at, from
// /proc/self/task/*/stat (the 19th field), but for the main thread: Go
// never ends that one, so when a locked goroutine (a pass loop) ends on
// it, it stays parked for good at the nice the loop gave it.
func threadsAt(t *testing.T, at int) int {
	t.Helper()
	stats, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	main := fmt.Sprintf("/proc/self/task/%d/stat", os.Getpid())
	for _, p := range stats {
		if p == main {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 17 {
			t.Fatalf("%s: %q", p, s)
		}
		nice, err := strconv.Atoi(f[16])
		if err != nil {
			t.Fatalf("%s: nice %q: %v", p, f[16], err)
		}
		if nice == at {
			n++
		}
	}
	return n
}

func TestLowerThreadPriority(t *testing.T) {
	base := threadNice(t)
	got := make(chan int)
	done := make(chan struct{})
	go func() {
		if err := lowerThreadPriority(7); err != nil {
			t.Error(err)
		}
		got <- threadNice(t)
		<-done
	}()
	if n := <-got; n != min(base+7, 19) {
		t.Errorf("the thread's nice is %d after lowering by 7 from %d", n, base)
	}
	if n := threadNice(t); n != base {
		t.Errorf("another thread's nice moved from %d to %d", base, n)
	}
	close(done)
}

// TestSchedulingPassesRunNiced: the RM's two pass loops (asynchronous
// scheduling, and the pass when preemption or recall falls due) run on
// threads of their own at loom.scheduler.pass-nice, which end with the RM
// (a thread whose locked goroutine exits is ended, or parked for good if
// it is the process's first); at 0 no thread is lowered. The test counts
// threads at a nice no other test uses (every RM's default is 10).
func TestSchedulingPassesRunNiced(t *testing.T) {
	base := threadNice(t)
	const nice = 13
	if base+nice > 19 {
		t.Skipf("the test runs at nice %d: cannot lower by %d", base, nice)
	}
	waitFor := func(what string, want int) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for {
			n := threadsAt(t, base+nice)
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d threads at nice %d, want %d", what, n, base+nice, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	before := threadsAt(t, base+nice)
	var logged logBuffer
	r, err := New(testConfig(t, "loom.scheduler.async.interval-ms=10", "loom.scheduler.pass-nice="+strconv.Itoa(nice)), zerolog.New(&logged))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor("an RM with pass-nice 13 running", before+2)
	// Each loop logs just after lowering its thread, so the line may
	// follow the count by a moment.
	for _, loop := range []string{"asynchronous scheduling", "preemption and recall"} {
		line := `"loop":"` + loop + `","nice":13,"message":"scheduling passes run on a thread of their own at a lower priority (loom.scheduler.pass-nice)"`
		for deadline := time.Now().Add(3 * time.Second); !strings.Contains(logged.String(), line); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("the log does not say the %s loop runs at nice 13:\n%s", loop, logged.String())
				break
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.Stop(ctx)
	waitFor("after it stopped", before)

	startRM(t, "loom.scheduler.async.interval-ms=10", "loom.scheduler.pass-nice=0")
	time.Sleep(100 * time.Millisecond)
	waitFor("an RM with pass-nice 0 running", before)
}
