package sim

import (
	"slices"
	"time"
)

// endQueue holds the running tasks in the order they end: by end, then
// container, so that the order of simultaneous ends is deterministic.
//
// A cluster keeps tens of thousands of tasks running, but they run for
// few distinct times (a stage's tasks all run alike), and tasks are
// started in time order with growing container ids. So the tasks of one
// run time, kept first in, first out, are already in end order: a lane
// per run time, and a small 4-ary heap of the lanes by their first task,
// replace one heap over every task. A task that would break its lane's
// order (never, as the simulator starts tasks) is put in its place.
type endQueue struct {
	lane  map[time.Duration]int32 // run time -> lane
	lanes []endLane
	heap  []int32 // the lanes holding tasks, by their first task
	n     int
}

type endLane struct {
	tasks []task // tasks[head:] are held, in order
	head  int
	at    int32 // its place in heap; -1 while empty
}

func (l *endLane) first() *task { return &l.tasks[l.head] }

func (q *endQueue) Len() int { return q.n }

// peek returns the task that ends first; ok is false when none runs.
func (q *endQueue) peek() (t task, ok bool) {
	if q.n == 0 {
		return task{}, false
	}
	return *q.lanes[q.heap[0]].first(), true
}

// push adds a task started at now.
func (q *endQueue) push(t task, now time.Duration) {
	if q.lane == nil {
		q.lane = make(map[time.Duration]int32)
	}
	id, ok := q.lane[t.end-now]
	if !ok {
		id = int32(len(q.lanes))
		q.lanes = append(q.lanes, endLane{at: -1})
		q.lane[t.end-now] = id
	}
	l := &q.lanes[id]
	q.n++
	if n := len(l.tasks); n == l.head || !endsBefore(&t, &l.tasks[n-1]) {
		l.tasks = append(l.tasks, t)
	} else {
		i, _ := slices.BinarySearchFunc(l.tasks[l.head:], t, func(a, b task) int {
			switch {
			case endsBefore(&a, &b):
				return -1
			case endsBefore(&b, &a):
				return 1
			}
			return 0
		})
		l.tasks = slices.Insert(l.tasks, l.head+i, t)
	}
	switch {
	case l.at < 0:
		l.at = int32(len(q.heap))
		q.heap = append(q.heap, id)
		q.up(int(l.at))
	case l.first().cid == t.cid:
		q.up(int(l.at)) // it went in first
	}
}

// pop removes and returns the task that ends first; there must be one.
func (q *endQueue) pop() task {
	id := q.heap[0]
	l := &q.lanes[id]
	t := *l.first()
	q.n--
	if l.head++; l.head < len(l.tasks) {
		if l.head >= 64 && l.head*2 >= len(l.tasks) {
			// Reuse the lane's memory once half of it is behind.
			n := copy(l.tasks, l.tasks[l.head:])
			l.tasks, l.head = l.tasks[:n], 0
		}
		q.down(0)
		return t
	}
	l.tasks, l.head, l.at = l.tasks[:0], 0, -1
	last := len(q.heap) - 1
	q.heap[0] = q.heap[last]
	q.heap = q.heap[:last]
	if last > 0 {
		q.lanes[q.heap[0]].at = 0
		q.down(0)
	}
	return t
}

func endsBefore(a, b *task) bool {
	if a.end != b.end {
		return a.end < b.end
	}
	return a.cid < b.cid
}

func (q *endQueue) before(i, j int) bool {
	return endsBefore(q.lanes[q.heap[i]].first(), q.lanes[q.heap[j]].first())
}

func (q *endQueue) swap(i, j int) {
	q.heap[i], q.heap[j] = q.heap[j], q.heap[i]
	q.lanes[q.heap[i]].at, q.lanes[q.heap[j]].at = int32(i), int32(j)
}

func (q *endQueue) up(i int) {
	for i > 0 {
		p := (i - 1) / 4
		if !q.before(i, p) {
			return
		}
		q.swap(i, p)
		i = p
	}
}

func (q *endQueue) down(i int) {
	n := len(q.heap)
	for {
		m, c := i, 4*i+1
		for k := c; k < c+4 && k < n; k++ {
			if q.before(k, m) {
				m = k
			}
		}
		if m == i {
			return
		}
		q.swap(i, m)
		i = m
	}
}
