package webui

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// submissionContext translates YARN's REST submission body into the
// ApplicationSubmissionContext the RPC takes. Fields left out keep the
// protocol's defaults, except a local resource's type and visibility,
// which default to FILE and APPLICATION (the protocol's default type
// would unpack a plain file as an archive).
func submissionContext(b *dao.AppSubmission) (*pb.ApplicationSubmissionContextProto, error) {
	if b.ApplicationID == nil || strings.TrimSpace(*b.ApplicationID) == "" {
		return nil, badRequest("application-id is missing: ask POST /ws/v1/cluster/apps/new-application for one")
	}
	id, err := rpc.ParseAppID(strings.TrimSpace(*b.ApplicationID))
	if err != nil {
		return nil, badRequest("application-id: %v", err)
	}
	sc := &pb.ApplicationSubmissionContextProto{ApplicationId: id, ApplicationName: b.ApplicationName,
		Queue: b.Queue, UnmanagedAm: b.UnmanagedAM, CancelTokensWhenComplete: b.CancelTokens,
		ApplicationType: b.ApplicationType, KeepContainersAcrossApplicationAttempts: b.KeepContainers,
		AttemptFailuresValidityInterval: b.AttemptFailuresValidityInterval, NodeLabelExpression: b.AppNodeLabelExpression}
	if b.Priority != nil {
		sc.Priority = &pb.PriorityProto{Priority: b.Priority}
	}
	if b.ReservationID != nil && strings.TrimSpace(*b.ReservationID) != "" {
		rid, err := rpc.ParseReservationID(*b.ReservationID)
		if err != nil {
			return nil, badRequest("reservation-id: %q is not reservation_<cluster timestamp>_<number>", *b.ReservationID)
		}
		sc.ReservationId = rid
	}
	if b.MaxAppAttempts != nil {
		if *b.MaxAppAttempts < 0 {
			return nil, badRequest("max-app-attempts must not be negative, got %d", *b.MaxAppAttempts)
		}
		sc.MaxAppAttempts = b.MaxAppAttempts
	}
	if b.Resource != nil {
		if sc.Resource, err = resourceProto("resource", *b.Resource); err != nil {
			return nil, err
		}
	}
	if sc.ApplicationTags, err = decodeTags(b.ApplicationTags); err != nil {
		return nil, err
	}
	if b.AMContainerSpec != nil {
		if sc.AmContainerSpec, err = launchContext("am-container-spec", b.AMContainerSpec); err != nil {
			return nil, err
		}
	}
	return sc, nil
}

func resourceProto(path string, r dao.Resource) (*pb.ResourceProto, error) {
	if r.Memory < 0 {
		return nil, badRequest("%s.memory must not be negative, got %d", path, r.Memory)
	}
	if r.VCores < 0 || r.VCores > math.MaxInt32 {
		return nil, badRequest("%s.vCores must be between 0 and %d, got %d", path, math.MaxInt32, r.VCores)
	}
	return &pb.ResourceProto{Memory: proto.Int64(r.Memory), VirtualCores: proto.Int32(int32(r.VCores))}, nil
}

