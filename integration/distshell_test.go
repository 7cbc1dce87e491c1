package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/tool/mini"
)

// The application master in distshell/ is Hadoop's Distributed Shell AM
// redone in plain Java with the JDK alone: no Hadoop jar, no protobuf
// library, no Loom code. Its protobuf encoding, Hadoop IPC framing and
// SASL negotiation are written from YARN's and Hadoop's published .proto
// files and wire protocol, and its DIGEST-MD5 is the JDK's, configured as
// Hadoop's SaslRpcClient configures it. These tests run it against real
// Loom daemons, launched by a NodeManager and unmanaged.

const distShellGreeting = "hello from"

var (
	distShellOnce sync.Once
	distShellDir  string
	distShellErr  error
	javaBin       string
)

// distShellClasses compiles distshell/*.java once for the test binary,
// into the directory TestMain removes at the end; a machine without a
// JDK skips.
func distShellClasses(t *testing.T) (java, classes string) {
	t.Helper()
	javac, err := exec.LookPath("javac")
	if err != nil {
		t.Skip("no JDK (javac) on PATH: scripts/test-env.sh installs openjdk-17-jdk-headless")
	}
	distShellOnce.Do(func() {
		if javaBin, distShellErr = exec.LookPath("java"); distShellErr != nil {
			return
		}
		if javaBin, distShellErr = filepath.Abs(javaBin); distShellErr != nil {
			return
		}
		srcs, _ := filepath.Glob(filepath.Join("distshell", "*.java"))
		if len(srcs) == 0 {
			distShellErr = fmt.Errorf("no distshell/*.java")
			return
		}
		distShellDir = filepath.Join(filepath.Dir(loomBin), "distshell-classes")
		out, err := exec.Command(javac, append([]string{"-Xlint:all", "-Werror", "-d", distShellDir}, srcs...)...).CombinedOutput()
		if err != nil {
			distShellErr = fmt.Errorf("javac: %v\n%s", err, out)
		}
	})
	if distShellErr != nil {
		t.Fatal(distShellErr)
	}
	return javaBin, distShellDir
}

