package rpc

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// recorder implements all four YARN services: it records each request and
// its caller, and answers with the response the test set for the method.
type recorder struct {
	mu   sync.Mutex
	got  map[string]proto.Message
	user map[string]string
	resp map[string]proto.Message
}

func newRecorder() *recorder {
	return &recorder{got: map[string]proto.Message{}, user: map[string]string{}, resp: map[string]proto.Message{}}
}

func record[Resp proto.Message](r *recorder, method string, ctx context.Context, req proto.Message) (Resp, error) {
	ci, _ := CallFromContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got[method] = proto.Clone(req)
	r.user[method] = ci.User
	if a, ok := req.(*pb.GetApplicationReportRequestProto); ok && a.GetApplicationId().GetId() == 404 {
		var zero Resp
		return zero, Errorf(ClassApplicationNotFound, "Application with id 'application_1700000000000_0404' doesn't exist in RM.")
	}
	return r.resp[method].(Resp), nil
}

func (r *recorder) GetNewApplication(ctx context.Context, q *pb.GetNewApplicationRequestProto) (*pb.GetNewApplicationResponseProto, error) {
	return record[*pb.GetNewApplicationResponseProto](r, "getNewApplication", ctx, q)
}
func (r *recorder) SubmitApplication(ctx context.Context, q *pb.SubmitApplicationRequestProto) (*pb.SubmitApplicationResponseProto, error) {
	return record[*pb.SubmitApplicationResponseProto](r, "submitApplication", ctx, q)
}
func (r *recorder) GetApplicationReport(ctx context.Context, q *pb.GetApplicationReportRequestProto) (*pb.GetApplicationReportResponseProto, error) {
	return record[*pb.GetApplicationReportResponseProto](r, "getApplicationReport", ctx, q)
}
func (r *recorder) GetApplications(ctx context.Context, q *pb.GetApplicationsRequestProto) (*pb.GetApplicationsResponseProto, error) {
	return record[*pb.GetApplicationsResponseProto](r, "getApplications", ctx, q)
}
func (r *recorder) ForceKillApplication(ctx context.Context, q *pb.KillApplicationRequestProto) (*pb.KillApplicationResponseProto, error) {
	return record[*pb.KillApplicationResponseProto](r, "forceKillApplication", ctx, q)
}
func (r *recorder) GetClusterMetrics(ctx context.Context, q *pb.GetClusterMetricsRequestProto) (*pb.GetClusterMetricsResponseProto, error) {
	return record[*pb.GetClusterMetricsResponseProto](r, "getClusterMetrics", ctx, q)
}
func (r *recorder) GetClusterNodes(ctx context.Context, q *pb.GetClusterNodesRequestProto) (*pb.GetClusterNodesResponseProto, error) {
	return record[*pb.GetClusterNodesResponseProto](r, "getClusterNodes", ctx, q)
}
func (r *recorder) GetApplicationAttempts(ctx context.Context, q *pb.GetApplicationAttemptsRequestProto) (*pb.GetApplicationAttemptsResponseProto, error) {
	return record[*pb.GetApplicationAttemptsResponseProto](r, "getApplicationAttempts", ctx, q)
}
func (r *recorder) GetContainers(ctx context.Context, q *pb.GetContainersRequestProto) (*pb.GetContainersResponseProto, error) {
	return record[*pb.GetContainersResponseProto](r, "getContainers", ctx, q)
}
func (r *recorder) GetQueueInfo(ctx context.Context, q *pb.GetQueueInfoRequestProto) (*pb.GetQueueInfoResponseProto, error) {
	return record[*pb.GetQueueInfoResponseProto](r, "getQueueInfo", ctx, q)
}
func (r *recorder) GetResourceTypeInfo(ctx context.Context, q *pb.GetAllResourceTypeInfoRequestProto) (*pb.GetAllResourceTypeInfoResponseProto, error) {
	return record[*pb.GetAllResourceTypeInfoResponseProto](r, "getResourceTypeInfo", ctx, q)
}
func (r *recorder) GetResourceProfiles(ctx context.Context, q *pb.GetAllResourceProfilesRequestProto) (*pb.GetAllResourceProfilesResponseProto, error) {
	return record[*pb.GetAllResourceProfilesResponseProto](r, "getResourceProfiles", ctx, q)
}
func (r *recorder) GetResourceProfile(ctx context.Context, q *pb.GetResourceProfileRequestProto) (*pb.GetResourceProfileResponseProto, error) {
	return record[*pb.GetResourceProfileResponseProto](r, "getResourceProfile", ctx, q)
}
func (r *recorder) FailApplicationAttempt(ctx context.Context, q *pb.FailApplicationAttemptRequestProto) (*pb.FailApplicationAttemptResponseProto, error) {
	return record[*pb.FailApplicationAttemptResponseProto](r, "failApplicationAttempt", ctx, q)
}
func (r *recorder) SetApplicationTags(ctx context.Context, q *pb.SetApplicationTagsRequestProto) (*pb.SetApplicationTagsResponseProto, error) {
	return record[*pb.SetApplicationTagsResponseProto](r, "setApplicationTags", ctx, q)
}
func (r *recorder) MoveApplicationAcrossQueues(ctx context.Context, q *pb.MoveApplicationAcrossQueuesRequestProto) (*pb.MoveApplicationAcrossQueuesResponseProto, error) {
	return record[*pb.MoveApplicationAcrossQueuesResponseProto](r, "moveApplicationAcrossQueues", ctx, q)
}
func (r *recorder) UpdateApplicationPriority(ctx context.Context, q *pb.UpdateApplicationPriorityRequestProto) (*pb.UpdateApplicationPriorityResponseProto, error) {
	return record[*pb.UpdateApplicationPriorityResponseProto](r, "updateApplicationPriority", ctx, q)
}
func (r *recorder) UpdateApplicationTimeouts(ctx context.Context, q *pb.UpdateApplicationTimeoutsRequestProto) (*pb.UpdateApplicationTimeoutsResponseProto, error) {
	return record[*pb.UpdateApplicationTimeoutsResponseProto](r, "updateApplicationTimeouts", ctx, q)
}
func (r *recorder) GetQueueUserAcls(ctx context.Context, q *pb.GetQueueUserAclsInfoRequestProto) (*pb.GetQueueUserAclsInfoResponseProto, error) {
	return record[*pb.GetQueueUserAclsInfoResponseProto](r, "getQueueUserAcls", ctx, q)
}
func (r *recorder) GetDelegationToken(ctx context.Context, q *hadooppb.GetDelegationTokenRequestProto) (*hadooppb.GetDelegationTokenResponseProto, error) {
	return record[*hadooppb.GetDelegationTokenResponseProto](r, "getDelegationToken", ctx, q)
}
func (r *recorder) RenewDelegationToken(ctx context.Context, q *hadooppb.RenewDelegationTokenRequestProto) (*hadooppb.RenewDelegationTokenResponseProto, error) {
	return record[*hadooppb.RenewDelegationTokenResponseProto](r, "renewDelegationToken", ctx, q)
}
func (r *recorder) CancelDelegationToken(ctx context.Context, q *hadooppb.CancelDelegationTokenRequestProto) (*hadooppb.CancelDelegationTokenResponseProto, error) {
	return record[*hadooppb.CancelDelegationTokenResponseProto](r, "cancelDelegationToken", ctx, q)
}
func (r *recorder) GetApplicationAttemptReport(ctx context.Context, q *pb.GetApplicationAttemptReportRequestProto) (*pb.GetApplicationAttemptReportResponseProto, error) {
	return record[*pb.GetApplicationAttemptReportResponseProto](r, "getApplicationAttemptReport", ctx, q)
}
func (r *recorder) GetContainerReport(ctx context.Context, q *pb.GetContainerReportRequestProto) (*pb.GetContainerReportResponseProto, error) {
	return record[*pb.GetContainerReportResponseProto](r, "getContainerReport", ctx, q)
}
func (r *recorder) GetNewReservation(ctx context.Context, q *pb.GetNewReservationRequestProto) (*pb.GetNewReservationResponseProto, error) {
	return record[*pb.GetNewReservationResponseProto](r, "getNewReservation", ctx, q)
}
func (r *recorder) SubmitReservation(ctx context.Context, q *pb.ReservationSubmissionRequestProto) (*pb.ReservationSubmissionResponseProto, error) {
	return record[*pb.ReservationSubmissionResponseProto](r, "submitReservation", ctx, q)
}
func (r *recorder) UpdateReservation(ctx context.Context, q *pb.ReservationUpdateRequestProto) (*pb.ReservationUpdateResponseProto, error) {
	return record[*pb.ReservationUpdateResponseProto](r, "updateReservation", ctx, q)
}
func (r *recorder) DeleteReservation(ctx context.Context, q *pb.ReservationDeleteRequestProto) (*pb.ReservationDeleteResponseProto, error) {
	return record[*pb.ReservationDeleteResponseProto](r, "deleteReservation", ctx, q)
}
func (r *recorder) ListReservations(ctx context.Context, q *pb.ReservationListRequestProto) (*pb.ReservationListResponseProto, error) {
	return record[*pb.ReservationListResponseProto](r, "listReservations", ctx, q)
}
func (r *recorder) GetNodeToLabels(ctx context.Context, q *pb.GetNodesToLabelsRequestProto) (*pb.GetNodesToLabelsResponseProto, error) {
	return record[*pb.GetNodesToLabelsResponseProto](r, "getNodeToLabels", ctx, q)
}
func (r *recorder) GetLabelsToNodes(ctx context.Context, q *pb.GetLabelsToNodesRequestProto) (*pb.GetLabelsToNodesResponseProto, error) {
	return record[*pb.GetLabelsToNodesResponseProto](r, "getLabelsToNodes", ctx, q)
}
func (r *recorder) GetClusterNodeLabels(ctx context.Context, q *pb.GetClusterNodeLabelsRequestProto) (*pb.GetClusterNodeLabelsResponseProto, error) {
	return record[*pb.GetClusterNodeLabelsResponseProto](r, "getClusterNodeLabels", ctx, q)
}
func (r *recorder) GetClusterNodeAttributes(ctx context.Context, q *pb.GetClusterNodeAttributesRequestProto) (*pb.GetClusterNodeAttributesResponseProto, error) {
	return record[*pb.GetClusterNodeAttributesResponseProto](r, "getClusterNodeAttributes", ctx, q)
}
func (r *recorder) GetAttributesToNodes(ctx context.Context, q *pb.GetAttributesToNodesRequestProto) (*pb.GetAttributesToNodesResponseProto, error) {
	return record[*pb.GetAttributesToNodesResponseProto](r, "getAttributesToNodes", ctx, q)
}
func (r *recorder) GetNodesToAttributes(ctx context.Context, q *pb.GetNodesToAttributesRequestProto) (*pb.GetNodesToAttributesResponseProto, error) {
	return record[*pb.GetNodesToAttributesResponseProto](r, "getNodesToAttributes", ctx, q)
}
func (r *recorder) SignalToContainer(ctx context.Context, q *pb.SignalContainerRequestProto) (*pb.SignalContainerResponseProto, error) {
	return record[*pb.SignalContainerResponseProto](r, "signalToContainer", ctx, q)
}
func (r *recorder) RegisterApplicationMaster(ctx context.Context, q *pb.RegisterApplicationMasterRequestProto) (*pb.RegisterApplicationMasterResponseProto, error) {
	return record[*pb.RegisterApplicationMasterResponseProto](r, "registerApplicationMaster", ctx, q)
}
func (r *recorder) Allocate(ctx context.Context, q *pb.AllocateRequestProto) (*pb.AllocateResponseProto, error) {
	return record[*pb.AllocateResponseProto](r, "allocate", ctx, q)
}
func (r *recorder) FinishApplicationMaster(ctx context.Context, q *pb.FinishApplicationMasterRequestProto) (*pb.FinishApplicationMasterResponseProto, error) {
	return record[*pb.FinishApplicationMasterResponseProto](r, "finishApplicationMaster", ctx, q)
}
func (r *recorder) RegisterNodeManager(ctx context.Context, q *pb.RegisterNodeManagerRequestProto) (*pb.RegisterNodeManagerResponseProto, error) {
	return record[*pb.RegisterNodeManagerResponseProto](r, "registerNodeManager", ctx, q)
}
func (r *recorder) NodeHeartbeat(ctx context.Context, q *pb.NodeHeartbeatRequestProto) (*pb.NodeHeartbeatResponseProto, error) {
	return record[*pb.NodeHeartbeatResponseProto](r, "nodeHeartbeat", ctx, q)
}
func (r *recorder) UnRegisterNodeManager(ctx context.Context, q *pb.UnRegisterNodeManagerRequestProto) (*pb.UnRegisterNodeManagerResponseProto, error) {
	return record[*pb.UnRegisterNodeManagerResponseProto](r, "unRegisterNodeManager", ctx, q)
}
func (r *recorder) StartContainers(ctx context.Context, q *pb.StartContainersRequestProto) (*pb.StartContainersResponseProto, error) {
	return record[*pb.StartContainersResponseProto](r, "startContainers", ctx, q)
}
func (r *recorder) StopContainers(ctx context.Context, q *pb.StopContainersRequestProto) (*pb.StopContainersResponseProto, error) {
	return record[*pb.StopContainersResponseProto](r, "stopContainers", ctx, q)
}
func (r *recorder) GetContainerStatuses(ctx context.Context, q *pb.GetContainerStatusesRequestProto) (*pb.GetContainerStatusesResponseProto, error) {
	return record[*pb.GetContainerStatusesResponseProto](r, "getContainerStatuses", ctx, q)
}