// decodeTags reads application-tags: {"tag": [...]} as YARN writes it, a
// bare list, or one string.
func decodeTags(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		var w struct {
			Tag json.RawMessage `json:"tag"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, jsonError("application-tags", err, 0)
		}
		return decodeList[string]("application-tags.tag", w.Tag)
	}
	return decodeList[string]("application-tags", raw)
}

func launchContext(path string, s *dao.ContainerLaunchContext) (*pb.ContainerLaunchContextProto, error) {
	clc := &pb.ContainerLaunchContextProto{}
	if s.LocalResources != nil {
		p := path + ".local-resources.entry"
		entries, err := decodeList[dao.LocalResourceEntry](p, s.LocalResources.Entry)
		if err != nil {
			return nil, err
		}
		for i, e := range entries {
			lr, err := localResource(fmt.Sprintf("%s[%d]", p, i), e)
			if err != nil {
				return nil, err
			}
			clc.LocalResources = append(clc.LocalResources, lr)
		}
	}
	if s.Environment != nil {
		kvs, err := keyValues(path+".environment.entry", s.Environment)
		if err != nil {
			return nil, err
		}
		for _, kv := range kvs {
			clc.Environment = append(clc.Environment, &pb.StringStringMapProto{Key: proto.String(kv[0]), Value: proto.String(kv[1])})
		}
	}
	if s.Commands != nil {
		cmds, err := decodeList[string](path+".commands.command", s.Commands.Command)
		if err != nil {
			return nil, err
		}
		clc.Command = cmds
	}
	if s.ServiceData != nil {
		p := path + ".service-data.entry"
		kvs, err := keyValues(p, s.ServiceData)
		if err != nil {
			return nil, err
		}
		for i, kv := range kvs {
			data, err := base64.StdEncoding.DecodeString(kv[1])
			if err != nil {
				return nil, badRequest("%s[%d].value: not base64: %v", p, i, err)
			}
			clc.ServiceData = append(clc.ServiceData, &pb.StringBytesMapProto{Key: proto.String(kv[0]), Value: data})
		}
	}
	if s.ApplicationACLs != nil {
		p := path + ".application-acls.entry"
		kvs, err := keyValues(p, s.ApplicationACLs)
		if err != nil {
			return nil, err
		}
		for i, kv := range kvs {
			t, ok := pb.ApplicationAccessTypeProto_value["APPACCESS_"+strings.ToUpper(strings.TrimPrefix(kv[0], "APPACCESS_"))]
			if !ok {
				return nil, badRequest("%s[%d].key: %q is not an access type (VIEW_APP or MODIFY_APP)", p, i, kv[0])
			}
			clc.Application_ACLs = append(clc.Application_ACLs, &pb.ApplicationACLMapProto{
				AccessType: pb.ApplicationAccessTypeProto(t).Enum(), Acl: proto.String(kv[1])})
		}
	}
	return clc, nil
}

// keyValues reads {"entry": [{key, value}]}: a key is required, a missing
// value is "".
func keyValues(path string, e *dao.Entries) ([][2]string, error) {
	entries, err := decodeList[dao.KeyValue](path, e.Entry)
	if err != nil {
		return nil, err
	}
	out := make([][2]string, 0, len(entries))
	for i, kv := range entries {
		if kv.Key == nil || *kv.Key == "" {
			return nil, badRequest("%s[%d].key is missing", path, i)
		}
		v := ""
		if kv.Value != nil {
			v = *kv.Value
		}
		out = append(out, [2]string{*kv.Key, v})
	}
	return out, nil
}

func localResource(path string, e dao.LocalResourceEntry) (*pb.StringLocalResourceMapProto, error) {
	if e.Key == nil || *e.Key == "" {
		return nil, badRequest("%s.key is missing: name the file the container sees", path)
	}
	v := e.Value
	if v == nil {
		return nil, badRequest("%s.value is missing", path)
	}
	if v.Resource == nil || strings.TrimSpace(*v.Resource) == "" {
		return nil, badRequest("%s.value.resource is missing: give the file's URL", path)
	}
	u, err := resourceURL(strings.TrimSpace(*v.Resource))
	if err != nil {
		return nil, badRequest("%s.value.resource: %v", path, err)
	}
	lr := &pb.LocalResourceProto{Resource: u, Type: pb.LocalResourceTypeProto_FILE.Enum(),
		Visibility: pb.LocalResourceVisibilityProto_APPLICATION.Enum(), Size: v.Size, Timestamp: v.Timestamp, Pattern: v.Pattern}
	if v.Type != nil {
		t, ok := pb.LocalResourceTypeProto_value[strings.ToUpper(*v.Type)]
		if !ok {
			return nil, badRequest("%s.value.type: %q is not a resource type (ARCHIVE, FILE or PATTERN)", path, *v.Type)
		}
		lr.Type = pb.LocalResourceTypeProto(t).Enum()
	}
	if v.Visibility != nil {
		vis, ok := pb.LocalResourceVisibilityProto_value[strings.ToUpper(*v.Visibility)]
		if !ok {
			return nil, badRequest("%s.value.visibility: %q is not a visibility (PUBLIC, PRIVATE or APPLICATION)", path, *v.Visibility)
		}
		lr.Visibility = pb.LocalResourceVisibilityProto(vis).Enum()
	}
	if v.Size != nil && *v.Size < 0 {
		return nil, badRequest("%s.value.size must not be negative, got %d", path, *v.Size)
	}
	return &pb.StringLocalResourceMapProto{Key: e.Key, Value: lr}, nil
}

// resourceURL is YARN's URL record of a resource's address. A path with
// no scheme is on the default file system.
func resourceURL(s string) (*pb.URLProto, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL: %v", s, strings.TrimPrefix(err.Error(), "parse "+strconv.Quote(s)+": "))
	}
	if u.Opaque != "" {
		return nil, fmt.Errorf("%q is not a hierarchical URL (scheme://host/path)", s)
	}
	if u.Path == "" {
		return nil, fmt.Errorf("%q has no path", s)
	}
	r := &pb.URLProto{File: proto.String(u.Path)}
	if u.Scheme != "" {
		r.Scheme = proto.String(u.Scheme)
	}
	if h := u.Hostname(); h != "" {
		r.Host = proto.String(h)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("%q: port %q is not a port number", s, p)
		}
		r.Port = proto.Int32(int32(n))
	}
	if u.User != nil {
		r.UserInfo = proto.String(u.User.String())
	}
	return r, nil
}
