package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Arrivals is an arrival process: every job at once, or a Poisson process
// with a mean inter-arrival time (the Carbyne paper's workloads use 20 s).
type Arrivals struct {
	Poisson bool
	Mean    time.Duration
}

// ParseArrivals reads "batch" (all at once) or "poisson:<mean>", e.g.
// "poisson:20s".
func ParseArrivals(s string) (Arrivals, error) {
	switch {
	case s == "batch" || s == "all":
		return Arrivals{}, nil
	case strings.HasPrefix(s, "poisson:"):
		mean, err := time.ParseDuration(strings.TrimPrefix(s, "poisson:"))
		if err != nil {
			return Arrivals{}, fmt.Errorf("arrivals %q: the mean inter-arrival time: %w", s, err)
		}
		if mean <= 0 {
			return Arrivals{}, fmt.Errorf("arrivals %q: the mean inter-arrival time must be positive", s)
		}
		return Arrivals{Poisson: true, Mean: mean}, nil
	}
	return Arrivals{}, fmt.Errorf("unknown arrival process %q (want batch or poisson:<mean>, e.g. poisson:20s)", s)
}

func (a Arrivals) String() string {
	if a.Poisson {
		return "poisson:" + a.Mean.String()
	}
	return "batch"
}

// Assign sets each job's arrival in order: all at 0 for a batch; for a
// Poisson process the first job arrives at 0 and each gap is drawn from an
// exponential distribution with the mean, rounded to the millisecond.
func (a Arrivals) Assign(jobs []*Job, rng *rand.Rand) {
	var t time.Duration
	for i, j := range jobs {
		if a.Poisson && i > 0 {
			gap := time.Duration(rng.ExpFloat64() * float64(a.Mean))
			t += gap.Round(time.Millisecond)
		}
		j.Arrival = t
	}
}

// Catalogue resolves a catalogue spec to its pool of jobs, every query once:
//
//	tpch              the 22 TPC-H queries at 100g
//	tpch:100g,250g    at each listed scale
//	tpcds             the 103 TPC-DS queries at scale factor 100
//	tpcds:1,1000      at each listed scale factor
//	tpch:100g+tpcds   the union of several specs
func Catalogue(spec string) ([]*Job, error) {
	var pool []*Job
	for _, part := range strings.Split(spec, "+") {
		name, scales, _ := strings.Cut(part, ":")
		switch name {
		case "tpch":
			if scales == "" {
				scales = "100g"
			}
			for _, sc := range strings.Split(scales, ",") {
				for _, q := range TPCHQueries() {
					j, err := TPCH(q, sc)
					if err != nil {
						return nil, fmt.Errorf("catalogue %q: %w", spec, err)
					}
					pool = append(pool, j)
				}
			}
		case "tpcds":
			if scales == "" {
				scales = "100"
			}
			for _, sc := range strings.Split(scales, ",") {
				sf, err := strconv.Atoi(strings.TrimPrefix(sc, "sf"))
				if err != nil {
					return nil, fmt.Errorf("catalogue %q: TPC-DS scale %q is not a number (valid: %v)", spec, sc, TPCDSScales())
				}
				for _, q := range TPCDSQueries() {
					j, err := TPCDS(q, sf)
					if err != nil {
						return nil, fmt.Errorf("catalogue %q: %w", spec, err)
					}
					pool = append(pool, j)
				}
			}
		default:
			return nil, fmt.Errorf("unknown catalogue %q in %q (want tpch[:scales] or tpcds[:scales], joined by +)", name, spec)
		}
	}
	return pool, nil
}

// Sample draws n jobs uniformly at random, with replacement, from pool.
// Each is a copy named "<name>#<i>", so names stay unique.
func Sample(pool []*Job, n int, rng *rand.Rand) ([]*Job, error) {
	if len(pool) == 0 {
		return nil, errors.New("cannot sample from an empty pool of jobs")
	}
	if n <= 0 {
		return nil, fmt.Errorf("job count %d must be positive", n)
	}
	jobs := make([]*Job, n)
	for i := range jobs {
		j := pool[rng.IntN(len(pool))].Clone()
		j.Name = fmt.Sprintf("%s#%d", j.Name, i)
		jobs[i] = j
	}
	return jobs, nil
}
