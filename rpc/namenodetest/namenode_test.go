package namenodetest

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/colinmarc/hdfs/v2"
)

// TestHDFSClientTalksToIt: colinmarc/hdfs, an HDFS client written
// against real NameNodes, stats, lists (across pages) and reads from the
// fake as from one. Reading makes it ask for the block locations and dial
// the datanode they name: the address it dials is the proof it decoded
// them.
func TestHDFSClientTalksToIt(t *testing.T) {
	nn, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Close()
	nn.ListLimit = 2 // a directory of 3 lists in two pages
	nn.AddFile("/data/t/part-0", Block{Length: 100, Hosts: []string{"dn1.example.com", "dn2.example.com"}}, Block{Length: 50, Hosts: []string{"dn3.example.com"}})
	nn.AddFile("/data/t/part-1", Block{Length: 10, Hosts: []string{"127.0.0.2"}})
	nn.AddDir("/data/t/sub")

	var mu sync.Mutex
	var dialed []string
	refuse := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, addr)
		mu.Unlock()
		return nil, errors.New("no datanodes in this test")
	}
	c, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{nn.Addr}, User: "alice", UseDatanodeHostname: true, DatanodeDialFunc: refuse})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	fi, err := c.Stat("/data/t/part-0")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Name() != "part-0" || fi.Size() != 150 || fi.IsDir() || fi.Mode().Perm() != 0o644 {
		t.Errorf("Stat(part-0) = %s %d dir %v %v", fi.Name(), fi.Size(), fi.IsDir(), fi.Mode())
	}
	if fi, err := c.Stat("/data/t"); err != nil || !fi.IsDir() {
		t.Errorf("Stat(/data/t) = %v, %v; want a directory", fi, err)
	}
	if _, err := c.Stat("/nope"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat(/nope) = %v, want not exist", err)
	}
	list, err := c.ReadDir("/data/t")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name())
	}
	if want := []string{"part-0", "part-1", "sub"}; !slices.Equal(names, want) {
		t.Errorf("ReadDir = %v, want %v", names, want)
	}
	if _, err := c.ReadDir("/nope"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadDir(/nope) = %v, want not exist", err)
	}

	f, err := c.Open("/data/t/part-0")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(120, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(make([]byte, 8)); err == nil {
		t.Fatal("read with no datanode succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	// Offset 120 is in the second block, whose one replica is on dn3.
	if !slices.Contains(dialed, "dn3.example.com:9866") || slices.Contains(dialed, "dn1.example.com:9866") {
		t.Errorf("the client dialed %v, want dn3.example.com:9866 (the second block's replica) only", dialed)
	}
	if nn.Calls("getBlockLocations") == 0 || nn.Calls("getListing") != 2 {
		t.Errorf("calls: %d getBlockLocations, %d getListing (want the directory's two pages)", nn.Calls("getBlockLocations"), nn.Calls("getListing"))
	}
	if u := nn.Users(); !slices.Equal(u, []string{"alice"}) {
		t.Errorf("callers %v, want alice", u)
	}
}
