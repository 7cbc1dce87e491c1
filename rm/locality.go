package rm

import (
	"math"
	"time"
)

// Locality is where an ask's containers would rather run, as YARN's AMs
// say it with host and rack ResourceRequests beside the "*" one: how many
// of them each host and each rack should get, and whether they may run
// elsewhere (relax_locality) once delay scheduling has waited long enough.
// An ask without a Locality runs anywhere.
type Locality struct {
	Hosts map[string]int
	Racks map[string]int
	// Relax lets the containers go off their racks after the delays
	// (rack-local needs only the node delay, whatever Relax says, when
	// Racks names the node's rack).
	Relax bool
}

// Placement says how a container sits against its ask's locality.
type Placement int8

const (
	// Anywhere: its ask named no hosts or racks.
	Anywhere Placement = iota
	NodeLocal
	RackLocal
	OffSwitch
)

func (p Placement) String() string {
	return [...]string{"ANY", "NODE_LOCAL", "RACK_LOCAL", "OFF_SWITCH"}[p]
}

// LocalityDelays is delay scheduling, as YARN's Capacity Scheduler counts
// it: an ask with locality skips the nodes that do not suit it, and each
// skipped node is a missed opportunity. After Node missed opportunities
// (capped at the number of nodes) it takes a node on one of its racks;
// after Node+Rack more it takes any node, if it relaxes locality. Node
// below 0 ignores locality (every node suits every ask). Rack below 0
// waits, as YARN does by default, for the outstanding containers times
// the share of the cluster the ask names (capped at the number of nodes).
// Missed opportunities start again at a node-local or rack-local grant.
type LocalityDelays struct {
	Node, Rack int
	// NodeTime, when positive, counts the delays in time instead, as the
	// Fair Scheduler's yarn.scheduler.fair.locality-delay-node-ms and
	// -rack-ms do: rack-local after the ask has waited NodeTime since it
	// first skipped a node, anywhere after NodeTime+RackTime. Time is the
	// same whether nodes are visited one heartbeat at a time (the RM) or
	// all at once (the simulator's passes).
	NodeTime, RackTime time.Duration
}

// DefaultLocalityDelays are YARN's: yarn.scheduler.capacity.node-locality-delay
// 40, rack-locality-additional-delay -1.
var DefaultLocalityDelays = LocalityDelays{Node: 40, Rack: -1}

// where is how ask k of count outstanding containers may be placed on a
// node on host and rack, after missed opportunities on a cluster of
// nodes: the placement and how many the node may take (0: none now).
func (d LocalityDelays) where(loc *Locality, count int, missed int, waited time.Duration, host, rack string, nodes int) (Placement, int) {
	if loc == nil || d.Node < 0 {
		return Anywhere, count
	}
	if n := loc.Hosts[host]; n > 0 {
		return NodeLocal, min(count, n)
	}
	if d.NodeTime > 0 {
		if n := loc.Racks[rack]; n > 0 && waited >= d.NodeTime {
			return RackLocal, min(count, n)
		}
		if loc.Relax && waited >= d.NodeTime+max(d.RackTime, 0) {
			return OffSwitch, count
		}
		return OffSwitch, 0
	}
	nodeDelay := min(d.Node, nodes)
	if n := loc.Racks[rack]; n > 0 && missed >= nodeDelay {
		return RackLocal, min(count, n)
	}
	if !loc.Relax {
		return OffSwitch, 0
	}
	offDelay := 0
	if d.Rack >= 0 {
		offDelay = min(d.Node+d.Rack, nodes)
	} else {
		// YARN's: the outstanding containers times the part of the
		// cluster the ask names, at least the node delay.
		named := float64(len(loc.Hosts)+len(loc.Racks)) / float64(max(nodes, 1))
		offDelay = max(nodeDelay, min(nodes, int(math.Ceil(float64(count)*min(named, 1)))))
	}
	if missed >= offDelay {
		return OffSwitch, count
	}
	return OffSwitch, 0
}

// served lowers a locality's counts after n containers were placed on
// host and rack (YARN lowers the node's, the rack's and the "*" ask's).
func (loc *Locality) served(host, rack string, n int) {
	if loc == nil {
		return
	}
	if c, ok := loc.Hosts[host]; ok {
		loc.Hosts[host] = max(c-n, 0)
	}
	if c, ok := loc.Racks[rack]; ok {
		loc.Racks[rack] = max(c-n, 0)
	}
}

// localize readies the candidates for a pass on node n: each ask's count
// becomes what the node may take of it now (all of it when it names no
// hosts or racks), and an ask the node does not suit yet counts a missed
// opportunity if the node has room for it. It says whether it held any
// ask back; unlocalize restores the counts, less what the pass placed.
func (c *Core) localize(n *node, cands *Candidates, d LocalityDelays) (withheld bool) {
	if len(c.localIdx) == 0 {
		return false
	}
	free := n.capacity.Sub(n.used)
	for _, i := range c.localIdx {
		k := &cands.Asks[i]
		ak := &c.apps[c.owner[i]].asks[c.askOf[i]]
		var waited time.Duration
		if ak.waiting {
			waited = c.now - ak.waitSince
		}
		place, may := d.where(ak.Locality, k.Count, ak.missed, waited, n.host, n.rack, c.live)
		c.placement[i] = place
		if may < k.Count {
			withheld = true
			if may == 0 && k.Demand.FitsIn(free) {
				ak.missed++
				if !ak.waiting {
					ak.waiting, ak.waitSince = true, c.now
				}
			}
		}
		k.Count = may
	}
	return withheld
}

// unlocalize puts back the counts localize and limitQueues narrowed,
// less what was placed.
func (c *Core) unlocalize(cands *Candidates) {
	for _, i := range c.narrowIdx {
		cands.Asks[i].Count = c.outstanding[i] - c.granted[i]
	}
}
