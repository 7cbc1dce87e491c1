package nm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// callTimeout bounds one call to the RM.
const callTimeout = 30 * time.Second

// minKickGap keeps out-of-band heartbeats (sent when a container
// completes) from coming closer together than this.
const minKickGap = 100 * time.Millisecond

// trackerLoop registers with the RM, heartbeats, and registers again
// whenever the RM asks (RESYNC), until the NM stops.
func (n *NodeManager) trackerLoop() {
	defer n.loops.Done()
	for n.register() {
		if !n.heartbeats() {
			return
		}
	}
}

// register registers with the RM, retrying with back-off while it cannot
// be reached. It returns false when the NM is stopping.
func (n *NodeManager) register() bool {
	backoff := 250 * time.Millisecond
	for {
		req := n.registerRequest()
		ctx, cancel := context.WithTimeout(n.ctx, callTimeout)
		resp, err := n.tracker.RegisterNodeManager(ctx, req)
		cancel()
		if n.ctx.Err() != nil {
			return false
		}
		if err == nil {
			switch resp.GetNodeAction() {
			case pb.NodeActionProto_SHUTDOWN:
				err := fmt.Errorf("%w: registration refused by %s: %s", ErrShutdownByRM, n.cfg.TrackerAddress, resp.GetDiagnosticsMessage())
				n.log.Error().Err(err).Msg("NodeManager shutting down")
				go n.stop(context.Background(), err)
				return false
			case pb.NodeActionProto_RESYNC:
				err = fmt.Errorf("the RM asked to resync while registering: %s", resp.GetDiagnosticsMessage())
			default:
				if resp.GetContainerTokenMasterKey() == nil || resp.GetNmTokenMasterKey() == nil {
					// YARN's NodeManager cannot heartbeat without both.
					err = rpc.Errorf(rpc.ClassYarnException, "the registration response has no container-token or NMToken master key "+
						"(container_token_master_key, nm_token_master_key): this NodeManager could check no token")
				}
			}
		}
		if err != nil {
			var re *rpc.RemoteError
			if credentialsRefused(err) {
				hint := "this NodeManager has no cluster secret: set the RM's loom.cluster.secret-file (or loom.cluster.secret) here too"
				if len(n.cfg.ClusterSecret) > 0 {
					hint = "check that " + n.cfg.ClusterSecretKey + " holds the same secret as on the RM"
				}
				n.log.Error().Err(err).Str("rm", n.cfg.TrackerAddress).Dur("retry_in", backoff).
					Msgf("the ResourceManager refused this node's credentials: %s; retrying", hint)
			} else if errors.As(err, &re) {
				n.log.Warn().Err(err).Str("rm", n.cfg.TrackerAddress).Dur("retry_in", backoff).
					Msg("the ResourceManager refused the registration; retrying")
			} else {
				n.log.Warn().Err(err).Str("rm", n.cfg.TrackerAddress).Dur("retry_in", backoff).
					Msgf("cannot reach the ResourceManager's resource tracker at %s (yarn.resourcemanager.resource-tracker.address); retrying",
						n.cfg.TrackerAddress)
			}
			if !n.sleep(backoff) {
				return false
			}
			backoff = min(2*backoff, n.cfg.RetryInterval)
			continue
		}
		n.mu.Lock()
		n.isRegistered = true
		n.respID = 0
		n.rmIdentifier = resp.GetRmIdentifier()
		if k := resp.GetContainerTokenMasterKey(); k != nil {
			n.masterKey = k
		}
		n.setNMTokenKeyLocked(resp.GetNmTokenMasterKey())
		reported := len(req.GetContainerStatuses())
		n.mu.Unlock()
		n.regOnce.Do(func() { close(n.registered) })
		ev := n.log.Info().Str("rm", n.cfg.TrackerAddress).Str("resource", n.cfg.Resource.String()).
			Str("rm_version", resp.GetRmVersion())
		if reported > 0 {
			ev = ev.Int("containers_reported", reported)
		}
		ev.Msg("registered with the ResourceManager")
		if r := resp.GetResource(); r != nil {
			n.log.Info().Int64("memory_mb", r.GetMemory()).Int32("vcores", r.GetVirtualCores()).
				Msg("the ResourceManager set this node's resource")
		}
		return true
	}
}

