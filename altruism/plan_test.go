package altruism

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/fairness"
)

const sec = time.Second

func cores(n float64) fairness.Vector { return fairness.New(0, n) }

// stage builds a stage of n pending tasks of one core each.
func stage(n int, dur time.Duration, parents ...int) Stage {
	return Stage{Demand: cores(1), Duration: dur, Parents: parents, Pending: n}
}

// barrierJob is job 1 of the two-job example: S0 (3 tasks × 3 s) and
// S1 (2 tasks × 4 s) both feed the barrier S2 (1 task × 1 s).
func barrierJob() *Job {
	return &Job{Stages: []Stage{stage(3, 3*sec), stage(2, 4*sec), stage(1, 1*sec, 0, 1)}}
}

func TestEstimateCompletion(t *testing.T) {
	running := stage(1, 3*sec)
	running.Running = []Run{{Finish: 5 * sec, Count: 1}}
	tests := []struct {
		name  string
		job   *Job
		alloc fairness.Vector
		now   time.Duration
		want  time.Duration
		slots []Slot
	}{
		{
			// One core: S0's two tasks run one after the other, [0,3)
			// and [3,6); S1 [6,8).
			name:  "chain, one core",
			job:   &Job{Stages: []Stage{stage(2, 3*sec), stage(1, 2*sec, 0)}},
			alloc: cores(1),
			want:  8 * sec,
			slots: []Slot{{0, 0, 1}, {0, 3 * sec, 1}, {1, 6 * sec, 1}},
		},
		{
			// Two cores: S0 [0,3) twice, S1 [3,5).
			name:  "chain, two cores",
			job:   &Job{Stages: []Stage{stage(2, 3*sec), stage(1, 2*sec, 0)}},
			alloc: cores(2),
			want:  5 * sec,
			slots: []Slot{{0, 0, 2}, {1, 3 * sec, 1}},
		},
		{
			// Five cores hold S0 and S1 at once; S2 waits for S1 (4 s).
			name:  "barrier, five cores",
			job:   barrierJob(),
			alloc: cores(5),
			want:  5 * sec,
			slots: []Slot{{0, 0, 3}, {1, 0, 2}, {2, 4 * sec, 1}},
		},
		{
			// Three cores: S0 and S1 tie on alignment, the lower index
			// goes first: S0 [0,3), S1 [3,7), S2 [7,8).
			name:  "barrier, three cores",
			job:   barrierJob(),
			alloc: cores(3),
			want:  8 * sec,
			slots: []Slot{{0, 0, 3}, {1, 3 * sec, 2}, {2, 7 * sec, 1}},
		},
		{
			// <10 GB, 10 cores>. A <8,1>, B <1,8>, C <5,5> ×2, all 1 s.
			// Alignment with free <10,10> (d·free/A²): A 0.9, B 0.9,
			// C 1.0. C goes first, and after one C (free <5,5>) C still
			// leads 0.5 to 0.45: both Cs at 0. At 1 A and B tie; A (lower
			// index) then B, which still fits in <2,9>.
			name: "multi-resource alignment",
			job: &Job{Stages: []Stage{
				{Demand: fairness.New(8, 1), Duration: sec, Pending: 1},
				{Demand: fairness.New(1, 8), Duration: sec, Pending: 1},
				{Demand: fairness.New(5, 5), Duration: sec, Pending: 2},
			}},
			alloc: fairness.New(10, 10),
			want:  2 * sec,
			slots: []Slot{{2, 0, 2}, {0, sec, 1}, {1, sec, 1}},
		},
		{
			// The one core is busy until 5 with a running task; the
			// pending one runs [5,8), then S1 [8,10).
			name:  "running task holds the allocation",
			job:   &Job{Stages: []Stage{running, stage(1, 2*sec, 0)}},
			alloc: cores(1),
			want:  10 * sec,
			slots: []Slot{{0, 5 * sec, 1}, {1, 8 * sec, 1}},
		},
		{
			// Half a core cannot hold a one-core task: one runs at a time
			// anyway, so the job still finishes.
			name:  "allocation smaller than a task",
			job:   &Job{Stages: []Stage{stage(2, sec)}},
			alloc: cores(0.5),
			want:  2 * sec,
			slots: []Slot{{0, 0, 1}, {0, sec, 1}},
		},
		{
			name:  "nothing left",
			job:   &Job{Stages: []Stage{stage(0, sec)}},
			alloc: cores(1),
			now:   7 * sec,
			want:  7 * sec,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := EstimateCompletion(tc.job, tc.alloc, tc.now); got != tc.want {
				t.Errorf("EstimateCompletion = %v, want %v", got, tc.want)
			}
			slots, _ := forwardPack(tc.job, tc.job.children(), tc.alloc, tc.now)
			if diff := cmp.Diff(tc.slots, slots); diff != "" {
				t.Errorf("forward slots (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReversePack(t *testing.T) {
	tests := []struct {
		name   string
		job    *Job
		alloc  fairness.Vector
		finish time.Duration
		slots  []Slot
	}{
		{
			// T = 5 (S0, S1 at 0; S2 at 4). Backwards: S2 stays at 4.
			// S1 must end by 4 and lasts 4: start 0. S0 must end by 4 and
			// lasts 3: [1,4) has 5 − 2 = 3 cores free, so all three move
			// to 1. S1 is all that must start now.
			name:   "barrier job yields its short stage",
			job:    barrierJob(),
			alloc:  cores(5),
			finish: 5 * sec,
			slots:  []Slot{{1, 0, 2}, {0, sec, 3}, {2, 4 * sec, 1}},
		},
		{
			// 8 one-second tasks on 5 cores: T = 2. The later wave (3
			// tasks at 1) stays; of the first wave two more fit at 1 and
			// three must stay at 0.
			name:   "wide stage keeps only the first wave's remainder",
			job:    &Job{Stages: []Stage{stage(8, sec)}},
			alloc:  cores(5),
			finish: 2 * sec,
			slots:  []Slot{{0, 0, 3}, {0, sec, 5}},
		},
		{
			// Chain on two cores: S0 [0,3) ×2 then S1 [3,5). Nothing can
			// move: every task is on the critical path.
			name:   "critical path does not move",
			job:    &Job{Stages: []Stage{stage(2, 3*sec), stage(1, 2*sec, 0)}},
			alloc:  cores(2),
			finish: 5 * sec,
			slots:  []Slot{{0, 0, 2}, {1, 3 * sec, 1}},
		},
		{
			// Two independent stages on 2 cores: A 1 task × 6 s, B 2 tasks
			// × 1 s. Forward: A and B at 0, B's second task at 1: T = 6.
			// Backwards B can end at 6 and share [5,6) with A... which
			// uses one core, so one B fits at 5; the other at 4.
			name: "short tasks slide to the end beside a long one",
			job: &Job{Stages: []Stage{
				{Demand: cores(1), Duration: 6 * sec, Pending: 1},
				{Demand: cores(1), Duration: sec, Pending: 2},
			}},
			alloc:  cores(2),
			finish: 6 * sec,
			slots:  []Slot{{0, 0, 1}, {1, 4 * sec, 1}, {1, 5 * sec, 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := ReversePack(tc.job, tc.alloc, 0)
			if p.Finish != tc.finish {
				t.Errorf("Finish = %v, want %v", p.Finish, tc.finish)
			}
			if diff := cmp.Diff(tc.slots, p.Slots); diff != "" {
				t.Errorf("latest starts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	j := barrierJob()
	p := ReversePack(j, cores(5), 0)

	// Yielding: S1 (latest start 0) is DEFAULT; S0 (latest start 1) is
	// ALTRUISTIC; S2 is not runnable. Leftover = 5 − 0 running − 2.
	got := p.Split(j, true)
	want := Split{
		Yielding:      true,
		Default:       []int{0, 2, 0},
		Altruistic:    []int{3, 0, 0},
		DefaultDemand: cores(2),
		Leftover:      cores(3),
		Wake:          sec,
		HasWake:       true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Split yielding (-want +got):\n%s", diff)
	}

	// Not yielding (the P(Altruism) draw failed): everything runnable is
	// DEFAULT and nothing is left over.
	got = p.Split(j, false)
	want = Split{
		Default:       []int{3, 2, 0},
		Altruistic:    []int{0, 0, 0},
		DefaultDemand: cores(5),
		Wake:          sec,
		HasWake:       true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Split not yielding (-want +got):\n%s", diff)
	}

	// Running tasks count against the allocation: with S1 running, the
	// leftover at 0 is 5 − 2 − 0 DEFAULT = 3 as S0 is still ALTRUISTIC.
	j.Stages[1].Pending = 0
	j.Stages[1].Running = []Run{{Finish: 4 * sec, Count: 2}}
	got = ReversePack(j, cores(5), 0).Split(j, true)
	if got.Leftover != cores(3) || got.Altruistic[0] != 3 {
		t.Errorf("with S1 running: leftover %v, altruistic %v; want <0,3> and 3 S0 tasks", got.Leftover, got.Altruistic)
	}
}

func TestRemainingWork(t *testing.T) {
	// Capacity 10 cores, one-core tasks: dominant share 0.1 each.
	// Pending: 3×3 s + 1×1 s; running: 2 tasks ending at 4 with now = 1,
	// so 2×3 s. (9 + 1 + 6) s × 0.1 = 1.6.
	j := barrierJob()
	j.Stages[1].Pending = 0
	j.Stages[1].Running = []Run{{Finish: 4 * sec, Count: 2}}
	if got := j.RemainingWork(cores(10), sec); got < 1.6-1e-12 || got > 1.6+1e-12 {
		t.Errorf("RemainingWork = %v, want 1.6", got)
	}
}

func TestPlannerKeepsEarlierFinish(t *testing.T) {
	// Following a plan then replanning must never push the finish later.
	j := barrierJob()
	var pl Planner
	first := pl.Plan(j, cores(5), 0)
	// Follow it: S1's two tasks start at 0.
	j.Stages[1].Pending = 0
	j.Stages[1].Running = []Run{{Finish: 4 * sec, Count: 2}}
	second := pl.Plan(j, cores(5), sec)
	if second.Finish > first.Finish {
		t.Errorf("replanned finish %v is later than %v", second.Finish, first.Finish)
	}
	if s, _ := second.LatestStart(0); s != sec {
		t.Errorf("S0's latest start = %v, want 1s", s)
	}
	// A failure puts a task back: the carried plan no longer fits the
	// job, and a fresh plan is made.
	j.Stages[1].Running = []Run{{Finish: 4 * sec, Count: 1}}
	j.Stages[1].Pending = 1
	third := pl.Plan(j, cores(5), sec)
	if s, ok := third.LatestStart(1); !ok || s != sec {
		t.Errorf("after a failure S1 must restart now: latest start %v, %v", s, ok)
	}
}

func TestCriticalPathFirst(t *testing.T) {
	// S0: 3 tasks × 1 s; S1: 1 task × 5 s; S2 (1 × 1 s) waits for both.
	// Bottom levels: S0 1 + 1 = 2 s, S1 5 + 1 = 6 s, S2 1 s. On 3 cores:
	//   alignment (ties to the lower stage): S0 ×3 at 0, S1 at 1 (ends
	//   6), S2 at 6: finish 7 s.
	//   critical path first: S1 at 0, S0 ×2 at 0, S0 at 1 (ends 2),
	//   S1 ends 5, S2 at 5: finish 6 s.
	job := &Job{Stages: []Stage{stage(3, sec), stage(1, 5*sec), stage(1, sec, 0, 1)}}
	if diff := cmp.Diff([]time.Duration{2 * sec, 6 * sec, sec}, BottomLevels(job, job.children())); diff != "" {
		t.Errorf("bottom levels (-want +got):\n%s", diff)
	}
	tests := []struct {
		cpf    bool
		finish time.Duration
		slots  []Slot
	}{
		{false, 7 * sec, []Slot{{0, 0, 3}, {1, sec, 1}, {2, 6 * sec, 1}}},
		{true, 6 * sec, []Slot{{1, 0, 1}, {0, 0, 2}, {0, sec, 1}, {2, 5 * sec, 1}}},
	}
	for _, tc := range tests {
		var rank []time.Duration
		if tc.cpf {
			rank = BottomLevels(job, job.children())
		}
		slots, finish := forwardPackOrdered(job, job.children(), cores(3), 0, rank, 0, 0, nil, -1)
		if finish != tc.finish {
			t.Errorf("cpf=%v: finish %v, want %v", tc.cpf, finish, tc.finish)
		}
		if diff := cmp.Diff(tc.slots, slots); diff != "" {
			t.Errorf("cpf=%v: slots (-want +got):\n%s", tc.cpf, diff)
		}
	}
	// The planner's reverse pass and tightening recover the 6 s finish
	// from the alignment schedule too; planning critical path first
	// finds it directly.
	for _, cpf := range []bool{false, true} {
		pl := Planner{CriticalPathFirst: cpf}
		if p := pl.Plan(job, cores(3), 0); p.Finish != 6*sec {
			t.Errorf("cpf=%v: planner finish %v, want 6s", cpf, p.Finish)
		}
	}
}

func TestPlannerFollowsItsPlan(t *testing.T) {
	// Eight one-second tasks on five cores, planned at 0: three due at 0,
	// five at 1 s, T_k = 2 s. The RM serves nothing, and the job decides
	// again at 100 ms or 300 ms. Followed, the plan stands: the three are
	// late and still due. Planned afresh at now, everything slides by now
	// (the second wave at now + 1 s, T_k = now + 2 s).
	wide := func() *Job { return &Job{Stages: []Stage{stage(8, sec)}} }
	const ms = time.Millisecond
	// A chain: S0 one task of 1 s, S1 two tasks after it, on two cores.
	// Planned at 0: S0 at 0, S1 at 1 s, T_k = 2 s. S0 ends at 100 ms,
	// early: a done stage is news, and S1 may start now.
	chain := func() *Job { return &Job{Stages: []Stage{stage(1, sec), stage(2, sec, 0)}} }
	chainDone := func(j *Job) { j.Stages[0].Pending = 0 }
	tests := []struct {
		name   string
		job    func() *Job
		follow time.Duration
		then   func(*Job) // what happened between the two decisions
		alloc  fairness.Vector
		at     time.Duration
		finish time.Duration
		slots  []Slot
	}{
		{"followed within Follow", wide, 250 * ms, nil, cores(5), 100 * ms,
			2 * sec, []Slot{{0, 0, 3}, {0, sec, 5}}},
		{"fresh once Follow has passed", wide, 250 * ms, nil, cores(5), 300 * ms,
			2300 * ms, []Slot{{0, 300 * ms, 3}, {0, 1300 * ms, 5}}},
		{"fresh at every decision with Follow 0", wide, 0, nil, cores(5), 100 * ms,
			2100 * ms, []Slot{{0, 100 * ms, 3}, {0, 1100 * ms, 5}}},
		// Six cores (20% more): six fit in the first wave, two follow.
		{"fresh when the allocation moved", wide, 250 * ms, nil, cores(6), 100 * ms,
			2100 * ms, []Slot{{0, 100 * ms, 2}, {0, 1100 * ms, 6}}},
		// 5.4 cores is within CarryTolerance of 5: the plan stands.
		{"followed when the allocation moved within tolerance", wide, 250 * ms, nil, cores(5.4), 100 * ms,
			2 * sec, []Slot{{0, 0, 3}, {0, sec, 5}}},
		{"fresh when a stage is done", chain, 250 * ms, chainDone, cores(2), 100 * ms,
			1100 * ms, []Slot{{1, 100 * ms, 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := tc.job()
			pl := Planner{Follow: tc.follow}
			// The first plan is made for at most five cores, so that a larger
			// alloc is one that moved.
			pl.Plan(j, tc.alloc.Min(cores(5)), 0)
			if tc.then != nil {
				tc.then(j)
			}
			p := pl.Plan(j, tc.alloc, tc.at)
			if p.Finish != tc.finish {
				t.Errorf("Finish = %v, want %v", p.Finish, tc.finish)
			}
			if diff := cmp.Diff(tc.slots, p.Slots); diff != "" {
				t.Errorf("slots (-want +got):\n%s", diff)
			}
		})
	}

	// Followed, the late tasks are what the job asks for now.
	j := wide()
	pl := Planner{Follow: 250 * ms}
	pl.Plan(j, cores(5), 0)
	sp := pl.Plan(j, cores(5), 100*ms).Split(j, true)
	if sp.Default[0] != 3 || sp.Altruistic[0] != 5 || sp.Wake != sec {
		t.Errorf("followed split: %d DEFAULT, %d ALTRUISTIC, wake %v; want 3, 5, 1s", sp.Default[0], sp.Altruistic[0], sp.Wake)
	}
}

func TestPlannerFollowPart(t *testing.T) {
	// The job of TestPlannerFollowsItsPlan: eight one-second tasks on five
	// cores, planned at 0 with T_k = 2 s (three due at 0, five at 1 s).
	// Follow 250 ms, and a part of the horizon: a quarter of 2 s is 500 ms.
	const ms = time.Millisecond
	tests := []struct {
		name   string
		part   float64
		at     time.Duration
		finish time.Duration
		slots  []Slot
	}{
		{"followed past Follow, within its part of the horizon", 0.25, 300 * ms,
			2 * sec, []Slot{{0, 0, 3}, {0, sec, 5}}},
		{"fresh once the part has passed", 0.25, 600 * ms,
			2600 * ms, []Slot{{0, 600 * ms, 3}, {0, 1600 * ms, 5}}},
		// A tenth of 2 s is 200 ms, less than Follow: Follow stands.
		{"Follow when the part is shorter", 0.1, 240 * ms,
			2 * sec, []Slot{{0, 0, 3}, {0, sec, 5}}},
		{"fresh past Follow when the part is shorter", 0.1, 260 * ms,
			2260 * ms, []Slot{{0, 260 * ms, 3}, {0, 1260 * ms, 5}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := &Job{Stages: []Stage{stage(8, sec)}}
			pl := Planner{Follow: 250 * ms, FollowPart: tc.part}
			pl.Plan(j, cores(5), 0)
			p := pl.Plan(j, cores(5), tc.at)
			if p.Finish != tc.finish {
				t.Errorf("Finish = %v, want %v", p.Finish, tc.finish)
			}
			if diff := cmp.Diff(tc.slots, p.Slots); diff != "" {
				t.Errorf("slots (-want +got):\n%s", diff)
			}
		})
	}
}

func TestForwardPackResolution(t *testing.T) {
	// Four pending one-core tasks on two cores, behind two running tasks
	// that end 30 ms apart, at 1 s and 1.03 s.
	const ms = time.Millisecond
	job := func(dur time.Duration) *Job {
		return &Job{Stages: []Stage{{Demand: cores(1), Duration: dur, Pending: 4,
			Running: []Run{{Finish: sec, Count: 1}, {Finish: 1030 * ms, Count: 1}}}}}
	}
	tests := []struct {
		name       string
		dur        time.Duration
		resolution time.Duration
		finish     time.Duration
		slots      []Slot
	}{
		// Exact: a task at every finish, staggered for ever.
		{"exact", sec, 0, 3030 * ms,
			[]Slot{{0, sec, 1}, {0, 1030 * ms, 1}, {0, 2 * sec, 1}, {0, 2030 * ms, 1}}},
		// At 50 ms (a twentieth of 1 s), both finishes are one, at the
		// later: two waves, and the same finish.
		{"50 ms merges the two finishes", sec, 50 * ms, 3030 * ms,
			[]Slot{{0, 1030 * ms, 2}, {0, 2030 * ms, 2}}},
		// Half-second tasks: a twentieth is 25 ms, under the 30 ms gap.
		{"never over a twentieth of the shortest task", 500 * ms, 50 * ms, 2030 * ms,
			[]Slot{{0, sec, 1}, {0, 1030 * ms, 1}, {0, 1500 * ms, 1}, {0, 1530 * ms, 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := job(tc.dur)
			slots, finish := forwardPackOrdered(j, j.children(), cores(2), 0, nil, tc.resolution, 0, nil, -1)
			if finish != tc.finish {
				t.Errorf("finish = %v, want %v", finish, tc.finish)
			}
			if diff := cmp.Diff(tc.slots, slots); diff != "" {
				t.Errorf("slots (-want +got):\n%s", diff)
			}
		})
	}
}

// TestForwardPackFarResolution: finishes d ahead merge with those up to
// min(d/100, far) after them. Four pending one-core 1 s tasks on two
// cores, behind two running tasks that end 30 ms apart, 5 s ahead: d/100
// is 50 ms.
func TestForwardPackFarResolution(t *testing.T) {
	const ms = time.Millisecond
	staggered := []Slot{{0, 5 * sec, 1}, {0, 5030 * ms, 1}, {0, 6 * sec, 1}, {0, 6030 * ms, 1}}
	tests := []struct {
		name   string
		far    time.Duration
		finish time.Duration
		slots  []Slot
	}{
		{"0 keeps every finish", 0, 7030 * ms, staggered},
		// 50 ms covers the 30 ms gap: one wave of two at 5.03 s, whose
		// tasks end together at 6.03 s, then the second wave.
		{"5 s ahead, finishes 50 ms apart are one", 250 * ms, 7030 * ms, []Slot{{0, 5030 * ms, 2}, {0, 6030 * ms, 2}}},
		{"never wider than far", 20 * ms, 7030 * ms, staggered},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := &Job{Stages: []Stage{{Demand: cores(1), Duration: sec, Pending: 4,
				Running: []Run{{Finish: 5 * sec, Count: 1}, {Finish: 5030 * ms, Count: 1}}}}}
			slots, finish := forwardPackOrdered(j, j.children(), cores(2), 0, nil, 0, tc.far, nil, -1)
			if finish != tc.finish {
				t.Errorf("finish = %v, want %v", finish, tc.finish)
			}
			if diff := cmp.Diff(tc.slots, slots); diff != "" {
				t.Errorf("slots (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReverseReusesProfile: the reverse pass may lend an earlier plan's
// profile memory (the planner does); the latest starts must be those of a
// pass on a new profile, whatever the earlier profile held. Jobs with many
// slots split blocks and drop breakpoints, which reuse must survive.
func TestReverseReusesProfile(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	var prof profile
	for n := 0; n < 200; n++ {
		j := randomJob(rng)
		for i := range j.Stages {
			j.Stages[i].Pending *= 1 + rng.IntN(30)
		}
		alloc := fairness.New(float64(8+rng.IntN(40)), float64(4+rng.IntN(20)))
		children := j.children()
		slots, finish := forwardPack(j, children, alloc, 0)
		want := latestStarts(j, children, alloc, 0, slots, finish, nil, nil)
		got := latestStarts(j, children, alloc, 0, slots, finish, &prof, nil)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("job %d: latest starts with a reused profile differ (-new +reused):\n%s", n, diff)
		}
	}
}

// TestReverseKeepsForcedStages: a stage of which no task fits in the
// allocation keeps the starts the forward pass forced, and its parents
// are packed as late as those allow. Hand-worked, allocation 2 cores:
// stage 0 (two 1-core tasks of 1 s) runs at 0-1 s; stage 1 (one 3-core
// task of 1 s, child of 0) fits nowhere under 2 cores and is forced at
// 1 s; stage 2 (one 1-core task of 1 s, child of 1) starts at 2 s and
// nothing later allows it, so T_k = 3 s. In reverse, stage 2 stays at
// 2 s (its latest start within 3 s), stage 1 keeps 1 s, and stage 0
// must end by 1 s: both tasks at 0.
func TestReverseKeepsForcedStages(t *testing.T) {
	j := &Job{Stages: []Stage{
		{Demand: cores(1), Duration: sec, Pending: 2},
		{Demand: cores(3), Duration: sec, Pending: 1, Parents: []int{0}},
		{Demand: cores(1), Duration: sec, Pending: 1, Parents: []int{1}},
	}}
	children := j.children()
	slots, finish := forwardPack(j, children, cores(2), 0)
	if want := []Slot{{0, 0, 2}, {1, sec, 1}, {2, 2 * sec, 1}}; !slices.Equal(slots, want) || finish != 3*sec {
		t.Fatalf("forward = %v finishing %v, want %v finishing 3s", slots, finish, want)
	}
	for _, prof := range []*profile{nil, {}} {
		got := latestStarts(j, children, cores(2), 0, slots, finish, prof, nil)
		if want := []Slot{{0, 0, 2}, {1, sec, 1}, {2, 2 * sec, 1}}; !slices.Equal(got, want) {
			t.Errorf("latest starts = %v, want %v", got, want)
		}
	}
}

// TestForwardPackStop: given a finish to beat, the forward pass either
// packs in full, as without one, when it ends before it, or stops with a
// finish at or after it when it cannot, which is all the planner asks.
func TestForwardPackStop(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	for n := 0; n < 300; n++ {
		j := randomJob(rng)
		alloc := fairness.New(float64(4+rng.IntN(40)), float64(2+rng.IntN(20)))
		children := j.children()
		now := time.Duration(rng.IntN(5)) * sec
		full, finish := forwardPackOrdered(j, children, alloc, now, nil, DefaultResolution, DefaultFarResolution, nil, -1)
		for _, stop := range []time.Duration{now, finish - time.Millisecond, finish, finish + time.Millisecond, finish + time.Hour} {
			slots, f := forwardPackOrdered(j, children, alloc, now, nil, DefaultResolution, DefaultFarResolution, nil, stop)
			switch {
			case finish < stop:
				if f != finish || !slices.Equal(slots, full) {
					t.Fatalf("job %d, stop %v after the finish %v: got %v finishing %v, want the full pass", n, stop, finish, slots, f)
				}
			case f < stop:
				t.Fatalf("job %d: stopped at %v, before stop %v (the full pass ends %v)", n, f, stop, finish)
			}
		}
	}
}

// TestForwardPackForcedSerial: a stage no task of which fits in the
// allocation runs its tasks one at a time, each alone, and its child
// starts when the last ends. Hand-worked, allocation 2 cores: stage 0
// has four 3-core tasks of 1 s (forced at 0, 1, 2, 3 s), stage 1 two
// 1-core tasks of 2 s after it (both at 4 s): T_k = 6 s. With another
// forced stage beside it (one 5-core task of 1 s, no parents), neither
// is alone: forcedPick takes the one whose task is the larger part of
// the allocation (5/2 over 3/2) first, then the other runs alone.
func TestForwardPackForcedSerial(t *testing.T) {
	tests := []struct {
		name   string
		stages []Stage
		slots  []Slot
		finish time.Duration
	}{
		{"one stage, then its child", []Stage{
			{Demand: cores(3), Duration: sec, Pending: 4},
			{Demand: cores(1), Duration: 2 * sec, Pending: 2, Parents: []int{0}},
		}, []Slot{{0, 0, 1}, {0, sec, 1}, {0, 2 * sec, 1}, {0, 3 * sec, 1}, {1, 4 * sec, 2}}, 6 * sec},
		{"two forced stages take turns", []Stage{
			{Demand: cores(3), Duration: sec, Pending: 2},
			{Demand: cores(5), Duration: sec, Pending: 1},
		}, []Slot{{1, 0, 1}, {0, sec, 1}, {0, 2 * sec, 1}}, 3 * sec},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := &Job{Stages: tc.stages}
			slots, finish := forwardPackOrdered(j, j.children(), cores(2), 0, nil, 0, 0, nil, -1)
			if !slices.Equal(slots, tc.slots) || finish != tc.finish {
				t.Errorf("got %v finishing %v, want %v finishing %v", slots, finish, tc.slots, tc.finish)
			}
			// Given the finish to beat, the pass stops inside the run.
			if _, f := forwardPackOrdered(j, j.children(), cores(2), 0, nil, 0, 0, nil, 2*sec); f < 2*sec {
				t.Errorf("stopped at %v, before 2s", f)
			}
		})
	}
}
