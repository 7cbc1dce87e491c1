package bench

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"google.golang.org/protobuf/proto"
)

func TestNMHostNamesEachNode(t *testing.T) {
	for _, c := range []struct {
		i    int
		want string
	}{{0, "127.1.0.0"}, {1, "127.1.0.1"}, {255, "127.1.0.255"}, {256, "127.1.1.0"}, {9999, "127.1.39.15"}, {maxSimNodes - 1, "127.1.255.255"}} {
		if got := nmHost(c.i); got != c.want {
			t.Errorf("nmHost(%d) = %s, want %s", c.i, got, c.want)
		}
	}
	o := DefaultLoadOptions()
	o.Nodes = maxSimNodes + 1
	if err := o.check(); err == nil || !strings.Contains(err.Error(), "at most 65536") {
		t.Errorf("%d nodes: %v, want a refusal naming the limit", o.Nodes, err)
	}
}

func TestIsLoopback(t *testing.T) {
	for _, c := range []struct {
		a    net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, true},
		{&net.TCPAddr{IP: net.IPv4(127, 1, 39, 15), Port: 1}, true},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 1}, true},
		{&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1}, false},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 1}, false},
		{&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, false},
	} {
		if got := isLoopback(c.a); got != c.want {
			t.Errorf("isLoopback(%v) = %v, want %v", c.a, got, c.want)
		}
	}
}

// TestSimNMsShareOneServer: the simulated NMs share one container
// manager, and a call reaches the NM whose address the caller dialled;
// an address no NM has is refused by name.
func TestSimNMsShareOneServer(t *testing.T) {
	l := &loadRun{byKey: map[string]*simNM{}}
	port, err := l.serveNMs()
	if err != nil {
		t.Fatal(err)
	}
	defer l.nmSrv.Close()
	cid := &pb.ContainerIdProto{Id: proto.Int64(7)}
	for i := range 3 {
		n := l.newNode(i, port)
		n.conts[rpc.ContainerIDString(cid)] = &simCont{id: cid}
	}
	stop := func(host string) error {
		cl := rpc.NewClient(net.JoinHostPort(host, strconv.Itoa(port)), rpc.ClientOptions{User: "test"})
		defer cl.Close()
		_, err := rpc.ContainerManagementClient{C: cl}.StopContainers(context.Background(),
			&pb.StopContainersRequestProto{ContainerId: []*pb.ContainerIdProto{cid}})
		return err
	}
	if err := stop(nmHost(1)); err != nil {
		t.Fatal(err)
	}
	for i, n := range l.nodes {
		_, has := n.conts[rpc.ContainerIDString(cid)]
		if has == (i == 1) {
			t.Errorf("NM %d (%s) still has the container: %v; only NM 1 was asked to stop it", i, n.key, has)
		}
	}
	err = stop(nmHost(3))
	if err == nil || !strings.Contains(err.Error(), "no simulated NodeManager at \""+nmHost(3)+":") {
		t.Errorf("a call at %s, where no NM is: %v", nmHost(3), err)
	}
}
