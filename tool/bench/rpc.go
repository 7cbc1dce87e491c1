package bench

import (
	"context"
	"net"
	"sync"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// RPC is a loopback server answering ApplicationMasterProtocol with empty
// replies, and client connections to it: it measures the IPC layer alone,
// not the scheduler behind it.
type RPC struct {
	srv   *rpc.Server
	conns []*rpc.Conn
	am    []rpc.ApplicationMasterClient
}

type emptyAM struct{}

func (emptyAM) RegisterApplicationMaster(context.Context, *pb.RegisterApplicationMasterRequestProto) (*pb.RegisterApplicationMasterResponseProto, error) {
	return &pb.RegisterApplicationMasterResponseProto{}, nil
}

func (emptyAM) Allocate(context.Context, *pb.AllocateRequestProto) (*pb.AllocateResponseProto, error) {
	return &pb.AllocateResponseProto{}, nil
}

func (emptyAM) FinishApplicationMaster(context.Context, *pb.FinishApplicationMasterRequestProto) (*pb.FinishApplicationMasterResponseProto, error) {
	return &pb.FinishApplicationMasterResponseProto{}, nil
}

// NewRPC starts the server and opens conns connections to it.
func NewRPC(conns int) (*RPC, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &RPC{srv: rpc.NewServer(rpc.ServerOptions{MaxInFlight: 1024})}
	b.srv.Register(rpc.ApplicationMasterService(emptyAM{}))
	go b.srv.Serve(ln)
	for range conns {
		c, err := rpc.Dial(context.Background(), ln.Addr().String(), rpc.ClientOptions{User: "bench"})
		if err != nil {
			b.Close()
			return nil, err
		}
		b.conns = append(b.conns, c)
		b.am = append(b.am, rpc.ApplicationMasterClient{C: c})
	}
	return b, nil
}

// Allocate makes one empty allocate call on connection i.
func (b *RPC) Allocate(i int) error {
	_, err := b.am[i%len(b.am)].Allocate(context.Background(), &pb.AllocateRequestProto{})
	return err
}

// Batch makes calls allocate calls from callers goroutines, caller k on
// connection k mod conns.
func (b *RPC) Batch(callers, calls int) error {
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for k := range callers {
		n := calls / callers
		if k < calls%callers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if err := b.Allocate(k); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// Close stops the server and the connections.
func (b *RPC) Close() {
	for _, c := range b.conns {
		c.Close()
	}
	b.srv.Close()
}