func startYARN(t testing.TB) (*recorder, string) {
	t.Helper()
	rec := newRecorder()
	s := NewServer(ServerOptions{ErrorClass: ClassYarnException})
	s.Register(ApplicationClientService(rec))
	s.Register(ApplicationMasterService(rec))
	s.Register(ResourceTrackerService(rec))
	s.Register(ContainerManagementService(rec))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return rec, ln.Addr().String()
}

var (
	appID  = &pb.ApplicationIdProto{Id: proto.Int32(3), ClusterTimestamp: proto.Int64(1700000000000)}
	attID  = &pb.ApplicationAttemptIdProto{ApplicationId: appID, AttemptId: proto.Int32(1)}
	contID = &pb.ContainerIdProto{AppId: appID, AppAttemptId: attID, Id: proto.Int64(2)}
	nodeID = &pb.NodeIdProto{Host: proto.String("nm1.example"), Port: proto.Int32(45454)}
	res    = &pb.ResourceProto{Memory: proto.Int64(2048), VirtualCores: proto.Int32(1)}
	dtoken = &hadooppb.TokenProto{Identifier: []byte{1, 2}, Password: []byte{3}, Kind: proto.String("RM_DELEGATION_TOKEN"), Service: proto.String("rm:8032")}
)

func TestEveryYARNMethodRoundTrips(t *testing.T) {
	rec, addr := startYARN(t)
	cl := NewClient(addr, ClientOptions{User: "carol"})
	defer cl.Close()
	ac, am, rt, cm := ApplicationClient{cl}, ApplicationMasterClient{cl}, ResourceTrackerClient{cl}, ContainerManagementClient{cl}
	report := &pb.ApplicationReportProto{ApplicationId: appID, User: proto.String("carol"), Queue: proto.String("default"),
		Name: proto.String("tpch-q5"), YarnApplicationState: pb.YarnApplicationStateProto_RUNNING.Enum()}
	tests := []struct {
		method    string
		req, resp proto.Message
		call      func(context.Context) (proto.Message, error)
	}{
		{"getNewApplication", &pb.GetNewApplicationRequestProto{},
			&pb.GetNewApplicationResponseProto{ApplicationId: appID, MaximumCapability: res}, nil},
		{"submitApplication", &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{
			ApplicationId: appID, ApplicationName: proto.String("tpch-q5"), Queue: proto.String("default"), Resource: res,
			AmContainerSpec: &pb.ContainerLaunchContextProto{Command: []string{"loom", "am"},
				Environment: []*pb.StringStringMapProto{{Key: proto.String("LOOM_JOB"), Value: proto.String("q5")}}}}},
			&pb.SubmitApplicationResponseProto{}, nil},
		{"getApplicationReport", &pb.GetApplicationReportRequestProto{ApplicationId: appID},
			&pb.GetApplicationReportResponseProto{ApplicationReport: report}, nil},
		{"getApplications", &pb.GetApplicationsRequestProto{ApplicationStates: []pb.YarnApplicationStateProto{pb.YarnApplicationStateProto_RUNNING},
			Queues: []string{"default"}, Limit: proto.Int64(10)}, &pb.GetApplicationsResponseProto{Applications: []*pb.ApplicationReportProto{report}}, nil},
		{"forceKillApplication", &pb.KillApplicationRequestProto{ApplicationId: appID, Diagnostics: proto.String("by carol")},
			&pb.KillApplicationResponseProto{IsKillCompleted: proto.Bool(true)}, nil},
		{"getClusterMetrics", &pb.GetClusterMetricsRequestProto{},
			&pb.GetClusterMetricsResponseProto{ClusterMetrics: &pb.YarnClusterMetricsProto{NumNodeManagers: proto.Int32(4)}}, nil},
		{"getClusterNodes", &pb.GetClusterNodesRequestProto{NodeStates: []pb.NodeStateProto{pb.NodeStateProto_NS_RUNNING}},
			&pb.GetClusterNodesResponseProto{NodeReports: []*pb.NodeReportProto{{NodeId: nodeID, Capability: res, NumContainers: proto.Int32(2)}}}, nil},
		{"getApplicationAttempts", &pb.GetApplicationAttemptsRequestProto{ApplicationId: appID},
			&pb.GetApplicationAttemptsResponseProto{ApplicationAttempts: []*pb.ApplicationAttemptReportProto{{ApplicationAttemptId: attID,
				AmContainerId: contID}}}, nil},
		{"getContainers", &pb.GetContainersRequestProto{ApplicationAttemptId: attID},
			&pb.GetContainersResponseProto{Containers: []*pb.ContainerReportProto{{ContainerId: contID, Resource: res, NodeId: nodeID}}}, nil},
		{"getQueueInfo", &pb.GetQueueInfoRequestProto{QueueName: proto.String("default")},
			&pb.GetQueueInfoResponseProto{QueueInfo: &pb.QueueInfoProto{QueueName: proto.String("default"), Capacity: proto.Float32(1)}}, nil},
		{"getResourceTypeInfo", &pb.GetAllResourceTypeInfoRequestProto{},
			&pb.GetAllResourceTypeInfoResponseProto{ResourceTypeInfo: []*pb.ResourceTypeInfoProto{{Name: proto.String("memory-mb"),
				Units: proto.String("Mi"), Type: pb.ResourceTypesProto_COUNTABLE.Enum()}}}, nil},
		{"getResourceProfiles", &pb.GetAllResourceProfilesRequestProto{}, &pb.GetAllResourceProfilesResponseProto{
			ResourceProfiles: &pb.ResourceProfilesProto{}}, nil},
		{"getResourceProfile", &pb.GetResourceProfileRequestProto{Profile: proto.String("small")},
			&pb.GetResourceProfileResponseProto{Resources: res}, nil},
		{"failApplicationAttempt", &pb.FailApplicationAttemptRequestProto{ApplicationAttemptId: attID}, &pb.FailApplicationAttemptResponseProto{}, nil},
		{"setApplicationTags", &pb.SetApplicationTagsRequestProto{ApplicationId: appID, ApplicationTags: []string{"tpch", "nightly"}},
			&pb.SetApplicationTagsResponseProto{ApplicationTags: []string{"nightly", "tpch"}}, nil},
		{"moveApplicationAcrossQueues", &pb.MoveApplicationAcrossQueuesRequestProto{ApplicationId: appID, TargetQueue: proto.String("batch")},
			&pb.MoveApplicationAcrossQueuesResponseProto{}, nil},
		{"updateApplicationPriority", &pb.UpdateApplicationPriorityRequestProto{ApplicationId: appID,
			ApplicationPriority: &pb.PriorityProto{Priority: proto.Int32(5)}},
			&pb.UpdateApplicationPriorityResponseProto{ApplicationPriority: &pb.PriorityProto{Priority: proto.Int32(0)}}, nil},
		{"updateApplicationTimeouts", &pb.UpdateApplicationTimeoutsRequestProto{ApplicationId: appID,
			ApplicationTimeouts: []*pb.ApplicationUpdateTimeoutMapProto{{ApplicationTimeoutType: pb.ApplicationTimeoutTypeProto_APP_TIMEOUT_LIFETIME.Enum(),
				ExpireTime: proto.String("2030-01-02T03:04:05.000+0000")}}},
			&pb.UpdateApplicationTimeoutsResponseProto{ApplicationTimeouts: []*pb.ApplicationUpdateTimeoutMapProto{{
				ApplicationTimeoutType: pb.ApplicationTimeoutTypeProto_APP_TIMEOUT_LIFETIME.Enum(), ExpireTime: proto.String("2030-01-02T03:04:05.000+0000")}}}, nil},
		{"getQueueUserAcls", &pb.GetQueueUserAclsInfoRequestProto{}, &pb.GetQueueUserAclsInfoResponseProto{QueueUserAcls: []*pb.QueueUserACLInfoProto{{
			QueueName: proto.String("default"), UserAcls: []pb.QueueACLProto{pb.QueueACLProto_QACL_SUBMIT_APPLICATIONS, pb.QueueACLProto_QACL_ADMINISTER_QUEUE}}}}, nil},
		{"getDelegationToken", &hadooppb.GetDelegationTokenRequestProto{Renewer: proto.String("yarn")},
			&hadooppb.GetDelegationTokenResponseProto{Token: dtoken}, nil},
		{"renewDelegationToken", &hadooppb.RenewDelegationTokenRequestProto{Token: dtoken},
			&hadooppb.RenewDelegationTokenResponseProto{NewExpiryTime: proto.Uint64(1700086400000)}, nil},
		{"cancelDelegationToken", &hadooppb.CancelDelegationTokenRequestProto{Token: dtoken}, &hadooppb.CancelDelegationTokenResponseProto{}, nil},
		{"getApplicationAttemptReport", &pb.GetApplicationAttemptReportRequestProto{ApplicationAttemptId: attID},
			&pb.GetApplicationAttemptReportResponseProto{ApplicationAttemptReport: &pb.ApplicationAttemptReportProto{ApplicationAttemptId: attID,
				AmContainerId: contID, YarnApplicationAttemptState: pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_RUNNING.Enum()}}, nil},
		{"getContainerReport", &pb.GetContainerReportRequestProto{ContainerId: contID},
			&pb.GetContainerReportResponseProto{ContainerReport: &pb.ContainerReportProto{ContainerId: contID, Resource: res, NodeId: nodeID}}, nil},
		{"getNewReservation", &pb.GetNewReservationRequestProto{},
			&pb.GetNewReservationResponseProto{ReservationId: &pb.ReservationIdProto{Id: proto.Int64(1), ClusterTimestamp: proto.Int64(1700000000000)}}, nil},
		{"submitReservation", &pb.ReservationSubmissionRequestProto{Queue: proto.String("default"),
			ReservationId: &pb.ReservationIdProto{Id: proto.Int64(1), ClusterTimestamp: proto.Int64(1700000000000)}},
			&pb.ReservationSubmissionResponseProto{}, nil},
		{"updateReservation", &pb.ReservationUpdateRequestProto{ReservationId: &pb.ReservationIdProto{Id: proto.Int64(1)}},
			&pb.ReservationUpdateResponseProto{}, nil},
		{"deleteReservation", &pb.ReservationDeleteRequestProto{ReservationId: &pb.ReservationIdProto{Id: proto.Int64(1)}},
			&pb.ReservationDeleteResponseProto{}, nil},
		{"listReservations", &pb.ReservationListRequestProto{Queue: proto.String("default"), EndTime: proto.Int64(-1)},
			&pb.ReservationListResponseProto{}, nil},
		{"getNodeToLabels", &pb.GetNodesToLabelsRequestProto{},
			&pb.GetNodesToLabelsResponseProto{NodeToLabels: []*pb.NodeIdToLabelsProto{{NodeId: nodeID, NodeLabels: []string{"gpu"}}}}, nil},
		{"getLabelsToNodes", &pb.GetLabelsToNodesRequestProto{NodeLabels: []string{"gpu"}},
			&pb.GetLabelsToNodesResponseProto{LabelsToNodes: []*pb.LabelsToNodeIdsProto{{NodeLabels: proto.String("gpu"), NodeId: []*pb.NodeIdProto{nodeID}}}}, nil},
		{"getClusterNodeLabels", &pb.GetClusterNodeLabelsRequestProto{},
			&pb.GetClusterNodeLabelsResponseProto{NodeLabels: []*pb.NodeLabelProto{{Name: proto.String("gpu"), IsExclusive: proto.Bool(false)}}}, nil},
		{"getClusterNodeAttributes", &pb.GetClusterNodeAttributesRequestProto{}, &pb.GetClusterNodeAttributesResponseProto{}, nil},
		{"getAttributesToNodes", &pb.GetAttributesToNodesRequestProto{NodeAttributes: []*pb.NodeAttributeKeyProto{{AttributeName: proto.String("os")}}},
			&pb.GetAttributesToNodesResponseProto{}, nil},
		{"getNodesToAttributes", &pb.GetNodesToAttributesRequestProto{Hostnames: []string{"nm1.example"}}, &pb.GetNodesToAttributesResponseProto{}, nil},
		{"signalToContainer", &pb.SignalContainerRequestProto{ContainerId: contID, Command: pb.SignalContainerCommandProto_GRACEFUL_SHUTDOWN.Enum()},
			&pb.SignalContainerResponseProto{}, nil},
		{"registerApplicationMaster", &pb.RegisterApplicationMasterRequestProto{Host: proto.String("am.example"), RpcPort: proto.Int32(0)},
			&pb.RegisterApplicationMasterResponseProto{MaximumCapability: res, Queue: proto.String("default")}, nil},
		{"allocate", &pb.AllocateRequestProto{ResponseId: proto.Int32(7), Progress: proto.Float32(0.5), Ask: []*pb.ResourceRequestProto{{
			Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"), Capability: res,
			NumContainers: proto.Int32(5), LoomAskKind: pb.LoomAskKindProto_LOOM_ALTRUISTIC.Enum(), LoomRemainingWork: proto.Float64(1234.5),
			LoomDemand: ResourceFromVector([5]float64{2048, 1, 40, 10, 0})}}},
			&pb.AllocateResponseProto{ResponseId: proto.Int32(8), AllocatedContainers: []*pb.ContainerProto{{Id: contID, NodeId: nodeID, Resource: res}},
				LoomShare: res, LoomPAltruism: proto.Float64(0.75)}, nil},
		{"finishApplicationMaster", &pb.FinishApplicationMasterRequestProto{FinalApplicationStatus: pb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()},
			&pb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(true)}, nil},
		{"registerNodeManager", &pb.RegisterNodeManagerRequestProto{NodeId: nodeID, HttpPort: proto.Int32(8042), Resource: res},
			&pb.RegisterNodeManagerResponseProto{NodeAction: pb.NodeActionProto_NORMAL.Enum(), RmIdentifier: proto.Int64(1700000000000)}, nil},
		{"nodeHeartbeat", &pb.NodeHeartbeatRequestProto{NodeStatus: &pb.NodeStatusProto{NodeId: nodeID, ResponseId: proto.Int32(3),
			ContainersStatuses: []*pb.ContainerStatusProto{{ContainerId: contID, State: pb.ContainerStateProto_C_COMPLETE.Enum(), ExitStatus: proto.Int32(0)}}}},
			&pb.NodeHeartbeatResponseProto{ResponseId: proto.Int32(4), NextHeartBeatInterval: proto.Int64(1000),
				ContainersToCleanup: []*pb.ContainerIdProto{contID}}, nil},
		{"unRegisterNodeManager", &pb.UnRegisterNodeManagerRequestProto{NodeId: nodeID}, &pb.UnRegisterNodeManagerResponseProto{}, nil},
		{"startContainers", &pb.StartContainersRequestProto{StartContainerRequest: []*pb.StartContainerRequestProto{{
			ContainerLaunchContext: &pb.ContainerLaunchContextProto{Command: []string{"sleep", "1"}}}}},
			&pb.StartContainersResponseProto{SucceededRequests: []*pb.ContainerIdProto{contID}}, nil},
		{"stopContainers", &pb.StopContainersRequestProto{ContainerId: []*pb.ContainerIdProto{contID}},
			&pb.StopContainersResponseProto{SucceededRequests: []*pb.ContainerIdProto{contID}}, nil},
		{"getContainerStatuses", &pb.GetContainerStatusesRequestProto{ContainerId: []*pb.ContainerIdProto{contID}},
			&pb.GetContainerStatusesResponseProto{Status: []*pb.ContainerStatusProto{{ContainerId: contID, State: pb.ContainerStateProto_C_RUNNING.Enum()}}}, nil},
	}
	// Each call goes through the typed client for its protocol.
	calls := map[string]func(ctx context.Context, req proto.Message) (proto.Message, error){
		"getNewApplication": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetNewApplication(ctx, q.(*pb.GetNewApplicationRequestProto))
		},
		"submitApplication": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.SubmitApplication(ctx, q.(*pb.SubmitApplicationRequestProto))
		},
		"getApplicationReport": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetApplicationReport(ctx, q.(*pb.GetApplicationReportRequestProto))
		},
		"getApplications": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetApplications(ctx, q.(*pb.GetApplicationsRequestProto))
		},
		"forceKillApplication": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.ForceKillApplication(ctx, q.(*pb.KillApplicationRequestProto))
		},
		"getClusterMetrics": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetClusterMetrics(ctx, q.(*pb.GetClusterMetricsRequestProto))
		},
		"getClusterNodes": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetClusterNodes(ctx, q.(*pb.GetClusterNodesRequestProto))
		},
		"getApplicationAttempts": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetApplicationAttempts(ctx, q.(*pb.GetApplicationAttemptsRequestProto))
		},
		"getContainers": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetContainers(ctx, q.(*pb.GetContainersRequestProto))
		},
		"getQueueInfo": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetQueueInfo(ctx, q.(*pb.GetQueueInfoRequestProto))
		},
		"getResourceTypeInfo": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetResourceTypeInfo(ctx, q.(*pb.GetAllResourceTypeInfoRequestProto))
		},
		"getResourceProfiles": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetResourceProfiles(ctx, q.(*pb.GetAllResourceProfilesRequestProto))
		},
		"getResourceProfile": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetResourceProfile(ctx, q.(*pb.GetResourceProfileRequestProto))
		},
		"failApplicationAttempt": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.FailApplicationAttempt(ctx, q.(*pb.FailApplicationAttemptRequestProto))
		},
		"setApplicationTags": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.SetApplicationTags(ctx, q.(*pb.SetApplicationTagsRequestProto))
		},
		"moveApplicationAcrossQueues": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.MoveApplicationAcrossQueues(ctx, q.(*pb.MoveApplicationAcrossQueuesRequestProto))
		},
		"updateApplicationPriority": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.UpdateApplicationPriority(ctx, q.(*pb.UpdateApplicationPriorityRequestProto))
		},
		"updateApplicationTimeouts": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.UpdateApplicationTimeouts(ctx, q.(*pb.UpdateApplicationTimeoutsRequestProto))
		},
		"getQueueUserAcls": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetQueueUserAcls(ctx, q.(*pb.GetQueueUserAclsInfoRequestProto))
		},
		"getDelegationToken": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetDelegationToken(ctx, q.(*hadooppb.GetDelegationTokenRequestProto))
		},
		"renewDelegationToken": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.RenewDelegationToken(ctx, q.(*hadooppb.RenewDelegationTokenRequestProto))
		},
		"cancelDelegationToken": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.CancelDelegationToken(ctx, q.(*hadooppb.CancelDelegationTokenRequestProto))
		},
		"getApplicationAttemptReport": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetApplicationAttemptReport(ctx, q.(*pb.GetApplicationAttemptReportRequestProto))
		},
		"getContainerReport": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetContainerReport(ctx, q.(*pb.GetContainerReportRequestProto))
		},
		"getNewReservation": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetNewReservation(ctx, q.(*pb.GetNewReservationRequestProto))
		},
		"submitReservation": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.SubmitReservation(ctx, q.(*pb.ReservationSubmissionRequestProto))
		},
		"updateReservation": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.UpdateReservation(ctx, q.(*pb.ReservationUpdateRequestProto))
		},
		"deleteReservation": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.DeleteReservation(ctx, q.(*pb.ReservationDeleteRequestProto))
		},
		"listReservations": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.ListReservations(ctx, q.(*pb.ReservationListRequestProto))
		},
		"getNodeToLabels": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetNodeToLabels(ctx, q.(*pb.GetNodesToLabelsRequestProto))
		},
		"getLabelsToNodes": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetLabelsToNodes(ctx, q.(*pb.GetLabelsToNodesRequestProto))
		},
		"getClusterNodeLabels": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetClusterNodeLabels(ctx, q.(*pb.GetClusterNodeLabelsRequestProto))
		},
		"getClusterNodeAttributes": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetClusterNodeAttributes(ctx, q.(*pb.GetClusterNodeAttributesRequestProto))
		},
		"getAttributesToNodes": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetAttributesToNodes(ctx, q.(*pb.GetAttributesToNodesRequestProto))
		},
		"getNodesToAttributes": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.GetNodesToAttributes(ctx, q.(*pb.GetNodesToAttributesRequestProto))
		},
		"signalToContainer": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return ac.SignalToContainer(ctx, q.(*pb.SignalContainerRequestProto))
		},
		"registerApplicationMaster": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return am.RegisterApplicationMaster(ctx, q.(*pb.RegisterApplicationMasterRequestProto))
		},
		"allocate": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return am.Allocate(ctx, q.(*pb.AllocateRequestProto))
		},
		"finishApplicationMaster": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return am.FinishApplicationMaster(ctx, q.(*pb.FinishApplicationMasterRequestProto))
		},
		"registerNodeManager": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return rt.RegisterNodeManager(ctx, q.(*pb.RegisterNodeManagerRequestProto))
		},
		"nodeHeartbeat": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return rt.NodeHeartbeat(ctx, q.(*pb.NodeHeartbeatRequestProto))
		},
		"unRegisterNodeManager": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return rt.UnRegisterNodeManager(ctx, q.(*pb.UnRegisterNodeManagerRequestProto))
		},
		"startContainers": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return cm.StartContainers(ctx, q.(*pb.StartContainersRequestProto))
		},
		"stopContainers": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return cm.StopContainers(ctx, q.(*pb.StopContainersRequestProto))
		},
		"getContainerStatuses": func(ctx context.Context, q proto.Message) (proto.Message, error) {
			return cm.GetContainerStatuses(ctx, q.(*pb.GetContainerStatusesRequestProto))
		},
	}
	if len(tests) != 45 || len(calls) != 45 {
		t.Fatalf("%d tests and %d calls, want the 45 methods", len(tests), len(calls))
	}
	for _, tc := range tests {
		rec.resp[tc.method] = tc.resp
		got, err := calls[tc.method](context.Background(), tc.req)
		if err != nil {
			t.Errorf("%s: %v", tc.method, err)
			continue
		}
		if !proto.Equal(got, tc.resp) {
			t.Errorf("%s: reply %v, want %v", tc.method, got, tc.resp)
		}
		if !proto.Equal(rec.got[tc.method], tc.req) {
			t.Errorf("%s: server got %v, want %v", tc.method, rec.got[tc.method], tc.req)
		}
		if rec.user[tc.method] != "carol" {
			t.Errorf("%s: caller %q, want carol", tc.method, rec.user[tc.method])
		}
	}
	_, err := ac.GetApplicationReport(context.Background(), &pb.GetApplicationReportRequestProto{
		ApplicationId: &pb.ApplicationIdProto{Id: proto.Int32(404), ClusterTimestamp: proto.Int64(1700000000000)}})
	if !IsClass(err, ClassApplicationNotFound) || !strings.Contains(err.Error(), "application_1700000000000_0404") {
		t.Errorf("unknown app: err = %v, want ApplicationNotFoundException", err)
	}
}

