package rpc

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// YARN's protocols, as clients name them in every call.
const (
	ApplicationClientProtocol   = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
	ApplicationMasterProtocol   = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB"
	ResourceTrackerProtocol     = "org.apache.hadoop.yarn.server.api.ResourceTrackerPB"
	ContainerManagementProtocol = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB"
)

// YARN's default ports (yarn.resourcemanager.address and friends). The
// NodeManager's container manager listens on an ephemeral port unless
// configured, as in YARN.
const (
	DefaultClientPort    = 8032
	DefaultSchedulerPort = 8030
	DefaultTrackerPort   = 8031
	DefaultWebPort       = 8088
)

// YARN's exception classes, so that a Java client rebuilds the exception
// it would get from YARN.
const (
	ClassYarnException                    = "org.apache.hadoop.yarn.exceptions.YarnException"
	ClassApplicationNotFound              = "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException"
	ClassApplicationAttemptNotFound       = "org.apache.hadoop.yarn.exceptions.ApplicationAttemptNotFoundException"
	ClassContainerNotFound                = "org.apache.hadoop.yarn.exceptions.ContainerNotFoundException"
	ClassInvalidResourceRequest           = "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException"
	ClassInvalidApplicationMasterRequest  = "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException"
	ClassApplicationMasterNotRegistered   = "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException"
	ClassInvalidContainerRequest          = "org.apache.hadoop.yarn.exceptions.InvalidContainerRequestException"
	ClassApplicationIDNotProvided         = "org.apache.hadoop.yarn.exceptions.ApplicationIdNotProvidedException"
	ClassInvalidAuxServiceException       = "org.apache.hadoop.yarn.exceptions.InvalidAuxServiceException"
	ClassNMNotYetReady                    = "org.apache.hadoop.yarn.exceptions.NMNotYetReadyException"
	ClassInvalidApplicationMasterResponse = "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterResponseIdException"
	ClassAccessControl                    = "org.apache.hadoop.security.AccessControlException"
	ClassYARNFeatureNotEnabled            = "org.apache.hadoop.yarn.exceptions.YARNFeatureNotEnabledException"
)

// call makes a typed call.
func call[Resp any, PResp interface {
	*Resp
	proto.Message
}](ctx context.Context, c Caller, protocol, method string, req proto.Message, opts ...CallOption) (PResp, error) {
	resp := PResp(new(Resp))
	if err := c.Call(ctx, protocol, method, req, resp, opts...); err != nil {
		return nil, err
	}
	return resp, nil
}

