package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomrm/loom/internal/hadoopconf"

	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestNodeRacks: the RM places nodes on the racks core-site.xml's
// topology names (here a script), and says so in node reports, as YARN's
// RackResolver does; a node the script cannot place is on /default-rack.
func TestNodeRacks(t *testing.T) {
	script := filepath.Join(t.TempDir(), "rack.sh")
	// 127.0.0.1 is the only host the test's NMs have: the script puts it
	// on /dc1/rack7.
	if err := os.WriteFile(script, []byte("#!/bin/sh\nfor h; do if [ \"$h\" = 127.0.0.1 ]; then printf '/dc1/rack7 '; else printf '/default-rack '; fi; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := startRM(t, "net.topology.script.file.name="+script)
	startNM(t, r.Addr("tracker"), 8192, 8)
	resp, err := clientOf(t, r, "alice").GetClusterNodes(context.Background(), &pb.GetClusterNodesRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	if n := resp.GetNodeReports(); len(n) != 1 || n[0].GetRackName() != "/dc1/rack7" {
		t.Errorf("node reports %v, want one node on /dc1/rack7", n)
	}

	plain := startRM(t)
	startNM(t, plain.Addr("tracker"), 8192, 8)
	resp, err = clientOf(t, plain, "alice").GetClusterNodes(context.Background(), &pb.GetClusterNodesRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	if n := resp.GetNodeReports(); len(n) != 1 || n[0].GetRackName() != "/default-rack" {
		t.Errorf("without a topology: %v, want /default-rack", n)
	}

	c := hadoopconf.New(Defaults)
	c.Set("net.topology.node.switch.mapping.impl", "org.apache.hadoop.net.TableMapping")
	if _, err := LoadConfig(c); err == nil || !strings.Contains(err.Error(), "net.topology.table.file.name") {
		t.Errorf("TableMapping without net.topology.table.file.name: %v", err)
	}
}
