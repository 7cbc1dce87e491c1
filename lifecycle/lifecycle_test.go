package lifecycle

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// kinds names a step's actions, so a test can state them by hand.
func kinds(acts []Action) string {
	var out []string
	for _, a := range acts {
		switch a := a.(type) {
		case AttemptStarted:
			out = append(out, fmt.Sprintf("start#%d", a.Attempt.N))
		case AskAM:
			out = append(out, "askAM")
		case StoreApp:
			out = append(out, "store")
		case LaunchAM:
			out = append(out, fmt.Sprintf("launch:%d", a.Container.ID))
		case Give:
			out = append(out, fmt.Sprintf("give:%d", a.Container.ID))
		case Stop:
			out = append(out, fmt.Sprintf("stop:%d", a.Container.ID))
		case Freed:
			out = append(out, fmt.Sprintf("free:%d/%d", a.Container.ID, a.Cause))
		case Completed:
			out = append(out, fmt.Sprintf("done:%d", a.Container.ID))
		case AttemptEnded:
			out = append(out, fmt.Sprintf("ended#%d", a.Attempt.N))
		case AppEnded:
			out = append(out, "app:"+a.App.State.String())
		}
	}
	return strings.Join(out, " ")
}

// TestScenarios walks YARN's lifecycles one event at a time; each row's
// actions and states are worked out by hand from the rules in the
// package comment.
func TestScenarios(t *testing.T) {
	sub := func(max int) Submitted {
		return Submitted{App: 1, Name: "app_1", MaxAttempts: max, MaxWhy: "the maximum"}
	}
	type row struct {
		ev      Event
		acts    string
		app     AppState
		attempt AttemptState // of the current attempt
		err     string
	}
	cases := map[string][]row{
		"a DAG job runs and finishes": {
			{ev: sub(2), acts: "store start#1", app: AppAccepted, attempt: AttemptScheduled},
			{ev: Granted{Container: 10, App: 1, Name: "c10"}, acts: "launch:10", app: AppAccepted, attempt: AttemptAllocated},
			{ev: Running{Container: 10}, app: AppAccepted, attempt: AttemptLaunched},
			{ev: Registered{App: 1}, app: AppRunning, attempt: AttemptRunning},
			{ev: Granted{Container: 11, App: 1}, acts: "give:11", app: AppRunning, attempt: AttemptRunning},
			{ev: Granted{Container: 12, App: 1}, acts: "give:12", app: AppRunning, attempt: AttemptRunning},
			{ev: Ended{Container: 11, Exit: 0}, acts: "free:11/0 done:11", app: AppRunning, attempt: AttemptRunning},
			{ev: Unregistered{App: 1, Final: FinalUndefined}, acts: "stop:10 free:10/2 stop:12 free:12/2 app:FINISHED",
				app: AppFinished, attempt: AttemptFinished},
			{ev: Ended{Container: 12, Exit: -107}, app: AppFinished, attempt: AttemptFinished},
			{ev: Granted{Container: 13, App: 1}, app: AppFinished, attempt: AttemptFinished, err: "has finished"},
		},
		"an AM that dies is retried, then the app fails": {
			{ev: sub(2), acts: "store start#1", app: AppAccepted, attempt: AttemptScheduled},
			{ev: Granted{Container: 1, App: 1, Name: "c1"}, acts: "launch:1", app: AppAccepted, attempt: AttemptAllocated},
			{ev: Registered{App: 1}, app: AppRunning, attempt: AttemptRunning},
			{ev: Granted{Container: 2, App: 1}, acts: "give:2", app: AppRunning, attempt: AttemptRunning},
			// The AM exits 1: its task container is killed, attempt 2 starts.
			{ev: Ended{Container: 1, Exit: 1}, acts: "free:1/0 ended#1 stop:2 free:2/1 start#2", app: AppAccepted, attempt: AttemptScheduled},
			{ev: Granted{Container: 3, App: 1, Name: "c3"}, acts: "launch:3", app: AppAccepted, attempt: AttemptAllocated},
			// Exit 1 again: two failures of two, the app fails.
			{ev: Ended{Container: 3, Exit: 1}, acts: "free:3/0 ended#2 app:FAILED", app: AppFailed, attempt: AttemptFailed},
		},
		"a lost node does not count against the attempts": {
			{ev: sub(1), acts: "store start#1", app: AppAccepted, attempt: AttemptScheduled},
			{ev: Granted{Container: 1, App: 1}, acts: "launch:1", app: AppAccepted, attempt: AttemptAllocated},
			{ev: Ended{Container: 1, Exit: ExitAborted}, acts: "free:1/0 ended#1 start#2", app: AppAccepted, attempt: AttemptScheduled},
			{ev: Granted{Container: 2, App: 1}, acts: "launch:2", app: AppAccepted, attempt: AttemptAllocated},
			{ev: Ended{Container: 2, Exit: 137}, acts: "free:2/0 ended#2 app:FAILED", app: AppFailed, attempt: AttemptFailed},
		},
		"an AM that exits 0 without registering was the whole app": {
			{ev: sub(2), acts: "store start#1", app: AppAccepted, attempt: AttemptScheduled},
			{ev: Granted{Container: 1, App: 1}, acts: "launch:1", app: AppAccepted, attempt: AttemptAllocated},
			{ev: Ended{Container: 1, Exit: 0}, acts: "free:1/0 app:FINISHED", app: AppFinished, attempt: AttemptFinished},
		},
		"kept containers outlive a failed attempt and reach the next AM": {
			{ev: Submitted{App: 1, Name: "app_1", MaxAttempts: 3, KeepContainers: true}, acts: "store start#1", app: AppAccepted, attempt: AttemptScheduled},
			{ev: Granted{Container: 1, App: 1}, acts: "launch:1", app: AppAccepted, attempt: AttemptAllocated},
			{ev: Registered{App: 1}, app: AppRunning, attempt: AttemptRunning},
			{ev: Granted{Container: 2, App: 1}, acts: "give:2", app: AppRunning, attempt: AttemptRunning},
			{ev: AMLost{App: 1, Exit: ExitInvalid, Diagnostics: "silent"}, acts: "ended#1 stop:1 free:1/1 start#2", app: AppAccepted, attempt: AttemptScheduled},
			// Attempt 1's task ends: the new AM hears of it.
			{ev: Ended{Container: 2, Exit: 0}, acts: "free:2/0 done:2", app: AppAccepted, attempt: AttemptScheduled},
		},
		"a user fails an attempt; then kills the app": {
			{ev: sub(3), acts: "store start#1", app: AppAccepted, attempt: AttemptScheduled},
			{ev: Granted{Container: 1, App: 1}, acts: "launch:1", app: AppAccepted, attempt: AttemptAllocated},
			{ev: FailAttempt{App: 1, Diagnostics: "by user"}, acts: "stop:1 free:1/0 ended#1 start#2", app: AppAccepted, attempt: AttemptScheduled},
			{ev: FailAttempt{App: 1, Diagnostics: "by user"}, acts: "ended#2 start#3", app: AppAccepted, attempt: AttemptScheduled},
			{ev: Killed{App: 1, Diagnostics: "killed"}, acts: "app:KILLED", app: AppKilled, attempt: AttemptKilled},
			{ev: Killed{App: 1}, app: AppKilled, attempt: AttemptKilled},
			{ev: Registered{App: 1}, app: AppKilled, attempt: AttemptKilled, err: "has finished"},
		},
		"an unmanaged AM has no container and starts LAUNCHED": {
			{ev: Submitted{App: 1, Name: "app_1", MaxAttempts: 1, Unmanaged: true}, acts: "store start#1", app: AppAccepted, attempt: AttemptLaunched},
			{ev: Registered{App: 1}, app: AppRunning, attempt: AttemptRunning},
			{ev: Granted{Container: 5, App: 1}, acts: "give:5", app: AppRunning, attempt: AttemptRunning},
			// As YARN: FINISHED, whatever final status the AM gives.
			{ev: Unregistered{App: 1, Final: FinalFailed}, acts: "stop:5 free:5/2 app:FINISHED", app: AppFinished, attempt: AttemptFinished},
		},
		"bad events change nothing": {
			{ev: sub(0), err: "at least one attempt"},
			{ev: sub(1), acts: "store start#1", app: AppAccepted, attempt: AttemptScheduled},
			{ev: sub(1), app: AppAccepted, attempt: AttemptScheduled, err: "submitted twice"},
			{ev: Granted{Container: 1, App: 9}, app: AppAccepted, attempt: AttemptScheduled, err: "unknown app 9"},
			{ev: Ended{Container: 4}, app: AppAccepted, attempt: AttemptScheduled, err: "unknown container 4"},
			{ev: Unregistered{App: 1}, app: AppAccepted, attempt: AttemptScheduled, err: "before registering"},
			{ev: Granted{Container: 1, App: 1}, acts: "launch:1", app: AppAccepted, attempt: AttemptAllocated},
			{ev: Granted{Container: 1, App: 1}, app: AppAccepted, attempt: AttemptAllocated, err: "granted twice"},
			{ev: Forget{App: 1}, app: AppAccepted, attempt: AttemptAllocated, err: "only a finished app"},
		},
	}
	for name, rows := range cases {
		t.Run(name, func(t *testing.T) {
			c := New()
			now := t0
			for i, r := range rows {
				now = now.Add(time.Second)
				acts, err := c.Step(now, r.ev)
				if r.err != "" {
					if err == nil || !strings.Contains(err.Error(), r.err) {
						t.Fatalf("step %d %T: error %v, want one saying %q", i, r.ev, err, r.err)
					}
				} else if err != nil {
					t.Fatalf("step %d %T: %v", i, r.ev, err)
				}
				if got := kinds(acts); got != r.acts {
					t.Errorf("step %d %T: actions %q, want %q", i, r.ev, got, r.acts)
				}
				a, ok := c.App(1)
				if !ok {
					continue
				}
				if a.State != r.app || a.Current().State != r.attempt {
					t.Errorf("step %d %T: app %s, attempt %s; want %s, %s", i, r.ev, a.State, a.Current().State, r.app, r.attempt)
				}
			}
		})
	}
}

