package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/loomrm/loom/internal/browser"
)

// web is a REST client of one RM's web port.
type web struct {
	t    *testing.T
	base string
}

type webReply struct {
	status int
	header http.Header
	body   []byte
}

func (w web) do(method, path, body string, header ...string) webReply {
	w.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, w.base+path, r)
	if err != nil {
		w.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return webReply{resp.StatusCode, resp.Header, b}
}

// json decodes a reply that must have the given status and be JSON.
func (w web) json(method, path, body string, status int, v any, header ...string) {
	w.t.Helper()
	rep := w.do(method, path, body, header...)
	if rep.status != status {
		w.t.Fatalf("%s %s: %d, want %d: %s", method, path, rep.status, status, rep.body)
	}
	if ct := rep.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		w.t.Errorf("%s %s: Content-Type %q, want JSON", method, path, ct)
	}
	if v != nil {
		if err := json.Unmarshal(rep.body, v); err != nil {
			w.t.Fatalf("%s %s: %v: %s", method, path, err, rep.body)
		}
	}
}

// remoteException checks YARN's error shape.
func (w web) remoteException(method, path, body string, status int, exception string, header ...string) string {
	w.t.Helper()
	var e struct {
		RemoteException struct{ Exception, Message, JavaClassName string }
	}
	w.json(method, path, body, status, &e, header...)
	re := e.RemoteException
	if re.Exception != exception || re.Message == "" || !strings.HasSuffix(re.JavaClassName, "."+exception) {
		w.t.Errorf("%s %s: RemoteException %+v, want %s with a message", method, path, re, exception)
	}
	return re.Message
}

func (w web) waitState(id, want string) {
	w.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var s struct{ State string }
		w.json("GET", "/ws/v1/cluster/apps/"+id+"/state", "", 200, &s)
		if s.State == want {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%s is %s after 60 s, want %s", id, s.State, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metric reads one sample from /metrics.
func (w web) metric(name string) float64 {
	w.t.Helper()
	rep := w.do("GET", "/metrics", "")
	for _, line := range strings.Split(string(rep.body), "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				w.t.Fatalf("/metrics %s: %v", name, err)
			}
			return v
		}
	}
	w.t.Fatalf("/metrics has no %q:\n%s", name, rep.body)
	return 0
}

// newApp submits over REST only, as a REST-only client does: new-application,
// then the hyphenated submission body. It returns the app id.
func (w web) newApp(name, command string) string {
	w.t.Helper()
	var na struct {
		ID string `json:"application-id"`
	}
	w.json("POST", "/ws/v1/cluster/apps/new-application", "", 200, &na)
	body := fmt.Sprintf(`{"application-id": %q, "application-name": %q, "queue": "default", "application-type": "LOOM-DAG",
	  "am-container-spec": {"commands": {"command": %q}},
	  "resource": {"memory": 256, "vCores": 1}, "max-app-attempts": 1}`, na.ID, name, command)
	rep := w.do("POST", "/ws/v1/cluster/apps", body)
	if rep.status != http.StatusAccepted {
		w.t.Fatalf("POST apps: %d: %s", rep.status, rep.body)
	}
	return na.ID
}