// ApplicationClientServer serves ApplicationClientProtocol (port 8032):
// what `yarn application` and YarnClient call.
type ApplicationClientServer interface {
	GetNewApplication(context.Context, *pb.GetNewApplicationRequestProto) (*pb.GetNewApplicationResponseProto, error)
	SubmitApplication(context.Context, *pb.SubmitApplicationRequestProto) (*pb.SubmitApplicationResponseProto, error)
	GetApplicationReport(context.Context, *pb.GetApplicationReportRequestProto) (*pb.GetApplicationReportResponseProto, error)
	GetApplications(context.Context, *pb.GetApplicationsRequestProto) (*pb.GetApplicationsResponseProto, error)
	ForceKillApplication(context.Context, *pb.KillApplicationRequestProto) (*pb.KillApplicationResponseProto, error)
	GetClusterMetrics(context.Context, *pb.GetClusterMetricsRequestProto) (*pb.GetClusterMetricsResponseProto, error)
	GetClusterNodes(context.Context, *pb.GetClusterNodesRequestProto) (*pb.GetClusterNodesResponseProto, error)
	GetApplicationAttempts(context.Context, *pb.GetApplicationAttemptsRequestProto) (*pb.GetApplicationAttemptsResponseProto, error)
	GetContainers(context.Context, *pb.GetContainersRequestProto) (*pb.GetContainersResponseProto, error)
	GetQueueInfo(context.Context, *pb.GetQueueInfoRequestProto) (*pb.GetQueueInfoResponseProto, error)
	GetResourceTypeInfo(context.Context, *pb.GetAllResourceTypeInfoRequestProto) (*pb.GetAllResourceTypeInfoResponseProto, error)
	GetResourceProfiles(context.Context, *pb.GetAllResourceProfilesRequestProto) (*pb.GetAllResourceProfilesResponseProto, error)
	GetResourceProfile(context.Context, *pb.GetResourceProfileRequestProto) (*pb.GetResourceProfileResponseProto, error)
	FailApplicationAttempt(context.Context, *pb.FailApplicationAttemptRequestProto) (*pb.FailApplicationAttemptResponseProto, error)
	SetApplicationTags(context.Context, *pb.SetApplicationTagsRequestProto) (*pb.SetApplicationTagsResponseProto, error)
	MoveApplicationAcrossQueues(context.Context, *pb.MoveApplicationAcrossQueuesRequestProto) (*pb.MoveApplicationAcrossQueuesResponseProto, error)
	UpdateApplicationPriority(context.Context, *pb.UpdateApplicationPriorityRequestProto) (*pb.UpdateApplicationPriorityResponseProto, error)
	UpdateApplicationTimeouts(context.Context, *pb.UpdateApplicationTimeoutsRequestProto) (*pb.UpdateApplicationTimeoutsResponseProto, error)
	GetQueueUserAcls(context.Context, *pb.GetQueueUserAclsInfoRequestProto) (*pb.GetQueueUserAclsInfoResponseProto, error)
	GetDelegationToken(context.Context, *hadooppb.GetDelegationTokenRequestProto) (*hadooppb.GetDelegationTokenResponseProto, error)
	RenewDelegationToken(context.Context, *hadooppb.RenewDelegationTokenRequestProto) (*hadooppb.RenewDelegationTokenResponseProto, error)
	CancelDelegationToken(context.Context, *hadooppb.CancelDelegationTokenRequestProto) (*hadooppb.CancelDelegationTokenResponseProto, error)
	GetApplicationAttemptReport(context.Context, *pb.GetApplicationAttemptReportRequestProto) (*pb.GetApplicationAttemptReportResponseProto, error)
	GetContainerReport(context.Context, *pb.GetContainerReportRequestProto) (*pb.GetContainerReportResponseProto, error)
	GetNewReservation(context.Context, *pb.GetNewReservationRequestProto) (*pb.GetNewReservationResponseProto, error)
	SubmitReservation(context.Context, *pb.ReservationSubmissionRequestProto) (*pb.ReservationSubmissionResponseProto, error)
	UpdateReservation(context.Context, *pb.ReservationUpdateRequestProto) (*pb.ReservationUpdateResponseProto, error)
	DeleteReservation(context.Context, *pb.ReservationDeleteRequestProto) (*pb.ReservationDeleteResponseProto, error)
	ListReservations(context.Context, *pb.ReservationListRequestProto) (*pb.ReservationListResponseProto, error)
	GetNodeToLabels(context.Context, *pb.GetNodesToLabelsRequestProto) (*pb.GetNodesToLabelsResponseProto, error)
	GetLabelsToNodes(context.Context, *pb.GetLabelsToNodesRequestProto) (*pb.GetLabelsToNodesResponseProto, error)
	GetClusterNodeLabels(context.Context, *pb.GetClusterNodeLabelsRequestProto) (*pb.GetClusterNodeLabelsResponseProto, error)
	GetClusterNodeAttributes(context.Context, *pb.GetClusterNodeAttributesRequestProto) (*pb.GetClusterNodeAttributesResponseProto, error)
	GetAttributesToNodes(context.Context, *pb.GetAttributesToNodesRequestProto) (*pb.GetAttributesToNodesResponseProto, error)
	GetNodesToAttributes(context.Context, *pb.GetNodesToAttributesRequestProto) (*pb.GetNodesToAttributesResponseProto, error)
	SignalToContainer(context.Context, *pb.SignalContainerRequestProto) (*pb.SignalContainerResponseProto, error)
}