// TestFailureValidity: with a validity interval, only failures within it
// count, as YARN's sliding window.
func TestFailureValidity(t *testing.T) {
	c := New()
	step := func(at time.Time, ev Event) {
		t.Helper()
		if _, err := c.Step(at, ev); err != nil {
			t.Fatal(err)
		}
	}
	step(t0, Submitted{App: 1, Name: "a", MaxAttempts: 2, FailuresValidity: time.Minute})
	step(t0, Granted{Container: 1, App: 1})
	step(t0.Add(time.Second), Ended{Container: 1, Exit: 1}) // failure 1 at t0+1s
	step(t0.Add(2*time.Minute), Granted{Container: 2, App: 1})
	step(t0.Add(2*time.Minute), Ended{Container: 2, Exit: 1}) // failure 2, but 1 has expired
	a, _ := c.App(1)
	if a.State != AppAccepted || len(a.Attempts) != 3 {
		t.Fatalf("app %s with %d attempts; want ACCEPTED with a third attempt (the first failure is outside the minute)", a.State, len(a.Attempts))
	}
	step(t0.Add(2*time.Minute+time.Second), Granted{Container: 3, App: 1})
	step(t0.Add(2*time.Minute+2*time.Second), Ended{Container: 3, Exit: 1})
	if a.State != AppFailed || !strings.Contains(a.Diagnostics, "failed 2 times") {
		t.Fatalf("app %s (%q); want FAILED after two failures within the minute", a.State, a.Diagnostics)
	}
}