// sleep waits d, or less if the NM stops (then it returns false).
func (n *NodeManager) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-n.ctx.Done():
		return false
	}
}

// registerRequest says who this node is, what it offers, and what it
// runs (for a re-registration after RESYNC: YARN's work-preserving
// resync keeps containers running and reports them).
func (n *NodeManager) registerRequest() *pb.RegisterNodeManagerRequestProto {
	req := &pb.RegisterNodeManagerRequestProto{NodeId: n.nodeID, HttpPort: ptr(int32(n.httpPort)),
		Resource: rpc.ResourceFromVector(n.cfg.Resource), NmVersion: proto.String(Version),
		PhysicalResource: rpc.ResourceFromVector(n.cfg.Physical), NodeLabels: n.cfg.labelsProto()}
	n.mu.Lock()
	defer n.mu.Unlock()
	// Completed containers too, those an RM has seen included, until
	// they are forgotten (as YARN's NM reports every container it still
	// tracks): an RM that saw a completion may have died before its AM
	// heard of it, and the RM that takes over learns it only from here
	// (without it, a DAG AM waited for ever for a task that had ended).
	for _, c := range n.sortedContainersLocked() {
		req.ContainerStatuses = append(req.ContainerStatuses, c.nmStatus())
	}
	for _, a := range n.sortedAppsLocked() {
		if !a.cleaning {
			req.RunningApplications = append(req.RunningApplications, a.id)
		}
	}
	return req
}

// heartbeats sends node status at the interval the RM gives, acts on the
// responses, and returns true when the RM asks for a re-registration,
// false when the NM stops.
func (n *NodeManager) heartbeats() bool {
	interval := defaultHeartbeatInterval
	var failingSince time.Time
	var lastLogged time.Time
	for {
		sent := time.Now()
		req, included := n.heartbeatRequest()
		ctx, cancel := context.WithTimeout(n.ctx, callTimeout)
		resp, err := n.tracker.NodeHeartbeat(ctx, req)
		cancel()
		if n.ctx.Err() != nil {
			return false
		}
		if err != nil {
			// The completed statuses stay pending: the next heartbeat
			// carries them again.
			now := time.Now()
			if failingSince.IsZero() {
				failingSince = now
			}
			if now.Sub(lastLogged) >= 30*time.Second {
				lastLogged = now
				n.log.Warn().Err(err).Str("rm", n.cfg.TrackerAddress).Dur("failing_for", now.Sub(failingSince).Round(time.Second)).
					Msgf("heartbeat to the ResourceManager at %s (yarn.resourcemanager.resource-tracker.address) failed; retrying", n.cfg.TrackerAddress)
			}
		} else {
			if !failingSince.IsZero() {
				n.log.Info().Dur("failed_for", time.Since(failingSince).Round(time.Millisecond)).Msg("heartbeats to the ResourceManager resumed")
				failingSince, lastLogged = time.Time{}, time.Time{}
			}
			if d := resp.GetNextHeartBeatInterval(); d > 0 {
				interval = time.Duration(d) * time.Millisecond
			}
			switch resp.GetNodeAction() {
			case pb.NodeActionProto_RESYNC:
				n.log.Warn().Str("diagnostics", resp.GetDiagnosticsMessage()).Msg("the ResourceManager asked this node to resync; registering again")
				return true
			case pb.NodeActionProto_SHUTDOWN:
				err := fmt.Errorf("%w: %s", ErrShutdownByRM, resp.GetDiagnosticsMessage())
				n.log.Error().Err(err).Msg("NodeManager shutting down")
				go n.stop(context.Background(), err)
				return false
			}
			n.applyHeartbeatResponse(resp, included)
		}
		if !n.waitNextHeartbeat(sent, interval) {
			return false
		}
	}
}

