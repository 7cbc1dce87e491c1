package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/workload"
)

// The cluster's own history, for the what-if (`loom tune --rm-history`):
// when a DAG job ends, the RM reads the history its AM wrote in
// loom.history.dir and keeps the job as the simulator replays it (its DAG,
// demands and measured task times, am.History.Replay) with the app's
// record, in the state store too. It is bounded as finished apps are
// (yarn.resourcemanager.max-completed-applications) and lives as long as
// they do.

// recordReplay keeps a finished DAG app's replay. A stock AM wrote no
// history: nothing to keep. Callers hold mu.
func (r *RM) recordReplay(a *appRec) {
	path := filepath.Join(r.cfg.HistoryDir, rpc.AppIDString(a.yid)+".json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var h am.History
	if err == nil {
		err = json.Unmarshal(data, &h)
	}
	var j *workload.Job
	if err == nil {
		j, err = h.Replay()
	}
	if err != nil {
		r.log.Warn().Err(err).Str("app", rpc.AppIDString(a.yid)).Msg("the job's history cannot be replayed; it is not recorded for the what-if")
		return
	}
	j.Name = h.Job + " (" + rpc.AppIDString(a.yid) + ")"
	j.Queue = a.queue
	j.Arrival = time.Duration(a.submitted.UnixMilli()) * time.Millisecond
	a.replay = j
}

// encodeReplay and decodeReplay keep a replay in the app's stored record,
// in Loom's JSON DAG format.
func encodeReplay(j *workload.Job) json.RawMessage {
	if j == nil {
		return nil
	}
	var buf bytes.Buffer
	if err := workload.WriteJSON(&buf, []*workload.Job{j}); err != nil {
		return nil
	}
	return buf.Bytes()
}

func decodeReplay(raw json.RawMessage) *workload.Job {
	if len(raw) == 0 {
		return nil
	}
	jobs, err := workload.ParseJSON(raw)
	if err != nil || len(jobs) != 1 {
		return nil
	}
	return jobs[0]
}

// RecordedJobs are the recorded replays, by submission, the first at 0.
func (b webBackend) RecordedJobs() []*workload.Job {
	r := b.r
	r.mu.Lock()
	var jobs []*workload.Job
	for _, a := range r.appOrder {
		if a.replay != nil && a.done() {
			jobs = append(jobs, a.replay.Clone())
		}
	}
	r.mu.Unlock()
	slices.SortStableFunc(jobs, func(x, y *workload.Job) int { return int(x.Arrival - y.Arrival) })
	for i := len(jobs) - 1; i >= 0; i-- {
		jobs[i].Arrival -= jobs[0].Arrival
	}
	return jobs
}
