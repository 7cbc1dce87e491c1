package server

import (
	"sync"
	"sync/atomic"

	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/rpc"
)

// keyCallNice is how much lower the OS priority of the threads that serve
// clients' and AMs' calls is than the rest of the RM's
// (loom.resourcemanager.call-nice: a nice value added, 0 to 19; Linux
// only), and keyCallThreads how many such threads there are.
//
// Node heartbeats are the RM's latency work: an NM that goes unanswered
// for its expiry interval is lost, with every container on it. Clients'
// and AMs' calls are its throughput work under load: at 10,000 NMs 2,000
// AMs call allocate back to back (each calls again as soon as its reply is
// in), so the RM runs at about a core however cheap a call is, and on a
// machine whose cores are all busy a heartbeat's thread waited for a core
// behind them (docs/results/load.md). The kernel shares busy cores by
// weight: with the calls' decoding, handling and encoding on threads at a
// nice of 5 (a third of the weight of nice 0), a heartbeat's thread gets
// a core first, and the calls take what is left. On a machine with a
// core to spare the calls pay only the hand-off to the pool's thread and
// back (two thread switches): at 2,000 NMs the RM took 15-20% more CPU
// and an allocate round trip 1.3-2.0 ms at the median against 0.6-0.9 ms
// (docs/results/load.md).
//
// Measured at 10,000 NMs on 2 cores (loom bench load --rm-process, the
// generator on the same cores, alternated): heartbeat p99 8.0-13.2 ms at
// nice 5 and 8.7-12.1 ms at 10 (five runs each) against 20.3-25.9 ms with
// the calls at the RM's priority. The price is the calls' share of a full
// machine: with a busy process beside the RM (--cpu-load 1) allocations/s
// were 11,000-11,300 at 5, 9,900-10,600 at 10 and 11,400-11,600 at 0,
// which is why the default is 5. Four threads, not eight: eight gave a
// better tail (median 8.4 ms against 9.9) but, with a connection per NM,
// fewer allocations/s than the target (7582cf6, reverted in b1843fc).
//
// The calls run on a fixed pool of threads, each locked to one goroutine
// for the RM's life, and each call waits for one of them. No handler waits
// for another call (they wait only for the RM's locks and its state
// store), so a full pool only queues calls. The web UI and REST calls do
// not go through the pool; the resource tracker's calls never do.
const (
	keyCallNice    = "loom.resourcemanager.call-nice"
	keyCallThreads = "loom.resourcemanager.call-threads"
)

const (
	defaultCallNice    = 5
	defaultCallThreads = 4
)

func loadCallNice(c *hadoopconf.Conf, cfg *Config) error {
	n, err := intBetween(c, keyCallNice, 0, 19, "the nice value added to the threads that serve clients' and AMs' calls; 0: none, the calls run on their connections' goroutines")
	if err != nil {
		return err
	}
	t, err := intBetween(c, keyCallThreads, 1, 256, "how many threads serve clients' and AMs' calls at "+keyCallNice)
	if err != nil {
		return err
	}
	cfg.CallNice, cfg.CallThreads = int(n), int(t)
	return nil
}

// callPool runs calls on threads at a lower priority (rpc.Executor).
type callPool struct {
	work chan *poolCall
	stop chan struct{}
	wg   sync.WaitGroup
	// ran counts the calls the pool's threads ran.
	ran    atomic.Int64
	closed sync.Once
}

// poolCall is one call's work and the signal that it ran.
type poolCall struct {
	f    func()
	done chan struct{}
}

var poolCalls = sync.Pool{New: func() any { return &poolCall{done: make(chan struct{}, 1)} }}

// startCallPool starts the configured pool and says so in the log; nil
// when the calls are to run on their connections' goroutines: call-nice 0,
// or a thread's priority could not be lowered (logged).
func (r *RM) startCallPool() *callPool {
	if r.cfg.CallNice == 0 {
		return nil
	}
	p := &callPool{work: make(chan *poolCall), stop: make(chan struct{})}
	errs := make(chan error, r.cfg.CallThreads)
	for range r.cfg.CallThreads {
		p.wg.Add(1)
		go p.serve(r.cfg.CallNice, errs)
	}
	for range r.cfg.CallThreads {
		if err := <-errs; err != nil {
			p.close()
			r.log.Warn().Err(err).Int("nice", r.cfg.CallNice).
				Msg("could not lower the priority of the threads for clients' and AMs' calls (" + keyCallNice + "): they run at the RM's")
			return nil
		}
	}
	r.log.Info().Int("threads", r.cfg.CallThreads).Int("nice", r.cfg.CallNice).
		Msg("clients' and AMs' calls run on threads of their own at a lower priority than node heartbeats (" + keyCallNice + ", " + keyCallThreads + ")")
	return p
}

// serve is one of the pool's threads: it lowers its priority, reports
// how that went, and runs calls until the pool closes. Its goroutine
// keeps the thread, which ends with it.
func (p *callPool) serve(nice int, errs chan<- error) {
	defer p.wg.Done()
	err := lowerThreadPriority(nice)
	errs <- err
	if err != nil {
		return
	}
	for {
		select {
		case c := <-p.work:
			c.f()
			p.ran.Add(1)
			c.done <- struct{}{}
		case <-p.stop:
			return
		}
	}
}

// run is the pool's rpc.Executor: it runs f on one of the pool's threads,
// or on the caller's once the pool is closed.
func (p *callPool) run(f func()) {
	c := poolCalls.Get().(*poolCall)
	c.f = f
	select {
	case p.work <- c:
		<-c.done
	case <-p.stop:
		f()
	}
	c.f = nil
	poolCalls.Put(c)
}

// close ends the pool's threads once their calls have run; later calls
// run on their callers' goroutines. The RM may be stopped more than once.
func (p *callPool) close() {
	p.closed.Do(func() { close(p.stop) })
	p.wg.Wait()
}

// onPool returns proto with its calls run on the pool, when there is one.
func (p *callPool) onPool(proto rpc.Protocol) rpc.Protocol {
	if p == nil {
		return proto
	}
	return proto.WithExecutor(p.run)
}