// waitNextHeartbeat waits the interval after a heartbeat, or less when a
// container completes (no sooner than minKickGap after the last one).
func (n *NodeManager) waitNextHeartbeat(sent time.Time, interval time.Duration) bool {
	t := time.NewTimer(interval)
	defer t.Stop()
	select {
	case <-n.ctx.Done():
		return false
	case <-t.C:
		return true
	case <-n.kick:
		if gap := minKickGap - time.Since(sent); gap > 0 {
			return n.sleep(gap)
		}
		return true
	}
}

// heartbeatRequest is the node's status: every container that is not
// completed, and every completed one the RM has not yet seen. It returns
// those completed ones too, to be marked seen once the RM answers.
func (n *NodeManager) heartbeatRequest() (*pb.NodeHeartbeatRequestProto, []*container) {
	health := n.healthStatus()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lastHealth = health
	st := &pb.NodeStatusProto{NodeId: n.nodeID, ResponseId: ptr(n.respID), NodeHealthStatus: health}
	if n.utilMeasured {
		st.NodeUtilization, st.ContainersUtilization = n.nodeUtil.proto(), n.contUtil.proto()
	}
	var included []*container
	for _, c := range n.sortedContainersLocked() {
		if c.state == stateDone {
			if c.acked {
				continue
			}
			included = append(included, c)
		}
		st.ContainersStatuses = append(st.ContainersStatuses, c.status())
	}
	req := &pb.NodeHeartbeatRequestProto{NodeStatus: st, LastKnownContainerTokenMasterKey: n.masterKey,
		LastKnownNmTokenMasterKey: n.nmMasterKey, NodeLabels: n.cfg.labelsProto()}
	for _, app := range slices.Sorted(maps.Keys(n.logReports)) {
		rep := n.logReports[app]
		rep.sent = true
		req.LogAggregationReportsForApps = append(req.LogAggregationReportsForApps, rep.report)
	}
	return req, included
}

// healthStatus checks that the local and log dirs are usable
// directories.
func (n *NodeManager) healthStatus() *pb.NodeHealthStatusProto {
	var bad []string
	for _, set := range []struct {
		name string
		dirs []string
	}{{"local-dirs", n.cfg.LocalDirs}, {"log-dirs", n.cfg.LogDirs}} {
		var failed []string
		for _, d := range set.dirs {
			if st, err := os.Stat(d); err != nil {
				failed = append(failed, err.Error())
			} else if !st.IsDir() {
				failed = append(failed, d+" is not a directory")
			}
		}
		if len(failed) > 0 {
			bad = append(bad, fmt.Sprintf("%d/%d %s are bad: %s", len(failed), len(set.dirs), set.name, strings.Join(failed, "; ")))
		}
	}
	return &pb.NodeHealthStatusProto{IsNodeHealthy: proto.Bool(len(bad) == 0),
		HealthReport: proto.String(strings.Join(bad, "; ")), LastHealthReportTime: proto.Int64(time.Now().UnixMilli())}
}

// applyHeartbeatResponse acts on a NORMAL response: the completed
// statuses it answered are seen, and the RM's clean-ups are done.
func (n *NodeManager) applyHeartbeatResponse(resp *pb.NodeHeartbeatResponseProto, included []*container) {
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.respID = resp.GetResponseId()
	if k := resp.GetContainerTokenMasterKey(); k != nil {
		n.masterKey = k
	}
	n.setNMTokenKeyLocked(resp.GetNmTokenMasterKey())
	for _, c := range included {
		c.acked, c.ackedAt = true, now
	}
	// The RM has the log aggregation reports sent with this heartbeat
	// (a report made since is sent with the next).
	for app, rep := range n.logReports {
		if rep.sent {
			delete(n.logReports, app)
		}
	}
	for _, cid := range resp.GetContainersToCleanup() {
		if c := n.containers[ContainerIDString(cid)]; c != nil {
			n.killLocked(c, ExitKilledByResourceManager, diagKilledByRM)
		}
	}
	for _, aid := range resp.GetApplicationsToCleanup() {
		n.cleanupAppLocked(ApplicationIDString(aid))
	}
	// Signals the RM passes on from clients (yarn container -signal).
	for _, sg := range resp.GetContainersToSignal() {
		c := n.containers[ContainerIDString(sg.GetContainerId())]
		if c == nil {
			n.log.Warn().Str("container", ContainerIDString(sg.GetContainerId())).Msg("the RM signals a container this node does not have")
			continue
		}
		if err := n.signalLocked(c, sg.GetCommand()); err != nil {
			n.log.Warn().Err(err).Str("container", c.idStr).Msg("cannot deliver the RM's signal")
		}
	}
	for _, cid := range resp.GetContainersToBeRemovedFromNm() {
		if c := n.containers[ContainerIDString(cid)]; c != nil && c.state == stateDone {
			n.forgetLocked(c, now)
		}
	}
	// Completed containers the RM has seen are kept a while for
	// getContainerStatuses, then forgotten.
	for _, c := range n.containers {
		if c.state == stateDone && c.acked && (now.Sub(c.ackedAt) > trackStopped || c.app.cleaning) {
			n.forgetLocked(c, now)
		}
	}
	for id, t := range n.recentlyStopped {
		if now.Sub(t) > trackStopped {
			delete(n.recentlyStopped, id)
		}
	}
}

