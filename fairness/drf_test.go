package fairness

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// approx compares allocations to 1e-9 relative error: hand-computed
// fractions like 216/13 are not exact in binary.
var approx = cmpopts.EquateApprox(1e-9, 1e-12)

// vec builds <memory, vcores, gpu> for the tables below.
func vec(mem, cpu, gpu float64) Vector { return New(mem, cpu).With(GPU, gpu) }

func TestDRF(t *testing.T) {
	many := 1000.0 // a demand no allocation reaches
	tests := []struct {
		name     string
		capacity Vector
		claims   []Claim
		want     []Vector
	}{
		{
			// The DRF paper's example (Ghodsi et al., NSDI'11, §4): 9 CPUs
			// and 18 GB. A's tasks need <1 CPU, 4 GB>, B's <3 CPU, 1 GB>.
			// Equal dominant shares with CPU exhausted:
			//   x + 3y = 9 (CPU), 4x/18 = 3y/9  =>  x = 3, y = 2 tasks.
			// A gets <3 CPU, 12 GB>, B <6 CPU, 2 GB>; both dominant
			// shares are 2/3, and 4 GB of memory stays free.
			name:     "DRF paper example",
			capacity: vec(18, 9, 0),
			claims: []Claim{
				{Weight: 1, Task: vec(4, 1, 0), Demand: vec(4*many, many, 0)},
				{Weight: 1, Task: vec(1, 3, 0), Demand: vec(many, 3*many, 0)},
			},
			want: []Vector{vec(12, 3, 0), vec(2, 6, 0)},
		},
		{
			// Same cluster, A weighted 2. Growth per fill level t:
			//   A: 2·<4,1>/(4/18) = <36, 9>, B: <1,3>/(3/9) = <3, 9>.
			// Memory runs out first: 39t = 18 at t = 6/13 (CPU would at
			// 18t = 9, t = 1/2). A = <216/13, 54/13>, B = <18/13, 54/13>.
			// Dominant shares: A 12/13 (memory), B 6/13 (CPU): ratio 2.
			name:     "weights",
			capacity: vec(18, 9, 0),
			claims: []Claim{
				{Weight: 2, Task: vec(4, 1, 0), Demand: vec(4*many, many, 0)},
				{Weight: 1, Task: vec(1, 3, 0), Demand: vec(many, 3*many, 0)},
			},
			want: []Vector{vec(216.0/13, 54.0/13, 0), vec(18.0/13, 54.0/13, 0)},
		},
		{
			// <100 GB, 10 CPU>, both apps <1,1> tasks, growth <10,10> per t.
			// App 0 wants only 2 tasks: capped at t = 0.2 with <2,2>.
			// App 1 alone then: CPU 2 + 10t = 10 at t = 0.8: <8,8>.
			name:     "demand cap frees resources for others",
			capacity: vec(100, 10, 0),
			claims: []Claim{
				{Weight: 1, Task: vec(1, 1, 0), Demand: vec(2, 2, 0)},
				{Weight: 1, Task: vec(1, 1, 0), Demand: vec(many, many, 0)},
			},
			want: []Vector{vec(2, 2, 0), vec(8, 8, 0)},
		},
		{
			// An app with nothing to run gets nothing; the other two split.
			name:     "zero demand",
			capacity: vec(10, 10, 0),
			claims: []Claim{
				{Weight: 1, Task: vec(1, 1, 0), Demand: Vector{}},
				{Weight: 1, Task: vec(1, 1, 0), Demand: vec(many, many, 0)},
				{Weight: 1, Task: vec(1, 1, 0), Demand: vec(many, many, 0)},
			},
			want: []Vector{{}, vec(5, 5, 0), vec(5, 5, 0)},
		},
		{
			// GPU as an extra resource type. <1000 GB, 10 CPU, 4 GPU>.
			// A: <10,1,1>, dominant GPU (1/4): growth <40,4,4>.
			// B: <10,1,0>, dominant CPU (1/10): growth <100,10,0>.
			// CPU runs out first: 14t = 10, t = 5/7 (GPU at 1, memory at
			// 1000/140). A = <200/7, 20/7, 20/7>, B = <500/7, 50/7, 0>.
			// Dominant shares: A 20/7/4 = 5/7, B 50/7/10 = 5/7.
			name:     "extra resource type (gpu)",
			capacity: vec(1000, 10, 4),
			claims: []Claim{
				{Weight: 1, Task: vec(10, 1, 1), Demand: vec(10*many, many, many)},
				{Weight: 1, Task: vec(10, 1, 0), Demand: vec(10*many, many, 0)},
			},
			want: []Vector{vec(200.0/7, 20.0/7, 20.0/7), vec(500.0/7, 50.0/7, 0)},
		},
		{
			// An app whose tasks need a GPU on a cluster without one gets
			// nothing, and does not hold back the other app.
			name:     "kind the cluster lacks",
			capacity: vec(100, 10, 0),
			claims: []Claim{
				{Weight: 1, Task: vec(1, 1, 1), Demand: vec(many, many, many)},
				{Weight: 1, Task: vec(1, 1, 0), Demand: vec(many, many, 0)},
			},
			want: []Vector{{}, vec(10, 10, 0)},
		},
		{
			// Weight 0 opts out; a zero Task grows along Demand.
			// App 1 grows along <20000, 2000>/200 = <100, 10> per t.
			// App 2 grows along <1,1>/0.1 = <10, 10>, capped at t = 1.
			// CPU runs out first: 20t = 10 at t = 0.5 (memory at 100/110):
			// app 1 <50, 5>, app 2 <5, 5>.
			name:     "zero weight and zero task",
			capacity: vec(100, 10, 0),
			claims: []Claim{
				{Weight: 0, Task: vec(1, 1, 0), Demand: vec(many, many, 0)},
				{Weight: 1, Demand: vec(20*many, 2*many, 0)},
				{Weight: 1, Task: vec(1, 1, 0), Demand: vec(10, 10, 0)},
			},
			want: []Vector{{}, vec(50, 5, 0), vec(5, 5, 0)},
		},
		{
			// A kind capped before the app is done: A's demand has only 1
			// GPU but plenty of CPU. Growth A <0,1,1>/(1/2)=<0,2,2>,
			// B <0,1,0>/(1/10) = <0,10,0>. A's GPU caps at t = 0.5 (1 GPU);
			// A keeps growing in CPU. CPU: 12t = 10 at t = 5/6:
			// A <0, 5/3, 1>, B <0, 25/3, 0>.
			name:     "per-kind cap keeps the app growing in other kinds",
			capacity: vec(0, 10, 2),
			claims: []Claim{
				{Weight: 1, Task: vec(0, 1, 1), Demand: vec(0, many, 1)},
				{Weight: 1, Task: vec(0, 1, 0), Demand: vec(0, many, 0)},
			},
			want: []Vector{vec(0, 5.0/3, 1), vec(0, 25.0/3, 0)},
		},
		{
			name:     "no apps",
			capacity: vec(10, 10, 0),
			want:     []Vector{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := DRF(tc.capacity, tc.claims)
			if diff := cmp.Diff(tc.want, got, approx, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("DRF allocations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDRFInvariants checks, over random clusters and apps, what any correct
// DRF must satisfy: nothing beyond capacity or demand, and equal weighted
// dominant shares among the apps that are neither capped nor blocked.
func TestDRFInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		capacity, claims := randomClaims(rng, 8)
		alloc := DRF(capacity, claims)
		var total Vector
		for k, a := range alloc {
			if !a.FitsIn(claims[k].Demand) {
				t.Fatalf("trial %d: app %d gets %v beyond its demand %v", trial, k, a, claims[k].Demand)
			}
			total = total.Add(a)
		}
		if !total.FitsIn(capacity) {
			t.Fatalf("trial %d: %v handed out of %v", trial, total, capacity)
		}
		// Demands here are parallel to tasks, so an app is either capped
		// (gets its demand) or blocked. Progressive filling's bottleneck
		// property: a blocked app uses an exhausted kind in which no app
		// has a higher weighted dominant share than it has.
		level := make([]float64, len(alloc))
		for k, a := range alloc {
			level[k] = a.DominantShare(capacity) / claims[k].Weight
		}
		for k, a := range alloc {
			if a.Sub(claims[k].Demand).IsZero() {
				continue
			}
			bottleneck := false
			for r := range a {
				if claims[k].Task[r] == 0 || math.Abs(total[r]-capacity[r]) > 1e-6 {
					continue
				}
				highest := true
				for j := range alloc {
					if claims[j].Task[r] > 0 && level[j] > level[k]+1e-9 {
						highest = false
					}
				}
				bottleneck = bottleneck || highest
			}
			if !bottleneck {
				t.Fatalf("trial %d: app %d has %v (level %v), below its demand %v, with no exhausted kind in which it is highest (total %v of %v, levels %v)",
					trial, k, a, level[k], claims[k].Demand, total, capacity, level)
			}
		}
	}
}

func TestLeftover(t *testing.T) {
	got := Leftover(vec(18, 9, 0), []Vector{vec(12, 3, 0), vec(2, 6, 0)})
	if diff := cmp.Diff(vec(4, 0, 0), got); diff != "" {
		t.Errorf("Leftover (-want +got):\n%s", diff)
	}
}

func TestJain(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"equal", []float64{0.5, 0.5, 0.5}, 1},
		{"one holds all of four", []float64{1, 0, 0, 0}, 0.25},
		{"1 and 2", []float64{1, 2}, 9.0 / 10}, // (3)² / (2·5)
		{"empty", nil, 1},
		{"all zero", []float64{0, 0}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Jain(tc.xs); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("Jain(%v) = %v, want %v", tc.xs, got, tc.want)
			}
		})
	}
}

