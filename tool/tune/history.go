package tune

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/workload"
)

// HistoryOptions bound what of a cluster's history is replayed.
type HistoryOptions struct {
	// Jobs keeps the most recent this many finished jobs (0: all).
	Jobs int
	// Since keeps the jobs that started within this long of the newest
	// (0: all).
	Since time.Duration
}

// LoadHistory reads the job histories the DAG AMs wrote in dir
// (loom.history.dir, one <app>.json each) and replays the finished ones
// as a workload, in order of start, the first arriving at 0. It says how
// many files it skipped and why, so that nothing is dropped silently.
func LoadHistory(dir string, o HistoryOptions) ([]*workload.Job, []string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("%s holds no job histories (*.json); is it loom.history.dir?", dir)
	}
	var jobs []*workload.Job
	var skipped []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		var h am.History
		if err := json.Unmarshal(data, &h); err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: not a job history: %v", filepath.Base(f), err))
			continue
		}
		j, err := h.Replay()
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", filepath.Base(f), err))
			continue
		}
		j.Name = fmt.Sprintf("%s (%s)", j.Name, h.App)
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil, skipped, errors.New("no finished job in " + dir)
	}
	slices.SortStableFunc(jobs, func(a, b *workload.Job) int { return int(a.Arrival - b.Arrival) })
	if o.Since > 0 {
		newest := jobs[len(jobs)-1].Arrival
		i := 0
		for i < len(jobs) && newest-jobs[i].Arrival > o.Since {
			i++
		}
		jobs = jobs[i:]
	}
	if o.Jobs > 0 && len(jobs) > o.Jobs {
		jobs = jobs[len(jobs)-o.Jobs:]
	}
	first := jobs[0].Arrival
	for _, j := range jobs {
		j.Arrival -= first
	}
	return jobs, skipped, nil
}