// distShellArgs are the AM's arguments: two 128 MB, 1-vcore containers
// at priority 1 that each echo the greeting and their container id.
func distShellArgs(classes, scheduler string) []string {
	return []string{"-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", classes, "DistShellAM", scheduler,
		"--num-containers", "2", "--container-memory", "128", "--container-vcores", "1", "--priority", "1",
		"--shell-command", "echo " + distShellGreeting + " $CONTAINER_ID", "--interval-ms", "100", "--timeout-s", "45"}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// waitEnded waits for the app to reach a final state.
func (c *cluster) waitEnded(t *testing.T, id *pb.ApplicationIdProto, limit time.Duration, why func() string) *pb.ApplicationReportProto {
	t.Helper()
	var rep *pb.ApplicationReportProto
	deadline := time.Now().Add(limit)
	for {
		rep = c.report(t, id)
		if mini.Ended(rep) {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still %v after %v\n%s", rpc.AppIDString(id), rep.GetYarnApplicationState(), limit, why())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// containerLogs are the app's container log dirs on every NM, by
// container id.
func (c *cluster) containerLogs(id *pb.ApplicationIdProto) map[string]string {
	dirs, _ := filepath.Glob(filepath.Join(c.dir, "nm*", "logs", rpc.AppIDString(id), "container_*"))
	logs := map[string]string{}
	for _, d := range dirs {
		logs[filepath.Base(d)] = d
	}
	return logs
}

func readLog(dir, name string) string {
	b, _ := os.ReadFile(filepath.Join(dir, name))
	return string(b)
}

// checkTasks checks that exactly the AM's two task containers ran, each
// printing the greeting with its own id to its stdout, and that the AM
// (whose output is amOut) saw each of them complete with exit status 0.
// amContainer is the AM's own container, "" for an unmanaged AM.
func (c *cluster) checkTasks(t *testing.T, id *pb.ApplicationIdProto, amContainer, amOut string) {
	t.Helper()
	var tasks []string
	for cid, dir := range c.containerLogs(id) {
		if cid == amContainer {
			continue
		}
		tasks = append(tasks, cid)
		want := distShellGreeting + " " + cid
		if out := readLog(dir, "stdout"); strings.TrimSpace(out) != want {
			t.Errorf("task container %s wrote %q to stdout, want %q (stderr %q)", cid, out, want, readLog(dir, "stderr"))
		}
	}
	slices.Sort(tasks)
	if len(tasks) != 2 {
		t.Fatalf("task containers %v, want 2; the AM said:\n%s", tasks, amOut)
	}
	at := c.report(t, id).GetCurrentApplicationAttemptId()
	attempt := rpc.AttemptIDString(at)
	prefix := fmt.Sprintf("container_%s_%02d_", strings.TrimPrefix(rpc.AppIDString(id), "application_"), at.GetAttemptId())
	for _, cid := range tasks {
		if !strings.HasPrefix(cid, prefix) {
			t.Errorf("task container %s is not of %s", cid, attempt)
		}
		for _, re := range []string{`started ` + cid + ` on 127\.0\.0\.1:\d+: echo hello from \$CONTAINER_ID 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr\n`,
			`container ` + cid + ` on 127\.0\.0\.1:\d+ completed with exit status 0\n`} {
			if !regexp.MustCompile(re).MatchString(amOut) {
				t.Errorf("the AM never said /%s/; it said:\n%s", re, amOut)
			}
		}
	}
	for _, line := range []string{"connected to the scheduler at " + c.scheduler + " with TOKEN auth as " + attempt,
		"NMToken for 127.0.0.1:", "unregistered with final status SUCCEEDED"} {
		if !strings.Contains(amOut, line) {
			t.Errorf("the AM never said %q; it said:\n%s", line, amOut)
		}
	}
}

// TestDistShellAM runs the Java AM as YARN runs Distributed Shell: the RM
// launches it in a container on a NodeManager, it finds its AMRM token in
// the credentials file the NM wrote, and it runs two shell containers on
// the NodeManagers the RM chooses.
func TestDistShellAM(t *testing.T) {
	java, classes := distShellClasses(t)
	c := startCluster(t, 2)
	args := distShellArgs(classes, c.scheduler)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	id := c.submit(t, "distshell", "exec "+shellQuote(java)+" "+strings.Join(quoted, " "))
	amContainer := fmt.Sprintf("container_%s_01_000001", strings.TrimPrefix(rpc.AppIDString(id), "application_"))
	amLogs := func() string {
		dir := c.containerLogs(id)[amContainer]
		return fmt.Sprintf("AM stdout:\n%s\nAM stderr:\n%s", readLog(dir, "stdout"), readLog(dir, "stderr"))
	}
	rep := c.waitEnded(t, id, 60*time.Second, amLogs)
	if rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_FINISHED ||
		rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Fatalf("the app ended %v/%v: %s\n%s", rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus(), rep.GetDiagnostics(), amLogs())
	}
	dir := c.containerLogs(id)[amContainer]
	if dir == "" {
		t.Fatalf("no log dir for the AM container %s among %v", amContainer, c.containerLogs(id))
	}
	if stderr := readLog(dir, "stderr"); strings.Contains(stderr, "DistShellAM") {
		t.Errorf("the AM complained:\n%s", stderr)
	}
	c.checkTasks(t, id, amContainer, readLog(dir, "stdout"))
	if rep.GetUnmanagedApplication() {
		t.Error("the report says unmanaged")
	}
}

// TestDistShellAMUnmanaged runs the same Java AM unmanaged, as Hadoop's
// UnmanagedAMLauncher does: once the attempt is LAUNCHED it takes the
// AMRM token from the application report, writes it to a credentials
// file, and runs the AM as a local process with HADOOP_TOKEN_FILE_LOCATION
// and CONTAINER_ID (the attempt's container 0) set. A forged token is
// refused first.
func TestDistShellAMUnmanaged(t *testing.T) {
	java, classes := distShellClasses(t)
	c := startCluster(t, 2)
	ctx := context.Background()
	id := c.submitWith(t, "distshell-unmanaged", "", func(sc *pb.ApplicationSubmissionContextProto) {
		sc.UnmanagedAm = proto.Bool(true)
		sc.AmContainerSpec = &pb.ContainerLaunchContextProto{}
	})
	var tok *hadooppb.TokenProto
	var attempt *pb.ApplicationAttemptIdProto
	c.waitFor(t, "the attempt to be LAUNCHED with an AMRM token in the report", func() bool {
		rep := c.report(t, id)
		attempt = rep.GetCurrentApplicationAttemptId()
		if attempt == nil {
			return false
		}
		ar, err := c.ac.GetApplicationAttemptReport(ctx, &pb.GetApplicationAttemptReportRequestProto{ApplicationAttemptId: attempt})
		if err != nil || ar.GetApplicationAttemptReport().GetYarnApplicationAttemptState() != pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_LAUNCHED {
			return false
		}
		tok = c.report(t, id).GetAmRmToken()
		return tok != nil
	})
	if tok.GetKind() != rpc.AMRMTokenKind {
		t.Fatalf("the report's AMRM token is of kind %q", tok.GetKind())
	}
	amContainer := rpc.ContainerIDString(&pb.ContainerIdProto{AppId: id, AppAttemptId: attempt, Id: proto.Int64(0)})

	runAM := func(name string, tok *hadooppb.TokenProto) (string, string, error) {
		creds := &rpc.Credentials{}
		creds.Add(tok.GetService(), tok)
		file := filepath.Join(c.dir, name+".tokens")
		if err := os.WriteFile(file, creds.Marshal(), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(ctx, 55*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, java, distShellArgs(classes, c.scheduler)...)
		cmd.Env = append(os.Environ(), rpc.EnvTokenFile+"="+file, "CONTAINER_ID="+amContainer)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}

	// A token whose password is not the RM's: the SASL exchange fails, and
	// the AM says so and exits non-zero without registering.
	forged := proto.Clone(tok).(*hadooppb.TokenProto)
	forged.Password = []byte("not the RM's password")
	out, stderr, err := runAM("forged", forged)
	if err == nil || !strings.Contains(stderr, "DistShellAM: connecting to the scheduler at "+c.scheduler) || !strings.Contains(stderr, "SaslException") {
		t.Errorf("the AM with a forged token: %v, stderr %q, stdout %q; want a non-zero exit over a SaslException", err, stderr, out)
	}
	if st := c.report(t, id).GetYarnApplicationState(); st != pb.YarnApplicationStateProto_ACCEPTED {
		t.Fatalf("after the forged token the app is %v, want still ACCEPTED", st)
	}

	out, stderr, err = runAM("amrm", tok)
	if err != nil {
		t.Fatalf("the AM: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	rep := c.waitEnded(t, id, 10*time.Second, func() string { return out + stderr })
	if rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_FINISHED ||
		rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED || !rep.GetUnmanagedApplication() {
		t.Fatalf("the app ended %v/%v unmanaged=%v: %s\n%s%s", rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus(),
			rep.GetUnmanagedApplication(), rep.GetDiagnostics(), out, stderr)
	}
	if strings.Contains(stderr, "DistShellAM") {
		t.Errorf("the AM complained:\n%s", stderr)
	}
	c.checkTasks(t, id, amContainer, out)
}