// TestRecovered: an app read back after a restart goes on as the rules
// say for its current attempt.
func TestRecovered(t *testing.T) {
	cases := []struct {
		name    string
		app     *App
		fail    string
		acts    string
		state   AppState
		waiting bool
	}{
		{"failed last attempt: a new one", &App{ID: 1, Name: "a", MaxAttempts: 2, State: AppAccepted,
			Attempts: []*Attempt{{N: 1, State: AttemptFailed, Exit: 1}}}, "", "start#2", AppAccepted, false},
		{"AM never granted: asked again", &App{ID: 1, Name: "a", MaxAttempts: 2, State: AppAccepted,
			Attempts: []*Attempt{{N: 1, State: AttemptScheduled}}}, "", "askAM", AppAccepted, false},
		{"AM granted: waits for its node", &App{ID: 1, Name: "a", MaxAttempts: 2, State: AppRunning,
			Attempts: []*Attempt{{N: 1, State: AttemptRunning, AMGranted: true, Registered: true}}}, "", "", AppRunning, true},
		{"queue gone: fails", &App{ID: 1, Name: "a", MaxAttempts: 2, State: AppRunning,
			Attempts: []*Attempt{{N: 1, State: AttemptRunning, AMGranted: true}}}, "no queue", "app:FAILED", AppFailed, false},
		{"finished: stays", &App{ID: 1, Name: "a", MaxAttempts: 2, State: AppFinished, Final: FinalSucceeded,
			Attempts: []*Attempt{{N: 1, State: AttemptFinished}}}, "", "", AppFinished, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			acts, err := c.Step(t0, Recovered{App: tc.app, Fail: tc.fail})
			if err != nil {
				t.Fatal(err)
			}
			if got := kinds(acts); got != tc.acts {
				t.Errorf("actions %q, want %q", got, tc.acts)
			}
			if tc.app.State != tc.state || tc.app.Attempts[0].AwaitingAM != tc.waiting {
				t.Errorf("app %s awaiting AM %v; want %s, %v", tc.app.State, tc.app.Attempts[0].AwaitingAM, tc.state, tc.waiting)
			}
		})
	}
	// The awaited AM container, reported by a node, is the attempt's.
	c := New()
	a := &App{ID: 1, Name: "a", MaxAttempts: 2, State: AppRunning, Attempts: []*Attempt{{N: 1, State: AttemptRunning, AMGranted: true}}}
	if _, err := c.Step(t0, Recovered{App: a}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Step(t0, Adopted{Container: 7, App: 1, Attempt: 2, IsAM: true}); err == nil {
		t.Error("a container of attempt 2 was adopted into attempt 1")
	}
	if _, err := c.Step(t0, Adopted{Container: 7, App: 1, Attempt: 1, IsAM: true}); err != nil {
		t.Fatal(err)
	}
	if at := a.Current(); at.AwaitingAM || at.AM == nil || at.AM.ID != 7 {
		t.Errorf("after adoption: awaiting %v, AM %v", at.AwaitingAM, at.AM)
	}
}