// unhex reads a hex string with spaces, and quoted ASCII between backquotes
// is not needed: tests spell strings with +.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const acp = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB" // 54 bytes

// TestGoldenBytes checks whole exchanges against bytes built by hand from
// the protocol.
func TestGoldenBytes(t *testing.T) {
	rec, addr := startYARN(t)
	rec.resp["getClusterMetrics"] = &pb.GetClusterMetricsResponseProto{ClusterMetrics: &pb.YarnClusterMetricsProto{NumNodeManagers: proto.Int32(4)}}
	h := func(s string) []byte { return unhex(t, s) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name      string
		send      []byte
		want      []byte
		checkUser string
	}{
		{
			// A client that sends only realUser in its context and no
			// clientId, then calls getClusterMetrics as call 0.
			name: "realUser only, no clientId",
			send: cat(
				h("68727063 09 00 00"), // hrpc, version 9, service class 0, no SASL
				// frame of 17: header {rpcKind 2, rpcOp 0, callId -3 (zigzag 5), retryCount -1 (zigzag 1)}
				// then context {userInfo {realUser "bob"}}
				h("00000011 08 0802 1000 1805 2801 07 1205 1203"), []byte("bob"),
				// frame of 88: header {rpcKind 2, rpcOp 0, callId 0, retry -1}, then
				// RequestHeaderProto {methodName, protocol, version 1} (77 bytes), then an empty request
				h("00000058 08 0802 1000 1800 2801 4d 0a11"), []byte("getClusterMetrics"), h("1236"), []byte(acp), h("1801 00"),
			),
			// frame of 14: header {callId 0, SUCCESS, serverIpcVersionNum 9, retryCount -1 echoed}
			// then {cluster_metrics {num_node_managers 4}}
			want:      h("0000000e 08 0800 1000 1809 4001 04 0a02 0804"),
			checkUser: "bob",
		},
		{
			// A Java client's SASL negotiate: the SIMPLE-only server says SUCCESS.
			name: "SASL negotiate",
			send: cat(h("68727063 09 00 df"),
				// header {rpcKind 2, rpcOp 0, callId -33 (zigzag 65), clientId "", retry -1}, then {state NEGOTIATE}
				h("0000000e 0a 0802 1000 1841 2200 2801 02 1001")),
			// header {callId 2^32-33, SUCCESS, version 9}, then {state SUCCESS}
			want: h("0000000e 0a 08dfffffff0f 1000 1809 02 1000"),
		},
		{
			// An unknown method: ERROR with the class and message a Java
			// client expects; the clientId and retryCount come back.
			name: "error reply",
			send: cat(h("68727063 09 00 00"),
				h("00000011 08 0802 1000 1805 2801 07 1205 0a03"), []byte("eve"),
				// frame of 89: header {rpcKind 2, callId 7, clientId 01020304, retry -1} (14),
				// RequestHeaderProto {methodName "noSuchMethod", protocol, 1} (72), empty request
				h("00000059 0e 0802 1000 180e 220401020304 2801 48 0a0c"), []byte("noSuchMethod"), h("1236"), []byte(acp), h("1801 00")),
			// frame of 170: header of 168: callId 7, ERROR, version 9, class (46), message (102),
			// ERROR_NO_SUCH_METHOD, clientId, retryCount -1
			want: cat(h("000000aa a801 0807 1001 1809 222e"), []byte("org.apache.hadoop.ipc.RpcNoSuchMethodException"),
				h("2a66"), []byte("Unknown method noSuchMethod called on "+acp+" protocol."), h("3002 3a0401020304 4001")),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if _, err := nc.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(tc.want))
			nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(nc, got); err != nil {
				t.Fatalf("read %x: %v", got, err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("reply\n got %x\nwant %x", got, tc.want)
			}
			if tc.checkUser != "" && rec.user["getClusterMetrics"] != tc.checkUser {
				t.Errorf("caller %q, want %q", rec.user["getClusterMetrics"], tc.checkUser)
			}
		})
	}
}

