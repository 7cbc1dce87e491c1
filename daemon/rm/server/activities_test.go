package server

import (
	"fmt"
	"testing"

	"github.com/loomrm/loom/rm"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// The activities keep the last maxActivities grants, oldest first, before
// and after their ring wraps.
func TestRecentGrantsKeepTheLastInOrder(t *testing.T) {
	r := &RM{}
	b := webBackend{clientService{r}}
	cr := &contRec{c: rm.Container{}, node: &nodeRec{key: "n:1"}, app: &appRec{yid: &pb.ApplicationIdProto{}}}
	for _, n := range []int{0, 3, maxActivities, maxActivities + 1, 3*maxActivities + 7} {
		r.grants, r.grantNext = nil, 0
		for i := range n {
			r.recordGrant(cr, fmt.Sprint("c", i))
		}
		got := b.RecentGrants()
		want := min(n, maxActivities)
		if len(got) != want {
			t.Fatalf("after %d grants: %d kept, want %d", n, len(got), want)
		}
		for i, g := range got {
			if w := fmt.Sprint("c", n-want+i); g.Container != w {
				t.Fatalf("after %d grants: entry %d is %s, want %s", n, i, g.Container, w)
			}
		}
	}
}