// TestRandomEvents drives the core with random event sequences, good and
// bad, and checks after every step that no container is lost or leased
// twice and that states only move forward.
func TestRandomEvents(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := New()
		now := t0
		nextCont := ContainerID(1)
		granted := map[ContainerID]int{} // LaunchAM or Give per container
		freed := map[ContainerID]int{}
		contState := map[ContainerID]ContainerState{}
		type attemptKey struct {
			app AppID
			n   int32
		}
		attemptState := map[attemptKey]AttemptState{}
		appDone := map[AppID]AppState{}
		const apps = 3
		for i := 0; i < 120; i++ {
			now = now.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
			app := AppID(1 + rng.IntN(apps))
			cont := ContainerID(1 + rng.IntN(int(nextCont)))
			var ev Event
			switch rng.IntN(10) {
			case 0:
				ev = Submitted{App: app, Name: fmt.Sprint("app_", app), MaxAttempts: 1 + rng.IntN(3),
					KeepContainers: rng.IntN(2) == 0, Unmanaged: rng.IntN(5) == 0, FailuresValidity: time.Duration(rng.IntN(3)) * 10 * time.Second}
			case 1, 2:
				ev = Granted{Container: nextCont, App: app}
				nextCont++
			case 3:
				ev = Running{Container: cont}
			case 4, 5:
				exits := []int32{0, 1, ExitAborted, ExitPreempted, ExitKilledByRM, 137}
				ev = Ended{Container: cont, Exit: exits[rng.IntN(len(exits))], Stop: rng.IntN(2) == 0}
			case 6:
				ev = Registered{App: app}
			case 7:
				ev = []Event{Unregistered{App: app, Final: FinalStatus(rng.IntN(4))}, Killed{App: app}}[rng.IntN(2)]
			case 8:
				ev = []Event{AMLost{App: app, Exit: ExitInvalid}, FailAttempt{App: app}, AMLost{App: app, Exit: ExitAborted}}[rng.IntN(3)]
			case 9:
				ev = []Event{Forget{App: app}, Retire{App: app}}[rng.IntN(2)]
			}
			acts, err := c.Step(now, ev)
			if f, ok := ev.(Forget); ok && err == nil {
				delete(appDone, f.App)
				for k := range attemptState {
					if k.app == f.App {
						delete(attemptState, k)
					}
				}
			}
			if err != nil && len(acts) > 0 {
				t.Fatalf("seed %d step %d %#v: refused (%v) but acted: %s", seed, i, ev, err, kinds(acts))
			}
			for _, a := range acts {
				switch a := a.(type) {
				case LaunchAM:
					granted[a.Container.ID]++
				case Give:
					granted[a.Container.ID]++
				case Freed:
					freed[a.Container.ID]++
					if freed[a.Container.ID] > 1 {
						t.Fatalf("seed %d step %d: container %d freed twice", seed, i, a.Container.ID)
					}
				}
			}
			for id, n := range granted {
				if n > 1 {
					t.Fatalf("seed %d step %d: container %d leased %d times", seed, i, id, n)
				}
			}
			for id, a := range c.apps {
				if prev, ok := appDone[id]; ok && a.State != prev {
					t.Fatalf("seed %d step %d: app %d left its final state %s for %s", seed, i, id, prev, a.State)
				}
				if a.State.Done() {
					appDone[id] = a.State
					if len(a.Live) > 0 {
						t.Fatalf("seed %d step %d: finished app %d holds %d live containers", seed, i, id, len(a.Live))
					}
				}
				for k, at := range a.Attempts {
					key := attemptKey{id, at.N}
					if prev, ok := attemptState[key]; ok && at.State < prev {
						t.Fatalf("seed %d step %d: attempt %d of app %d went back from %s to %s", seed, i, at.N, id, prev, at.State)
					}
					attemptState[key] = at.State
					if k < len(a.Attempts)-1 && !at.State.Done() {
						t.Fatalf("seed %d step %d: app %d's old attempt %d is %s beside attempt %d", seed, i, id, at.N, at.State, a.Current().N)
					}
					for _, cr := range at.Conts {
						if cr.App != a || cr.Attempt != at {
							t.Fatalf("seed %d step %d: container %d filed under the wrong attempt", seed, i, cr.ID)
						}
						_, live := a.Live[cr.ID]
						if live != (cr.State != ContainerComplete) {
							t.Fatalf("seed %d step %d: container %d is %s but live=%v", seed, i, cr.ID, cr.State, live)
						}
						if prev, ok := contState[cr.ID]; ok && cr.State < prev {
							t.Fatalf("seed %d step %d: container %d went back from %s to %s", seed, i, cr.ID, prev, cr.State)
						}
						contState[cr.ID] = cr.State
						if (cr.State == ContainerComplete) != (freed[cr.ID] == 1) {
							t.Fatalf("seed %d step %d: container %d is %s, freed %d times", seed, i, cr.ID, cr.State, freed[cr.ID])
						}
					}
				}
			}
		}
		// Killing every app ends every container it was given: none lost.
		for id := range c.apps {
			acts, err := c.Step(now, Killed{App: id})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range acts {
				if f, ok := a.(Freed); ok {
					freed[f.Container.ID]++
				}
			}
		}
		for id := range c.conts {
			if freed[id] != 1 {
				t.Fatalf("seed %d: container %d freed %d times after every app was killed", seed, id, freed[id])
			}
		}
	}
}

