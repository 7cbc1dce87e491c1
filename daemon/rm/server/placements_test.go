package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestPlacementLedger counts grants by hand: each app's tally and the
// cluster's, and what forgetting an app leaves.
func TestPlacementLedger(t *testing.T) {
	type grant struct {
		app rm.AppID
		p   rm.Placement
	}
	const a, b, c = rm.AppID(1), rm.AppID(2), rm.AppID(3)
	for _, tc := range []struct {
		name   string
		grants []grant
		// kept are the apps the RM still keeps when the ledger forgets
		// the others; nil: it does not forget.
		kept        []rm.AppID
		wantCluster webui.Placements
		wantApps    map[rm.AppID]webui.Placements
	}{
		{name: "nothing granted", wantApps: map[rm.AppID]webui.Placements{a: {}}},
		{name: "no ask named a host: every container any",
			grants:      []grant{{a, rm.Anywhere}, {a, rm.Anywhere}, {b, rm.Anywhere}},
			wantCluster: webui.Placements{Any: 3},
			wantApps:    map[rm.AppID]webui.Placements{a: {Any: 2}, b: {Any: 1}, c: {}}},
		{name: "each kind, two apps",
			// a: its AM, 3 on their hosts, 1 on the rack; b: its AM, 1 on
			// its host, 2 off their racks.
			grants: []grant{{a, rm.Anywhere}, {a, rm.NodeLocal}, {b, rm.Anywhere}, {a, rm.NodeLocal}, {a, rm.RackLocal},
				{b, rm.OffSwitch}, {b, rm.NodeLocal}, {a, rm.NodeLocal}, {b, rm.OffSwitch}},
			wantCluster: webui.Placements{NodeLocal: 4, RackLocal: 1, OffSwitch: 2, Any: 2},
			wantApps: map[rm.AppID]webui.Placements{a: {NodeLocal: 3, RackLocal: 1, Any: 1},
				b: {NodeLocal: 1, OffSwitch: 2, Any: 1}}},
		{name: "a forgotten app leaves the cluster's tally",
			grants:      []grant{{a, rm.NodeLocal}, {b, rm.RackLocal}, {c, rm.Anywhere}, {a, rm.OffSwitch}},
			kept:        []rm.AppID{b},
			wantCluster: webui.Placements{NodeLocal: 1, RackLocal: 1, OffSwitch: 1, Any: 1},
			wantApps:    map[rm.AppID]webui.Placements{a: {}, b: {RackLocal: 1}, c: {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l placementLedger
			for _, g := range tc.grants {
				l.add(g.app, g.p)
			}
			if tc.kept != nil {
				kept := map[rm.AppID]bool{}
				for _, id := range tc.kept {
					kept[id] = true
				}
				l.forget(func(id rm.AppID) bool { return kept[id] })
				if len(l.apps) != len(tc.kept) {
					t.Errorf("%d apps' tallies kept, want %d", len(l.apps), len(tc.kept))
				}
			}
			if d := cmp.Diff(tc.wantCluster, l.cluster); d != "" {
				t.Errorf("the cluster's (-want +got):\n%s", d)
			}
			for id, want := range tc.wantApps {
				if d := cmp.Diff(want, l.app(id)); d != "" {
					t.Errorf("app %d's (-want +got):\n%s", id, d)
				}
			}
		})
	}
}

// TestPlacementsServed: a real RM with two nodes on one rack counts its
// grants by placement per app and for the cluster, and says so in the
// web backend, in /ws/v1/loom/scheduler and
// /ws/v1/loom/apps/{id}/placements, in agreement with
// loom_container_placements_total. App one's AM goes anywhere, one
// container to the host it names (node b) and one, for a host that never
// heartbeats, to the rack it names (node a, after the node delay of the
// cluster's two nodes); app two's AM goes anywhere, one container of an
// ask without locality anywhere, and one for a host and a rack the
// cluster lacks off-switch after the delays.
func TestPlacementsServed(t *testing.T) {
	r := startRM(t)
	a := startNMOn(t, r.Addr("tracker"), "127.0.0.1", 8192, 8)
	b := startNMOn(t, r.Addr("tracker"), "localhost", 8192, 8)
	ac := clientOf(t, r, "ann")
	ctx := context.Background()
	capability := &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}
	ask := func(priority int32, name string, n int32) *pb.ResourceRequestProto {
		return &pb.ResourceRequestProto{Priority: &pb.PriorityProto{Priority: proto.Int32(priority)}, ResourceName: proto.String(name),
			Capability: capability, NumContainers: proto.Int32(n), RelaxLocality: proto.Bool(true)}
	}
	// amOf launches an app's AM on node a and registers it; allocate asks
	// and beats node until it grants want containers.
	starts := 0
	amOf := func(id *pb.ApplicationIdProto) rpc.ApplicationMasterClient {
		t.Helper()
		a.beat()
		starts++
		am := amClient(t, r, a.waitStarts(starts)[starts-1])
		if _, err := am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{}); err != nil {
			t.Fatal(err)
		}
		return am
	}
	responseID := map[rpc.ApplicationMasterClient]int32{}
	allocate := func(am rpc.ApplicationMasterClient, node *testNM, want int, asks ...*pb.ResourceRequestProto) []*pb.ContainerProto {
		t.Helper()
		var got []*pb.ContainerProto
		for beat := 0; beat < 6 && len(got) < want; beat++ {
			resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(responseID[am]), Ask: asks})
			if err != nil {
				t.Fatal(err)
			}
			asks = nil
			responseID[am] = resp.GetResponseId()
			got = append(got, resp.GetAllocatedContainers()...)
			if len(got) < want {
				node.beat()
			}
		}
		if len(got) != want {
			t.Fatalf("%d containers granted, want %d", len(got), want)
		}
		return got
	}

	one := submit(t, ac, "default", 1024)
	am1 := amOf(one)
	if got := allocate(am1, b, 1, ask(1, "localhost", 1), ask(1, "/default-rack", 1), ask(1, "*", 1)); got[0].GetNodeId().GetHost() != "localhost" {
		t.Fatalf("the ask for host localhost went to %v", got[0].GetNodeId())
	}
	if got := allocate(am1, a, 1, ask(2, "elsewhere", 1), ask(2, "/default-rack", 1), ask(2, "*", 1)); got[0].GetNodeId().GetHost() != "127.0.0.1" {
		t.Fatalf("the ask for host elsewhere went to %v", got[0].GetNodeId())
	}
	two := submit(t, ac, "default", 1024)
	am2 := amOf(two)
	allocate(am2, a, 1, ask(1, "*", 1))
	allocate(am2, a, 1, ask(2, "nowhere", 1), ask(2, "/other-rack", 1), ask(2, "*", 1))

	wantOne := webui.Placements{NodeLocal: 1, RackLocal: 1, Any: 1}
	wantTwo := webui.Placements{OffSwitch: 1, Any: 2}
	wantCluster := webui.Placements{NodeLocal: 1, RackLocal: 1, OffSwitch: 1, Any: 3}
	backend := webBackend{clientService{r}}
	s := backend.Scheduler()
	if d := cmp.Diff(wantCluster, s.Placements); d != "" {
		t.Errorf("Scheduler().Placements (-want +got):\n%s", d)
	}
	byApp := map[string]webui.Placements{}
	for _, as := range s.Apps {
		byApp[as.ID] = as.Placements
	}
	if d := cmp.Diff(map[string]webui.Placements{rpc.AppIDString(one): wantOne, rpc.AppIDString(two): wantTwo}, byApp); d != "" {
		t.Errorf("Scheduler().Apps' placements (-want +got):\n%s", d)
	}
	for _, c := range []struct {
		locality string
		want     int
	}{{"NODE_LOCAL", wantCluster.NodeLocal}, {"RACK_LOCAL", wantCluster.RackLocal}, {"OFF_SWITCH", wantCluster.OffSwitch}, {"ANY", wantCluster.Any}} {
		if got := gauge(t, r, "loom_container_placements_total", "locality", c.locality); got != float64(c.want) {
			t.Errorf("loom_container_placements_total{locality=%q} = %v, the web says %d", c.locality, got, c.want)
		}
	}

	// The same over REST, with the shares of the three containers whose
	// asks named hosts or racks.
	get := func(path string, into any) {
		t.Helper()
		resp, err := http.Get("http://" + r.Addr("web") + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	var sched dao.Scheduler
	get("/ws/v1/loom/scheduler", &sched)
	// The knobs it runs with, the defaults here.
	if d := rm.DefaultPolicyConfig(); sched.Recall != d.Recall || sched.PromiseSlack != d.PromiseSlack || sched.LeftoverCap != d.LeftoverCap {
		t.Errorf("/ws/v1/loom/scheduler knobs recall %v, promiseSlack %v, leftoverCap %v; want %v, %v, %v",
			sched.Recall, sched.PromiseSlack, sched.LeftoverCap, d.Recall, d.PromiseSlack, d.LeftoverCap)
	}
	// Stock YARN AMs send no remaining work: the core keeps no first
	// promise for them.
	for _, a := range sched.Apps {
		if a.Promise != nil {
			t.Errorf("app %s (a stock AM) has a first promise %+v", a.ID, *a.Promise)
		}
	}
	want := dao.Placements{NodeLocal: 1, RackLocal: 1, OffSwitch: 1, Any: 3, WithLocality: 3,
		NodeLocalShare: 1.0 / 3, RackLocalShare: 1.0 / 3, OffSwitchShare: 1.0 / 3}
	if d := cmp.Diff(want, sched.Placements); d != "" {
		t.Errorf("/ws/v1/loom/scheduler placements (-want +got):\n%s", d)
	}
	var p dao.AppPlacements
	get("/ws/v1/loom/apps/"+rpc.AppIDString(one)+"/placements", &p)
	if d := cmp.Diff(dao.AppPlacements{App: rpc.AppIDString(one), Placements: dao.Placements{NodeLocal: 1, RackLocal: 1, Any: 1,
		WithLocality: 2, NodeLocalShare: 0.5, RackLocalShare: 0.5}}, p); d != "" {
		t.Errorf("app one's placements (-want +got):\n%s", d)
	}
	get("/ws/v1/loom/apps/"+rpc.AppIDString(two)+"/placements", &p)
	if d := cmp.Diff(dao.AppPlacements{App: rpc.AppIDString(two), Placements: dao.Placements{OffSwitch: 1, Any: 2,
		WithLocality: 1, OffSwitchShare: 1}}, p); d != "" {
		t.Errorf("app two's placements (-want +got):\n%s", d)
	}
	if _, err := backend.AppPlacements("application_1_9999"); !errors.Is(err, webui.ErrNotFound) {
		t.Errorf("an unknown app's placements: %v, want ErrNotFound", err)
	}
}

// TestPlacementsOfForgottenApps: an app the RM forgets
// (yarn.resourcemanager.max-completed-applications) takes its tally with
// it at the next sample; the cluster's keeps its containers.
func TestPlacementsOfForgottenApps(t *testing.T) {
	r := startRM(t, "yarn.resourcemanager.max-completed-applications=1")
	nm := startNM(t, r.Addr("tracker"), 8192, 8)
	ac := clientOf(t, r, "erin")
	backend := webBackend{clientService{r}}
	var ids []string
	for i := range 2 {
		id := submit(t, ac, "default", 1024)
		nm.beat()
		nm.waitStarts(i + 1)
		if _, err := ac.ForceKillApplication(context.Background(), &pb.KillApplicationRequestProto{ApplicationId: id}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rpc.AppIDString(id))
	}
	r.mu.Lock()
	r.sample(time.Now())
	kept := len(r.timeline.placements.apps)
	r.mu.Unlock()
	if kept != 1 {
		t.Errorf("%d apps' tallies kept, want the one app the RM keeps", kept)
	}
	if _, err := backend.AppPlacements(ids[0]); !errors.Is(err, webui.ErrNotFound) {
		t.Errorf("the forgotten app's placements: %v, want ErrNotFound", err)
	}
	if got, err := backend.AppPlacements(ids[1]); err != nil || got != (webui.Placements{Any: 1}) {
		t.Errorf("the kept app's placements: %+v, %v; want its AM, any", got, err)
	}
	if got := backend.Scheduler().Placements; got != (webui.Placements{Any: 2}) {
		t.Errorf("the cluster's placements: %+v, want both AMs, any", got)
	}
}
