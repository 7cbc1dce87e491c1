package altruism

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/loomrm/loom/fairness"
)

// AskKind says how badly a job needs a task to run now.
type AskKind int

const (
	// Default asks are for tasks that must start now for the job to meet
	// T_k. The RM serves them within the job's share.
	Default AskKind = iota
	// Altruistic asks are for runnable tasks that may wait. The RM serves
	// them only from the leftover.
	Altruistic
)

func (k AskKind) String() string {
	switch k {
	case Default:
		return "DEFAULT"
	case Altruistic:
		return "ALTRUISTIC"
	}
	return fmt.Sprintf("AskKind(%d)", int(k))
}

// ParseAskKind reads "DEFAULT" or "ALTRUISTIC".
func ParseAskKind(s string) (AskKind, error) {
	switch s {
	case "DEFAULT":
		return Default, nil
	case "ALTRUISTIC":
		return Altruistic, nil
	}
	return 0, fmt.Errorf("unknown ask kind %q (want DEFAULT or ALTRUISTIC)", s)
}

// Split is a job's asks at one decision.
type Split struct {
	// Yielding is false when the P(Altruism) draw made everything
	// DEFAULT at this decision.
	Yielding bool
	// Default[i] and Altruistic[i] count stage i's runnable tasks of each
	// kind.
	Default    []int
	Altruistic []int
	// DefaultDemand is the demand of the DEFAULT tasks.
	DefaultDemand fairness.Vector
	// Leftover is what the job yields now: its allocation minus what is
	// running minus the DEFAULT tasks, never negative.
	Leftover fairness.Vector
	// Wake, when set, is the next instant a planned start falls due: the
	// driver must decide again by then.
	Wake    time.Duration
	HasWake bool
}

// Split divides the job's runnable tasks at the plan's instant: a task
// whose latest start has come is DEFAULT, every other runnable task is
// ALTRUISTIC. When yielding is false (the job is not altruistic at this
// decision), every runnable task is DEFAULT.
func (p *Plan) Split(j *Job, yielding bool) Split {
	n := len(j.Stages)
	sp := Split{Yielding: yielding, Default: make([]int, n), Altruistic: make([]int, n)}
	due := make([]int, n)
	for _, s := range p.Slots {
		if s.Start > p.Now {
			if !sp.HasWake {
				sp.Wake, sp.HasWake = s.Start, true
			}
			continue
		}
		due[s.Stage] += s.Count
	}
	for i, st := range j.Stages {
		if !j.Runnable(i) {
			continue
		}
		d := min(due[i], st.Pending)
		if !yielding {
			d = st.Pending
		}
		sp.Default[i] = d
		sp.Altruistic[i] = st.Pending - d
		sp.DefaultDemand = sp.DefaultDemand.Add(st.Demand.Scale(float64(d)))
	}
	sp.Leftover = p.Alloc.Sub(j.Usage()).Sub(sp.DefaultDemand).ClampZero()
	return sp
}

// Decide draws whether a job is altruistic at one decision: true with
// probability p. It always consumes exactly one draw, so runs that differ
// only in p see the same random stream everywhere else.
func Decide(p float64, rng *rand.Rand) bool {
	return rng.Float64() < p
}
