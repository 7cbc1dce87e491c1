// Package adapter turns what an application master says into the RM
// core's events, one way for both of the core's drivers: the
// ResourceManager daemon, which hears AMs over RPC, and the simulator,
// which runs their cores itself. Whatever a driver knows about an app
// (its AM's message, what it holds, its AM container) goes in; the event
// the core steps on comes out. It is pure: no I/O, no clock.
//
// A Loom AM sends its demand for DRF (running plus pending over its
// whole DAG, not only what it asks for now) beside its asks; a stock YARN
// AM sends asks alone, and its demand is estimated from what it holds and
// what it asks for. Either way the AM container's own resource counts in
// the app's demand, as it counts in its usage.
package adapter

import (
	"fmt"
	"math"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
)

// Message is one allocate call, as the core needs it.
type Message struct {
	// Asks are the AM's outstanding asks, grouped (they replace the
	// previous ones).
	Asks []rm.Ask
	// Demand is a Loom AM's running-plus-pending demand, without its AM
	// container; nil for an AM that sent none.
	Demand *fairness.Vector
	// RemainingWork orders the leftover (SRTF); CriticalTime is the
	// remaining critical path (SJF). A stock AM sends neither: zero.
	RemainingWork float64
	CriticalTime  time.Duration
}

// App is what the driver knows of the app beside the message.
type App struct {
	ID rm.AppID
	// Usage is what the app holds now, its AM container included.
	Usage fairness.Vector
	// AMContainer is its AM container's resource once granted (zero
	// before, and for an app the driver runs without one).
	AMContainer fairness.Vector
}

// Request is the core event of an allocate call.
func Request(app App, m Message) (rm.AppRequest, error) {
	d, err := Demand(app, m)
	if err != nil {
		return rm.AppRequest{}, err
	}
	if math.IsNaN(m.RemainingWork) || math.IsInf(m.RemainingWork, 0) || m.RemainingWork < 0 {
		return rm.AppRequest{}, fmt.Errorf("app %d: remaining work %v must be finite and not negative", app.ID, m.RemainingWork)
	}
	if m.CriticalTime < 0 {
		return rm.AppRequest{}, fmt.Errorf("app %d: critical path %v must not be negative", app.ID, m.CriticalTime)
	}
	return rm.AppRequest{App: app.ID, Asks: m.Asks, Demand: d, RemainingWork: m.RemainingWork, CriticalTime: m.CriticalTime}, nil
}

// Demand is the app's demand for DRF: a Loom AM's own plus its AM
// container; for a stock AM, what it holds plus what it asks for (its
// asks are all that is known of what it still needs).
func Demand(app App, m Message) (fairness.Vector, error) {
	if m.Demand != nil {
		if m.Demand.HasNegative() || !finite(*m.Demand) {
			return fairness.Vector{}, fmt.Errorf("app %d: demand %v must be finite and not negative", app.ID, *m.Demand)
		}
		return m.Demand.Add(app.AMContainer), nil
	}
	d := app.Usage
	for _, a := range m.Asks {
		if a.Count > 0 {
			d = d.Add(a.Demand.Scale(float64(a.Count)))
		}
	}
	return d, nil
}

// DemandChanged is the core event for a Loom AM whose running-plus-pending
// demand moved (a task ended) while its asks did not.
func DemandChanged(app App, demand fairness.Vector) (rm.AppDemand, error) {
	d, err := Demand(app, Message{Demand: &demand})
	return rm.AppDemand{App: app.ID, Demand: d}, err
}

func finite(v fairness.Vector) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