// An app's ended task containers are retired but the newest Keep of each
// attempt; live ones and the AM containers stay.
func TestRetireKeepsTheAMAndTheNewestEnded(t *testing.T) {
	c := New()
	now := t0
	step := func(ev Event) error {
		now = now.Add(time.Second)
		_, err := c.Step(now, ev)
		return err
	}
	for _, ev := range []Event{
		Submitted{App: 1, Name: "app_1", MaxAttempts: 2},
		Granted{Container: 1, App: 1}, // attempt 1's AM
		Registered{App: 1},
		Granted{Container: 2, App: 1},
		Ended{Container: 2, Exit: 0},
		AMLost{App: 1, Exit: 137},     // attempt 2 starts
		Granted{Container: 3, App: 1}, // its AM
		Registered{App: 1},
		Granted{Container: 4, App: 1},
		Granted{Container: 5, App: 1},
		Granted{Container: 6, App: 1},
		Granted{Container: 7, App: 1},
		Ended{Container: 5, Exit: 0},
		Ended{Container: 4, Exit: 1},
		Ended{Container: 6, Exit: 0},
	} {
		if err := step(ev); err != nil {
			t.Fatalf("%#v: %v", ev, err)
		}
	}
	remembered := func(want map[ContainerID]bool) {
		t.Helper()
		for id, w := range want {
			if _, ok := c.Container(id); ok != w {
				t.Errorf("container %d remembered: %v, want %v", id, ok, w)
			}
		}
	}
	if err := step(Retire{App: 9}); err == nil || !strings.Contains(err.Error(), "unknown app 9") {
		t.Fatalf("retiring an unknown app: %v", err)
	}
	if err := step(Retire{App: 1, Keep: -1}); err == nil {
		t.Fatal("a negative keep was taken")
	}
	// Running, keep 1: attempt 1 keeps its one ended task (2); attempt 2
	// keeps the newest in grant order of its three (6), and its live one
	// (7).
	if err := step(Retire{App: 1, Keep: 1}); err != nil {
		t.Fatal(err)
	}
	remembered(map[ContainerID]bool{1: true, 2: true, 3: true, 4: false, 5: false, 6: true, 7: true})
	if err := step(Retire{App: 1}); err != nil {
		t.Fatal(err)
	}
	remembered(map[ContainerID]bool{1: true, 2: false, 3: true, 6: false, 7: true})
	if err := step(Unregistered{App: 1, Final: FinalSucceeded}); err != nil {
		t.Fatal(err)
	}
	if err := step(Retire{App: 1}); err != nil {
		t.Fatal(err)
	}
	remembered(map[ContainerID]bool{1: true, 3: true, 7: false})
	a, _ := c.App(1)
	if len(a.Attempts) != 2 {
		t.Fatalf("%d attempts, want 2", len(a.Attempts))
	}
	for i, at := range a.Attempts {
		if len(at.Conts) != 1 || at.Conts[0] != at.AM {
			t.Errorf("attempt %d keeps %d containers, want only its AM's", i+1, len(at.Conts))
		}
	}
	// Retiring again changes nothing; forgetting still works.
	if err := step(Retire{App: 1}); err != nil {
		t.Fatal(err)
	}
	if err := step(Forget{App: 1}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Container(1); ok {
		t.Error("the AM container outlived its forgotten app")
	}
}