// ApplicationClientService is ApplicationClientProtocol served by s.
func ApplicationClientService(s ApplicationClientServer) Protocol {
	return Protocol{Name: ApplicationClientProtocol, Methods: []Method{
		Unary("getNewApplication", s.GetNewApplication),
		Unary("submitApplication", s.SubmitApplication),
		Unary("getApplicationReport", s.GetApplicationReport),
		Unary("getApplications", s.GetApplications),
		Unary("forceKillApplication", s.ForceKillApplication),
		Unary("getClusterMetrics", s.GetClusterMetrics),
		Unary("getClusterNodes", s.GetClusterNodes),
		Unary("getApplicationAttempts", s.GetApplicationAttempts),
		Unary("getContainers", s.GetContainers),
		Unary("getQueueInfo", s.GetQueueInfo),
		Unary("getResourceTypeInfo", s.GetResourceTypeInfo),
		Unary("getResourceProfiles", s.GetResourceProfiles),
		Unary("getResourceProfile", s.GetResourceProfile),
		Unary("failApplicationAttempt", s.FailApplicationAttempt),
		Unary("setApplicationTags", s.SetApplicationTags),
		Unary("moveApplicationAcrossQueues", s.MoveApplicationAcrossQueues),
		Unary("updateApplicationPriority", s.UpdateApplicationPriority),
		Unary("updateApplicationTimeouts", s.UpdateApplicationTimeouts),
		Unary("getQueueUserAcls", s.GetQueueUserAcls),
		Unary("getDelegationToken", s.GetDelegationToken),
		Unary("renewDelegationToken", s.RenewDelegationToken),
		Unary("cancelDelegationToken", s.CancelDelegationToken),
		Unary("getApplicationAttemptReport", s.GetApplicationAttemptReport),
		Unary("getContainerReport", s.GetContainerReport),
		Unary("getNewReservation", s.GetNewReservation),
		Unary("submitReservation", s.SubmitReservation),
		Unary("updateReservation", s.UpdateReservation),
		Unary("deleteReservation", s.DeleteReservation),
		Unary("listReservations", s.ListReservations),
		Unary("getNodeToLabels", s.GetNodeToLabels),
		Unary("getLabelsToNodes", s.GetLabelsToNodes),
		Unary("getClusterNodeLabels", s.GetClusterNodeLabels),
		Unary("getClusterNodeAttributes", s.GetClusterNodeAttributes),
		Unary("getAttributesToNodes", s.GetAttributesToNodes),
		Unary("getNodesToAttributes", s.GetNodesToAttributes),
		Unary("signalToContainer", s.SignalToContainer),
	}}
}

// ApplicationClient calls ApplicationClientProtocol. YARN marks every one
// of these methods idempotent, so they are retried when a connection
// fails.
type ApplicationClient struct{ C Caller }

func (c ApplicationClient) GetNewApplication(ctx context.Context, req *pb.GetNewApplicationRequestProto) (*pb.GetNewApplicationResponseProto, error) {
	return call[pb.GetNewApplicationResponseProto](ctx, c.C, ApplicationClientProtocol, "getNewApplication", req, Idempotent())
}

func (c ApplicationClient) SubmitApplication(ctx context.Context, req *pb.SubmitApplicationRequestProto) (*pb.SubmitApplicationResponseProto, error) {
	return call[pb.SubmitApplicationResponseProto](ctx, c.C, ApplicationClientProtocol, "submitApplication", req, Idempotent())
}

func (c ApplicationClient) GetApplicationReport(ctx context.Context, req *pb.GetApplicationReportRequestProto) (*pb.GetApplicationReportResponseProto, error) {
	return call[pb.GetApplicationReportResponseProto](ctx, c.C, ApplicationClientProtocol, "getApplicationReport", req, Idempotent())
}

func (c ApplicationClient) GetApplications(ctx context.Context, req *pb.GetApplicationsRequestProto) (*pb.GetApplicationsResponseProto, error) {
	return call[pb.GetApplicationsResponseProto](ctx, c.C, ApplicationClientProtocol, "getApplications", req, Idempotent())
}

func (c ApplicationClient) ForceKillApplication(ctx context.Context, req *pb.KillApplicationRequestProto) (*pb.KillApplicationResponseProto, error) {
	return call[pb.KillApplicationResponseProto](ctx, c.C, ApplicationClientProtocol, "forceKillApplication", req, Idempotent())
}

func (c ApplicationClient) GetClusterMetrics(ctx context.Context, req *pb.GetClusterMetricsRequestProto) (*pb.GetClusterMetricsResponseProto, error) {
	return call[pb.GetClusterMetricsResponseProto](ctx, c.C, ApplicationClientProtocol, "getClusterMetrics", req, Idempotent())
}

func (c ApplicationClient) GetClusterNodes(ctx context.Context, req *pb.GetClusterNodesRequestProto) (*pb.GetClusterNodesResponseProto, error) {
	return call[pb.GetClusterNodesResponseProto](ctx, c.C, ApplicationClientProtocol, "getClusterNodes", req, Idempotent())
}

