package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// allocFile is a Fair Scheduler allocation file of three levels: root,
// eng (weight 3) and ads; eng's etl, adhoc (held to 2 GB and 2 vcores)
// and batch (one app at a time). Nobody may submit anywhere but where a queue says: tester in
// eng, alice in ads. Apps naming no queue go to eng.adhoc.
const allocFile = `<?xml version="1.0"?>
<allocations>
  <queue name="root">
    <aclSubmitApps>nobody</aclSubmitApps>
    <aclAdministerApps>nobody</aclAdministerApps>
    <queue name="eng">
      <weight>3</weight>
      <aclSubmitApps>tester</aclSubmitApps>
      <queue name="etl"/>
      <queue name="adhoc">
        <maxResources>2048 mb, 2 vcores</maxResources>
      </queue>
      <queue name="batch">
        <maxRunningApps>1</maxRunningApps>
      </queue>
    </queue>
    <queue name="ads">
      <aclSubmitApps>alice</aclSubmitApps>
    </queue>
  </queue>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="default" queue="eng.adhoc"/>
  </queuePlacementPolicy>
</allocations>
`

// TestFairSchedulerQueues runs real NodeManagers under an RM configured as
// a Fair Scheduler cluster is: the tree shows in getQueueInfo, apps are
// placed by the file's rules and its ACLs, a queue's maximum holds a stock
// AM's grants, moving the app lifts it, and the RM reloads the file when
// it changes and keeps its queues when the new file is broken.
func TestFairSchedulerQueues(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "fair-scheduler.xml")
	if err := os.WriteFile(file, []byte(allocFile), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, 2,
		"-D", "yarn.resourcemanager.scheduler.class=org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler",
		"-D", "yarn.scheduler.fair.allocation.file="+file, "-D", "loom.queues.reload-interval-ms=200",
		"-D", "yarn.acl.enable=true", "-D", "yarn.admin.acl=admin")
	ctx := context.Background()

	// The tree, all the way down.
	qi, err := c.ac.GetQueueInfo(ctx, &pb.GetQueueInfoRequestProto{QueueName: proto.String("root"),
		IncludeChildQueues: proto.Bool(true), Recursive: proto.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	var walk func(q *pb.QueueInfoProto)
	walk = func(q *pb.QueueInfoProto) {
		paths = append(paths, q.GetQueuePath())
		for _, ch := range q.GetChildQueues() {
			walk(ch)
		}
	}
	walk(qi.GetQueueInfo())
	// root.default too: the Fair Scheduler always has it.
	if want := []string{"root", "root.eng", "root.eng.etl", "root.eng.adhoc", "root.eng.batch", "root.ads", "root.default"}; !slices.Equal(paths, want) {
		t.Errorf("getQueueInfo root, recursive: %v, want %v", paths, want)
	}
	// eng weighs 3 of root's 5 (ads and default 1 each).
	if eng := qi.GetQueueInfo().GetChildQueues()[0]; eng.GetCapacity() != 0.6 {
		t.Errorf("root.eng's capacity %v, want 0.6", eng.GetCapacity())
	}

	// The REST scheduler endpoint nests them as the Fair Scheduler does.
	rep := web{t, "http://" + c.web}.do("GET", "/ws/v1/cluster/scheduler?user.name=tester", "")
	var sched struct {
		Scheduler struct {
			SchedulerInfo struct {
				Type      string
				RootQueue fairQueue
			}
		}
	}
	if err := json.Unmarshal(rep.body, &sched); err != nil || rep.status != 200 {
		t.Fatalf("/ws/v1/cluster/scheduler: %d %v\n%s", rep.status, err, rep.body)
	}
	var nested []string
	var walkREST func(q fairQueue, depth int)
	walkREST = func(q fairQueue, depth int) {
		nested = append(nested, strings.Repeat("-", depth)+q.QueueName)
		for _, ch := range q.ChildQueues.Queue {
			walkREST(ch, depth+1)
		}
	}
	walkREST(sched.Scheduler.SchedulerInfo.RootQueue, 0)
	if want := []string{"root", "-root.eng", "--root.eng.etl", "--root.eng.adhoc", "--root.eng.batch", "-root.ads", "-root.default"}; sched.Scheduler.SchedulerInfo.Type != "fairScheduler" || !slices.Equal(nested, want) {
		t.Errorf("/ws/v1/cluster/scheduler: %s %v, want fairScheduler %v", sched.Scheduler.SchedulerInfo.Type, nested, want)
	}

	// And `loom queues` shows it, indented.
	out, err := exec.Command(loomBin, "queues", "--rm", c.client).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\n    root.eng.etl ") || !strings.Contains(string(out), "\n  root.eng ") {
		t.Errorf("loom queues: %v\n%s", err, out)
	}

	// Placement: the queue asked for, else the default rule's.
	submit := c.submitTo
	etl, err := submit("tester", "root.eng.etl", "exit 0")
	if err != nil {
		t.Fatal(err)
	}
	if q := c.report(t, etl).GetQueue(); q != "root.eng.etl" {
		t.Errorf("an app submitted to root.eng.etl runs in %q", q)
	}
	adhoc, err := submit("tester", "default", handOverCredentials(c.dir))
	if err != nil {
		t.Fatal(err)
	}
	if q := c.report(t, adhoc).GetQueue(); q != "root.eng.adhoc" {
		t.Errorf("an app naming no queue runs in %q, want the default rule's root.eng.adhoc", q)
	}

	// ACLs: tester may not submit to ads, alice may.
	id, err := submit("tester", "root.ads", "exit 0")
	want := "User tester does not have permission to submit " + rpc.AppIDString(id) + " to queue root.ads"
	if !rpc.IsClass(err, rpc.ClassAccessControl) || !strings.Contains(err.Error(), want) {
		t.Errorf("tester submitting to root.ads: %v, want AccessControlException %q", err, want)
	}
	if _, err := submit("alice", "ads", "exit 0"); err != nil {
		t.Errorf("alice submitting to ads: %v", err)
	}

	// adhoc's maximum, 2 GB: its AM holds 1 GB, so of three 1 GB asks one
	// is granted, however long the AM asks.
	c.waitState(t, adhoc, pb.YarnApplicationStateProto_ACCEPTED)
	am := stockAMAttempt(t, c, adhoc, 1)
	am.register()
	granted := 0
	resp := am.allocate(ask(3, 1024))
	granted += len(resp.GetAllocatedContainers())
	for range 10 {
		time.Sleep(150 * time.Millisecond)
		granted += len(am.allocate().GetAllocatedContainers())
	}
	if granted != 1 {
		t.Errorf("root.eng.adhoc (max 2048 MB, AM 1024 MB): %d containers of 1024 MB granted, want 1", granted)
	}
	// Moved to etl, which has no maximum, it gets the other two.
	if _, err := c.ac.MoveApplicationAcrossQueues(ctx, &pb.MoveApplicationAcrossQueuesRequestProto{ApplicationId: adhoc,
		TargetQueue: proto.String("root.eng.etl")}); err != nil {
		t.Fatalf("move: %v", err)
	}
	c.waitFor(t, "the other two containers after the move", func() bool {
		granted += len(am.allocate().GetAllocatedContainers())
		return granted == 3
	})
	if q := c.report(t, adhoc).GetQueue(); q != "root.eng.etl" {
		t.Errorf("after the move the app is in %q", q)
	}

	// A queue that does not exist, with create="false": the next rule
	// (adhoc has room again: its app moved).
	if id, err := submit("tester", "root.nosuch", "exit 0"); err != nil {
		t.Errorf("submitting to a queue that does not exist: %v", err)
	} else if q := c.report(t, id).GetQueue(); q != "root.eng.adhoc" {
		t.Errorf("an app naming a queue that does not exist runs in %q, want the default rule's root.eng.adhoc", q)
	}

	// batch runs one app at a time: the second waits, says why, and
	// starts when the first ends.
	first, err := submit("tester", "root.eng.batch", "exec sleep 1000")
	if err != nil {
		t.Fatal(err)
	}
	second, err := submit("tester", "root.eng.batch", "exec sleep 1000")
	if err != nil {
		t.Fatal(err)
	}
	if d := c.report(t, second).GetDiagnostics(); d != "waiting to start: queue root.eng.batch runs 1 apps, its maxRunningApps" {
		t.Errorf("the second app in batch: diagnostics %q", d)
	}
	time.Sleep(500 * time.Millisecond)
	if at := c.report(t, second).GetLaunchTime(); at != 0 {
		t.Errorf("the waiting app's AM was launched at %d", at)
	}
	if _, err := c.ac.ForceKillApplication(ctx, &pb.KillApplicationRequestProto{ApplicationId: first}); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "the second app in batch to start", func() bool { return c.report(t, second).GetLaunchTime() != 0 })

	// A new queue in the file appears without a restart.
	changed := strings.Replace(allocFile, `<queue name="ads">`, `<queue name="bi"><aclSubmitApps>tester</aclSubmitApps></queue>
    <queue name="ads">`, 1)
	if err := os.WriteFile(file, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "root.bi after the reload", func() bool {
		_, err := c.ac.GetQueueInfo(ctx, &pb.GetQueueInfoRequestProto{QueueName: proto.String("root.bi")})
		return err == nil
	})
	if _, err := submit("tester", "root.bi", "exit 0"); err != nil {
		t.Errorf("submitting to the new queue: %v", err)
	}
	// A broken file is refused, and the queues stay.
	time.Sleep(1100 * time.Millisecond) // a later mtime, on file systems of 1 s
	if err := os.WriteFile(file, []byte(`<allocations><queue name="x"><weight>-2</weight></queue>`), 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "the RM to refuse the broken file", func() bool {
		return strings.Contains(c.rm.out.String(), "the queue file changed but cannot be used")
	})
	if _, err := c.ac.GetQueueInfo(ctx, &pb.GetQueueInfoRequestProto{QueueName: proto.String("root.bi")}); err != nil {
		t.Errorf("after a broken file root.bi is gone: %v", err)
	}
}

// fairQueue is a queue of the Fair Scheduler's REST layout, as far as the
// test reads it.
type fairQueue struct {
	QueueName   string
	ChildQueues struct{ Queue []fairQueue }
}

// submitTo submits, as user, to queue, an app whose AM runs command.
func (c *cluster) submitTo(user, queue, command string) (*pb.ApplicationIdProto, error) {
	ctx := context.Background()
	cl := rpc.NewClient(c.client, rpc.ClientOptions{User: user, Retries: 20, RetryBackoff: 50 * time.Millisecond})
	defer cl.Close()
	ac := rpc.ApplicationClient{C: cl}
	na, err := ac.GetNewApplication(ctx, &pb.GetNewApplicationRequestProto{})
	if err != nil {
		return nil, err
	}
	_, err = ac.SubmitApplication(ctx, &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{
		ApplicationId: na.GetApplicationId(), ApplicationName: proto.String(queue), Queue: proto.String(queue),
		Resource:        &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		AmContainerSpec: &pb.ContainerLaunchContextProto{Command: []string{command}}}})
	return na.GetApplicationId(), err
}
