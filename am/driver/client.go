// Package driver runs application masters against a real ResourceManager:
// the AM library any Go engine can use (register, the allocate loop with
// response ids, finish), and the process that feeds the DAG AM core.
package driver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// Environment the RM sets for every AM it launches.
const (
	EnvSchedulerAddress = "LOOM_SCHEDULER_ADDRESS"
	EnvAttempt          = "HADOOP_USER_NAME"
	// EnvHistoryDir is where the RM wants job histories (loom.history.dir).
	EnvHistoryDir  = "LOOM_HISTORY_DIR"
	EnvContainerID = "CONTAINER_ID"
)

// FromEnv reads where the scheduler is and which attempt this AM is, as
// the RM set them at launch.
func FromEnv() (addr, attempt string, err error) {
	addr, attempt = os.Getenv(EnvSchedulerAddress), os.Getenv(EnvAttempt)
	if addr == "" || attempt == "" {
		return "", "", fmt.Errorf("not launched by a Loom RM: %s and %s must be set", EnvSchedulerAddress, EnvAttempt)
	}
	return addr, attempt, nil
}

// HistoryPathFromEnv is where the RM wants this attempt's app to write
// its job history, "" when it named no history dir.
func HistoryPathFromEnv(attempt string) string {
	dir := os.Getenv(EnvHistoryDir)
	id, err := rpc.ParseAttemptID(attempt)
	if dir == "" || err != nil {
		return ""
	}
	return filepath.Join(dir, rpc.AppIDString(id.GetApplicationId())+".json")
}

// Client is an AM's session with the RM's scheduler.
type Client struct {
	rpc     *rpc.Client
	am      rpc.ApplicationMasterClient
	attempt string
	respID  int32
	// sent are the asks of the last call: YARN keeps an ask until told
	// otherwise, so one dropped since is sent again with count 0.
	sent map[askKey]am.Ask
	// MaxCapability is the largest container the RM grants.
	MaxCapability fairness.Vector
}

type askKey struct {
	priority int
	demand   fairness.Vector
	kind     altruism.AskKind
}

// Dial connects to the scheduler as the given attempt.
func Dial(addr, attempt string) *Client {
	cl := rpc.NewClient(addr, rpc.ClientOptions{User: attempt})
	return &Client{rpc: cl, am: rpc.ApplicationMasterClient{C: cl}, attempt: attempt}
}

// Close closes the connection.
func (c *Client) Close() error { return c.rpc.Close() }

// Register registers the AM.
func (c *Client) Register(ctx context.Context, host string, port int32, trackingURL string) error {
	resp, err := c.am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{
		Host: proto.String(host), RpcPort: proto.Int32(port), TrackingUrl: proto.String(trackingURL)})
	if err != nil {
		return err
	}
	c.MaxCapability, err = rpc.VectorFromResource(resp.GetMaximumCapability())
	return err
}

// Response is what one allocate call brought back.
type Response struct {
	Granted   []am.Grant
	Tokens    map[int64]*pb.ContainerProto // by container id: node, token, for starting it
	Completed []*pb.ContainerStatusProto
	// Share is A_k, the AM's DRF share; PAltruism the probability in force;
	// Leftover the cluster's unallocated resources; Capacity its live nodes'.
	Share     fairness.Vector
	PAltruism float64
	Leftover  fairness.Vector
	Capacity  fairness.Vector
	Nodes     int
}

// Allocate sends the AM's asks (they replace the previous ones), releases
// containers and reports progress. A reply lost with its connection is
// asked for again under the same response id, which the RM answers by
// sending it again, so no grant is lost.
func (c *Client) Allocate(ctx context.Context, req am.Request, release []int64, progress float32) (*Response, error) {
	ar := &pb.AllocateRequestProto{ResponseId: proto.Int32(c.respID), Progress: proto.Float32(progress)}
	asks := req.Asks
	now := make(map[askKey]am.Ask, len(asks))
	for _, a := range asks {
		now[askKey{a.Priority, a.Demand, a.Kind}] = a
	}
	for k, a := range c.sent {
		if _, still := now[k]; !still {
			a.Count = 0
			asks = append(asks, a)
		}
	}
	for _, a := range asks {
		ar.Ask = append(ar.Ask, &pb.ResourceRequestProto{Priority: &pb.PriorityProto{Priority: proto.Int32(int32(a.Priority))},
			ResourceName: proto.String("*"), Capability: rpc.ResourceFromVector(a.Demand), NumContainers: proto.Int32(int32(a.Count)),
			RelaxLocality: proto.Bool(true), LoomAskKind: rpc.KindProto(a.Kind).Enum(), LoomDemand: rpc.ResourceFromVector(a.Demand),
			LoomRemainingWork: finite(req.RemainingWork), LoomCriticalPathMs: proto.Int64(req.CriticalTime.Milliseconds())})
	}
	for _, id := range release {
		ar.Release = append(ar.Release, &pb.ContainerIdProto{Id: proto.Int64(id)})
	}
	var resp *pb.AllocateResponseProto
	var err error
	for try := 0; ; try++ {
		resp, err = c.am.Allocate(ctx, ar)
		var ce *rpc.ConnError
		if err == nil || !errors.As(err, &ce) || try >= 5 {
			break
		}
		select {
		case <-time.After(time.Duration(100<<try) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	c.respID = resp.GetResponseId()
	c.sent = now
	out := &Response{Tokens: map[int64]*pb.ContainerProto{}, Completed: resp.GetCompletedContainerStatuses(),
		PAltruism: resp.GetLoomPAltruism(), Nodes: int(resp.GetNumClusterNodes())}
	if out.Share, err = rpc.VectorFromResource(resp.GetLoomShare()); err != nil {
		return nil, err
	}
	if out.Leftover, err = rpc.VectorFromResource(resp.GetLoomLeftover()); err != nil {
		return nil, err
	}
	if out.Capacity, err = rpc.VectorFromResource(resp.GetLoomClusterCapacity()); err != nil {
		return nil, err
	}
	for _, ct := range resp.GetAllocatedContainers() {
		res, err := rpc.VectorFromResource(ct.GetResource())
		if err != nil {
			return nil, err
		}
		id := ct.GetId().GetId()
		out.Granted = append(out.Granted, am.Grant{ID: id, Node: fmt.Sprintf("%s:%d", ct.GetNodeId().GetHost(), ct.GetNodeId().GetPort()),
			Resource: res, Priority: int(ct.GetPriority().GetPriority()), Kind: kindOf(ct)})
		out.Tokens[id] = ct
	}
	return out, nil
}

func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return nil
	}
	return proto.Float64(x)
}

// Finish unregisters the AM with its final status.
func (c *Client) Finish(ctx context.Context, succeeded bool, diagnostics string) error {
	final := pb.FinalApplicationStatusProto_APP_SUCCEEDED
	if !succeeded {
		final = pb.FinalApplicationStatusProto_APP_FAILED
	}
	_, err := c.am.FinishApplicationMaster(ctx, &pb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: final.Enum(), Diagnostics: proto.String(diagnostics)})
	return err
}

// kindOf is the kind of ask a container served; a stock RM's are DEFAULT.
func kindOf(ct *pb.ContainerProto) altruism.AskKind {
	if ct.GetLoomAskKind() == pb.LoomAskKindProto_LOOM_ALTRUISTIC {
		return altruism.Altruistic
	}
	return altruism.Default
}