func TestJainOfShares(t *testing.T) {
	capacity := vec(10, 10, 0)
	fair := []Vector{vec(5, 5, 0), vec(5, 5, 0), {}}
	// x = [5/5, 2.5/5] = [1, 0.5]; the third app is owed nothing and left
	// out. (1.5)² / (2 · 1.25) = 0.9.
	used := []Vector{vec(5, 5, 0), vec(2.5, 1, 0), vec(1, 1, 0)}
	if got := JainOfShares(capacity, used, fair); math.Abs(got-0.9) > 1e-12 {
		t.Errorf("JainOfShares = %v, want 0.9", got)
	}
}

// TestDRFWithGuarantees works each case by hand. Capacity <100, 100> and
// demands <100, 100> (so dominant share 1 and a growth of <100w, 100w> per
// fill level t) unless a case says otherwise.
func TestDRFWithGuarantees(t *testing.T) {
	full := vec(100, 100, 0)
	tests := []struct {
		name   string
		claims []Claim
		want   []Vector
	}{
		{
			// A holds 60 from the start; B alone grows: 60 + 100t = 100
			// at t = 0.4, B = 40. A's own growth would start at 0.6.
			name:   "a guarantee above the fair share is kept",
			claims: []Claim{{Weight: 1, Demand: full, Min: vec(60, 60, 0)}, {Weight: 1, Demand: full}},
			want:   []Vector{vec(60, 60, 0), vec(40, 40, 0)},
		},
		{
			// A's floor 30 is passed at t = 0.3 (B then holds 30); both
			// grow to 200t = 100, t = 0.5: the plain DRF answer.
			name:   "a guarantee below the fair share changes nothing",
			claims: []Claim{{Weight: 1, Demand: full, Min: vec(30, 30, 0)}, {Weight: 1, Demand: full}},
			want:   []Vector{vec(50, 50, 0), vec(50, 50, 0)},
		},
		{
			// The floor is min(Min, Demand) = 20: A is capped at once.
			name:   "a guarantee above the demand is the demand",
			claims: []Claim{{Weight: 1, Demand: vec(20, 20, 0), Min: vec(60, 60, 0)}, {Weight: 1, Demand: full}},
			want:   []Vector{vec(20, 20, 0), vec(80, 80, 0)},
		},
		{
			// 80 + 80 > 100: both floors scaled to 50, and nothing is left.
			name:   "guarantees beyond the capacity are scaled down alike",
			claims: []Claim{{Weight: 1, Demand: full, Min: vec(80, 80, 0)}, {Weight: 1, Demand: full, Min: vec(80, 80, 0)}},
			want:   []Vector{vec(50, 50, 0), vec(50, 50, 0)},
		},
		{
			// Weights 1, 3, 1 alone give 20, 60, 20. A's floor 30: the
			// others grow at 300 + 100 = 400 per t from 30 held: 30 +
			// 400t = 100 at t = 0.175 < 0.3: B = 52.5, C = 17.5.
			name: "a guarantee among weights",
			claims: []Claim{{Weight: 1, Demand: full, Min: vec(30, 30, 0)}, {Weight: 3, Demand: full},
				{Weight: 1, Demand: full}},
			want: []Vector{vec(30, 30, 0), vec(52.5, 52.5, 0), vec(17.5, 17.5, 0)},
		},
		{
			// A guarantee in memory only: A holds 60 memory and its cpu
			// grows from 0 at 100 per t alongside B's <100, 100>. Memory:
			// 60 + 100t = 100 at t = 0.4, which stops both (A uses
			// memory): A <60, 40>, B <40, 40>.
			name:   "a guarantee in one kind",
			claims: []Claim{{Weight: 1, Demand: full, Min: vec(60, 0, 0)}, {Weight: 1, Demand: full}},
			want:   []Vector{vec(60, 40, 0), vec(40, 40, 0)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := DRF(full, tc.claims)
			if diff := cmp.Diff(tc.want, got, approx); diff != "" {
				t.Errorf("allocations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDRFWithFloorsAgreesWithoutThem checks the guarantee path against
// the fast one on random claims with no guarantee (both must give the
// same allocations), and, with random guarantees, that every app gets
// its floor when the floors fit and nothing goes beyond capacity or
// demand.
func TestDRFWithFloorsAgreesWithoutThem(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 300; trial++ {
		capacity, claims := randomClaims(rng, 6)
		if diff := cmp.Diff(DRF(capacity, claims), drfWithFloors(capacity, capacity, claims), approx); diff != "" {
			t.Fatalf("trial %d: the two paths differ (-fast +floors):\n%s", trial, diff)
		}
		var floors Vector
		for k := range claims {
			claims[k].Min = capacity.Scale(rng.Float64() / float64(len(claims)))
			floors = floors.Add(claims[k].Min.Min(claims[k].Demand))
		}
		alloc := DRF(capacity, claims)
		var total Vector
		for k, a := range alloc {
			if !a.FitsIn(claims[k].Demand) {
				t.Fatalf("trial %d: app %d gets %v beyond its demand %v", trial, k, a, claims[k].Demand)
			}
			floor := claims[k].Min.Min(claims[k].Demand)
			for r := range a {
				if claims[k].Task[r] > 0 && a[r] < floor[r]-1e-6 {
					t.Fatalf("trial %d: app %d gets %v below its floor %v", trial, k, a, floor)
				}
			}
			total = total.Add(a)
		}
		if !total.FitsIn(capacity) {
			t.Fatalf("trial %d: %v handed out of %v (floors %v)", trial, total, capacity, floors)
		}
	}
}

// randomClaims is a random cluster and up to most claims on it, each
// with a task of random kinds and a demand of whole tasks.
func randomClaims(rng *rand.Rand, most int) (Vector, []Claim) {
	var capacity Vector
	for r := range capacity {
		capacity[r] = float64(1 + rng.IntN(100))
	}
	claims := make([]Claim, 1+rng.IntN(most))
	for k := range claims {
		var task Vector
		for r := range task {
			if rng.IntN(3) > 0 {
				task[r] = float64(1 + rng.IntN(10))
			}
		}
		if task.IsZero() {
			task[VCores] = 1
		}
		claims[k] = Claim{Weight: float64(1 + rng.IntN(3)), Task: task, Demand: task.Scale(float64(1 + rng.IntN(30)))}
	}
	return capacity, claims
}

// TestDRFScratchReuse: one DRFScratch computing shares for claim sets of
// varying sizes (larger, then smaller, then larger again, so that its
// memory holds an earlier set's values) gives what a fresh DRFWithin
// gives for each, exactly.
func TestDRFScratchReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	total := New(1000, 100)
	var s DRFScratch
	for round, n := range []int{40, 3, 25, 0, 60, 1, 60} {
		claims := make([]Claim, n)
		for i := range claims {
			claims[i] = Claim{Weight: float64(1 + rng.IntN(3)),
				Demand: New(float64(rng.IntN(400)), float64(rng.IntN(40)))}
		}
		within := New(float64(500+rng.IntN(500)), float64(50+rng.IntN(50)))
		want := DRFWithin(total, within, claims)
		got := s.Within(total, within, claims)
		if !cmp.Equal(got, want, cmpopts.EquateEmpty()) {
			t.Errorf("round %d (%d claims): reused scratch %v, fresh %v", round, n, got, want)
		}
	}
}