func (c ApplicationClient) GetApplicationAttempts(ctx context.Context, req *pb.GetApplicationAttemptsRequestProto) (*pb.GetApplicationAttemptsResponseProto, error) {
	return call[pb.GetApplicationAttemptsResponseProto](ctx, c.C, ApplicationClientProtocol, "getApplicationAttempts", req, Idempotent())
}

func (c ApplicationClient) GetContainers(ctx context.Context, req *pb.GetContainersRequestProto) (*pb.GetContainersResponseProto, error) {
	return call[pb.GetContainersResponseProto](ctx, c.C, ApplicationClientProtocol, "getContainers", req, Idempotent())
}

func (c ApplicationClient) GetQueueInfo(ctx context.Context, req *pb.GetQueueInfoRequestProto) (*pb.GetQueueInfoResponseProto, error) {
	return call[pb.GetQueueInfoResponseProto](ctx, c.C, ApplicationClientProtocol, "getQueueInfo", req, Idempotent())
}

func (c ApplicationClient) GetResourceTypeInfo(ctx context.Context, req *pb.GetAllResourceTypeInfoRequestProto) (*pb.GetAllResourceTypeInfoResponseProto, error) {
	return call[pb.GetAllResourceTypeInfoResponseProto](ctx, c.C, ApplicationClientProtocol, "getResourceTypeInfo", req, Idempotent())
}

func (c ApplicationClient) GetResourceProfiles(ctx context.Context, req *pb.GetAllResourceProfilesRequestProto) (*pb.GetAllResourceProfilesResponseProto, error) {
	return call[pb.GetAllResourceProfilesResponseProto](ctx, c.C, ApplicationClientProtocol, "getResourceProfiles", req, Idempotent())
}

func (c ApplicationClient) GetResourceProfile(ctx context.Context, req *pb.GetResourceProfileRequestProto) (*pb.GetResourceProfileResponseProto, error) {
	return call[pb.GetResourceProfileResponseProto](ctx, c.C, ApplicationClientProtocol, "getResourceProfile", req, Idempotent())
}

func (c ApplicationClient) FailApplicationAttempt(ctx context.Context, req *pb.FailApplicationAttemptRequestProto) (*pb.FailApplicationAttemptResponseProto, error) {
	return call[pb.FailApplicationAttemptResponseProto](ctx, c.C, ApplicationClientProtocol, "failApplicationAttempt", req, Idempotent())
}

func (c ApplicationClient) SetApplicationTags(ctx context.Context, req *pb.SetApplicationTagsRequestProto) (*pb.SetApplicationTagsResponseProto, error) {
	return call[pb.SetApplicationTagsResponseProto](ctx, c.C, ApplicationClientProtocol, "setApplicationTags", req, Idempotent())
}

func (c ApplicationClient) MoveApplicationAcrossQueues(ctx context.Context, req *pb.MoveApplicationAcrossQueuesRequestProto) (*pb.MoveApplicationAcrossQueuesResponseProto, error) {
	return call[pb.MoveApplicationAcrossQueuesResponseProto](ctx, c.C, ApplicationClientProtocol, "moveApplicationAcrossQueues", req, Idempotent())
}

func (c ApplicationClient) UpdateApplicationPriority(ctx context.Context, req *pb.UpdateApplicationPriorityRequestProto) (*pb.UpdateApplicationPriorityResponseProto, error) {
	return call[pb.UpdateApplicationPriorityResponseProto](ctx, c.C, ApplicationClientProtocol, "updateApplicationPriority", req, Idempotent())
}

func (c ApplicationClient) UpdateApplicationTimeouts(ctx context.Context, req *pb.UpdateApplicationTimeoutsRequestProto) (*pb.UpdateApplicationTimeoutsResponseProto, error) {
	return call[pb.UpdateApplicationTimeoutsResponseProto](ctx, c.C, ApplicationClientProtocol, "updateApplicationTimeouts", req, Idempotent())
}

func (c ApplicationClient) GetQueueUserAcls(ctx context.Context, req *pb.GetQueueUserAclsInfoRequestProto) (*pb.GetQueueUserAclsInfoResponseProto, error) {
	return call[pb.GetQueueUserAclsInfoResponseProto](ctx, c.C, ApplicationClientProtocol, "getQueueUserAcls", req, Idempotent())
}

