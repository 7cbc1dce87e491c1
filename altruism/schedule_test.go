package altruism

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
)

// pool runs jobs that all arrive at 0 on one pooled resource vector (a
// single node the size of the cluster), with Carbyne's three steps at every
// event: DRF shares, each job's plan and split, and FillNode. Events are
// task finishes and planned starts falling due. It returns each job's
// completion time. It is the smallest honest driver of this package; the
// simulator (sim/) is the real one.
func pool(t *testing.T, capacity fairness.Vector, jobs []*Job, p float64, order LeftoverOrder, seed uint64) []time.Duration {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	planners := make([]Planner, len(jobs))
	done := make([]time.Duration, len(jobs))
	finished := make([]bool, len(jobs))
	now := time.Duration(0)
	for step := 0; ; step++ {
		if step > 10000 {
			t.Fatalf("no progress by %v", now)
		}
		// Retire tasks that end now.
		for k, j := range jobs {
			for i := range j.Stages {
				s := &j.Stages[i]
				s.Running = slices.DeleteFunc(s.Running, func(r Run) bool { return r.Finish <= now })
			}
			if !finished[k] && j.Finished() {
				finished[k], done[k] = true, now
			}
		}
		var active []int
		for k := range jobs {
			if !finished[k] {
				active = append(active, k)
			}
		}
		if len(active) == 0 {
			return done
		}

		claims := make([]fairness.Claim, len(active))
		for a, k := range active {
			claims[a] = fairness.Claim{Weight: 1, Demand: jobs[k].Demand()}
		}
		shares := fairness.DRF(capacity, claims)

		var apps []App
		var asks []Ask
		var askStage []int
		var used fairness.Vector
		next := time.Duration(-1)
		wake := func(at time.Duration) {
			if at > now && (next < 0 || at < next) {
				next = at
			}
		}
		for a, k := range active {
			j := jobs[k]
			plan := planners[k].Plan(j, shares[a], now)
			sp := plan.Split(j, Decide(p, rng))
			if sp.HasWake {
				wake(sp.Wake)
			}
			apps = append(apps, App{Share: shares[a], Usage: j.Usage(), RemainingWork: j.RemainingWork(capacity, now)})
			used = used.Add(j.Usage())
			for i, st := range j.Stages {
				pri, _ := slotRank(plan, i)
				for _, kind := range []AskKind{Default, Altruistic} {
					n := sp.Default[i]
					if kind == Altruistic {
						n = sp.Altruistic[i]
					}
					if n > 0 {
						asks = append(asks, Ask{App: a, Kind: kind, Priority: pri, Demand: st.Demand, Count: n})
						askStage = append(askStage, i)
					}
				}
			}
		}
		for _, as := range FillNode(capacity.Sub(used), capacity, apps, asks, NodePolicy{Order: order}) {
			ask := asks[as.Ask]
			st := &jobs[active[ask.App]].Stages[askStage[as.Ask]]
			st.Pending -= as.Count
			st.Running = append(st.Running, Run{Finish: now + st.Duration, Count: as.Count})
		}
		for _, j := range jobs {
			for _, s := range j.Stages {
				for _, r := range s.Running {
					wake(r.Finish)
				}
			}
		}
		if next < 0 {
			t.Fatalf("at %v nothing runs and nothing is due, but jobs remain", now)
		}
		now = next
	}
}

// slotRank is a stage's priority hint: the position of its first slot in
// the plan, so the task that must start soonest asks at the lowest value.
func slotRank(p *Plan, stage int) (int, bool) {
	for r, s := range p.Slots {
		if s.Stage == stage {
			return r, true
		}
	}
	return len(p.Slots), false
}

