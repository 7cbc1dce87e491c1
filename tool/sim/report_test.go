package sim

import (
	"math"
	"testing"
	"time"
)

func TestComparePerJob(t *testing.T) {
	res := func(policy string, jcts ...time.Duration) *Result {
		r := &Result{Policy: policy}
		for i, d := range jcts {
			r.Jobs = append(r.Jobs, JobResult{Name: string(rune('a' + i)), Finish: d})
		}
		r.Makespan = jcts[len(jcts)-1]
		return r
	}
	// Per-job factors (theirs / Carbyne's): a 10/10 = 1, b 10/20 = 0.5,
	// c 30/10 = 3, d 10/40 = 0.25, e 20/10 = 2. Sorted: 0.25 0.5 1 2 3.
	car := res("carbyne", 10*sec, 20*sec, 10*sec, 40*sec, 10*sec)
	drf := res("drf", 10*sec, 10*sec, 30*sec, 10*sec, 20*sec)
	imp := Compare(car, drf)
	want := map[string]float64{
		"median": 1,
		"slower": 0.4, // b and d
		"<0.8":   0.4, // b and d
		"<0.5":   0.2, // d (b is exactly 0.5)
		"worst":  0.25,
		// averages: carbyne 18 s, drf 16 s
		"average": 16.0 / 18,
	}
	got := map[string]float64{"median": imp.MedianJob, "slower": imp.Slower, "<0.8": imp.Slowed, "<0.5": imp.Halved,
		"worst": imp.Worst, "average": imp.Average}
	for k, w := range want {
		if math.Abs(got[k]-w) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}
}
