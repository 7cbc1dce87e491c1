// Package driver runs application masters against a real ResourceManager:
// the AM library any Go engine can use (register, the allocate loop with
// response ids, finish), and the process that feeds the DAG AM core.
package driver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// Environment the RM sets for every AM it launches.
const (
	EnvSchedulerAddress = "LOOM_SCHEDULER_ADDRESS"
	// EnvTokenFile names the AM's credentials: its AMRM token is there.
	EnvTokenFile = rpc.EnvTokenFile
	// EnvHistoryDir is where the RM wants job histories (loom.history.dir).
	EnvHistoryDir  = "LOOM_HISTORY_DIR"
	EnvContainerID = "CONTAINER_ID"
)

// Launch is what an AM needs to reach the scheduler: its address, and
// the AMRM token the RM gave the AM, which names the attempt.
type Launch struct {
	Addr    string
	Attempt string
	Token   *hadooppb.TokenProto
}

// FromEnv reads where the scheduler is and the AM's AMRM token, as the
// RM set them at launch (the token through the credentials file the NM
// wrote, as for any YARN AM).
func FromEnv() (Launch, error) {
	addr, file := os.Getenv(EnvSchedulerAddress), os.Getenv(EnvTokenFile)
	if addr == "" || file == "" {
		return Launch{}, fmt.Errorf("not launched by a Loom RM: %s and %s must be set", EnvSchedulerAddress, EnvTokenFile)
	}
	creds, err := rpc.ReadCredentialsFile(file)
	if err != nil {
		return Launch{}, fmt.Errorf("the AM's credentials: %w", err)
	}
	tok := creds.Find(rpc.AMRMTokenKind)
	if tok == nil {
		return Launch{}, fmt.Errorf("the AM's credentials (%s) hold no %s: the RM gives one to every AM it launches", file, rpc.AMRMTokenKind)
	}
	return LaunchWith(addr, tok)
}

// LaunchWith is the launch of the AM that holds tok.
func LaunchWith(addr string, tok *hadooppb.TokenProto) (Launch, error) {
	id, err := rpc.ParseAMRMIdentifier(tok.GetIdentifier())
	if err != nil {
		return Launch{}, fmt.Errorf("the AM's %s: %w", rpc.AMRMTokenKind, err)
	}
	return Launch{Addr: addr, Attempt: rpc.AttemptIDString(id.GetAppAttemptId()), Token: tok}, nil
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
	// sentLocal are the host and rack requests the RM holds: only those
	// that changed are sent (see localityRequests).
	sentLocal map[localKey]int
	// MaxCapability is the largest container the RM grants.
	MaxCapability fairness.Vector
	// MaxWait is how long a call rides out an RM it cannot reach (one
	// restarting) before it gives up: YARN's
	// yarn.resourcemanager.connect.max-wait.ms, 15 minutes by default.
	MaxWait time.Duration
	// registration is what Register sent, sent again when a restarted RM
	// asks the AM to register again.
	registration *pb.RegisterApplicationMasterRequestProto
	// releasing are the containers released, and when the RM reported
	// each completed (zero until it does). A restarted RM may have taken
	// them back from their nodes, so they are released again after
	// registering again (as YARN's AMRMClient keeps its pendingRelease),
	// and so are those reported completed within releaseMemory: the RM
	// that reported them may have died before their node heard to stop
	// them, and the node then reports them running to the next RM, which
	// would hold them for an AM that no longer knows them (seen in the
	// failover test: a node's 4 vcores held 6 such containers, and the
	// new RM, counting 18 of 16 vcores used, granted nothing again).
	releasing map[int64]time.Time
	pruned    time.Time // when releasing was last pruned
	// InUse, when set, says whether the AM uses a container: after a
	// restarted RM hands back the AM's containers, the ones it does not
	// use are released.
	InUse func(id int64) bool
	// stale are containers a restarted RM handed back that the AM does
	// not use: released on the next call.
	stale []int64
	// nmTokens are the NMTokens the RM sent, by node ("host:port"): the
	// AM authenticates to a node's container manager with its token
	// there, as Hadoop's NMTokenCache keeps them.
	nmTokens map[string]*hadooppb.TokenProto
}

// NMToken is the token the RM sent for starting containers on node
// ("host:port"), nil if none came.
func (c *Client) NMToken(node string) *hadooppb.TokenProto { return c.nmTokens[node] }

