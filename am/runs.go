package am

import "slices"

// runTable is a job's running tasks by container id. Containers come
// with ids that grow, so the table is two arrays sorted by id that are
// appended to; a task that ends stays in place, marked ended, until the
// ended ones outnumber the running ones and are swept out together.
// Looking up a container is a binary search over the ids, which stay
// close together in memory: a Go map of a job's runs cost a few cache
// misses per task start and end, 7% of a 4,000-job simulation.
type runTable struct {
	ids  []int64
	runs []run // runs[i].stage < 0: ended
	live int
}

// endedStage marks a slot whose task ended.
const endedStage = -1

// put files a task under its container, replacing one filed there.
func (t *runTable) put(id int64, r run) {
	n := len(t.ids)
	if n == 0 || id > t.ids[n-1] {
		t.ids, t.runs = append(t.ids, id), append(t.runs, r)
		t.live++
		return
	}
	i, found := slices.BinarySearch(t.ids, id)
	if found {
		if t.runs[i].stage == endedStage {
			t.live++
		}
		t.runs[i] = r
		return
	}
	t.ids, t.runs = slices.Insert(t.ids, i, id), slices.Insert(t.runs, i, r)
	t.live++
}

// take removes and returns the task running in a container.
func (t *runTable) take(id int64) (run, bool) {
	i, found := slices.BinarySearch(t.ids, id)
	if !found || t.runs[i].stage == endedStage {
		return run{}, false
	}
	r := t.runs[i]
	t.runs[i] = run{stage: endedStage}
	t.live--
	if ended := len(t.ids) - t.live; ended > t.live && ended >= 32 || t.live == 0 {
		t.sweep()
	}
	return r, true
}

// sweep drops the ended slots, keeping the others in order.
func (t *runTable) sweep() {
	k := 0
	for i, r := range t.runs {
		if r.stage != endedStage {
			t.ids[k], t.runs[k] = t.ids[i], r
			k++
		}
	}
	clear(t.runs[k:]) // drop the strings they hold
	t.ids, t.runs = t.ids[:k], t.runs[:k]
}

// len is the number of tasks running.
func (t *runTable) len() int { return t.live }

// each calls f with every running task, in order of container id.
func (t *runTable) each(f func(id int64, r run)) {
	for i, r := range t.runs {
		if r.stage != endedStage {
			f(t.ids[i], r)
		}
	}
}