// TestRESTAgainstARunningRM: every YARN and Loom REST resource, its JSON
// shape and its errors, against a real RM with real NMs; a job submitted
// over REST only runs to the end; kill over REST answers 202 then 200; and
// P(Altruism) changes over REST only with the admin credential, and then
// changes the next decisions. REST writes are turned on here
// (loom.webapp.rest-write.enabled); TestRESTWritesOffByDefault checks
// they are off without it.
func TestRESTAgainstARunningRM(t *testing.T) {
	c := startCluster(t, 2, "-D", "loom.admin.secret=s3cret", "-D", "yarn.scheduler.minimum-allocation-mb=64",
		"-D", "loom.webapp.rest-write.enabled=true")
	w := web{t, "http://" + c.web}

	// The cluster.
	var info struct {
		ClusterInfo struct {
			ID        int64
			StartedOn int64
			State     string
		}
	}
	w.json("GET", "/ws/v1/cluster", "", 200, &info)
	if info.ClusterInfo.State != "STARTED" || info.ClusterInfo.ID == 0 || info.ClusterInfo.StartedOn == 0 {
		t.Errorf("cluster info %+v", info)
	}
	w.json("GET", "/ws/v1/cluster/info", "", 200, &info)

	// A DAG job over REST only: the AM runs TPC-H q6 from the catalogue.
	dag := w.newApp("rest-q6", loomBin+" am --catalogue tpch:50g --name tpch-q6-50g --time-scale 0.0005 --task-kind noop")
	w.waitState(dag, "FINISHED")
	var app struct {
		App struct {
			ID, User, Name, Queue, State, FinalStatus, ApplicationType string
			Progress                                                   float64
			StartedTime, FinishedTime, ElapsedTime                     int64
		}
	}
	w.json("GET", "/ws/v1/cluster/apps/"+dag, "", 200, &app)
	a := app.App
	if a.ID != dag || a.Name != "rest-q6" || a.Queue != "default" || a.State != "FINISHED" || a.FinalStatus != "SUCCEEDED" ||
		a.ApplicationType != "LOOM-DAG" || a.User != "dr.who" || a.FinishedTime < a.StartedTime || a.ElapsedTime <= 0 {
		t.Errorf("app %+v", a)
	}
	var attempts struct {
		AppAttempts struct {
			AppAttempt []struct {
				ID          json.Number
				ContainerID string
				NodeID      string
			}
		}
	}
	w.json("GET", "/ws/v1/cluster/apps/"+dag+"/appattempts", "", 200, &attempts)
	if n := len(attempts.AppAttempts.AppAttempt); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
	// Loom's views of it: the DAG and every task.
	var d struct {
		Stages []struct {
			Name             string
			Tasks, Succeeded int
			State            string
		}
	}
	w.json("GET", "/ws/v1/loom/apps/"+dag+"/dag", "", 200, &d)
	if len(d.Stages) != 2 {
		t.Errorf("q6's DAG has %d stages, want 2 (tpch-q6 in the catalogue)", len(d.Stages))
	}
	total := 0
	for _, s := range d.Stages {
		total += s.Tasks
		if s.State != "SUCCEEDED" || s.Succeeded != s.Tasks {
			t.Errorf("stage %+v", s)
		}
	}
	var tasks struct {
		App   string
		Tasks []struct{ Stage, Node, Kind, State string }
	}
	w.json("GET", "/ws/v1/loom/apps/"+dag+"/tasks", "", 200, &tasks)
	if tasks.App != dag || len(tasks.Tasks) < total {
		t.Errorf("%d task attempts of %q, want at least %d of %s", len(tasks.Tasks), tasks.App, total, dag)
	}
	for _, tk := range tasks.Tasks {
		if tk.Node == "" || tk.State != "SUCCEEDED" || tk.Kind != "DEFAULT" && tk.Kind != "ALTRUISTIC" {
			t.Errorf("task %+v", tk)
			break
		}
	}

	// Filters, metrics, nodes, scheduler.
	var apps struct {
		Apps *struct {
			App []struct{ ID string }
		}
	}
	w.json("GET", "/ws/v1/cluster/apps?states=FINISHED&user=dr.who&applicationTypes=loom-dag", "", 200, &apps)
	if apps.Apps == nil || len(apps.Apps.App) != 1 || apps.Apps.App[0].ID != dag {
		t.Errorf("apps?states=FINISHED: %+v", apps)
	}
	apps.Apps = nil
	w.json("GET", "/ws/v1/cluster/apps?states=RUNNING", "", 200, &apps)
	if apps.Apps != nil {
		t.Errorf("apps?states=RUNNING lists %+v, want null", apps.Apps)
	}
	w.remoteException("GET", "/ws/v1/cluster/apps?states=BOGUS", "", 400, "BadRequestException")
	w.remoteException("GET", "/ws/v1/cluster/apps?limit=-1", "", 400, "BadRequestException")
	var m struct {
		ClusterMetrics struct {
			AppsSubmitted, AppsCompleted, TotalMB, TotalVirtualCores, ActiveNodes int
		}
	}
	w.json("GET", "/ws/v1/cluster/metrics", "", 200, &m)
	if cm := m.ClusterMetrics; cm.AppsSubmitted != 1 || cm.AppsCompleted != 1 || cm.TotalMB != 2*4096 || cm.TotalVirtualCores != 2*4 || cm.ActiveNodes != 2 {
		t.Errorf("cluster metrics %+v", cm)
	}
	var nodes struct {
		Nodes struct {
			Node []struct{ ID, State string }
		}
	}
	w.json("GET", "/ws/v1/cluster/nodes", "", 200, &nodes)
	if len(nodes.Nodes.Node) != 2 || nodes.Nodes.Node[0].State != "RUNNING" {
		t.Fatalf("nodes %+v", nodes)
	}
	var node struct{ Node struct{ ID string } }
	w.json("GET", "/ws/v1/cluster/nodes/"+nodes.Nodes.Node[0].ID, "", 200, &node)
	if node.Node.ID != nodes.Nodes.Node[0].ID {
		t.Errorf("node %+v", node)
	}
	w.remoteException("GET", "/ws/v1/cluster/nodes/nowhere:1", "", 404, "NotFoundException")
	var sched struct {
		Scheduler struct {
			SchedulerInfo struct{ Type string }
		}
	}
	w.json("GET", "/ws/v1/cluster/scheduler", "", 200, &sched)
	// No yarn.resourcemanager.scheduler.class: YARN's default, the
	// CapacityScheduler's layout.
	if sched.Scheduler.SchedulerInfo.Type != "capacityScheduler" {
		t.Errorf("scheduler %+v", sched)
	}

	// YARN's conventions: no Accept header gets JSON; errors are
	// RemoteExceptions; an unknown app is 404.
	w.remoteException("GET", "/ws/v1/cluster/apps/application_1_0099", "", 404, "NotFoundException")
	w.remoteException("GET", "/ws/v1/cluster/apps/not-an-id", "", 400, "BadRequestException") // as YARN: an unparsable id
	w.remoteException("GET", "/ws/v1/loom/apps/application_1_0099/dag", "", 404, "NotFoundException")

	// Kill over REST: 202, then 200 KILLED; any other target is 400.
	sleeper := w.newApp("sleeper", "sleep 60")
	w.waitState(sleeper, "ACCEPTED") // its AM never registers
	// Its timeout and priority over REST, as YARN's PUT .../timeout and
	// .../priority; a move is refused with the RPC handler's words.
	expiry := time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000-0700")
	var tmo struct {
		Timeout struct{ Type, ExpiryTime string }
	}
	w.json("PUT", "/ws/v1/cluster/apps/"+sleeper+"/timeout", `{"timeout":{"type":"LIFETIME","expiryTime":"`+expiry+`"}}`, 200, &tmo)
	if tmo.Timeout.Type != "LIFETIME" || tmo.Timeout.ExpiryTime == "UNLIMITED" || tmo.Timeout.ExpiryTime == "" {
		t.Errorf("PUT timeout: %+v", tmo)
	}
	var pri struct{ Priority int }
	w.json("PUT", "/ws/v1/cluster/apps/"+sleeper+"/priority", `{"priority":0}`, 200, &pri)
	if msg := w.do("PUT", "/ws/v1/cluster/apps/"+sleeper+"/queue", `{"queue":"no-such-queue"}`); msg.status < 400 ||
		!strings.Contains(string(msg.body), "RemoteException") {
		t.Errorf("PUT queue: %d %s, want YARN's refusal", msg.status, msg.body)
	}
	w.remoteException("PUT", "/ws/v1/cluster/apps/"+sleeper+"/priority", `{}`, 400, "BadRequestException")
	w.remoteException("PUT", "/ws/v1/cluster/apps/"+sleeper+"/state", `{"state":"RUNNING"}`, 400, "BadRequestException")
	kill := w.do("PUT", "/ws/v1/cluster/apps/"+sleeper+"/state", `{"state":"KILLED"}`)
	if kill.status != http.StatusAccepted || kill.header.Get("Location") == "" {
		t.Errorf("kill: %d (Location %q): %s; want 202 with a Location", kill.status, kill.header.Get("Location"), kill.body)
	}
	var st struct{ State string }
	w.json("PUT", "/ws/v1/cluster/apps/"+sleeper+"/state", `{"state":"KILLED"}`, 200, &st)
	if st.State != "KILLED" {
		t.Errorf("the second kill says %q, want KILLED", st.State)
	}

	// Loom's scheduler view, timeline and metrics.
	var ls struct {
		Policy    string
		PAltruism float64
	}
	w.json("GET", "/ws/v1/loom/scheduler", "", 200, &ls)
	if ls.Policy != "carbyne" || ls.PAltruism != 1 {
		t.Errorf("loom scheduler %+v", ls)
	}
	var tl struct {
		Samples []struct {
			UnixMs      int64
			Utilisation map[string]float64
			Jain        float64
		}
	}
	for deadline := time.Now().Add(3 * time.Second); len(tl.Samples) == 0 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond) // sampled once a second
		w.json("GET", "/ws/v1/loom/timeline", "", 200, &tl)
	}
	if len(tl.Samples) == 0 || tl.Samples[0].Jain <= 0 || tl.Samples[0].Jain > 1 || tl.Samples[0].UnixMs == 0 {
		t.Errorf("timeline: %+v", tl)
	}
	var atl struct{ Samples []json.RawMessage }
	w.json("GET", "/ws/v1/loom/apps/"+dag+"/timeline", "", 200, &atl)
	for _, series := range []string{"loom_p_altruism", `loom_apps{state="FINISHED"}`, `loom_pending_asks{kind="ALTRUISTIC"}`,
		"loom_heartbeat_decision_seconds_count", `loom_leftover{resource="memory-mb"}`, "loom_allocations_per_second"} {
		w.metric(series)
	}
	if n := w.metric(`loom_allocations_total{kind="DEFAULT"}`) + w.metric(`loom_allocations_total{kind="ALTRUISTIC"}`); n < float64(total) {
		t.Errorf("%v allocations, want at least the %d tasks", n, total)
	}

	// P(Altruism): refused without the credential, or with a wrong one.
	w.remoteException("PUT", "/ws/v1/loom/scheduler/altruism", `{"p":0}`, 403, "ForbiddenException")
	w.remoteException("PUT", "/ws/v1/loom/scheduler/altruism", `{"p":0}`, 403, "ForbiddenException", "Authorization", "Bearer guess")
	if p := w.metric("loom_p_altruism"); p != 1 {
		t.Errorf("P(Altruism) is %v after refused changes, want 1", p)
	}
	w.json("PUT", "/ws/v1/loom/scheduler/altruism?user.name=ops", `{"p":0}`, 200, nil, "Authorization", "Bearer s3cret")
	if p := w.metric("loom_p_altruism"); p != 0 {
		t.Errorf("P(Altruism) is %v, want 0", p)
	}
	var alt struct {
		P       float64
		Changes []struct {
			P   float64
			Who string
		}
	}
	w.json("GET", "/ws/v1/loom/scheduler/altruism", "", 200, &alt)
	if n := len(alt.Changes); alt.P != 0 || n != 2 || !strings.Contains(alt.Changes[n-1].Who, "ops") {
		t.Errorf("altruism history %+v, want the configured 1 then 0 by ops", alt)
	}
	// The next job decides with P(Altruism) 0: it asks for nothing
	// ALTRUISTIC, and every task runs DEFAULT.
	before := w.metric(`loom_asks_total{kind="ALTRUISTIC"}`)
	if before == 0 {
		t.Errorf("the first job, under P(Altruism) 1, asked for nothing ALTRUISTIC: the check below would prove nothing")
	}
	next := w.newApp("after-tuning", loomBin+" am --catalogue tpch:50g --name tpch-q6-50g --time-scale 0.0005 --task-kind noop")
	w.waitState(next, "FINISHED")
	if after := w.metric(`loom_asks_total{kind="ALTRUISTIC"}`); after != before {
		t.Errorf("ALTRUISTIC asks went from %v to %v with P(Altruism) 0", before, after)
	}
	b, err := os.ReadFile(filepath.Join(c.history, next+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"kind": "ALTRUISTIC"`)) {
		t.Errorf("a task of the job after P(Altruism) 0 ran ALTRUISTIC")
	}
}

// TestWebUIInChromium: a mini cluster runs two TPC-H jobs; headless
// Chromium opens its web UI and finds the jobs in the apps table, a DAG
// drawn with one node per stage, and a Gantt of tasks. The screenshots
// are left in testdata/ as the test's artefacts.
func TestWebUIInChromium(t *testing.T) {
	path, err := browser.Path()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mini := exec.Command(loomBin, "mini", "--json", "--keep-running", "--dir", dir, "--nodes", "2", "--jobs", "2",
		"--catalogue", "tpch:50g", "--arrivals", "batch", "--time-scale", "0.002")
	mini.Stderr = os.Stderr
	out, err := mini.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := mini.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mini.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- mini.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			mini.Process.Kill()
			t.Error("loom mini did not stop within 20 s of Ctrl-C")
		}
	})
	var sum struct {
		WebUI string `json:"web_ui"`
		Jobs  []struct{ App, Name string }
	}
	if err := json.NewDecoder(bufio.NewReader(out)).Decode(&sum); err != nil {
		t.Fatalf("loom mini printed no summary: %v", err)
	}
	if len(sum.Jobs) != 2 {
		t.Fatalf("summary: %+v", sum)
	}

	opts := browser.Options(path, t.TempDir())
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()
	os.MkdirAll("testdata", 0o755)
	shot := func(name string) {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		os.WriteFile(filepath.Join("testdata", name), png, 0o644)
	}
	count := func(what, js string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](js))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return n
	}

	// The apps table lists both jobs.
	if err := chromedp.Do(ctx, chromedp.Navigate(sum.WebUI+"#/apps"),
		chromedp.WaitVisible(chromedp.CSS(`#apps tr[data-app-id="`+sum.Jobs[1].App+`"]`))); err != nil {
		t.Fatalf("the apps table: %v", err)
	}
	for _, j := range sum.Jobs {
		if n := count("rows", `document.querySelectorAll('#apps tr[data-app-id="`+j.App+`"]').length`); n != 1 {
			t.Errorf("the apps table has %d rows for %s (%s), want 1", n, j.App, j.Name)
		}
	}
	shot("webui-apps.png")

	// An app's page: one DAG node per stage, and its tasks in the Gantt.
	app := sum.Jobs[0].App
	hist, err := os.ReadFile(filepath.Join(dir, "history", app+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Stages []json.RawMessage
		Tasks  []json.RawMessage
	}
	json.Unmarshal(hist, &h)
	if err := chromedp.Do(ctx, chromedp.Navigate(sum.WebUI+"#/apps/"+app),
		chromedp.WaitVisible(chromedp.CSS(`#dag g.stage`)), chromedp.WaitVisible(chromedp.CSS(`#gantt rect.task`))); err != nil {
		t.Fatalf("the app page: %v", err)
	}
	if n := count("stages", `document.querySelectorAll('#dag g.stage').length`); n != len(h.Stages) {
		t.Errorf("the DAG has %d stage nodes, want %d (one per stage)", n, len(h.Stages))
	}
	if n := count("tasks", `document.querySelectorAll('#gantt rect.task').length`); n != len(h.Tasks) {
		t.Errorf("the Gantt has %d tasks, want the history's %d", n, len(h.Tasks))
	}
	shot("webui-app.png")
}
