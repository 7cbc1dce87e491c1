package server

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/loomrm/loom/daemon/rm/store"
)

// TestFencedRMStops: an RM on the ZooKeeper store whose epoch another RM
// has bumped since (it took over) learns it at its next write and says it
// is fenced, so that RunHA stops it; the write changes nothing.
func TestFencedRMStops(t *testing.T) {
	zk := os.Getenv("LOOM_TEST_ZK")
	if zk == "" {
		zk = "127.0.0.1:2181"
	}
	if c, err := net.DialTimeout("tcp", zk, 2*time.Second); err != nil {
		t.Fatalf("no ZooKeeper at %s (%v): run the tests with `make test`, which starts one, or set LOOM_TEST_ZK", zk, err)
	} else {
		c.Close()
	}
	root := fmt.Sprintf("/loom-fence-test-%d", time.Now().UnixNano())
	r := startRM(t, "yarn.resourcemanager.recovery.enabled=true", "loom.store.kind=zookeeper", "loom.store.zk-address="+zk,
		"loom.store.zk-root="+root)
	// Another RM takes over the store.
	other, err := store.OpenZooKeeper(store.Config{Kind: store.KindZooKeeper, ZKAddresses: []string{zk}, ZKRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.BumpEpoch(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Fenced():
		t.Fatal("fenced before any write")
	default:
	}
	id := submit(t, clientOf(t, r, "ann"), "default", 512)
	select {
	case <-r.Fenced():
	case <-time.After(10 * time.Second):
		t.Fatal("the RM wrote to a store another RM took over, and did not notice")
	}
	st, err := other.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Apps) != 0 {
		t.Errorf("the fenced RM's app %v reached the store: %v", id, st.Apps)
	}
}
