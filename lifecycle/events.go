package lifecycle

import (
	"fmt"
	"time"
)

// Event is something that happened to an app, an attempt or a container.
type Event interface {
	apply(s *step) error
}

// Submitted: a new app, whose first attempt starts.
type Submitted struct {
	App                       AppID
	Name                      string
	Unmanaged, KeepContainers bool
	MaxAttempts               int
	MaxWhy                    string
	FailuresValidity          time.Duration
}

func (e Submitted) apply(s *step) error {
	if _, dup := s.c.apps[e.App]; dup {
		return fmt.Errorf("lifecycle: app %s submitted twice", e.Name)
	}
	if e.MaxAttempts < 1 {
		return fmt.Errorf("lifecycle: app %s may fail %d times; at least one attempt is needed", e.Name, e.MaxAttempts)
	}
	a := &App{ID: e.App, Name: e.Name, Unmanaged: e.Unmanaged, KeepContainers: e.KeepContainers, MaxAttempts: e.MaxAttempts,
		MaxWhy: e.MaxWhy, FailuresValidity: e.FailuresValidity, State: AppSubmitted, Live: map[ContainerID]*Container{}}
	s.c.apps[a.ID] = a
	s.emit(StoreApp{App: a})
	s.newAttempt(a)
	return nil
}

// Granted: the scheduler granted a container to the app's current
// attempt. The attempt's first, unless its AM runs outside the cluster
// or has registered, is its AM container (LaunchAM); any other goes to
// the AM (Give).
type Granted struct {
	Container ContainerID
	App       AppID
	Name      string
}

func (e Granted) apply(s *step) error {
	a, err := s.c.live(e.App)
	if err != nil {
		return err
	}
	if _, dup := s.c.conts[e.Container]; dup {
		return fmt.Errorf("lifecycle: container %d granted twice", e.Container)
	}
	at := a.Current()
	cr := &Container{ID: e.Container, Name: e.Name, App: a, Attempt: at, State: ContainerNew, Exit: ExitInvalid, Created: s.now}
	s.c.conts[cr.ID] = cr
	a.Live[cr.ID] = cr
	at.Conts = append(at.Conts, cr)
	if !at.AMGranted && !at.Registered && !a.Unmanaged {
		cr.IsAM, at.AMGranted, at.AM = true, true, cr
		at.State = AttemptAllocated
		s.emit(LaunchAM{Container: cr})
		return nil
	}
	s.emit(Give{Container: cr})
	return nil
}

// Adopted: after an RM restart a node reported a container of a
// recovered app still running; it is the attempt's again.
type Adopted struct {
	Container ContainerID
	App       AppID
	Attempt   int32
	Name      string
	IsAM      bool
	Created   time.Time
}

func (e Adopted) apply(s *step) error {
	a, err := s.c.live(e.App)
	if err != nil {
		return err
	}
	at := a.Current()
	if at == nil || at.N != e.Attempt {
		return fmt.Errorf("lifecycle: container %s is of attempt %d, not the current attempt of %s", e.Name, e.Attempt, a.Name)
	}
	if _, dup := s.c.conts[e.Container]; dup {
		return fmt.Errorf("lifecycle: container %d adopted twice", e.Container)
	}
	cr := &Container{ID: e.Container, Name: e.Name, App: a, Attempt: at, IsAM: e.IsAM, State: ContainerRunning, Exit: ExitInvalid, Created: e.Created}
	s.c.conts[cr.ID] = cr
	a.Live[cr.ID] = cr
	at.Conts = append(at.Conts, cr)
	if cr.IsAM {
		at.AM, at.AMGranted, at.AwaitingAM = cr, true, false
	}
	return nil
}

// Running: a container's process runs (its node said so, or the RM
// launched it). An AM container's attempt is LAUNCHED.
type Running struct{ Container ContainerID }

func (e Running) apply(s *step) error {
	cr, ok := s.c.conts[e.Container]
	if !ok {
		return fmt.Errorf("lifecycle: unknown container %d", e.Container)
	}
	if cr.State == ContainerNew {
		cr.State = ContainerRunning
	}
	if at := cr.Attempt; cr.IsAM && at.State == AttemptAllocated {
		at.State, at.Launched = AttemptLaunched, s.now
	}
	return nil
}

// Cause says why a container ended, for the shell: CauseApp means its
// app finished, so the scheduling core frees all of the app at once.
type Cause int8

const (
	CauseReported Cause = iota // its node or the AM said so, or it was lost
	CauseAttempt               // its attempt failed
	CauseApp                   // its app finished
)

