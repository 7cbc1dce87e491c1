// Package lifecycle is the pure state machine of YARN's applications,
// their attempts and their containers, as the ResourceManager keeps them:
// typed events in, actions out, no I/O, no locks, no clock (time is an
// argument). The RM daemon (daemon/rm/server) is a shell around it: it
// turns RPC calls, node heartbeats and timers into events, and carries
// out the actions (tell a node to stop a container, launch an AM, write
// the state store, free resources in the scheduling core).
//
// The rules are YARN's (RMAppImpl, RMAppAttemptImpl, RMContainerImpl):
//   - an attempt's AM container is the first container granted to it; an
//     unmanaged AM has none, and its attempt starts LAUNCHED;
//   - the AM container's end ends the attempt: an AM that exits 0 without
//     registering ran the whole app (FINISHED, SUCCEEDED), any other end
//     fails the attempt;
//   - a failed attempt kills its containers unless the app keeps them
//     across attempts, and starts the next attempt unless the app has
//     failed as often as it may; exits that are not the AM's fault (its
//     node lost, disks failed, preempted, killed by the RM) do not count,
//     nor do failures older than the app's validity interval;
//   - a finished app's containers all end, and nothing moves it again.
//
// States only move forward: a container NEW, RUNNING, COMPLETE; an attempt
// from SCHEDULED through ALLOCATED, LAUNCHED, RUNNING to one final state;
// an app never leaves a final state (between attempts it goes back to
// ACCEPTED, as in YARN).
package lifecycle

import (
	"fmt"
	"time"
)

// AppID names an application; ContainerID a container, numbered across
// the RM (the scheduling core's numbers).
type (
	AppID       int64
	ContainerID int64
)

// AppState is YARN's YarnApplicationState.
type AppState int8

const (
	AppSubmitted AppState = iota
	AppAccepted
	AppRunning
	AppFinished
	AppFailed
	AppKilled
)

func (s AppState) String() string {
	return [...]string{"SUBMITTED", "ACCEPTED", "RUNNING", "FINISHED", "FAILED", "KILLED"}[s]
}

// Done says whether the state is final.
func (s AppState) Done() bool { return s >= AppFinished }

// FinalStatus is YARN's FinalApplicationStatus.
type FinalStatus int8

const (
	FinalUndefined FinalStatus = iota
	FinalSucceeded
	FinalFailed
	FinalKilled
	FinalEnded // a long-running service's end: FINISHED, neither success nor failure
)

func (f FinalStatus) String() string {
	return [...]string{"UNDEFINED", "SUCCEEDED", "FAILED", "KILLED", "ENDED"}[f]
}

// AttemptState is YARN's YarnApplicationAttemptState, in the order an
// attempt moves through it.
type AttemptState int8

const (
	AttemptScheduled AttemptState = iota
	AttemptAllocated
	AttemptLaunched
	AttemptRunning
	AttemptFinished
	AttemptFailed
	AttemptKilled
)

func (s AttemptState) String() string {
	return [...]string{"SCHEDULED", "ALLOCATED", "LAUNCHED", "RUNNING", "FINISHED", "FAILED", "KILLED"}[s]
}

// Done says whether the state is final.
func (s AttemptState) Done() bool { return s >= AttemptFinished }

// ContainerState is YARN's ContainerState.
type ContainerState int8

const (
	ContainerNew ContainerState = iota
	ContainerRunning
	ContainerComplete
)

func (s ContainerState) String() string {
	return [...]string{"NEW", "RUNNING", "COMPLETE"}[s]
}

// YARN's ContainerExitStatus values the lifecycle gives or reads.
const (
	ExitSuccess       = 0
	ExitInvalid       = -1000
	ExitAborted       = -100
	ExitDisksFailed   = -101
	ExitPreempted     = -102
	ExitKilledByAM    = -105
	ExitKilledByRM    = -106
	ExitKilledAppDone = -107
)

