package adapter

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
)

func vec(mb, cores float64) fairness.Vector { return fairness.New(mb, cores) }

func ptr(v fairness.Vector) *fairness.Vector { return &v }

// TestRequest: the core event of an allocate call, with the demand worked
// out by hand for a Loom AM (its own plus its AM container) and a stock AM
// (what it holds plus what it asks for).
func TestRequest(t *testing.T) {
	asks := []rm.Ask{
		{Priority: 1, Demand: vec(512, 1), Kind: altruism.Default, Count: 3},
		{Priority: 2, Demand: vec(2048, 1), Kind: altruism.Altruistic, Count: 1},
		{Priority: 3, Demand: vec(4096, 2), Kind: altruism.Default, Count: 0},
	}
	app := App{ID: 7, Usage: vec(3072, 2), AMContainer: vec(1024, 1)}
	tests := []struct {
		name string
		app  App
		m    Message
		want fairness.Vector
		err  string
	}{
		// 10240+1024 MB, 6+1 vcores: the AM's own demand and its container.
		{"Loom AM", app, Message{Asks: asks, Demand: ptr(vec(10240, 6)), RemainingWork: 12.5, CriticalTime: 3 * time.Second}, vec(11264, 7), ""},
		// 3072 held + 3×512 + 1×2048 = 6656 MB; 2 + 3 + 1 = 6 vcores.
		{"stock AM", app, Message{Asks: asks}, vec(6656, 6), ""},
		// A Loom AM that says it needs nothing more: its AM container only.
		{"Loom AM done", app, Message{Demand: ptr(vec(0, 0))}, vec(1024, 1), ""},
		// The AM container's ask of a new attempt: nothing held yet.
		{"AM ask", App{ID: 8}, Message{Asks: []rm.Ask{{Demand: vec(1024, 1), Count: 1}}}, vec(1024, 1), ""},
		{"negative demand", app, Message{Demand: ptr(vec(-1, 1))}, fairness.Vector{}, "must be finite and not negative"},
		{"NaN demand", app, Message{Demand: ptr(vec(math.NaN(), 1))}, fairness.Vector{}, "must be finite and not negative"},
		{"negative work", app, Message{RemainingWork: -1}, fairness.Vector{}, "remaining work"},
		{"infinite work", app, Message{RemainingWork: math.Inf(1)}, fairness.Vector{}, "remaining work"},
		{"negative critical path", app, Message{CriticalTime: -time.Second}, fairness.Vector{}, "critical path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := Request(tc.app, tc.m)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.App != tc.app.ID || ev.Demand != tc.want || len(ev.Asks) != len(tc.m.Asks) ||
				ev.RemainingWork != tc.m.RemainingWork || ev.CriticalTime != tc.m.CriticalTime {
				t.Errorf("got %+v, want demand %v", ev, tc.want)
			}
		})
	}
}

func TestDemandChanged(t *testing.T) {
	ev, err := DemandChanged(App{ID: 3, Usage: vec(9999, 9), AMContainer: vec(1024, 1)}, vec(4096, 4))
	if err != nil || ev.App != 3 || ev.Demand != vec(5120, 5) {
		t.Errorf("got %+v %v, want demand <5120, 5> for app 3", ev, err)
	}
	if _, err := DemandChanged(App{ID: 3}, vec(-5, 0)); err == nil {
		t.Error("a negative demand was taken")
	}
}