// Ended: a container ended (its node reported it COMPLETE, the AM
// released it, its node was lost, its launch failed). Stop, when set,
// also tells its node to stop it.
type Ended struct {
	Container   ContainerID
	Exit        int32
	Diagnostics string
	Stop        bool
}

func (e Ended) apply(s *step) error {
	cr, ok := s.c.conts[e.Container]
	if !ok {
		return fmt.Errorf("lifecycle: unknown container %d", e.Container)
	}
	if e.Stop {
		s.stop(cr, e.Exit, e.Diagnostics, CauseReported)
	} else {
		s.end(cr, e.Exit, e.Diagnostics, CauseReported)
	}
	return nil
}

// Registered: the current attempt's AM registered.
type Registered struct{ App AppID }

func (e Registered) apply(s *step) error {
	a, err := s.c.live(e.App)
	if err != nil {
		return err
	}
	at := a.Current()
	if at.State.Done() {
		return fmt.Errorf("lifecycle: attempt %d of %s has ended (%s)", at.N, a.Name, at.State)
	}
	at.Registered, at.State, a.State = true, AttemptRunning, AppRunning
	return nil
}

// Unregistered: the current attempt's AM said the app is over, with its
// final status.
type Unregistered struct {
	App         AppID
	Final       FinalStatus
	Diagnostics string
}

func (e Unregistered) apply(s *step) error {
	a, err := s.c.live(e.App)
	if err != nil {
		return err
	}
	if !a.Current().Registered {
		return fmt.Errorf("lifecycle: the AM of %s unregisters before registering", a.Name)
	}
	// As YARN's RMAppImpl: an app whose AM unregistered is FINISHED,
	// whatever final status the AM reports (Spark's and MapReduce's
	// clients read FINISHED with FAILED as a failed job). FAILED and
	// KILLED are for apps that ended otherwise.
	state, final := AppFinished, e.Final
	if final == FinalUndefined {
		final = FinalSucceeded
	}
	a.Current().State = AttemptFinished
	s.finish(a, state, final, e.Diagnostics)
	return nil
}

// Killed: a user killed the app. Killing a finished app does nothing.
type Killed struct {
	App         AppID
	Diagnostics string
}

func (e Killed) apply(s *step) error {
	a, err := s.c.app(e.App)
	if err != nil {
		return err
	}
	s.finish(a, AppKilled, FinalKilled, e.Diagnostics)
	return nil
}

// AMLost: the current attempt failed without its AM container's exit
// saying so: its AM went silent (ExitInvalid, which counts), or
// after a restart no node reported its AM container (ExitAborted, which
// does not). An attempt that has ended already is left alone.
type AMLost struct {
	App         AppID
	Exit        int32
	Diagnostics string
}

func (e AMLost) apply(s *step) error {
	a, err := s.c.live(e.App)
	if err != nil {
		return err
	}
	if at := a.Current(); !at.State.Done() {
		at.AwaitingAM = false
		s.attemptFailed(a, e.Exit, e.Diagnostics)
	}
	return nil
}

// FailAttempt: a user failed the current attempt (failApplicationAttempt).
// Its AM container ends first, as when the AM dies, and that fails the
// attempt; one without a live AM container fails directly. It counts
// against the max attempts.
type FailAttempt struct {
	App         AppID
	Diagnostics string
}

func (e FailAttempt) apply(s *step) error {
	a, err := s.c.live(e.App)
	if err != nil {
		return err
	}
	at := a.Current()
	if at.State.Done() {
		return nil
	}
	if am := at.AM; am != nil && am.State != ContainerComplete {
		s.stop(am, ExitInvalid, e.Diagnostics, CauseReported)
	}
	if !at.State.Done() {
		s.attemptFailed(a, ExitInvalid, e.Diagnostics)
	}
	return nil
}

// Recovered: an app read back from the state store after an RM restart,
// with its attempts (their containers are adopted as nodes report them).
// Fail, when set, fails it at once (the RM lost something it needs, its
// queue). Otherwise its current attempt goes on: a new one if it had
// none or its last failed; an unmanaged AM registers again; an AM
// container never granted is asked for again (AskAM); one granted waits
// for a node to report it.
type Recovered struct {
	App  *App
	Fail string
}

