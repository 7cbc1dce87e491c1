package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/workload"
)

// randomDAGs draws n jobs of random shape: one-stage jobs (some of
// thousands of tasks), chains and fan-ins, with random multi-resource
// demands and durations, arriving as a Poisson process.
func randomDAGs(rng *rand.Rand, n int) []*workload.Job {
	var jobs []*workload.Job
	var at time.Duration
	for i := range n {
		stages := 1 + rng.IntN(6)
		if rng.IntN(4) == 0 {
			stages = 1
		}
		j := &workload.Job{Name: fmt.Sprintf("j%d", i), Arrival: at}
		for k := range stages {
			tasks := 1 + rng.IntN(40)
			if stages == 1 && rng.IntN(3) == 0 {
				tasks = 1000 + rng.IntN(3000)
			}
			d := fairness.New(float64(512*(1+rng.IntN(8))), float64(1+rng.IntN(2)))
			d[fairness.Disk] = float64(10 * rng.IntN(5))
			d[fairness.Network] = float64(20 * rng.IntN(3))
			st := workload.Stage{Name: fmt.Sprintf("s%d", k), Tasks: tasks, Demand: d,
				Duration: time.Duration(100+rng.IntN(20000)) * time.Millisecond}
			for p := range k {
				if p == k-1 || rng.IntN(3) == 0 {
					st.Parents = append(st.Parents, fmt.Sprintf("s%d", p))
				}
			}
			j.Stages = append(j.Stages, st)
		}
		jobs = append(jobs, j)
		at += time.Duration(rng.ExpFloat64() * float64(4*time.Second)).Round(time.Millisecond)
	}
	return jobs
}

// TestPAltruismZeroIsDRF: with P(Altruism) 0, Carbyne makes exactly DRF's
// decisions, byte for byte in the decision log, on generated DAGs
// (including one-stage jobs of thousands of tasks) and on the catalogues.
func TestPAltruismZeroIsDRF(t *testing.T) {
	type workloadCase struct {
		name     string
		machines int
		jobs     []*workload.Job
	}
	var cases []workloadCase
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		cases = append(cases, workloadCase{fmt.Sprintf("generated/seed=%d", seed), 2 + rng.IntN(6), randomDAGs(rng, 12+rng.IntN(12))})
	}
	for _, spec := range []string{"tpch:100g", "tpcds"} {
		pool, err := workload.Catalogue(spec)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		jobs, err := workload.Sample(pool, 30, rng)
		if err != nil {
			t.Fatal(err)
		}
		a, err := PoissonForLoad(jobs, workload.PaperMachine().Scale(10), 1.5)
		if err != nil {
			t.Fatal(err)
		}
		a.Assign(jobs, rng)
		cases = append(cases, workloadCase{spec, 10, jobs})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Machines = tc.machines
			cfg.Policy = "drf"
			drf, drfLog := runLogged(t, cfg, tc.jobs)
			cfg.Policy, cfg.PAltruism = "carbyne", 0
			car, carLog := runLogged(t, cfg, tc.jobs)
			if drfLog == "" {
				t.Fatal("empty decision log")
			}
			if carLog != drfLog {
				t.Fatalf("carbyne at P(Altruism) 0 decided differently from drf: %s", firstDiff(drfLog, carLog))
			}
			for i := range drf.Jobs {
				if drf.Jobs[i].Finish != car.Jobs[i].Finish {
					t.Errorf("%s finished at %v under drf, %v under carbyne P=0", drf.Jobs[i].Name, drf.Jobs[i].Finish, car.Jobs[i].Finish)
				}
			}
		})
	}
}

// TestQueueAltruism: a queue's override of P(Altruism) reaches its jobs'
// AMs. With the cluster at 1 and queue "etl" at 0, etl's jobs run no task
// on an ALTRUISTIC container (their AMs never yield); the others do.
func TestQueueAltruism(t *testing.T) {
	cfg, jobs := mix(t, 7)
	etl := map[string]bool{}
	for i, j := range jobs {
		if i%2 == 0 {
			j.Queue, etl[j.Name] = "etl", true
		}
	}
	cfg.Policy, cfg.PAltruism, cfg.QueuePAltruism = "carbyne", 1, map[string]float64{"etl": 0}
	r, err := Run(cfg, jobs)
	if err != nil {
		t.Fatal(err)
	}
	others := 0
	for _, j := range r.Jobs {
		if etl[j.Name] && j.Altruistic != 0 {
			t.Errorf("%s (etl, P 0) ran %d tasks on ALTRUISTIC containers", j.Name, j.Altruistic)
		}
		if !etl[j.Name] {
			others += j.Altruistic
		}
	}
	if others == 0 {
		t.Error("no job outside etl ran a task on an ALTRUISTIC container")
	}
	cfg.QueuePAltruism = map[string]float64{"etl": 1.5}
	if _, err := Run(cfg, jobs); err == nil || !strings.Contains(err.Error(), `queue "etl"`) {
		t.Errorf("a queue's P(Altruism) of 1.5: %v", err)
	}
}