// App is one application.
type App struct {
	ID   AppID
	Name string // as diagnostics name it: YARN's application id
	// Unmanaged: its AM runs outside the cluster. KeepContainers: its
	// containers outlive a failed attempt.
	Unmanaged, KeepContainers bool
	// MaxAttempts is how often it may fail; MaxWhy names the setting it
	// came from, for the diagnostics. FailuresValidity, when positive,
	// counts only failures that ended within it.
	MaxAttempts      int
	MaxWhy           string
	FailuresValidity time.Duration

	State       AppState
	Final       FinalStatus
	Diagnostics string
	Finished    time.Time
	Attempts    []*Attempt
	// Live are its containers not yet COMPLETE.
	Live map[ContainerID]*Container
}

// Current is the app's newest attempt, nil before the first.
func (a *App) Current() *Attempt {
	if len(a.Attempts) == 0 {
		return nil
	}
	return a.Attempts[len(a.Attempts)-1]
}

// Attempt is one attempt of an app.
type Attempt struct {
	N     int32
	State AttemptState
	// Registered: its AM has registered. AMGranted: an AM container was
	// granted to it; AM is that container while the lifecycle knows it
	// (after a restart, once a node reports it).
	Registered, AMGranted bool
	AM                    *Container
	// Recovered: read back after an RM restart, its AM must register
	// again. AwaitingAM: no node has reported its AM container yet.
	Recovered, AwaitingAM bool
	// Exit is the AM container's exit status when the attempt failed.
	Exit                        int32
	Diagnostics                 string
	Started, Launched, Finished time.Time
	Conts                       []*Container
}

// CountsAsFailure says whether a failed attempt counts against the app's
// max attempts: not when its AM ended through no fault of its own.
func (at *Attempt) CountsAsFailure() bool {
	if at.State != AttemptFailed {
		return false
	}
	switch at.Exit {
	case ExitAborted, ExitDisksFailed, ExitPreempted, ExitKilledByRM:
		return false
	}
	return true
}

// Container is one container.
type Container struct {
	ID          ContainerID
	Name        string // YARN's container id, for diagnostics
	App         *App
	Attempt     *Attempt
	IsAM        bool
	State       ContainerState
	Exit        int32
	Diagnostics string
	Created     time.Time
	Finished    time.Time
}

// Core holds every app the RM knows.
type Core struct {
	apps  map[AppID]*App
	conts map[ContainerID]*Container
}

// New makes an empty lifecycle core.
func New() *Core {
	return &Core{apps: map[AppID]*App{}, conts: map[ContainerID]*Container{}}
}

// App finds an app.
func (c *Core) App(id AppID) (*App, bool) {
	a, ok := c.apps[id]
	return a, ok
}

// Container finds a container the core still remembers: live, or ended
// until its app is forgotten (a finished app's task containers, until it
// is retired).
func (c *Core) Container(id ContainerID) (*Container, bool) {
	cr, ok := c.conts[id]
	return cr, ok
}

// Step applies one event at time now and returns what the shell must do,
// in order. An event the state cannot take returns an error and changes
// nothing.
func (c *Core) Step(now time.Time, ev Event) ([]Action, error) {
	s := &step{c: c, now: now}
	if err := ev.apply(s); err != nil {
		return nil, err
	}
	return s.acts, nil
}

type step struct {
	c    *Core
	now  time.Time
	acts []Action
}

func (s *step) emit(a Action) { s.acts = append(s.acts, a) }

func (c *Core) app(id AppID) (*App, error) {
	a, ok := c.apps[id]
	if !ok {
		return nil, fmt.Errorf("lifecycle: unknown app %d", id)
	}
	return a, nil
}

// live finds an app that has not finished.
func (c *Core) live(id AppID) (*App, error) {
	a, err := c.app(id)
	if err == nil && a.State.Done() {
		err = fmt.Errorf("lifecycle: app %s has finished (%s)", a.Name, a.State)
	}
	return a, err
}

// newAttempt starts the app's next attempt.
func (s *step) newAttempt(a *App) {
	at := &Attempt{N: int32(len(a.Attempts) + 1), State: AttemptScheduled, Started: s.now, Exit: ExitInvalid}
	a.Attempts = append(a.Attempts, at)
	a.State = AppAccepted
	if a.Unmanaged {
		// Nothing to launch: the attempt waits for its AM, which its
		// owner starts outside the cluster.
		at.State, at.Launched = AttemptLaunched, s.now
	}
	s.emit(AttemptStarted{App: a, Attempt: at})
}