func (c ApplicationClient) GetDelegationToken(ctx context.Context, req *hadooppb.GetDelegationTokenRequestProto) (*hadooppb.GetDelegationTokenResponseProto, error) {
	return call[hadooppb.GetDelegationTokenResponseProto](ctx, c.C, ApplicationClientProtocol, "getDelegationToken", req, Idempotent())
}

func (c ApplicationClient) RenewDelegationToken(ctx context.Context, req *hadooppb.RenewDelegationTokenRequestProto) (*hadooppb.RenewDelegationTokenResponseProto, error) {
	return call[hadooppb.RenewDelegationTokenResponseProto](ctx, c.C, ApplicationClientProtocol, "renewDelegationToken", req, Idempotent())
}

func (c ApplicationClient) CancelDelegationToken(ctx context.Context, req *hadooppb.CancelDelegationTokenRequestProto) (*hadooppb.CancelDelegationTokenResponseProto, error) {
	return call[hadooppb.CancelDelegationTokenResponseProto](ctx, c.C, ApplicationClientProtocol, "cancelDelegationToken", req, Idempotent())
}

func (c ApplicationClient) GetApplicationAttemptReport(ctx context.Context, req *pb.GetApplicationAttemptReportRequestProto) (*pb.GetApplicationAttemptReportResponseProto, error) {
	return call[pb.GetApplicationAttemptReportResponseProto](ctx, c.C, ApplicationClientProtocol, "getApplicationAttemptReport", req, Idempotent())
}

func (c ApplicationClient) GetContainerReport(ctx context.Context, req *pb.GetContainerReportRequestProto) (*pb.GetContainerReportResponseProto, error) {
	return call[pb.GetContainerReportResponseProto](ctx, c.C, ApplicationClientProtocol, "getContainerReport", req, Idempotent())
}

func (c ApplicationClient) GetNewReservation(ctx context.Context, req *pb.GetNewReservationRequestProto) (*pb.GetNewReservationResponseProto, error) {
	return call[pb.GetNewReservationResponseProto](ctx, c.C, ApplicationClientProtocol, "getNewReservation", req, Idempotent())
}

func (c ApplicationClient) SubmitReservation(ctx context.Context, req *pb.ReservationSubmissionRequestProto) (*pb.ReservationSubmissionResponseProto, error) {
	return call[pb.ReservationSubmissionResponseProto](ctx, c.C, ApplicationClientProtocol, "submitReservation", req, Idempotent())
}

func (c ApplicationClient) UpdateReservation(ctx context.Context, req *pb.ReservationUpdateRequestProto) (*pb.ReservationUpdateResponseProto, error) {
	return call[pb.ReservationUpdateResponseProto](ctx, c.C, ApplicationClientProtocol, "updateReservation", req, Idempotent())
}

func (c ApplicationClient) DeleteReservation(ctx context.Context, req *pb.ReservationDeleteRequestProto) (*pb.ReservationDeleteResponseProto, error) {
	return call[pb.ReservationDeleteResponseProto](ctx, c.C, ApplicationClientProtocol, "deleteReservation", req, Idempotent())
}

func (c ApplicationClient) ListReservations(ctx context.Context, req *pb.ReservationListRequestProto) (*pb.ReservationListResponseProto, error) {
	return call[pb.ReservationListResponseProto](ctx, c.C, ApplicationClientProtocol, "listReservations", req, Idempotent())
}

func (c ApplicationClient) GetNodeToLabels(ctx context.Context, req *pb.GetNodesToLabelsRequestProto) (*pb.GetNodesToLabelsResponseProto, error) {
	return call[pb.GetNodesToLabelsResponseProto](ctx, c.C, ApplicationClientProtocol, "getNodeToLabels", req, Idempotent())
}

func (c ApplicationClient) GetLabelsToNodes(ctx context.Context, req *pb.GetLabelsToNodesRequestProto) (*pb.GetLabelsToNodesResponseProto, error) {
	return call[pb.GetLabelsToNodesResponseProto](ctx, c.C, ApplicationClientProtocol, "getLabelsToNodes", req, Idempotent())
}

func (c ApplicationClient) GetClusterNodeLabels(ctx context.Context, req *pb.GetClusterNodeLabelsRequestProto) (*pb.GetClusterNodeLabelsResponseProto, error) {
	return call[pb.GetClusterNodeLabelsResponseProto](ctx, c.C, ApplicationClientProtocol, "getClusterNodeLabels", req, Idempotent())
}

