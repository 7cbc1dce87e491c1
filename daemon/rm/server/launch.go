package server

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/lifecycle"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// Environment the RM gives every AM, as YARN's AM launcher does, plus
// Loom's: where the scheduler is, so an AM needs no yarn-site.xml.
const (
	EnvContainerID      = "CONTAINER_ID"
	EnvAppSubmitTime    = "APP_SUBMIT_TIME_ENV"
	EnvMaxAppAttempts   = "MAX_APP_ATTEMPTS"
	EnvHadoopUser       = "HADOOP_USER_NAME"
	EnvSchedulerAddress = "LOOM_SCHEDULER_ADDRESS"
	// EnvHistoryDir is where a DAG AM writes its job history.
	EnvHistoryDir   = "LOOM_HISTORY_DIR"
	EnvAppSubmitter = "LOOM_APP_SUBMITTER"
)

// containerToken is the token an NM checks before it starts a container:
// YARN's ContainerTokenIdentifierProto, naming the container, its node,
// submitter, resource and the master key, signed with that key
// (rpc.TokenPassword), so that an NM starts only what the RM granted.
func (r *RM) containerToken(cr *contRec) *hadooppb.TokenProto {
	return r.containerTokenToSign(cr).sign()
}

// tokenToSign is a container token's identifier and the key that signs
// it, taken under the RM's lock; sign marshals and signs it, which needs
// no lock (an allocate reply signs its containers' tokens after it lets
// the lock go).
type tokenToSign struct {
	id      *pb.ContainerTokenIdentifierProto
	key     []byte
	service string
}

// containerTokenToSign is cr's token before it is signed. Callers hold
// mu.
func (r *RM) containerTokenToSign(cr *contRec) tokenToSign {
	id := &pb.ContainerTokenIdentifierProto{ContainerId: cr.yid, NmHostAddr: proto.String(cr.node.key),
		AppSubmitter: proto.String(cr.app.user), Resource: rpc.ResourceFromVector(cr.c.Resource),
		ExpiryTimeStamp: proto.Int64(time.Now().Add(10 * time.Minute).UnixMilli()), RmIdentifier: proto.Int64(r.clusterTS),
		Priority: &pb.PriorityProto{Priority: proto.Int32(int32(cr.c.Priority))}, CreationTime: millis(cr.lc.Created),
		MasterKeyId: r.tokenKey.KeyId}
	if cr.lc.IsAM {
		id.ContainerType = pb.ContainerTypeProto_APPLICATION_MASTER.Enum()
	} else {
		id.ContainerType = pb.ContainerTypeProto_TASK.Enum()
	}
	return tokenToSign{id: id, key: r.tokenKey.GetBytes(), service: cr.node.key}
}

func (t tokenToSign) sign() *hadooppb.TokenProto {
	b, _ := proto.Marshal(t.id)
	return &hadooppb.TokenProto{Identifier: b, Password: rpc.TokenPassword(t.key, b), Kind: proto.String("ContainerToken"),
		Service: proto.String(t.service)}
}

// keyAMLaunchers is YARN's size of its AM launcher pool.
const keyAMLaunchers = "yarn.resourcemanager.amlauncher.thread-count"

// launchRequest builds the AM's start request. Callers hold mu.
func (r *RM) launchRequest(cr *contRec) *pb.StartContainersRequestProto {
	a := cr.app
	clc := proto.Clone(a.ctx.GetAmContainerSpec()).(*pb.ContainerLaunchContextProto)
	env := [][2]string{
		{EnvContainerID, rpc.ContainerIDString(cr.yid)},
		{EnvAppSubmitTime, strconv.FormatInt(a.submitted.UnixMilli(), 10)},
		{EnvMaxAppAttempts, strconv.Itoa(first(r.maxAttempts(a)))},
		{EnvHadoopUser, a.user},
		{EnvSchedulerAddress, r.schedulerAddrs()},
		{EnvAppSubmitter, a.user},
		{EnvHistoryDir, r.cfg.HistoryDir},
	}
	// The RM's values win over the submitter's.
	for _, kv := range env {
		i := slices.IndexFunc(clc.Environment, func(e *pb.StringStringMapProto) bool { return e.GetKey() == kv[0] })
		e := &pb.StringStringMapProto{Key: proto.String(kv[0]), Value: proto.String(kv[1])}
		if i >= 0 {
			clc.Environment[i] = e
		} else {
			clc.Environment = append(clc.Environment, e)
		}
	}
	clc.Tokens = r.amCredentials(cr.attempt, clc.GetTokens())
	return &pb.StartContainersRequestProto{StartContainerRequest: []*pb.StartContainerRequestProto{{
		ContainerLaunchContext: clc, ContainerToken: r.containerToken(cr)}}}
}

// launchAM starts the AM container on its NM through
// ContainerManagementProtocol, outside the lock; a failure fails the
// attempt. As YARN's AMLauncher, the RM connects as the attempt with an
// NMToken for it, which is all a NodeManager's container manager takes.
func (r *RM) launchAM(cr *contRec, req *pb.StartContainersRequestProto) {
	defer r.launches.Done()
	// At most AMLaunchers launches at once, in the order they came (a
	// full channel's senders are served first come, first served): a
	// thousand apps submitted together dial their NMs a pool's worth at a
	// time, as YARN's launcher threads do, instead of opening a thousand
	// connections at once.
	select {
	case r.launchSlots <- struct{}{}:
	case <-r.stop:
		return
	}
	defer func() { <-r.launchSlots }()
	r.mu.Lock()
	n := cr.node
	cl := rpc.NewClient(n.key, rpc.ClientOptions{User: rpc.AttemptIDString(cr.attempt.yid), CallTimeout: 30 * time.Second,
		Token: r.nmToken(cr.attempt.yid, cr.app.user, n)})
	defer cl.Close()
	cm := rpc.ContainerManagementClient{C: cl}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cm.StartContainers(ctx, req)
	// An NM that has not finished registering refuses containers; YARN's
	// AM launcher tries again, and so does Loom's.
	for try := 0; rpc.IsClass(err, rpc.ClassNMNotYetReady) && try < 20; try++ {
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
		}
		resp, err = cm.StartContainers(ctx, req)
	}
	if err == nil && len(resp.GetFailedRequests()) > 0 {
		f := resp.GetFailedRequests()[0].GetException()
		err = fmt.Errorf("%s: %s", f.GetClassName(), f.GetMessage())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.log.Warn().Err(err).Str("container", rpc.ContainerIDString(cr.yid)).Str("node", n.key).Msg("AM launch failed")
		r.endContainer(cr.c.ID, ExitAborted, fmt.Sprintf("Could not launch the AM on %s: %v", n.key, err), false)
		return
	}
	if cr.lc.State != lifecycle.ContainerComplete {
		r.lifeStepLogged(lifecycle.Running{Container: lifecycle.ContainerID(cr.c.ID)})
	}
	r.log.Info().Str("container", rpc.ContainerIDString(cr.yid)).Str("node", n.key).Msg("AM launched")
}

// schedulerAddrs is where an AM finds the scheduler: this RM's, and with
// HA every RM's after it, comma-separated, for the AM to fail over.
func (r *RM) schedulerAddrs() string {
	addrs := []string{advertised(r.Addr("scheduler"))}
	for _, id := range r.cfg.HA.IDs {
		if a := r.cfg.HA.Schedulers[id]; id != r.cfg.HA.ID && a != "" {
			addrs = append(addrs, advertised(a))
		}
	}
	return strings.Join(addrs, ",")
}
