package workload

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// The classes of a heavy-tailed mix and their shares of the jobs. Production
// traces look like this: most jobs are a single task or a single stage,
// and a few large DAGs hold most of the work. Altruism has to be judged on
// such mixes too, not only on catalogues where every job is a sizeable DAG:
// a one-task job must not wait behind the leftover a large job was given.
const (
	// HeavyTailTiny jobs are one task: a table-scan task of a catalogue
	// query, with its measured duration and demand.
	HeavyTailTiny = 0.6
	// HeavyTailStage jobs are one stage: a catalogue query's scan stage
	// with its real task count.
	HeavyTailStage = 0.3
	// HeavyTailHuge jobs (the rest, 0.1) are whole catalogue queries at
	// the largest scales (TPC-H 500g, TPC-DS scale factor 1000), drawn
	// from the quarter of them with the most tasks.
	HeavyTailHuge = 1 - HeavyTailTiny - HeavyTailStage
)

// HeavyTailed draws n jobs of a heavy-tailed mix (the HeavyTail*
// classes), every stage taken from the TPC-H and TPC-DS catalogues, so
// that durations and demands are the catalogues' measured and derived
// ones. Jobs arrive at 0; assign arrivals with Arrivals.Assign.
func HeavyTailed(n int, rng *rand.Rand) ([]*Job, error) {
	if n <= 0 {
		return nil, fmt.Errorf("heavy-tailed mix: job count %d must be positive", n)
	}
	small, err := Catalogue("tpch:100g+tpcds:100")
	if err != nil {
		return nil, err
	}
	big, err := Catalogue("tpch:500g+tpcds:1000")
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(big, func(a, b *Job) int { return cmp.Compare(b.TotalTasks(), a.TotalTasks()) })
	big = big[:max(1, len(big)/4)]
	// The scan stages of the small catalogue: the stages with no parents.
	var scans []Stage
	for _, j := range small {
		for _, s := range j.Stages {
			if len(s.Parents) == 0 {
				scans = append(scans, s)
			}
		}
	}
	if len(scans) == 0 || len(big) == 0 {
		return nil, errors.New("heavy-tailed mix: the catalogues have no scan stages or no large queries")
	}
	jobs := make([]*Job, n)
	for i := range jobs {
		x := rng.Float64()
		switch {
		case x < HeavyTailTiny:
			s := scans[rng.IntN(len(scans))]
			jobs[i] = &Job{Name: fmt.Sprintf("ht-tiny-%d", i), Stages: []Stage{{Name: s.Name, Tasks: 1, Demand: s.Demand, Duration: s.Duration}}}
		case x < HeavyTailTiny+HeavyTailStage:
			s := scans[rng.IntN(len(scans))]
			jobs[i] = &Job{Name: fmt.Sprintf("ht-stage-%d", i), Stages: []Stage{{Name: s.Name, Tasks: s.Tasks, Demand: s.Demand, Duration: s.Duration}}}
		default:
			j := big[rng.IntN(len(big))].Clone()
			j.Name = fmt.Sprintf("ht-huge-%d-%s", i, j.Name)
			jobs[i] = j
		}
	}
	return jobs, nil
}
