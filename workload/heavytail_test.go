package workload

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestHeavyTailed(t *testing.T) {
	draw := func(n int, seed uint64) []*Job {
		t.Helper()
		jobs, err := HeavyTailed(n, rand.New(rand.NewPCG(seed, seed)))
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	a, b := draw(300, 1), draw(300, 1)
	for i := range a {
		if a[i].Name != b[i].Name || a[i].TotalTasks() != b[i].TotalTasks() || len(a[i].Stages) != len(b[i].Stages) {
			t.Fatalf("job %d differs between two draws with one seed: %s vs %s", i, a[i].Name, b[i].Name)
		}
	}
	if c := draw(300, 2); slices.EqualFunc(a, c, func(x, y *Job) bool { return x.Name == y.Name }) {
		t.Error("two seeds drew the same mix")
	}

	jobs := draw(2000, 1)
	names := map[string]bool{}
	var tasks []int
	total, oneTask, oneStage := 0, 0, 0
	for _, j := range jobs {
		if err := j.Validate(); err != nil {
			t.Fatal(err)
		}
		if names[j.Name] {
			t.Fatalf("name %q twice", j.Name)
		}
		names[j.Name] = true
		n := j.TotalTasks()
		tasks = append(tasks, n)
		total += n
		switch {
		case strings.HasPrefix(j.Name, "ht-tiny-"):
			if n != 1 {
				t.Errorf("%s has %d tasks", j.Name, n)
			}
			oneTask++
		case strings.HasPrefix(j.Name, "ht-stage-"):
			if len(j.Stages) != 1 {
				t.Errorf("%s has %d stages", j.Name, len(j.Stages))
			}
			oneStage++
		}
	}
	if got := float64(oneTask) / 2000; math.Abs(got-HeavyTailTiny) > 0.05 {
		t.Errorf("one-task jobs %.3f of the mix, want %.2f ± 0.05", got, HeavyTailTiny)
	}
	if got := float64(oneStage) / 2000; math.Abs(got-HeavyTailStage) > 0.05 {
		t.Errorf("one-stage jobs %.3f of the mix, want %.2f ± 0.05", got, HeavyTailStage)
	}
	// The heavy tail: the largest tenth of the jobs hold most of the tasks.
	slices.Sort(tasks)
	top := 0
	for _, n := range tasks[len(tasks)*9/10:] {
		top += n
	}
	if share := float64(top) / float64(total); share < 0.9 {
		t.Errorf("the largest 10%% of jobs hold %.2f of the tasks, want at least 0.9", share)
	}
	if _, err := HeavyTailed(0, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "must be positive") {
		t.Errorf("n = 0: error %v", err)
	}
}