// TestGoldenClientBytes checks the other direction: what Loom's client
// sends, byte for byte, and that it reads a hand-built reply.
func TestGoldenClientBytes(t *testing.T) {
	h := func(s string) []byte { return unhex(t, s) }
	want := bytes.Join([][]byte{
		h("68727063 09 00 00"),
		// frame of 23: header {rpcKind 2, rpcOp 0, callId -3, clientId 01020304, retry -1} (14),
		// context {userInfo {effectiveUser "bob"}} (7)
		h("00000017 0e 0802 1000 1805 220401020304 2801 07 1205 0a03"), []byte("bob"),
		// frame of 94: header for call 1 (14), RequestHeaderProto (77), empty request
		h("0000005e 0e 0802 1000 1802 220401020304 2801 4d 0a11"), []byte("getClusterMetrics"), h("1236"), []byte(acp), h("1801 00"),
	}, nil)
	// frame of 20: header {callId 1, SUCCESS, version 9, clientId, retry -1} (14),
	// then {cluster_metrics {num_node_managers 4}}
	reply := h("00000014 0e 0801 1000 1809 3a0401020304 4001 04 0a02 0804")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer nc.Close()
		b := make([]byte, len(want))
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		io.ReadFull(nc, b)
		got <- b
		nc.Write(reply)
		io.Copy(io.Discard, nc)
	}()
	c := dial(t, ln.Addr().String(), ClientOptions{User: "bob", ClientID: []byte{1, 2, 3, 4}})
	resp, err := ApplicationClient{c}.GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{})
	if b := <-got; !bytes.Equal(b, want) {
		t.Errorf("client sent\n %x\nwant %x", b, want)
	}
	if err != nil || resp.GetClusterMetrics().GetNumNodeManagers() != 4 {
		t.Errorf("reply read as %v, %v; want 4 node managers", resp, err)
	}
}

// TestIdleConnectionFlood: hundreds of connections that never speak must
// not stop the server answering a real client, and are cut when idle.
func TestIdleConnectionFlood(t *testing.T) {
	srv, addr, _ := startServer(t, ServerOptions{IdleTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond})
	var flood []net.Conn
	for range 300 {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		flood = append(flood, nc)
	}
	c := dial(t, addr, ClientOptions{User: "real"})
	for i := range 20 {
		if got, err := echo(c, "x"); err != nil || got != "real:x" {
			t.Fatalf("call %d during the flood: %q, %v", i, got, err)
		}
		time.Sleep(50 * time.Millisecond) // past the idle timeout overall; c is never idle that long
	}
	deadline := time.Now().Add(5 * time.Second)
	for srv.Conns() > 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := srv.Conns(); n != 1 {
		t.Errorf("%d connections open after the idle timeout, want only the real client's", n)
	}
	for _, nc := range flood[:3] {
		nc.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := nc.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("flood connection not closed: %v", err)
		}
	}
}