func (e Recovered) apply(s *step) error {
	a := e.App
	if _, dup := s.c.apps[a.ID]; dup {
		return fmt.Errorf("lifecycle: app %s recovered twice", a.Name)
	}
	if a.MaxAttempts < 1 {
		return fmt.Errorf("lifecycle: app %s may fail %d times; at least one attempt is needed", a.Name, a.MaxAttempts)
	}
	for i, at := range a.Attempts {
		if at.N != int32(i+1) {
			return fmt.Errorf("lifecycle: app %s's attempt %d is numbered %d", a.Name, i+1, at.N)
		}
		if at.AM != nil || len(at.Conts) > 0 {
			return fmt.Errorf("lifecycle: app %s's attempt %d comes with containers; they are adopted", a.Name, at.N)
		}
	}
	if a.Live == nil {
		a.Live = map[ContainerID]*Container{}
	}
	s.c.apps[a.ID] = a
	if a.State.Done() {
		return nil
	}
	if e.Fail != "" {
		a.State, a.Final, a.Finished, a.Diagnostics = AppFailed, FinalFailed, s.now, e.Fail
		s.emit(AppEnded{App: a})
		return nil
	}
	at := a.Current()
	switch {
	case at == nil || at.State == AttemptFailed:
		s.newAttempt(a)
	case a.Unmanaged:
		at.Recovered = true
	case !at.AMGranted:
		s.emit(AskAM{App: a})
	default:
		at.AwaitingAM, at.Recovered = true, true
	}
	return nil
}

// Forget drops a finished app and its containers.
type Forget struct{ App AppID }

func (e Forget) apply(s *step) error {
	a, err := s.c.app(e.App)
	if err != nil {
		return err
	}
	if !a.State.Done() {
		return fmt.Errorf("lifecycle: app %s is %s; only a finished app is forgotten", a.Name, a.State)
	}
	delete(s.c.apps, a.ID)
	for _, at := range a.Attempts {
		for _, cr := range at.Conts {
			delete(s.c.conts, cr.ID)
		}
	}
	return nil
}

// Retire drops the records of an app's ended task containers but the
// newest Keep of each attempt: as YARN's RM, which keeps no record of a
// container once it completes (its history is the timeline server's), a
// long-running RM must not hold every task container of every app it
// remembers, nor a long-running app all of its own. Live containers and
// the attempts' AM containers stay (until Forget).
type Retire struct {
	App  AppID
	Keep int
}

func (e Retire) apply(s *step) error {
	a, err := s.c.app(e.App)
	if err != nil {
		return err
	}
	if e.Keep < 0 {
		return fmt.Errorf("lifecycle: keeping %d ended containers of app %s", e.Keep, a.Name)
	}
	for _, at := range a.Attempts {
		at.Conts = s.retireEnded(at.Conts, e.Keep)
	}
	return nil
}

// retireEnded drops from conts, oldest first, the ended task containers
// beyond the newest keep; the rest keep their order.
func (s *step) retireEnded(conts []*Container, keep int) []*Container {
	ended := func(cr *Container) bool { return !cr.IsAM && cr.State == ContainerComplete }
	n := 0
	for _, cr := range conts {
		if ended(cr) {
			n++
		}
	}
	if n <= keep {
		return conts
	}
	out := conts[:0]
	for _, cr := range conts {
		if n > keep && ended(cr) {
			n--
			delete(s.c.conts, cr.ID)
			continue
		}
		out = append(out, cr)
	}
	clear(conts[len(out):])
	return out
}

// Action is what the shell must do after a step.
type Action interface{ action() }

// AttemptStarted: a new attempt; the shell asks for its AM container
// (unless the app is unmanaged) and stores the attempt.
type AttemptStarted struct {
	App     *App
	Attempt *Attempt
}

// StoreApp: a new app; the shell keeps its record (before any attempt's).
type StoreApp struct{ App *App }

// AskAM: ask the scheduler again for the current attempt's AM container.
type AskAM struct{ App *App }

// LaunchAM: the container is the attempt's AM container: store the
// attempt and launch the AM in it.
type LaunchAM struct{ Container *Container }

// Give: hand the container to its app's AM on its next allocate.
type Give struct{ Container *Container }

// Stop: tell the container's node to stop it.
type Stop struct{ Container *Container }

// Freed: the container ended; the scheduler frees what it held (all at
// once with its app when Cause is CauseApp).
type Freed struct {
	Container *Container
	Cause     Cause
}

// Completed: the AM hears of its container's end on its next allocate.
type Completed struct{ Container *Container }

// AttemptEnded: store the attempt that ended (failed).
type AttemptEnded struct {
	App     *App
	Attempt *Attempt
}

// AppEnded: the app reached a final state: the scheduler drops it, its
// nodes clean up after it, the store keeps its end.
type AppEnded struct{ App *App }

func (AttemptStarted) action() {}
func (AskAM) action()          {}
func (StoreApp) action()       {}
func (LaunchAM) action()       {}
func (Give) action()           {}
func (Stop) action()           {}
func (Freed) action()          {}
func (Completed) action()      {}
func (AttemptEnded) action()   {}
func (AppEnded) action()       {}
