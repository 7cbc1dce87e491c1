package server

import (
	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/rm"
)

// placementLedger counts the containers the RM granted by where each sits
// against its ask's locality, for the cluster and for each app, so the web
// can say what share of the tasks that asked for hosts or racks got them
// (loom_container_placements_total has the cluster's alone, and only as
// Prometheus scrapes it). Counts start at the RM's start, as the metric's
// do: containers recovered after a restart were placed by another RM and
// say nothing of their placement.
type placementLedger struct {
	cluster webui.Placements
	apps    map[rm.AppID]*webui.Placements
}

// tallyPlacement adds one placement to a tally.
func tallyPlacement(t *webui.Placements, p rm.Placement) {
	switch p {
	case rm.NodeLocal:
		t.NodeLocal++
	case rm.RackLocal:
		t.RackLocal++
	case rm.OffSwitch:
		t.OffSwitch++
	default:
		t.Any++
	}
}

// add counts a container granted to app with placement p.
func (l *placementLedger) add(app rm.AppID, p rm.Placement) {
	tallyPlacement(&l.cluster, p)
	if l.apps == nil {
		l.apps = map[rm.AppID]*webui.Placements{}
	}
	t := l.apps[app]
	if t == nil {
		t = &webui.Placements{}
		l.apps[app] = t
	}
	tallyPlacement(t, p)
}

// app is one app's tally (zero before its first container).
func (l *placementLedger) app(id rm.AppID) webui.Placements {
	if t := l.apps[id]; t != nil {
		return *t
	}
	return webui.Placements{}
}

// forget drops the tallies of the apps known says the RM no longer
// keeps; the cluster's tally keeps their containers.
func (l *placementLedger) forget(known func(rm.AppID) bool) {
	for id := range l.apps {
		if !known(id) {
			delete(l.apps, id)
		}
	}
}

// countPlacement counts a container the lifecycle accepted as granted
// (allocated, in rm.go, calls it). Callers hold mu.
func (r *RM) countPlacement(cr *contRec) {
	r.timeline.placements.add(cr.app.id, cr.c.Placement)
}

// AppPlacements is one app's containers by placement, for any app the RM
// still keeps (yarn.resourcemanager.max-completed-applications).
func (b webBackend) AppPlacements(id string) (webui.Placements, error) {
	r := b.r
	r.mu.Lock()
	defer r.mu.Unlock()
	a, err := r.appNamed(id)
	if err != nil {
		return webui.Placements{}, err
	}
	return r.timeline.placements.app(a.id), nil
}
