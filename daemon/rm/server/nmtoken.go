package server

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// NMTokens, as YARN's NMTokenSecretManagerInRM makes them: an AM proves
// to a NodeManager that it may start and stop its app's containers there
// with a token naming its attempt and the node, signed with the NM-token
// master key that every NM gets when it registers. The AM gets one for
// each node the first time its attempt is given a container there (in the
// allocate reply's nm_tokens), and again after the key rolls or the node
// registers again. The RM launches AM containers with one too, as YARN's
// AMLauncher does: a stock NodeManager takes nothing else.

// The NM-token master keys in the state store.
const (
	nmTokenKeySecret     = "NMTokenMasterKey"
	nmTokenNextKeySecret = "NMTokenNextMasterKey"
)

// The NM-token key rolls every
// yarn.resourcemanager.nm-tokens.master-key-rolling-interval-secs. Unlike
// the AMRM key, the next key signs nothing at first: NodeManagers check
// NMTokens, so the next key goes to each NM in its heartbeat, and only 1.5
// NM expiries later, when every live NM has it, does it become the key
// tokens are signed with. Then every attempt gets new tokens.

// rollKeys rolls the AMRM and NM-token master keys when it is time.
func (r *RM) rollKeys(now time.Time) {
	if _, err := r.roll(&r.amrm, now); err != nil {
		r.log.Error().Err(err).Msg("the AMRM master key was not rolled; the current one stays in use")
	}
	r.sweepTokens(now)
	if _, err := r.roll(&r.dtKey, now); err != nil {
		r.log.Error().Err(err).Msg("the delegation token master key was not rolled; the current one stays in use")
	}
	activated, err := r.roll(&r.nmKey, now)
	if err != nil {
		r.log.Error().Err(err).Msg("the NMToken master key was not rolled; the current one stays in use")
	}
	if activated {
		r.mu.Lock()
		for _, a := range r.appOrder {
			for _, at := range a.attempts {
				clear(at.nmTokenNodes)
			}
		}
		r.mu.Unlock()
	}
}

// nmToken is an NMToken for attempt on node n, signed with the current
// key. Callers hold mu.
func (r *RM) nmToken(attempt *pb.ApplicationAttemptIdProto, user string, n *nodeRec) *hadooppb.TokenProto {
	k := r.nmKey.cur
	id, _ := proto.Marshal(&pb.NMTokenIdentifierProto{AppAttemptId: attempt, NodeId: n.yid, AppSubmitter: proto.String(user), KeyId: k.KeyId})
	return rpc.SignedToken(id, k, rpc.NMTokenKind, n.key)
}

// nmTokensFor are the NMTokens an attempt needs for containers it is
// given: one for each node it holds no token for yet. Each names the
// container's own attempt, as YARN's do (after an AM restart, kept
// containers keep their first attempt's id). Callers hold mu.
func (r *RM) nmTokensFor(at *attemptRec, conts []*contRec) []*pb.NMTokenProto {
	var out []*pb.NMTokenProto
	for _, cr := range conts {
		if at.nmTokenNodes[cr.node] {
			continue
		}
		if at.nmTokenNodes == nil {
			at.nmTokenNodes = map[*nodeRec]bool{}
		}
		at.nmTokenNodes[cr.node] = true
		out = append(out, &pb.NMTokenProto{NodeId: cr.node.yid, Token: r.nmToken(cr.attempt.yid, cr.app.user, cr.node)})
	}
	return out
}

// forgetNMTokens makes every attempt get a new token for n: it has
// registered again, and may have lost the key the old ones were signed
// with (YARN's removeNodeKey). Callers hold mu.
func (r *RM) forgetNMTokens(n *nodeRec) {
	for _, a := range r.appOrder {
		if at := a.current(); at != nil {
			delete(at.nmTokenNodes, n)
		}
	}
}

// nodeKeys are the master keys a node's heartbeat reply carries: the
// container-token key when the node's differs, and the next NM-token key
// while one is waiting to become current, until the node has it (YARN
// sends nothing otherwise). It takes keyMu, not mu.
func (r *RM) nodeKeys(req *pb.NodeHeartbeatRequestProto, resp *pb.NodeHeartbeatResponseProto) {
	r.keyMu.RLock()
	defer r.keyMu.RUnlock()
	if req.GetLastKnownContainerTokenMasterKey().GetKeyId() != r.tokenKey.GetKeyId() {
		resp.ContainerTokenMasterKey = r.tokenKey
	}
	known := req.GetLastKnownNmTokenMasterKey()
	switch next := r.nmKey.next; {
	case next != nil && (known == nil || known.GetKeyId() != next.GetKeyId()):
		resp.NmTokenMasterKey = next
	case next == nil && (known == nil || known.GetKeyId() != r.nmKey.cur.GetKeyId()):
		// A node that missed the roll (it was away) gets the current
		// key; YARN's nodes would have to register again.
		resp.NmTokenMasterKey = r.nmKey.cur
	}
}

// resourceTypes are the resource types the RM schedules, as YARN's
// ResourceUtils.getResourcesTypeInfo lists a default cluster's. A Java
// AM sizes every Resource it builds from this list (Hadoop's Distributed
// Shell AM reinitialises its types from the register reply), so it must
// never be empty. Loom's own disk and network types ride on Loom's wire
// extensions, not here.
func resourceTypes() []*pb.ResourceTypeInfoProto {
	return []*pb.ResourceTypeInfoProto{
		{Name: proto.String(fairness.Memory.String()), Units: proto.String("Mi"), Type: pb.ResourceTypesProto_COUNTABLE.Enum()},
		{Name: proto.String(fairness.VCores.String()), Units: proto.String(""), Type: pb.ResourceTypesProto_COUNTABLE.Enum()},
	}
}

func (s clientService) GetResourceTypeInfo(context.Context, *pb.GetAllResourceTypeInfoRequestProto) (*pb.GetAllResourceTypeInfoResponseProto, error) {
	return &pb.GetAllResourceTypeInfoResponseProto{ResourceTypeInfo: resourceTypes()}, nil
}

// errProfilesOff is YARN's answer while resource profiles are off, which
// they always are in Loom.
var errProfilesOff = rpc.Errorf(rpc.ClassYARNFeatureNotEnabled,
	"Resource profile is not enabled, please enable resource profile feature before using its functions. (by setting yarn.resourcemanager.resource-profiles.enabled to true)")

func (s clientService) GetResourceProfiles(context.Context, *pb.GetAllResourceProfilesRequestProto) (*pb.GetAllResourceProfilesResponseProto, error) {
	return nil, errProfilesOff
}

func (s clientService) GetResourceProfile(context.Context, *pb.GetResourceProfileRequestProto) (*pb.GetResourceProfileResponseProto, error) {
	return nil, errProfilesOff
}
