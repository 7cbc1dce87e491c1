package rpc

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/resource"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// memoryUnits are the units YARN allows on memory-mb, in MB.
var memoryUnits = map[string]float64{"": 1, "M": 1, "Mi": 1, "Ki": 1.0 / 1024, "K": 1.0 / 1024,
	"G": 1024, "Gi": 1024, "T": 1024 * 1024, "Ti": 1024 * 1024}

// VectorFromResource reads a YARN resource into a Loom vector: memory and
// vcores from their fields, and YARN 3 resource types from its
// resource_value_map by name. An unknown type is an error, as YARN's
// ResourceNotFoundException is.
func VectorFromResource(r *pb.ResourceProto) (resource.Vector, error) {
	var v resource.Vector
	if r == nil {
		return v, nil
	}
	v[resource.Memory] = float64(r.GetMemory())
	v[resource.VCores] = float64(r.GetVirtualCores())
	for _, ri := range r.GetResourceValueMap() {
		k, err := resource.ParseKind(ri.GetKey())
		if err != nil {
			return v, err
		}
		val := float64(ri.GetValue())
		if k == resource.Memory {
			f, ok := memoryUnits[ri.GetUnits()]
			if !ok {
				return v, fmt.Errorf("memory-mb in unknown units %q", ri.GetUnits())
			}
			val *= f
		}
		v[k] = val
	}
	return v, nil
}

// ResourceFromVector writes a Loom vector as a YARN resource. Memory and
// vcores go in their own fields, which every YARN client reads; other
// kinds, when non-zero, in resource_value_map, which YARN 3 reads.
func ResourceFromVector(v resource.Vector) *pb.ResourceProto {
	r := &pb.ResourceProto{Memory: proto.Int64(int64(math.Round(v[resource.Memory]))),
		VirtualCores: proto.Int32(int32(math.Round(v[resource.VCores])))}
	for k := resource.Disk; k < resource.NumKinds; k++ {
		if v[k] != 0 {
			r.ResourceValueMap = append(r.ResourceValueMap, &pb.ResourceInformationProto{
				Key: proto.String(k.String()), Value: proto.Int64(int64(math.Round(v[k])))})
		}
	}
	return r
}

// IsAltruistic says whether a resource request is ALTRUISTIC: only when a
// Loom AM says so. A stock YARN AM's asks are DEFAULT. (The wire knows the
// kinds; what they mean is the scheduler's, in altruism.)
func IsAltruistic(rr *pb.ResourceRequestProto) bool {
	return rr.GetLoomAskKind() == pb.LoomAskKindProto_LOOM_ALTRUISTIC
}

// AskDemand is a request's per-task demand: Loom's full vector when the
// AM sent one, else the YARN capability.
func AskDemand(rr *pb.ResourceRequestProto) (resource.Vector, error) {
	if rr.LoomDemand != nil {
		return VectorFromResource(rr.LoomDemand)
	}
	return VectorFromResource(rr.GetCapability())
}

// AskKindProto is the wire form of an ask's kind.
func AskKindProto(altruistic bool) pb.LoomAskKindProto {
	if altruistic {
		return pb.LoomAskKindProto_LOOM_ALTRUISTIC
	}
	return pb.LoomAskKindProto_LOOM_DEFAULT
}