// end closes a container: it is freed, the AM hears of it when it should,
// and an AM container's end ends its attempt.
func (s *step) end(cr *Container, exit int32, diag string, cause Cause) {
	if cr.State == ContainerComplete {
		return
	}
	cr.State, cr.Exit, cr.Diagnostics, cr.Finished = ContainerComplete, exit, diag, s.now
	a := cr.App
	delete(a.Live, cr.ID)
	s.emit(Freed{Container: cr, Cause: cause})
	if cr.IsAM {
		if !a.State.Done() && cr.Attempt == a.Current() {
			s.amEnded(cr)
		}
		return
	}
	if !a.State.Done() && (cr.Attempt == a.Current() && !cr.Attempt.State.Done() || a.KeepContainers) {
		s.emit(Completed{Container: cr})
	}
}

// stop tells the container's node to stop it, then ends it.
func (s *step) stop(cr *Container, exit int32, diag string, cause Cause) {
	if cr.State == ContainerComplete {
		return
	}
	s.emit(Stop{Container: cr})
	s.end(cr, exit, diag, cause)
}

func (s *step) amEnded(cr *Container) {
	a, at := cr.App, cr.Attempt
	if cr.Exit == ExitSuccess && !at.Registered {
		at.State = AttemptFinished
		s.finish(a, AppFinished, FinalSucceeded, "the AM container exited 0 without registering: the command was the whole application")
		return
	}
	if at.State.Done() {
		return // the attempt has ended already; its AM container ends with it
	}
	diag := fmt.Sprintf("AM container %s exited with exitCode: %d", cr.Name, cr.Exit)
	if cr.Diagnostics != "" {
		diag += ". " + cr.Diagnostics
	}
	s.attemptFailed(a, cr.Exit, diag)
}

// attemptFailed ends the current attempt and starts another, unless the
// app has failed as often as it may.
func (s *step) attemptFailed(a *App, exit int32, diag string) {
	at := a.Current()
	at.State, at.Diagnostics, at.Exit, at.Finished = AttemptFailed, diag, exit, s.now
	s.emit(AttemptEnded{App: a, Attempt: at})
	// The AM container ends with its attempt (a silent AM's is still
	// running), whether or not the app keeps the others.
	if am := at.AM; am != nil {
		s.stop(am, ExitKilledByRM, "AM container of a failed attempt", CauseAttempt)
	}
	if !a.KeepContainers {
		for _, cr := range at.Conts {
			s.stop(cr, ExitAborted, "Container of a failed attempt", CauseAttempt)
		}
	}
	if failed := a.failures(s.now); failed >= a.MaxAttempts {
		why := a.MaxWhy
		if why == "" {
			why = "the maximum"
		}
		s.finish(a, AppFailed, FinalFailed, fmt.Sprintf("Application %s failed %d times (%s) due to %s", a.Name, failed, why, diag))
		return
	}
	s.newAttempt(a)
}

// failures counts the failed attempts that count against the max, within
// the validity interval when one is set.
func (a *App) failures(now time.Time) int {
	n := 0
	for _, at := range a.Attempts {
		if at.CountsAsFailure() && (a.FailuresValidity <= 0 || now.Sub(at.Finished) <= a.FailuresValidity) {
			n++
		}
	}
	return n
}

// finish moves an app to a final state and ends everything it holds.
func (s *step) finish(a *App, state AppState, final FinalStatus, diag string) {
	if a.State.Done() {
		return
	}
	a.State, a.Final, a.Finished = state, final, s.now
	if diag != "" {
		a.Diagnostics = diag
	}
	if at := a.Current(); at != nil {
		if at.Finished.IsZero() {
			at.Finished = s.now
		}
		if !at.State.Done() {
			switch state {
			case AppKilled:
				at.State = AttemptKilled
			case AppFailed:
				at.State = AttemptFailed
			default:
				at.State = AttemptFinished
			}
		}
	}
	for _, at := range a.Attempts {
		for _, cr := range at.Conts {
			s.stop(cr, ExitKilledAppDone, "Container of a completed application", CauseApp)
		}
	}
	s.emit(AppEnded{App: a})
}