func (c ApplicationClient) GetClusterNodeAttributes(ctx context.Context, req *pb.GetClusterNodeAttributesRequestProto) (*pb.GetClusterNodeAttributesResponseProto, error) {
	return call[pb.GetClusterNodeAttributesResponseProto](ctx, c.C, ApplicationClientProtocol, "getClusterNodeAttributes", req, Idempotent())
}

func (c ApplicationClient) GetAttributesToNodes(ctx context.Context, req *pb.GetAttributesToNodesRequestProto) (*pb.GetAttributesToNodesResponseProto, error) {
	return call[pb.GetAttributesToNodesResponseProto](ctx, c.C, ApplicationClientProtocol, "getAttributesToNodes", req, Idempotent())
}

func (c ApplicationClient) GetNodesToAttributes(ctx context.Context, req *pb.GetNodesToAttributesRequestProto) (*pb.GetNodesToAttributesResponseProto, error) {
	return call[pb.GetNodesToAttributesResponseProto](ctx, c.C, ApplicationClientProtocol, "getNodesToAttributes", req, Idempotent())
}

func (c ApplicationClient) SignalToContainer(ctx context.Context, req *pb.SignalContainerRequestProto) (*pb.SignalContainerResponseProto, error) {
	return call[pb.SignalContainerResponseProto](ctx, c.C, ApplicationClientProtocol, "signalToContainer", req, Idempotent())
}

// ApplicationMasterServer serves ApplicationMasterProtocol (port 8030).
type ApplicationMasterServer interface {
	RegisterApplicationMaster(context.Context, *pb.RegisterApplicationMasterRequestProto) (*pb.RegisterApplicationMasterResponseProto, error)
	Allocate(context.Context, *pb.AllocateRequestProto) (*pb.AllocateResponseProto, error)
	FinishApplicationMaster(context.Context, *pb.FinishApplicationMasterRequestProto) (*pb.FinishApplicationMasterResponseProto, error)
}

// ApplicationMasterService is ApplicationMasterProtocol served by s.
func ApplicationMasterService(s ApplicationMasterServer) Protocol {
	return Protocol{Name: ApplicationMasterProtocol, Methods: []Method{
		Unary("registerApplicationMaster", s.RegisterApplicationMaster),
		Unary("allocate", s.Allocate),
		Unary("finishApplicationMaster", s.FinishApplicationMaster),
	}}
}

// ApplicationMasterClient calls ApplicationMasterProtocol. allocate and
// finishApplicationMaster are at-most-once in YARN: a broken connection
// is the AM's to handle (allocate carries a response id for that).
type ApplicationMasterClient struct{ C Caller }

func (c ApplicationMasterClient) RegisterApplicationMaster(ctx context.Context, req *pb.RegisterApplicationMasterRequestProto) (*pb.RegisterApplicationMasterResponseProto, error) {
	return call[pb.RegisterApplicationMasterResponseProto](ctx, c.C, ApplicationMasterProtocol, "registerApplicationMaster", req, Idempotent())
}

func (c ApplicationMasterClient) Allocate(ctx context.Context, req *pb.AllocateRequestProto) (*pb.AllocateResponseProto, error) {
	return call[pb.AllocateResponseProto](ctx, c.C, ApplicationMasterProtocol, "allocate", req)
}

func (c ApplicationMasterClient) FinishApplicationMaster(ctx context.Context, req *pb.FinishApplicationMasterRequestProto) (*pb.FinishApplicationMasterResponseProto, error) {
	return call[pb.FinishApplicationMasterResponseProto](ctx, c.C, ApplicationMasterProtocol, "finishApplicationMaster", req)
}

// ResourceTrackerServer serves ResourceTracker (port 8031), the
// NodeManagers' protocol.
type ResourceTrackerServer interface {
	RegisterNodeManager(context.Context, *pb.RegisterNodeManagerRequestProto) (*pb.RegisterNodeManagerResponseProto, error)
	NodeHeartbeat(context.Context, *pb.NodeHeartbeatRequestProto) (*pb.NodeHeartbeatResponseProto, error)
	UnRegisterNodeManager(context.Context, *pb.UnRegisterNodeManagerRequestProto) (*pb.UnRegisterNodeManagerResponseProto, error)
}

