package nm

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// writeTarGz writes a .tar.gz of the given files (name -> content).
func writeTarGz(t *testing.T, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for _, name := range sortedKeys(files) {
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	gz.Close()
	f.Close()
}

func TestContainerRunsWithYARNsEnvironmentAndLocalisedResources(t *testing.T) {
	confDir := t.TempDir()
	n, stub, cm := startRegistered(t, nil)
	n.cfg.ConfDir = confDir

	src := t.TempDir()
	data := filepath.Join(src, "data.txt")
	os.WriteFile(data, []byte("hello from a file resource\n"), 0o644)
	arch := filepath.Join(src, "bundle.tar.gz")
	writeTarGz(t, arch, map[string]string{"dir/inner.txt": "inside the archive\n", "run.sh": "#!/bin/sh\necho ran\n"})
	st, _ := os.Stat(data)

	cid := containerID(7, 1)
	res := map[string]*pb.LocalResourceProto{
		"data.txt": fileResource(data, pb.LocalResourceTypeProto_FILE),
		"bundle":   fileResource(arch, pb.LocalResourceTypeProto_ARCHIVE),
	}
	res["data.txt"].Timestamp = proto.Int64(st.ModTime().UnixMilli())
	cmd := `echo to-stdout; echo to-stderr >&2; env > <LOG_DIR>/env.txt; cat data.txt > <LOG_DIR>/file.txt; ` +
		`cat bundle/dir/inner.txt > {{LOG_DIR}}/archive.txt; ./bundle/run.sh > <LOG_DIR>/run.txt; pwd -P > <LOG_DIR>/pwd.txt`
	env := map[string]string{"MY_VAR": "hello", "APP_SUBMIT_TIME_ENV": "12345", "REF": "{{CONTAINER_ID}}-x",
		"CLASSPATH": "a<CPS>b", "CONTAINER_ID": "not-allowed"}
	start(t, cm, token(t, n, cid, 256), launch(cmd, env, res))

	cs := stub.completed(t, cid, 10*time.Second)
	if cs.GetExitStatus() != 0 {
		t.Fatalf("exit status %d: %s", cs.GetExitStatus(), cs.GetDiagnostics())
	}
	dir := logDir(n, cid)
	if got := readFile(t, filepath.Join(dir, "stdout")); got != "to-stdout\n" {
		t.Errorf("stdout file %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "stderr")); got != "to-stderr\n" {
		t.Errorf("stderr file %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "file.txt")); got != "hello from a file resource\n" {
		t.Errorf("localised FILE read %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "archive.txt")); got != "inside the archive\n" {
		t.Errorf("localised ARCHIVE read %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "run.txt")); got != "ran\n" {
		t.Errorf("archive's executable ran %q (its mode lost?)", got)
	}

	idStr := ContainerIDString(cid)
	appStr := ApplicationIDString(rpc.AppIDOf(cid))
	appDir := filepath.Join(n.cfg.LocalDirs[0], "usercache", "alice", "appcache", appStr)
	workDir := filepath.Join(appDir, idStr)
	if got := strings.TrimSpace(readFile(t, filepath.Join(dir, "pwd.txt"))); got != workDir {
		t.Errorf("working dir %q, want %q", got, workDir)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(readFile(t, filepath.Join(dir, "env.txt")), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = v
		}
	}
	_, port, _ := strings.Cut(n.NodeID(), ":")
	_, webPort, _ := strings.Cut(n.WebAddr(), ":")
	for k, want := range map[string]string{
		"CONTAINER_ID":        idStr,
		"NM_HOST":             "127.0.0.1",
		"NM_PORT":             port,
		"NM_HTTP_PORT":        webPort, // the port bound, not the configured 0
		"USER":                "alice",
		"LOGNAME":             "alice",
		"HOME":                "/home/",
		"PWD":                 workDir,
		"LOCAL_DIRS":          appDir,
		"LOCAL_USER_DIRS":     filepath.Join(n.cfg.LocalDirs[0], "usercache", "alice"),
		"LOG_DIRS":            dir,
		"HADOOP_CONF_DIR":     confDir,
		"MY_VAR":              "hello",
		"APP_SUBMIT_TIME_ENV": "12345",
		"REF":                 idStr + "-x",
		"CLASSPATH":           "a:b",
	} {
		if vars[k] != want {
			t.Errorf("env %s=%q, want %q", k, vars[k], want)
		}
	}
	if vars["PATH"] == "" {
		t.Error("the container did not inherit PATH")
	}
	// The resources are symlinks into the application's file cache.
	for _, key := range []string{"data.txt", "bundle"} {
		target, err := os.Readlink(filepath.Join(workDir, key))
		if err != nil || !strings.HasPrefix(target, filepath.Join(appDir, "filecache")+"/") {
			t.Errorf("%s links to %q (%v), want the app's filecache", key, target, err)
		}
	}

	// The RM saw the completion once; later heartbeats leave it out, but
	// the AM can still ask.
	stub.mu.Lock()
	seen := len(stub.hbs)
	stub.mu.Unlock()
	stub.waitFor(t, "two more heartbeats", 5*time.Second, func() bool { return len(stub.hbs) >= seen+2 })
	stub.mu.Lock()
	for _, cs := range stub.last().GetContainersStatuses() {
		if ContainerIDString(cs.GetContainerId()) == idStr {
			t.Errorf("a completed container is still reported after the RM saw it: %v", cs)
		}
	}
	stub.mu.Unlock()
	got, err := cm.GetContainerStatuses(context.Background(), &pb.GetContainerStatusesRequestProto{ContainerId: []*pb.ContainerIdProto{cid}})
	if err != nil || len(got.GetStatus()) != 1 || got.GetStatus()[0].GetState() != pb.ContainerStateProto_C_COMPLETE ||
		got.GetStatus()[0].GetExitStatus() != 0 {
		t.Errorf("getContainerStatuses: %v, %v", got, err)
	}

	// A second container of the app reuses the cached resources.
	cid2 := containerID(7, 2)
	start(t, cm, token(t, n, cid2, 256), launch("cat data.txt", nil, map[string]*pb.LocalResourceProto{
		"data.txt": res["data.txt"]}))
	if cs := stub.completed(t, cid2, 10*time.Second); cs.GetExitStatus() != 0 {
		t.Fatalf("second container: %v", cs)
	}
	t1, _ := os.Readlink(filepath.Join(workDir, "data.txt"))
	t2, _ := os.Readlink(filepath.Join(appDir, ContainerIDString(cid2), "data.txt"))
	if t1 != t2 {
		t.Errorf("the same resource was localised twice: %s, %s", t1, t2)
	}
}

func TestFailingCommandReportsItsExitCode(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	cid := containerID(8, 1)
	start(t, cm, token(t, n, cid, 128), launch("echo broken >&2; exit 3", nil, nil))
	cs := stub.completed(t, cid, 10*time.Second)
	if cs.GetExitStatus() != 3 {
		t.Errorf("exit status %d, want 3", cs.GetExitStatus())
	}
	for _, want := range []string{"Exit code: 3", "broken"} {
		if !strings.Contains(cs.GetDiagnostics(), want) {
			t.Errorf("diagnostics lack %q: %q", want, cs.GetDiagnostics())
		}
	}
}

func TestStopKillsTheWholeProcessGroup(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	cid := containerID(9, 1)
	start(t, cm, token(t, n, cid, 128),
		launch("sleep 1000 & echo $! > <LOG_DIR>/child; echo $$ > <LOG_DIR>/leader; wait", nil, nil))
	dir := logDir(n, cid)
	child, _ := strconv.Atoi(strings.TrimSpace(waitFile(t, dir+"/child", 5*time.Second)))
	leader, _ := strconv.Atoi(strings.TrimSpace(waitFile(t, dir+"/leader", 5*time.Second)))
	if !alive(child) || !alive(leader) {
		t.Fatalf("processes %d and %d are not running", leader, child)
	}

	resp, err := cm.StopContainers(context.Background(), &pb.StopContainersRequestProto{ContainerId: []*pb.ContainerIdProto{cid}})
	if err != nil || len(resp.GetSucceededRequests()) != 1 {
		t.Fatalf("stop: %v, %v", resp, err)
	}
	cs := stub.completed(t, cid, 10*time.Second)
	if cs.GetExitStatus() != ExitKilledByAppMaster {
		t.Errorf("exit status %d, want %d", cs.GetExitStatus(), ExitKilledByAppMaster)
	}
	if !strings.Contains(cs.GetDiagnostics(), "Container killed by the ApplicationMaster.") ||
		!strings.Contains(cs.GetDiagnostics(), "Exit code is 143") {
		t.Errorf("diagnostics %q", cs.GetDiagnostics())
	}
	deadline := time.Now().Add(2 * time.Second)
	for (alive(child) || alive(leader)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(child) || alive(leader) {
		t.Errorf("leader %d alive %v, child %d alive %v after the stop", leader, alive(leader), child, alive(child))
	}
	// Stopping it again is fine, as in YARN.
	resp, err = cm.StopContainers(context.Background(), &pb.StopContainersRequestProto{ContainerId: []*pb.ContainerIdProto{cid}})
	if err != nil || len(resp.GetSucceededRequests()) != 1 {
		t.Errorf("second stop: %v, %v", resp, err)
	}
}

func TestSigtermIgnoredGetsSigkillAfterTheDelay(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	cid := containerID(9, 2)
	start(t, cm, token(t, n, cid, 128), launch("trap '' TERM; echo $$ > <LOG_DIR>/leader; while true; do sleep 0.05; done", nil, nil))
	leader, _ := strconv.Atoi(strings.TrimSpace(waitFile(t, logDir(n, cid)+"/leader", 5*time.Second)))
	began := time.Now()
	if _, err := cm.StopContainers(context.Background(), &pb.StopContainersRequestProto{ContainerId: []*pb.ContainerIdProto{cid}}); err != nil {
		t.Fatal(err)
	}
	cs := stub.completed(t, cid, 10*time.Second)
	if took := time.Since(began); took < 200*time.Millisecond {
		t.Errorf("killed after %v, before the 200ms SIGKILL delay", took)
	}
	if cs.GetExitStatus() != ExitKilledByAppMaster || !strings.Contains(cs.GetDiagnostics(), "Exit code is 137") {
		t.Errorf("status %d, diagnostics %q", cs.GetExitStatus(), cs.GetDiagnostics())
	}
	if alive(leader) {
		t.Errorf("process %d survived SIGKILL", leader)
	}
}

func TestRMCleanupKillsContainersAndApplications(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	c1, c2 := containerID(10, 1), containerID(11, 1)
	start(t, cm, token(t, n, c1, 128), launch("exec sleep 30", nil, nil))
	start(t, cm, token(t, n, c2, 128), launch("exec sleep 30", nil, nil))
	appDir := filepath.Join(n.cfg.LocalDirs[0], "usercache", "alice", "appcache", ApplicationIDString(rpc.AppIDOf(c2)))
	stub.waitFor(t, "both running", 5*time.Second, func() bool {
		running := 0
		for _, cs := range stub.last().GetContainersStatuses() {
			if cs.GetState() == pb.ContainerStateProto_C_RUNNING {
				running++
			}
		}
		return running == 2
	})
	if _, err := os.Stat(appDir); err != nil {
		t.Fatalf("app dir: %v", err)
	}
	stub.mu.Lock()
	stub.cleanup = []*pb.ContainerIdProto{c1}
	stub.appsCleanup = []*pb.ApplicationIdProto{rpc.AppIDOf(c2)}
	stub.mu.Unlock()

	if cs := stub.completed(t, c1, 10*time.Second); cs.GetExitStatus() != ExitKilledByResourceManager ||
		!strings.Contains(cs.GetDiagnostics(), "Container Killed by ResourceManager") {
		t.Errorf("containers_to_cleanup: %v", cs)
	}
	if cs := stub.completed(t, c2, 10*time.Second); cs.GetExitStatus() != ExitKilledAfterAppCompletion ||
		!strings.Contains(cs.GetDiagnostics(), "application-finish") {
		t.Errorf("applications_to_cleanup: %v", cs)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(appDir); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the finished application's dir %s is still there", appDir)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(logDir(n, c2)); err != nil {
		t.Errorf("the application's logs went with it: %v", err)
	}
}

func TestMemoryOverTheLimitIsKilled(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	cid := containerID(12, 1)
	// About 200 MB resident, touched, against a 64 MB limit.
	start(t, cm, token(t, n, cid, 64), launch(`python3 -c "import time; b = b'x' * (200 * 1024 * 1024); time.sleep(60)"`, nil, nil))
	cs := stub.completed(t, cid, 20*time.Second)
	if cs.GetExitStatus() != ExitKilledExceededPmem {
		t.Fatalf("exit status %d, want %d: %s", cs.GetExitStatus(), ExitKilledExceededPmem, cs.GetDiagnostics())
	}
	d := cs.GetDiagnostics()
	for _, want := range []string{"Container [pid=", ",containerID=" + ContainerIDString(cid) + "] is running beyond physical memory limits. Current usage: ",
		" of 64 MB physical memory used. Killing container.", "Dump of the process-tree for " + ContainerIDString(cid), "python3"} {
		if !strings.Contains(d, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, d)
		}
	}
}

func TestMemoryCheckCanBeTurnedOff(t *testing.T) {
	n, stub, cm := startRegistered(t, map[string]string{"yarn.nodemanager.pmem-check-enabled": "false"})
	cid := containerID(12, 2)
	start(t, cm, token(t, n, cid, 64), launch(`python3 -c "import time; b = b'x' * (120 * 1024 * 1024); time.sleep(0.5)"`, nil, nil))
	if cs := stub.completed(t, cid, 20*time.Second); cs.GetExitStatus() != 0 {
		t.Errorf("with the pmem check off: %v", cs)
	}
}