// keepNMTokens takes the NMTokens of a register or allocate reply; a new
// one for a node replaces the old (the RM rolled its key).
func (c *Client) keepNMTokens(toks []*pb.NMTokenProto) {
	if c.nmTokens == nil {
		c.nmTokens = map[string]*hadooppb.TokenProto{}
	}
	for _, t := range toks {
		c.nmTokens[fmt.Sprintf("%s:%d", t.GetNodeId().GetHost(), t.GetNodeId().GetPort())] = t.GetToken()
	}
}

// DefaultMaxWait is YARN's default yarn.resourcemanager.connect.max-wait.ms.
const DefaultMaxWait = 15 * time.Minute

// retry runs call until it succeeds, fails with anything but a lost
// connection, or MaxWait has passed since the first loss; the waits
// between tries grow from 100 ms to 2 s.
func (c *Client) retry(ctx context.Context, call func() error) error {
	maxWait := c.MaxWait
	if maxWait <= 0 {
		maxWait = DefaultMaxWait
	}
	var first time.Time
	wait := 100 * time.Millisecond
	for {
		err := call()
		var ce *rpc.ConnError
		if err == nil || !errors.As(err, &ce) {
			return err
		}
		if first.IsZero() {
			first = time.Now()
		} else if time.Since(first) > maxWait {
			return fmt.Errorf("the RM was unreachable for %v (yarn.resourcemanager.connect.max-wait.ms): %w", maxWait, err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait = min(2*wait, 2*time.Second)
	}
}

type askKey struct {
	priority int
	demand   fairness.Vector
	kind     altruism.AskKind
}

// localKey names a host or rack ResourceRequest: YARN groups them by
// priority and capability, beside the "*" request they qualify.
type localKey struct {
	priority int
	demand   fairness.Vector
	name     string // a host, or a rack (a path: /dc/rack)
}

// localityRequests are the host and rack ResourceRequests of asks, as
// Hadoop's AMRMClient makes them: for each priority and capability, one
// request per host and one per rack, counting the containers that would
// rather run there (am.Ask.Hosts and Racks: the stage's pending tasks
// whose input is there). Every one relaxes locality, as the "*" request
// does, so that a task waits for its input's host only as long as the
// RM's delay scheduling says. The DEFAULT and ALTRUISTIC asks of a stage
// share its priority and capability and carry the same counts, and a host
// request does not say which kind it is for, so each is counted once (the
// larger count, should two asks of a priority ever differ).
func localityRequests(asks []am.Ask) map[localKey]int {
	out := map[localKey]int{}
	add := func(a am.Ask, names map[string]int) {
		for name, n := range names {
			if k := (localKey{a.Priority, a.Demand, name}); n > 0 && n > out[k] {
				out[k] = n
			}
		}
	}
	for _, a := range asks {
		add(a, a.Hosts)
		add(a, a.Racks)
	}
	return out
}

// localityChanges are the host and rack requests to send: those whose
// count differs from what the RM holds (sent), and those it holds that
// are gone, with count 0. As AMRMClient does, an unchanged request is not
// sent again: the RM lowers a host's and a rack's count itself as it
// places containers there, and sending the same count again would undo
// that.
func localityChanges(now, sent map[localKey]int) []*pb.ResourceRequestProto {
	var keys []localKey
	for k, n := range now {
		if sent[k] != n {
			keys = append(keys, k)
		}
	}
	for k := range sent {
		if _, ok := now[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b localKey) int {
		if c := cmp.Compare(a.priority, b.priority); c != 0 {
			return c
		}
		for i := range a.demand {
			if c := cmp.Compare(a.demand[i], b.demand[i]); c != 0 {
				return c
			}
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]*pb.ResourceRequestProto, len(keys))
	for i, k := range keys {
		out[i] = &pb.ResourceRequestProto{Priority: &pb.PriorityProto{Priority: proto.Int32(int32(k.priority))},
			ResourceName: proto.String(k.name), Capability: rpc.ResourceFromVector(k.demand), NumContainers: proto.Int32(int32(now[k])),
			RelaxLocality: proto.Bool(true), LoomDemand: rpc.ResourceFromVector(k.demand)}
	}
	return out
}

// Dial connects to the scheduler as the launched attempt, authenticating
// with its AMRM token.
func Dial(l Launch) *Client {
	// With RM HA the address is every RM's scheduler, comma-separated:
	// the client fails over across them.
	addrs := strings.Split(l.Addr, ",")
	cl := rpc.NewClient(addrs[0], rpc.ClientOptions{Token: l.Token, Failover: addrs[1:]})
	return &Client{rpc: cl, am: rpc.ApplicationMasterClient{C: cl}, attempt: l.Attempt}
}

// Close closes the connection.
func (c *Client) Close() error { return c.rpc.Close() }

// Register registers the AM.
func (c *Client) Register(ctx context.Context, host string, port int32, trackingURL string) error {
	c.registration = &pb.RegisterApplicationMasterRequestProto{
		Host: proto.String(host), RpcPort: proto.Int32(port), TrackingUrl: proto.String(trackingURL)}
	return c.register(ctx)
}

func (c *Client) register(ctx context.Context) error {
	var resp *pb.RegisterApplicationMasterResponseProto
	err := c.retry(ctx, func() (err error) {
		resp, err = c.am.RegisterApplicationMaster(ctx, c.registration)
		return err
	})
	if err != nil {
		return err
	}
	c.keepNMTokens(resp.GetNmTokensFromPreviousAttempts())
	for _, ct := range resp.GetContainersFromPreviousAttempts() {
		if id := ct.GetId().GetId(); c.InUse != nil && !c.InUse(id) {
			c.stale = append(c.stale, id)
		}
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
	// Policy is the RM's scheduling policy ("" from an RM that does not
	// say): the AM plans as the simulator's AM does under it.
	Policy string
	// Growth is how the RM projects Share to grow (nil: it does not).
	Growth []altruism.ShareStep
}

// Allocate sends the AM's asks (they replace the previous ones), releases
// containers and reports progress. A reply lost with its connection is
// asked for again under the same response id, which the RM answers by
// sending it again, so no grant is lost.
func (c *Client) Allocate(ctx context.Context, req am.Request, release []int64, progress float32) (*Response, error) {
	// The demand goes with every call: the RM's DRF input is the whole
	// DAG's running plus pending, as the simulator's is (rm/adapter).
	ar := &pb.AllocateRequestProto{ResponseId: proto.Int32(c.respID), Progress: proto.Float32(progress),
		LoomDemand: rpc.ResourceFromVector(req.Demand)}
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
			RelaxLocality: proto.Bool(true), LoomAskKind: rpc.AskKindProto(a.Kind == altruism.Altruistic).Enum(), LoomDemand: rpc.ResourceFromVector(a.Demand),
			LoomRemainingWork: finite(req.RemainingWork), LoomCriticalPathMs: proto.Int64(req.CriticalTime.Milliseconds())})
	}
	star := len(ar.Ask)
	local := localityRequests(req.Asks)
	ar.Ask = append(ar.Ask, localityChanges(local, c.sentLocal)...)
	if c.releasing == nil {
		c.releasing = map[int64]time.Time{}
	}
	for _, id := range release {
		ar.Release = append(ar.Release, &pb.ContainerIdProto{Id: proto.Int64(id)})
		c.releasing[id] = time.Time{}
	}
	var resp *pb.AllocateResponseProto
	call := func() (err error) {
		resp, err = c.am.Allocate(ctx, ar)
		return err
	}
	// The RM restarted (or another took over) and recovered this
	// attempt: register again and start the response ids over, as
	// YARN's AMRMClient does. The "*" asks are whole in every call, and
	// the host and rack requests are sent whole again, so nothing is
	// lost.
	err := c.registered(ctx, call, func() {
		ar.ResponseId = proto.Int32(0)
		// The new RM holds no host or rack request: send them all.
		ar.Ask = append(ar.Ask[:star], localityChanges(local, nil)...)
		ar.Release = ar.Release[:0]
		for _, id := range c.stale {
			c.releasing[id] = time.Time{}
		}
		c.stale = nil
		for id := range c.releasing {
			ar.Release = append(ar.Release, &pb.ContainerIdProto{Id: proto.Int64(id)})
		}
	})
	if err != nil {
		return nil, err
	}
	stamp := time.Now()
	for _, cs := range resp.GetCompletedContainerStatuses() {
		if at, ok := c.releasing[cs.GetContainerId().GetId()]; ok && at.IsZero() {
			c.releasing[cs.GetContainerId().GetId()] = stamp
		}
	}
	if stamp.Sub(c.pruned) > time.Minute {
		c.pruned = stamp
		for id, at := range c.releasing {
			if !at.IsZero() && stamp.Sub(at) > releaseMemory {
				delete(c.releasing, id)
			}
		}
	}
	c.respID = resp.GetResponseId()
	if tok := resp.GetAmRmToken(); tok != nil {
		// The RM rolled its AMRM key: the next connection uses the new
		// token, as Hadoop's AMRMClient does.
		c.rpc.SetToken(tok)
	}
	c.sent, c.sentLocal = now, local
	c.keepNMTokens(resp.GetNmTokens())
	out := &Response{Tokens: map[int64]*pb.ContainerProto{}, Completed: resp.GetCompletedContainerStatuses(),
		PAltruism: resp.GetLoomPAltruism(), Nodes: int(resp.GetNumClusterNodes()), Policy: resp.GetLoomPolicy()}
	if out.Share, err = rpc.VectorFromResource(resp.GetLoomShare()); err != nil {
		return nil, err
	}
	if out.Leftover, err = rpc.VectorFromResource(resp.GetLoomLeftover()); err != nil {
		return nil, err
	}
	if out.Capacity, err = rpc.VectorFromResource(resp.GetLoomClusterCapacity()); err != nil {
		return nil, err
	}
	if out.Growth, err = readGrowth(resp.GetLoomShareGrowth()); err != nil {
		return nil, err
	}
	for _, ct := range resp.GetAllocatedContainers() {
		res, err := rpc.VectorFromResource(ct.GetResource())
		if err != nil {
			return nil, err
		}
		id := ct.GetId().GetId()
		// The node's host is what host requests name: the AM binds the
		// container to a task whose input is there.
		out.Granted = append(out.Granted, am.Grant{ID: id, Node: fmt.Sprintf("%s:%d", ct.GetNodeId().GetHost(), ct.GetNodeId().GetPort()),
			Host: ct.GetNodeId().GetHost(), Resource: res, Priority: int(ct.GetPriority().GetPriority()), Kind: kindOf(ct)})
		out.Tokens[id] = ct
	}
	return out, nil
}

// readGrowth reads the RM's projection of the share: steps in order of
// their offsets, each a finite factor of at least 1. Anything else is the
// RM's error, refused rather than planned with.
func readGrowth(steps []*pb.LoomShareStepProto) ([]altruism.ShareStep, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	out := make([]altruism.ShareStep, len(steps))
	for i, s := range steps {
		after, f := s.GetAfterMs(), s.GetFactor()
		switch {
		case after < 0 || after > math.MaxInt64/int64(time.Millisecond):
			return nil, fmt.Errorf("loom_share_growth step %d: after_ms %d is not an offset from now", i, after)
		case i > 0 && after < steps[i-1].GetAfterMs():
			return nil, fmt.Errorf("loom_share_growth step %d: after_ms %d comes before the step before it (%d)", i, after, steps[i-1].GetAfterMs())
		case math.IsNaN(f) || math.IsInf(f, 0) || f < 1:
			return nil, fmt.Errorf("loom_share_growth step %d: factor %v is not a finite growth of at least 1", i, f)
		}
		out[i] = altruism.ShareStep{After: time.Duration(after) * time.Millisecond, Factor: f}
	}
	return out, nil
}

// releaseMemory is how long a released container reported completed is
// released again to an RM that takes over: the NodeManager liveness
// expiry's default (10 minutes), after which its node would have been
// lost anyway.
const releaseMemory = 10 * time.Minute

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
	req := &pb.FinishApplicationMasterRequestProto{FinalApplicationStatus: final.Enum(), Diagnostics: proto.String(diagnostics)}
	finish := func() error {
		_, err := c.am.FinishApplicationMaster(ctx, req)
		return err
	}
	return c.registered(ctx, finish, func() {})
}

// maxReregisters bounds how often one call registers the AM again: each
// time, another RM had taken over between the registration and the call
// (quick successive failovers).
const maxReregisters = 10

// registered runs call (with retry), registering the AM again whenever
// the RM says it is not registered, and then calls again after again
// (which readies the call for a fresh registration).
func (c *Client) registered(ctx context.Context, call func() error, again func()) error {
	err := c.retry(ctx, call)
	for n := 0; n < maxReregisters && rpc.IsClass(err, rpc.ClassApplicationMasterNotRegistered) && c.registration != nil; n++ {
		if err = c.register(ctx); err != nil {
			return err
		}
		again()
		err = c.retry(ctx, call)
	}
	return err
}

// kindOf is the kind of ask a container served; a stock RM's are DEFAULT.
func kindOf(ct *pb.ContainerProto) altruism.AskKind {
	if ct.GetLoomAskKind() == pb.LoomAskKindProto_LOOM_ALTRUISTIC {
		return altruism.Altruistic
	}
	return altruism.Default
}
