package webui

import (
	"net/http"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/daemon/webui/dao"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// The app resources YARN's REST API changes with PUT: its queue
// (moveApplicationAcrossQueues), its priority (updateApplicationPriority)
// and its timeout (updateApplicationTimeouts), answered by the same
// client-protocol handlers as over RPC, so the checks and errors are
// theirs. Like every REST write they need REST writes on (RESTWritesKey)
// or an authenticated caller.

func updateAppQueue(c *call) error {
	id, err := c.appID()
	if err != nil {
		return err
	}
	var body struct {
		Queue *string `json:"queue" xml:"queue"`
	}
	if err := readBodyOrXML(c, &body, "appqueue"); err != nil {
		return err
	}
	if body.Queue == nil || strings.TrimSpace(*body.Queue) == "" {
		return badRequest("queue is missing: send {\"queue\":\"<queue>\"}")
	}
	ctx := c.ctx()
	if _, err := c.s.b.MoveApplicationAcrossQueues(ctx, &pb.MoveApplicationAcrossQueuesRequestProto{ApplicationId: id,
		TargetQueue: proto.String(strings.TrimSpace(*body.Queue))}); err != nil {
		return err
	}
	rep, err := c.report(ctx, id)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, dao.AppQueue{Queue: rep.GetQueue()})
}

func updateAppPriority(c *call) error {
	id, err := c.appID()
	if err != nil {
		return err
	}
	var body struct {
		Priority *int32 `json:"priority" xml:"priority"`
	}
	if err := readBodyOrXML(c, &body, "applicationpriority"); err != nil {
		return err
	}
	if body.Priority == nil {
		return badRequest("priority is missing: send {\"priority\":<n>}")
	}
	ctx := c.ctx()
	resp, err := c.s.b.UpdateApplicationPriority(ctx, &pb.UpdateApplicationPriorityRequestProto{ApplicationId: id,
		ApplicationPriority: &pb.PriorityProto{Priority: body.Priority}})
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, dao.AppPriority{Priority: resp.GetApplicationPriority().GetPriority()})
}

func updateAppTimeout(c *call) error {
	id, err := c.appID()
	if err != nil {
		return err
	}
	var body struct {
		Timeout *struct {
			Type       string `json:"type" xml:"type"`
			ExpiryTime string `json:"expiryTime" xml:"expiryTime"`
		} `json:"timeout" xml:"timeout"`
	}
	if err := readBodyOrXML(c, &body, "timeout"); err != nil {
		return err
	}
	if body.Timeout == nil || body.Timeout.ExpiryTime == "" {
		return badRequest("timeout is missing: send {\"timeout\":{\"type\":\"LIFETIME\",\"expiryTime\":\"yyyy-MM-dd'T'HH:mm:ss.SSSZ\"}}")
	}
	typ := strings.ToUpper(strings.TrimSpace(body.Timeout.Type))
	if typ == "" {
		typ = "LIFETIME"
	}
	v, ok := pb.ApplicationTimeoutTypeProto_value["APP_TIMEOUT_"+typ]
	if !ok {
		return badRequest("Invalid application-timeout type %q; the only type is LIFETIME", body.Timeout.Type)
	}
	ctx := c.ctx()
	if _, err := c.s.b.UpdateApplicationTimeouts(ctx, &pb.UpdateApplicationTimeoutsRequestProto{ApplicationId: id,
		ApplicationTimeouts: []*pb.ApplicationUpdateTimeoutMapProto{{ApplicationTimeoutType: pb.ApplicationTimeoutTypeProto(v).Enum(),
			ExpireTime: proto.String(body.Timeout.ExpiryTime)}}}); err != nil {
		return err
	}
	rep, err := c.report(ctx, id)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, dao.TimeoutResponse{Timeout: appTimeout(rep, pb.ApplicationTimeoutTypeProto(v))})
}
