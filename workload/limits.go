package workload

import (
	"errors"
	"fmt"
	"math"
	"os"
)

// Limits bound one job's size, so that a job too large to run is refused
// when it is submitted, naming the limit, instead of its AM growing until
// it is killed (a job of 10 million tasks took its AM to 1.2 GB, was
// killed twice and failed 50 s after it was accepted). Zero fields take
// the defaults.
type Limits struct {
	// MaxTasks bounds the tasks of one job, over all its stages
	// (loom.job.max-tasks, 1,000,000; the largest catalogue job,
	// TPC-DS q88 at SF 3000, has 76,242).
	MaxTasks int
	// MaxStages bounds the stages of one job (loom.job.max-stages,
	// 10,000; the catalogues' largest have 26).
	MaxStages int
}

// The limits' defaults and the config keys that change them.
const (
	DefaultMaxTasks  = 1_000_000
	DefaultMaxStages = 10_000
	MaxTasksKey      = "loom.job.max-tasks"
	MaxStagesKey     = "loom.job.max-stages"
)

// DefaultLimits are the limits a submission and an AM apply unless
// configured otherwise.
var DefaultLimits = Limits{MaxTasks: DefaultMaxTasks, MaxStages: DefaultMaxStages}

func (l Limits) withDefaults() Limits {
	if l.MaxTasks <= 0 {
		l.MaxTasks = DefaultMaxTasks
	}
	if l.MaxStages <= 0 {
		l.MaxStages = DefaultMaxStages
	}
	return l
}

// Check returns an error naming every job over a limit and the limit it
// is over, e.g. `job "x": 10000000 tasks is more than the limit of
// 1000000 tasks per job (loom.job.max-tasks)`.
func (l Limits) Check(jobs ...*Job) error {
	l = l.withDefaults()
	var errs []error
	for _, j := range jobs {
		n := 0
		for _, s := range j.Stages {
			n = addTasks(n, s.Tasks)
		}
		if err := l.check(j.Name, len(j.Stages), n); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// check checks one job's counts against limits with their defaults.
func (l Limits) check(name string, stages, tasks int) error {
	var errs []error
	if stages > l.MaxStages {
		errs = append(errs, fmt.Errorf("job %q: %d stages is more than the limit of %d stages per job (%s)",
			name, stages, l.MaxStages, MaxStagesKey))
	}
	if tasks > l.MaxTasks {
		errs = append(errs, fmt.Errorf("job %q: %s tasks is more than the limit of %d tasks per job (%s)",
			name, taskCount(tasks), l.MaxTasks, MaxTasksKey))
	}
	return errors.Join(errs...)
}

// addTasks adds a stage's tasks to a job's count, saturating at
// math.MaxInt so that no sum wraps below a limit; counts that are not
// positive are refused by validation, not counted here.
func addTasks(n, tasks int) int {
	if tasks <= 0 {
		return n
	}
	if n > math.MaxInt-tasks {
		return math.MaxInt
	}
	return n + tasks
}

func taskCount(n int) string {
	if n == math.MaxInt {
		return fmt.Sprintf("more than %d", n)
	}
	return fmt.Sprint(n)
}

// ParseJSONWithin is ParseJSON that also refuses, before validating its
// DAG, any job over the limits.
func ParseJSONWithin(data []byte, l Limits) ([]*Job, error) {
	l = l.withDefaults()
	return parseJSON(data, &l)
}

// LoadJSONWithin is LoadJSON that also refuses any job over the limits.
func LoadJSONWithin(path string, l Limits) ([]*Job, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	jobs, err := ParseJSONWithin(data, l)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return jobs, nil
}