// ResourceTrackerService is ResourceTracker served by s.
func ResourceTrackerService(s ResourceTrackerServer) Protocol {
	return Protocol{Name: ResourceTrackerProtocol, Methods: []Method{
		Unary("registerNodeManager", s.RegisterNodeManager),
		Unary("nodeHeartbeat", s.NodeHeartbeat),
		Unary("unRegisterNodeManager", s.UnRegisterNodeManager),
	}}
}

// ResourceTrackerClient calls ResourceTracker.
type ResourceTrackerClient struct{ C Caller }

func (c ResourceTrackerClient) RegisterNodeManager(ctx context.Context, req *pb.RegisterNodeManagerRequestProto) (*pb.RegisterNodeManagerResponseProto, error) {
	return call[pb.RegisterNodeManagerResponseProto](ctx, c.C, ResourceTrackerProtocol, "registerNodeManager", req, Idempotent())
}

func (c ResourceTrackerClient) NodeHeartbeat(ctx context.Context, req *pb.NodeHeartbeatRequestProto) (*pb.NodeHeartbeatResponseProto, error) {
	return call[pb.NodeHeartbeatResponseProto](ctx, c.C, ResourceTrackerProtocol, "nodeHeartbeat", req)
}

func (c ResourceTrackerClient) UnRegisterNodeManager(ctx context.Context, req *pb.UnRegisterNodeManagerRequestProto) (*pb.UnRegisterNodeManagerResponseProto, error) {
	return call[pb.UnRegisterNodeManagerResponseProto](ctx, c.C, ResourceTrackerProtocol, "unRegisterNodeManager", req, Idempotent())
}

// ContainerManagementServer serves ContainerManagementProtocol on a
// NodeManager.
type ContainerManagementServer interface {
	StartContainers(context.Context, *pb.StartContainersRequestProto) (*pb.StartContainersResponseProto, error)
	StopContainers(context.Context, *pb.StopContainersRequestProto) (*pb.StopContainersResponseProto, error)
	GetContainerStatuses(context.Context, *pb.GetContainerStatusesRequestProto) (*pb.GetContainerStatusesResponseProto, error)
}

// ContainerManagementExtServer is the rest of the protocol, which a real
// NodeManager serves (simulated ones in tests and benchmarks need not).
type ContainerManagementExtServer interface {
	IncreaseContainersResource(context.Context, *pb.IncreaseContainersResourceRequestProto) (*pb.IncreaseContainersResourceResponseProto, error)
	UpdateContainer(context.Context, *pb.ContainerUpdateRequestProto) (*pb.ContainerUpdateResponseProto, error)
	SignalToContainer(context.Context, *pb.SignalContainerRequestProto) (*pb.SignalContainerResponseProto, error)
	Localize(context.Context, *pb.ResourceLocalizationRequestProto) (*pb.ResourceLocalizationResponseProto, error)
	ReInitializeContainer(context.Context, *pb.ReInitializeContainerRequestProto) (*pb.ReInitializeContainerResponseProto, error)
	RestartContainer(context.Context, *pb.ContainerIdProto) (*pb.RestartContainerResponseProto, error)
	RollbackLastReInitialization(context.Context, *pb.ContainerIdProto) (*pb.RollbackResponseProto, error)
	CommitLastReInitialization(context.Context, *pb.ContainerIdProto) (*pb.CommitResponseProto, error)
	GetLocalizationStatuses(context.Context, *pb.GetLocalizationStatusesRequestProto) (*pb.GetLocalizationStatusesResponseProto, error)
}

// ContainerManagementService is ContainerManagementProtocol served by s:
// every method of containermanagement_protocol.proto when s serves them
// (ContainerManagementExtServer), else the three a simulated NM needs.
func ContainerManagementService(s ContainerManagementServer) Protocol {
	p := Protocol{Name: ContainerManagementProtocol, Methods: []Method{
		Unary("startContainers", s.StartContainers),
		Unary("stopContainers", s.StopContainers),
		Unary("getContainerStatuses", s.GetContainerStatuses),
	}}
	x, ok := s.(ContainerManagementExtServer)
	if !ok {
		return p
	}
	p.Methods = append(p.Methods,
		Unary("increaseContainersResource", x.IncreaseContainersResource),
		Unary("updateContainer", x.UpdateContainer),
		Unary("signalToContainer", x.SignalToContainer),
		Unary("localize", x.Localize),
		Unary("reInitializeContainer", x.ReInitializeContainer),
		Unary("restartContainer", x.RestartContainer),
		Unary("rollbackLastReInitialization", x.RollbackLastReInitialization),
		Unary("commitLastReInitialization", x.CommitLastReInitialization),
		Unary("getLocalizationStatuses", x.GetLocalizationStatuses))
	return p
}