// forgetLocked drops a completed container's record, remembering its id
// so that a second start is refused. Callers hold mu.
func (n *NodeManager) forgetLocked(c *container, now time.Time) {
	delete(n.containers, c.idStr)
	delete(c.app.conts, c.idStr)
	n.recentlyStopped[c.idStr] = now
}

// cleanupAppLocked kills an application's containers (exit status -107)
// and, once they have exited, removes its directories under the local
// dirs. Its logs stay. Callers hold mu.
func (n *NodeManager) cleanupAppLocked(appStr string) {
	a := n.apps[appStr]
	if a == nil || a.cleaning {
		return
	}
	a.cleaning = true
	// The keys its attempts first started containers with need not be
	// remembered any more.
	attemptPrefix := "appattempt_" + strings.TrimPrefix(appStr, "application_") + "_"
	for attempt := range n.attemptKeys {
		if strings.HasPrefix(attempt, attemptPrefix) {
			delete(n.attemptKeys, attempt)
		}
	}
	if a.exec != nil {
		n.stopExecutorLocked(a.exec, ExitKilledAfterAppCompletion, diagAppFinishedByRM)
	}
	for _, c := range a.conts {
		n.killLocked(c, ExitKilledAfterAppCompletion, diagAppFinishedByRM)
	}
	n.log.Info().Str("app", appStr).Int("containers", len(a.conts)).Msg("cleaning up application")
	n.work.Add(1)
	go func() {
		defer n.work.Done()
		n.waitContainersDone(a)
		if n.cfg.LogAggregation {
			n.aggregateLogs(a.user, a.idStr)
		}
		for _, d := range n.appDirs(a.user, a.idStr) {
			if err := os.RemoveAll(d); err != nil {
				n.log.Warn().Err(err).Str("dir", d).Msg("cannot remove the application's directory")
			}
		}
		n.mu.Lock()
		if n.apps[appStr] == a {
			delete(n.apps, appStr)
		}
		n.mu.Unlock()
	}()
}

// waitContainersDone waits until every container of a has its completed
// status recorded.
func (n *NodeManager) waitContainersDone(a *application) {
	for {
		n.mu.Lock()
		pending := a.exec != nil && !a.exec.dead
		for _, c := range a.conts {
			if c.state != stateDone {
				pending = true
				break
			}
		}
		n.mu.Unlock()
		if !pending || !n.sleep(10*time.Millisecond) {
			return
		}
	}
}

func (n *NodeManager) sortedContainersLocked() []*container {
	cs := make([]*container, 0, len(n.containers))
	for _, c := range n.containers {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b *container) int { return strings.Compare(a.idStr, b.idStr) })
	return cs
}

func (n *NodeManager) sortedAppsLocked() []*application {
	as := make([]*application, 0, len(n.apps))
	for _, a := range n.apps {
		as = append(as, a)
	}
	slices.SortFunc(as, func(a, b *application) int { return strings.Compare(a.idStr, b.idStr) })
	return as
}
