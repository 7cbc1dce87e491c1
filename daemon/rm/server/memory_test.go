package server

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/internal/hostmem"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestMemoryKeysSetTheCollector: the RM's gc-percent and memory-limit-mb
// reach Go's collector, and GOGC / GOMEMLIMIT in the environment win.
func TestMemoryKeysSetTheCollector(t *testing.T) {
	oldPct := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(oldPct); debug.SetMemoryLimit(oldLimit) })
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		if v, ok := os.LookupEnv(k); ok {
			os.Unsetenv(k)
			t.Cleanup(func() { os.Setenv(k, v) })
		}
	}

	applyMemory(Config{GCPercent: 250, MemoryLimitMB: 512}, zerolog.Nop())
	if got := debug.SetGCPercent(100); got != 250 {
		t.Errorf("gc percent %d, want 250", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 512<<20 {
		t.Errorf("memory limit %d, want %d", got, 512<<20)
	}

	// No limit set: a quarter of the machine's memory.
	if mb, err := hostmem.TotalMB(); err == nil {
		applyMemory(Config{GCPercent: 400}, zerolog.Nop())
		if got := debug.SetMemoryLimit(-1); got != (mb/4)<<20 {
			t.Errorf("default memory limit %d, want a quarter of %d MB", got, mb)
		}
	}

	// The environment wins.
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetGCPercent(150)
	debug.SetMemoryLimit(1 << 30)
	applyMemory(Config{GCPercent: 700, MemoryLimitMB: 64}, zerolog.Nop())
	if got := debug.SetGCPercent(100); got != 150 {
		t.Errorf("gc percent %d with GOGC=150 set, want 150", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("memory limit %d with GOMEMLIMIT=1GiB set, want 1 GiB", got)
	}
}

// TestMinProcsRaisesGOMAXPROCS: loom.resourcemanager.min-procs raises
// Go's Ps to it, never lowers them, and GOMAXPROCS in the environment
// wins.
func TestMinProcsRaisesGOMAXPROCS(t *testing.T) {
	old := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
	if v, ok := os.LookupEnv("GOMAXPROCS"); ok {
		os.Unsetenv("GOMAXPROCS")
		t.Cleanup(func() { os.Setenv("GOMAXPROCS", v) })
	}
	for _, tc := range []struct{ before, min, want int }{
		{1, 3, 3},
		{5, 3, 5}, // never lowered
		{2, 0, 2}, // 0: Go's default kept
	} {
		runtime.GOMAXPROCS(tc.before)
		applyProcs(Config{MinProcs: tc.min}, zerolog.Nop())
		if got := runtime.GOMAXPROCS(0); got != tc.want {
			t.Errorf("GOMAXPROCS %d with min-procs %d: %d, want %d", tc.before, tc.min, got, tc.want)
		}
	}
	t.Setenv("GOMAXPROCS", "1")
	runtime.GOMAXPROCS(1)
	applyProcs(Config{MinProcs: 4}, zerolog.Nop())
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS=1 in the environment, min-procs 4: %d Ps, want 1", got)
	}
	c, err := LoadConfig(hadoopconf.New(Defaults))
	if err != nil {
		t.Fatal(err)
	}
	if c.MinProcs != 4 {
		t.Errorf("default min-procs %d, want 4", c.MinProcs)
	}
}

// TestAllocateCountsLiveNodes: an allocate reply's num_cluster_nodes
// follows nodes registering, shutting down and registering again (the RM
// keeps the count as nodes change state instead of walking every node on
// each call).
func TestAllocateCountsLiveNodes(t *testing.T) {
	r := startRM(t)
	_, am := registeredAMOn(t, r, "ivy")
	ctx := context.Background()
	other := startNMOn(t, r.Addr("tracker"), "localhost", 8192, 8)
	respID := int32(0)
	nodes := func() int32 {
		t.Helper()
		resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(respID)})
		if err != nil {
			t.Fatal(err)
		}
		respID = resp.GetResponseId()
		return resp.GetNumClusterNodes()
	}
	if got := nodes(); got != 2 {
		t.Fatalf("num_cluster_nodes %d with two nodes registered, want 2", got)
	}
	if _, err := other.rt.UnRegisterNodeManager(ctx, &pb.UnRegisterNodeManagerRequestProto{NodeId: other.id}); err != nil {
		t.Fatal(err)
	}
	if got := nodes(); got != 1 {
		t.Fatalf("num_cluster_nodes %d after one node shut down, want 1", got)
	}
	if _, err := other.rt.UnRegisterNodeManager(ctx, &pb.UnRegisterNodeManagerRequestProto{NodeId: other.id}); err != nil {
		t.Fatal(err)
	}
	if got := nodes(); got != 1 {
		t.Fatalf("num_cluster_nodes %d after the same node shut down twice, want 1", got)
	}
	if _, err := other.rt.RegisterNodeManager(ctx, &pb.RegisterNodeManagerRequestProto{NodeId: other.id, HttpPort: proto.Int32(8042),
		Resource: &pb.ResourceProto{Memory: proto.Int64(8192), VirtualCores: proto.Int32(8)}}); err != nil {
		t.Fatal(err)
	}
	if got := nodes(); got != 2 {
		t.Fatalf("num_cluster_nodes %d after the node registered again, want 2", got)
	}
}