// ContainerManagementClient calls ContainerManagementProtocol.
type ContainerManagementClient struct{ C Caller }

func (c ContainerManagementClient) StartContainers(ctx context.Context, req *pb.StartContainersRequestProto) (*pb.StartContainersResponseProto, error) {
	return call[pb.StartContainersResponseProto](ctx, c.C, ContainerManagementProtocol, "startContainers", req)
}

func (c ContainerManagementClient) StopContainers(ctx context.Context, req *pb.StopContainersRequestProto) (*pb.StopContainersResponseProto, error) {
	return call[pb.StopContainersResponseProto](ctx, c.C, ContainerManagementProtocol, "stopContainers", req)
}

func (c ContainerManagementClient) GetContainerStatuses(ctx context.Context, req *pb.GetContainerStatusesRequestProto) (*pb.GetContainerStatusesResponseProto, error) {
	return call[pb.GetContainerStatusesResponseProto](ctx, c.C, ContainerManagementProtocol, "getContainerStatuses", req, Idempotent())
}

func (c ContainerManagementClient) IncreaseContainersResource(ctx context.Context, req *pb.IncreaseContainersResourceRequestProto) (*pb.IncreaseContainersResourceResponseProto, error) {
	return call[pb.IncreaseContainersResourceResponseProto](ctx, c.C, ContainerManagementProtocol, "increaseContainersResource", req)
}

func (c ContainerManagementClient) UpdateContainer(ctx context.Context, req *pb.ContainerUpdateRequestProto) (*pb.ContainerUpdateResponseProto, error) {
	return call[pb.ContainerUpdateResponseProto](ctx, c.C, ContainerManagementProtocol, "updateContainer", req)
}

func (c ContainerManagementClient) SignalToContainer(ctx context.Context, req *pb.SignalContainerRequestProto) (*pb.SignalContainerResponseProto, error) {
	return call[pb.SignalContainerResponseProto](ctx, c.C, ContainerManagementProtocol, "signalToContainer", req)
}

func (c ContainerManagementClient) Localize(ctx context.Context, req *pb.ResourceLocalizationRequestProto) (*pb.ResourceLocalizationResponseProto, error) {
	return call[pb.ResourceLocalizationResponseProto](ctx, c.C, ContainerManagementProtocol, "localize", req)
}

func (c ContainerManagementClient) ReInitializeContainer(ctx context.Context, req *pb.ReInitializeContainerRequestProto) (*pb.ReInitializeContainerResponseProto, error) {
	return call[pb.ReInitializeContainerResponseProto](ctx, c.C, ContainerManagementProtocol, "reInitializeContainer", req)
}

func (c ContainerManagementClient) RestartContainer(ctx context.Context, req *pb.ContainerIdProto) (*pb.RestartContainerResponseProto, error) {
	return call[pb.RestartContainerResponseProto](ctx, c.C, ContainerManagementProtocol, "restartContainer", req)
}

func (c ContainerManagementClient) RollbackLastReInitialization(ctx context.Context, req *pb.ContainerIdProto) (*pb.RollbackResponseProto, error) {
	return call[pb.RollbackResponseProto](ctx, c.C, ContainerManagementProtocol, "rollbackLastReInitialization", req)
}

func (c ContainerManagementClient) CommitLastReInitialization(ctx context.Context, req *pb.ContainerIdProto) (*pb.CommitResponseProto, error) {
	return call[pb.CommitResponseProto](ctx, c.C, ContainerManagementProtocol, "commitLastReInitialization", req)
}

func (c ContainerManagementClient) GetLocalizationStatuses(ctx context.Context, req *pb.GetLocalizationStatusesRequestProto) (*pb.GetLocalizationStatusesResponseProto, error) {
	return call[pb.GetLocalizationStatusesResponseProto](ctx, c.C, ContainerManagementProtocol, "getLocalizationStatuses", req)
}
