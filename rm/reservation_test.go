package rm

import (
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
)

// TestReservationShares: hand-worked on one node of <100, 100>. App 1 is
// ordinary; app 2 belongs to reservation r, which holds <40, 40> for
// [10 s, 20 s); both want the whole cluster.
func TestReservationShares(t *testing.T) {
	c := New(Config{Policy: DRF()})
	step(t, c, NodeUp{Node: 0, Capacity: fairness.New(100, 100)},
		ReservationSet{ID: "r", Resource: fairness.New(40, 40), Start: 10 * time.Second, End: 20 * time.Second},
		AppAdded{App: 1, Weight: 1}, AppAdded{App: 2, Weight: 1}, AppReserved{App: 2, Reservation: "r"},
		AppDemand{App: 1, Demand: fairness.New(100, 100)}, AppDemand{App: 2, Demand: fairness.New(100, 100)})
	for _, tc := range []struct {
		at       time.Duration
		one, two fairness.Vector
		reserved fairness.Vector
		what     string
	}{
		// Before the window: r's app waits; the other has the cluster.
		{5 * time.Second, fairness.New(100, 100), fairness.Vector{}, fairness.Vector{}, "before"},
		// In it: r's app has r, the other the remaining <60, 60>.
		{15 * time.Second, fairness.New(60, 60), fairness.New(40, 40), fairness.New(40, 40), "during"},
		// After it: r's app is one of two equal apps: <50, 50> each.
		{25 * time.Second, fairness.New(50, 50), fairness.New(50, 50), fairness.Vector{}, "after"},
	} {
		if _, err := c.Step(tc.at, Schedule{}); err != nil {
			t.Fatal(err)
		}
		one, _ := c.Share(1)
		two, _ := c.Share(2)
		if one != tc.one || two != tc.two || c.Reserved() != tc.reserved {
			t.Errorf("%s the window: shares %v and %v, reserved %v; want %v, %v, %v", tc.what, one, two, c.Reserved(), tc.one, tc.two, tc.reserved)
		}
	}
	// Removing a reservation makes its apps ordinary at once.
	step(t, c, ReservationSet{ID: "q", Resource: fairness.New(20, 20), Start: 0, End: time.Hour}, AppReserved{App: 1, Reservation: "q"})
	if _, err := c.Step(26*time.Second, Schedule{}); err != nil {
		t.Fatal(err)
	}
	if one, _ := c.Share(1); one != fairness.New(20, 20) {
		t.Errorf("app 1 in q: %v, want <20, 20>", one)
	}
	step(t, c, ReservationRemoved{ID: "q"})
	if _, err := c.Step(27*time.Second, Schedule{}); err != nil {
		t.Fatal(err)
	}
	if one, _ := c.Share(1); one != fairness.New(50, 50) {
		t.Errorf("after q is removed: %v, want <50, 50>", one)
	}
	for _, bad := range []Event{
		ReservationSet{ID: "", Resource: fairness.New(1, 1), End: 1},
		ReservationSet{ID: "x", Resource: fairness.Vector{}, End: 1},
		ReservationSet{ID: "x", Resource: fairness.New(1, 1), Start: 5, End: 5},
		ReservationRemoved{ID: "nosuch"},
		AppReserved{App: 1, Reservation: "nosuch"},
		AppReserved{App: 9, Reservation: "r"},
	} {
		if _, err := c.Step(28*time.Second, bad); err == nil {
			t.Errorf("%#v accepted", bad)
		}
	}
}

// TestReservationPlacesItsApps: hand-worked on <100, 100> with tasks of
// <10, 10>. Four apps ask for ten tasks each; app 2's reservation holds
// <40, 40>. Plain DRF would give each app 2.5 of the 10 slots; with the
// reservation, app 2 first gets its 4, then DRF evens out the other 6
// among the apps by dominant use: apps 1, 3 and 4 get 2 each (app 2
// already holds 40%).
func TestReservationPlacesItsApps(t *testing.T) {
	c := New(Config{Policy: DRF()})
	step(t, c, NodeUp{Node: 0, Capacity: fairness.New(100, 100)},
		ReservationSet{ID: "r", Resource: fairness.New(40, 40), Start: 0, End: time.Hour},
		AppAdded{App: 1, Weight: 1}, AppAdded{App: 2, Weight: 1}, AppAdded{App: 3, Weight: 1}, AppAdded{App: 4, Weight: 1},
		AppReserved{App: 2, Reservation: "r"})
	ask := func(app AppID) Event {
		return AppRequest{App: app, Asks: []Ask{{Priority: 1, Demand: fairness.New(10, 10), Count: 10}}, Demand: fairness.New(100, 100)}
	}
	acts, err := stepActs(c, time.Second, ask(1), ask(2), ask(3), ask(4), Schedule{})
	if err != nil {
		t.Fatal(err)
	}
	per := map[AppID]int{}
	for _, a := range acts {
		if al, ok := a.(*Allocated); ok {
			per[al.Container.App]++
		}
	}
	if per[1] != 2 || per[2] != 4 || per[3] != 2 || per[4] != 2 {
		t.Errorf("containers %v, want 4 for the reservation's app 2 and 2 for each other", per)
	}
}

func stepActs(c *Core, at time.Duration, evs ...Event) ([]Action, error) {
	var all []Action
	for _, ev := range evs {
		acts, err := c.Step(at, ev)
		if err != nil {
			return nil, err
		}
		all = append(all, acts...)
	}
	return all, nil
}