// TestTwoJobExample is the spirit of Carbyne's Figure 2: one bottleneck
// resource (10 cores, every task one core), two jobs arriving together.
//
//	Job 1: S0 = 3 tasks × 3 s and S1 = 2 tasks × 4 s, both parents of the
//	       barrier S2 = 1 task × 1 s. Remaining work 1.8 share-seconds.
//	Job 2: one stage of 8 tasks × 1 s. Remaining work 0.8.
//
// DRF, greedy inside each job (P(Altruism) = 0): demands 6 and 8, shares
// 5 and 5.
//
//	t=0  job 1 starts S0×3 and S1×2 (its 5); job 2 starts 5 tasks.
//	t=1  job 2's wave ends; its last 3 tasks run [1,2).
//	t=2  job 2 done.              JCT 2
//	t=3  S0 done; t=4 S1 done, S2 runs [4,5).
//	t=5  job 1 done.              JCT 5     average 3.5
//
// Carbyne (P(Altruism) = 1): same shares.
//
//	t=0  job 1 plans T = 5: S2 at 4, S1 must start now, S0 can wait until
//	     1 (it must end by 4). DEFAULT S1×2, ALTRUISTIC S0×3, leftover 3.
//	     Job 2 plans T = 2: 3 tasks must start now, 5 can wait until 1.
//	     DEFAULT S0×3, leftover 2. The DEFAULT asks take 5 cores; the
//	     leftover 5 goes SRTF-first to job 2 (0.8 < 1.8): all 5 of its
//	     ALTRUISTIC tasks. Job 1's S0 waits.
//	t=1  job 2 done.              JCT 1
//	     Job 1 alone; S0's latest start has come: S0×3 runs [1,4).
//	t=4  S0 and S1 done, S2 runs [4,5).
//	t=5  job 1 done.              JCT 5     average 3.0
//
// Job 1 yielded and lost nothing; job 2 finished twice as fast.
func TestTwoJobExample(t *testing.T) {
	twoJobs := func() []*Job {
		return []*Job{barrierJob(), {Stages: []Stage{stage(8, sec)}}}
	}
	tests := []struct {
		name    string
		p       float64
		want    []time.Duration
		average time.Duration
	}{
		{"DRF, greedy inside jobs", 0, []time.Duration{5 * sec, 2 * sec}, 3500 * time.Millisecond},
		{"Carbyne, altruistic", 1, []time.Duration{5 * sec, 1 * sec}, 3 * sec},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := pool(t, cores(10), twoJobs(), tc.p, EfficiencyFirst, 1)
			if !slices.Equal(got, tc.want) {
				t.Errorf("JCTs = %v, want %v", got, tc.want)
			}
			if avg := (got[0] + got[1]) / 2; avg != tc.average {
				t.Errorf("average JCT = %v, want %v", avg, tc.average)
			}
		})
	}
}

// randomJob draws a DAG of up to 12 stages: each stage takes each earlier
// stage as a parent with probability 0.3, so it is acyclic by construction.
func randomJob(rng *rand.Rand) *Job {
	n := 1 + rng.IntN(12)
	j := &Job{Stages: make([]Stage, n)}
	for i := range j.Stages {
		var parents []int
		for p := 0; p < i; p++ {
			if rng.Float64() < 0.3 {
				parents = append(parents, p)
			}
		}
		j.Stages[i] = Stage{
			Demand:   fairness.New(float64(1+rng.IntN(8)), float64(1+rng.IntN(4))),
			Duration: time.Duration(1+rng.IntN(10)) * sec,
			Parents:  parents,
			Pending:  1 + rng.IntN(15),
		}
	}
	return j
}

// TestAltruismNeverLate is Carbyne's Theorem 3.1 as a property: with no
// arrivals or departures (a fixed allocation), a job that runs exactly its
// DEFAULT tasks at every decision finishes no later than the T_k it planned
// at the start, and never holds more than its allocation.
func TestAltruismNeverLate(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 41))
	for trial := 0; trial < 400; trial++ {
		j := randomJob(rng)
		var biggest fairness.Vector
		for _, s := range j.Stages {
			biggest = biggest.Max(s.Demand)
		}
		// Between one and three of the largest task in each kind.
		alloc := fairness.New(
			biggest[fairness.Memory]*(1+2*rng.Float64()),
			biggest[fairness.VCores]*(1+2*rng.Float64()))
		desc := fmt.Sprintf("trial %d: alloc %v, job %+v", trial, alloc, j.Stages)

		var pl Planner
		now := time.Duration(0)
		promised := pl.Plan(j, alloc, now).Finish
		last := promised
		for steps := 0; !j.Finished(); steps++ {
			if steps > 5000 {
				t.Fatalf("%s: no progress by %v", desc, now)
			}
			plan := pl.Plan(j, alloc, now)
			if plan.Finish > last {
				t.Fatalf("%s: at %v the plan slipped from %v to %v", desc, now, last, plan.Finish)
			}
			last = plan.Finish
			sp := plan.Split(j, true)
			for i, n := range sp.Default {
				if n > 0 {
					s := &j.Stages[i]
					s.Pending -= n
					s.Running = append(s.Running, Run{Finish: now + s.Duration, Count: n})
				}
			}
			if u := j.Usage(); !u.FitsIn(alloc) {
				t.Fatalf("%s: at %v the job holds %v, over its allocation", desc, now, u)
			}
			next := time.Duration(-1)
			if sp.HasWake {
				next = sp.Wake
			}
			for _, s := range j.Stages {
				for _, r := range s.Running {
					if next < 0 || r.Finish < next {
						next = r.Finish
					}
				}
			}
			if next < 0 {
				t.Fatalf("%s: stuck at %v", desc, now)
			}
			now = next
			for i := range j.Stages {
				s := &j.Stages[i]
				s.Running = slices.DeleteFunc(s.Running, func(r Run) bool { return r.Finish <= now })
			}
		}
		if now > promised {
			t.Fatalf("%s: finished at %v, after the T_k of %v it planned at 0", desc, now, promised)
		}
	}
}
