package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/fairness"
	chromium "github.com/loomrm/loom/internal/browser"
	"github.com/loomrm/loom/workload"
)

// browser drives one headless Chromium tab and fails the test on any
// error, a script's own included.
type browser struct {
	t        *testing.T
	ctx      context.Context
	mu       sync.Mutex
	jsErrors []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := chromium.Path()
	if err != nil {
		t.Fatal(err)
	}
	opts := chromium.Options(path, t.TempDir())
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			// The browser logs every 4xx the UI expects (an app without
			// history, a refused credential); only the page's own errors count.
			if m.IsException() || m.Type == chromedp.ConsoleError && m.Source == "" {
				b.mu.Lock()
				b.jsErrors = append(b.jsErrors, m.String())
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.jsErrors) > 0 {
			t.Errorf("script errors:\n%s", strings.Join(b.jsErrors, "\n"))
		}
	})
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

func (b *browser) eval(what, js string, v any) {
	b.t.Helper()
	res, err := chromedp.Run(b.ctx, chromedp.Evaluate[json.RawMessage](js))
	if err == nil {
		err = json.Unmarshal(res, v)
	}
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

func (b *browser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join("testdata", name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// text is the visible text of the first element sel matches, read in one
// script: the pages redraw parts of themselves every few seconds, and a
// node looked up first and read after may be gone by then ("No node with
// given id found", seen in CI).
func (b *browser) text(sel string) string {
	b.t.Helper()
	var v string
	b.eval("text of "+sel, fmt.Sprintf(`(() => {
		const e = document.querySelector(%q);
		if (!e) throw new Error("nothing matches " + %q);
		return e.innerText;
	})()`, sel, sel), &v)
	return v
}

func (b *browser) count(sel string) int {
	b.t.Helper()
	var n int
	b.eval("count "+sel, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel), &n)
	return n
}

// waitFor polls a script until it is true.
func waitFor(what, js string) chromedp.Action[chromedp.Void] {
	poll := chromedp.Poll[bool](js, chromedp.WithPollingTimeout(5*time.Second))
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := poll(ctx, tg)
		if err != nil {
			err = fmt.Errorf("waiting for %s: %w", what, err)
		}
		return chromedp.Void{}, err
	}
}

// click clicks the element sel finds, as a user does. The apps page
// polls and re-renders its table every few seconds, so the node a click
// found can be replaced before the mouse event lands ("Could not find node
// with given id"): the click is then made again on the new node, up to
// three times.
func click(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		var err error
		for range 3 {
			if _, err = chromedp.Click(chromedp.CSS(sel))(ctx, tg); err == nil || !strings.Contains(err.Error(), "Could not find node with given id") {
				break
			}
		}
		return chromedp.Void{}, err
	}
}

// change sets a control's value and tells the page, as a user's choice
// does.
func change(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.SetValue(chromedp.CSS(sel), value), func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q).dispatchEvent(new Event('change'))`, sel))(ctx, tg)
		return chromedp.Void{}, err
	})
}

// TestUI serves the UI on the fake cluster and drives it in headless
// Chromium: the apps table lists the apps and sorts and filters them, the
// DAG has one stage group per stage, the Gantt one bar per task attempt,
// and P(Altruism) changes only after a confirmation. Screenshots land in
// testdata/ to be looked at.
func TestUI(t *testing.T) {
	f := newFakeBackend()
	two := &workload.Job{Name: "j", Stages: []workload.Stage{{Name: "s", Tasks: 2, Demand: fairness.New(1024, 1), Duration: time.Second}}}
	etlJob := two.Clone()
	etlJob.Name, etlJob.Queue = "k", "etl"
	f.recorded = []*workload.Job{two, etlJob}
	srv := httptest.NewServer(newTestHandler(f, adminKey, nil))
	defer srv.Close()
	b := newBrowser(t)
	do, shot, text, count := b.do, b.shot, b.text, b.count
	rowIDs := func() []string {
		t.Helper()
		var ids []string
		b.eval("row ids", `[...document.querySelectorAll('#apps tbody tr[data-app-id]')].map(r => r.dataset.appId.slice(-4))`, &ids)
		return ids
	}

	// Apps: newest first, then sorted by name, then only the running.
	do("apps page", chromedp.Navigate(srv.URL+"/#/apps"), chromedp.WaitVisible(chromedp.CSS(`#apps tbody tr[data-app-id]`)))
	if got := rowIDs(); !slices.Equal(got, []string{"0005", "0004", "0003", "0002", "0001"}) {
		t.Errorf("apps %v, want all five newest first", got)
	}
	shot("ui-apps.png")
	do("sort by name", click(`#apps th[data-key="name"] button`))
	if got := rowIDs(); !slices.Equal(got, []string{"0005", "0002", "0003", "0004", "0001"}) {
		t.Errorf("apps by name %v", got)
	}
	do("sort by name, descending", click(`#apps th[data-key="name"] button`))
	if got := rowIDs(); !slices.Equal(got, []string{"0001", "0004", "0003", "0002", "0005"}) {
		t.Errorf("apps by name, descending %v", got)
	}
	do("filter running", change("#state-filter", "RUNNING"),
		waitFor("one running app", `document.querySelectorAll('#apps tbody tr[data-app-id]').length === 1`))
	if got := rowIDs(); !slices.Equal(got, []string{"0001"}) {
		t.Errorf("running apps %v", got)
	}
	do("all states again", change("#state-filter", ""),
		waitFor("five apps", `document.querySelectorAll('#apps tbody tr[data-app-id]').length === 5`))

	// The DAG app: four stages, eight task attempts.
	do("app page", click(`#apps tr[data-app-id="application_1700000000000_0001"] a`),
		chromedp.WaitVisible(chromedp.CSS(`#dag g.stage`)), chromedp.WaitVisible(chromedp.CSS(`#gantt rect.task`)),
		chromedp.WaitVisible(chromedp.CSS(`#share`)))
	if n := count(`#dag g.stage`); n != 4 {
		t.Errorf("%d stage groups in the DAG, want 4", n)
	}
	var states map[string]string
	b.eval("stage states", `Object.fromEntries([...document.querySelectorAll('#dag g.stage')].map(g => [g.dataset.stage, g.dataset.state]))`, &states)
	if want := map[string]string{"scan": "SUCCEEDED", "dim": "SUCCEEDED", "join": "RUNNING", "agg": "WAITING"}; fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("stage states %v, want %v", states, want)
	}
	if n := count(`#dag path.edge`); n != 3 {
		t.Errorf("%d edges, want 3", n)
	}
	if n, d, a := count(`#gantt rect.task`), count(`#gantt rect.task.default`), count(`#gantt rect.task.altruistic`); n != 8 || d != 4 || a != 4 {
		t.Errorf("Gantt: %d tasks (%d default, %d altruistic), want 8 (4, 4)", n, d, a)
	}
	shot("ui-app.png")

	// A stock YARN app: said plainly, nothing drawn.
	do("stock app", chromedp.Navigate(srv.URL+"/#/apps/application_1700000000000_0003"), chromedp.WaitVisible(chromedp.CSS(`#no-history`)))
	if n := count(`#dag, #gantt`); n != 0 {
		t.Errorf("a stock YARN app drew %d DAG or Gantt charts", n)
	}
	shot("ui-stock-app.png")

	do("cluster page", chromedp.Navigate(srv.URL+"/#/cluster"), chromedp.WaitVisible(chromedp.CSS(`#fairness`)),
		chromedp.WaitVisible(chromedp.CSS(`#nodes tbody tr`)))
	if n := count(`#nodes tbody tr`); n != 3 {
		t.Errorf("%d nodes, want 3", n)
	}
	// Each node's label: nm1 is in gpu, the others in the default one.
	if l := text(`#nodes tbody tr[data-node-id="nm1:45454"] td.label`); l != "gpu" {
		t.Errorf("nm1's node label %q, want gpu", l)
	}
	if l := text(`#nodes tbody tr[data-node-id="nm2:45454"] td.label`); l != "default" {
		t.Errorf("nm2's node label %q, want default", l)
	}
	// What altruism does: the fake's last sample (i = 29) yields 30% and
	// holds 20% from the leftover, 29 % 7 = 1 ALTRUISTIC container a
	// second, 29 % 3 = 2 apps behind their share; two lines over time.
	do("altruism panel", chromedp.WaitVisible(chromedp.CSS(`#altruism-live`)))
	if msg := text(`#altruism-now`); !strings.Contains(msg, "30.0%") || !strings.Contains(msg, "20.0%") ||
		!strings.Contains(msg, "1/s") || !strings.Contains(msg, "apps behind their share\n2") {
		t.Errorf("altruism now: %q", msg)
	}
	if n := count(`#altruism-live path`); n != 2 {
		t.Errorf("%d lines in the altruism chart, want 2", n)
	}
	// The first promise: app 1 was promised 20 s and its finish is now
	// 62 s, past the line at 50 s: 3.1x, late.
	if cell := text(`#shares tr[data-app-id="application_1700000000000_0001"] td.promise`); cell != "3.1x, late" {
		t.Errorf("app 1's first promise cell %q, want \"3.1x, late\"", cell)
	}
	shot("ui-cluster.png")

	// Operations: a wrong credential is refused, the right one applies
	// after the confirmation.
	do("ops page", chromedp.Navigate(srv.URL+"/#/ops"), chromedp.WaitVisible(chromedp.CSS(`#p-now`)))
	// The page says whether REST writes are on, and how to turn them on.
	if msg := text(`#rest-writes`); !strings.Contains(msg, "off") || !strings.Contains(msg, "loom.webapp.rest-write.enabled=true") {
		t.Errorf("the REST writes card: %q", msg)
	}
	// And whether AMs plan against their projected share.
	if msg := text(`#share-growth`); !strings.Contains(msg, "on") || !strings.Contains(msg, "yield more now") {
		t.Errorf("the share growth card: %q", msg)
	}
	// The what-if: the recorded jobs replayed at each P(Altruism) and the
	// current 0.8 (fakeWhatIf's formulas), drawn against Jain's index and
	// against the slowed jobs, the current setting ringed.
	do("what-if", waitFor("the what-if table", `document.querySelectorAll('#whatif-table tbody tr').length === 6`),
		chromedp.WaitVisible(chromedp.CSS(`#whatif-jain`)), chromedp.WaitVisible(chromedp.CSS(`#whatif-slowed`)))
	if n := count(`#whatif-jain g.point`); n != 6 {
		t.Errorf("%d points against Jain's index, want 6", n)
	}
	var ringed []string
	b.eval("ringed points", `[...document.querySelectorAll('svg g.point.current text')].map(t => t.textContent)`, &ringed)
	if !slices.Equal(ringed, []string{"P=0.8 (now)", "P=0.8 (now)"}) {
		t.Errorf("the current setting, ringed in both charts: %q", ringed)
	}
	if got := text(`#whatif-table tr.current`); !strings.Contains(got, "0.8") || !strings.Contains(got, "44s") || !strings.Contains(got, "0.870") {
		t.Errorf("the current row: %q", got)
	}
	if msg := text(`#whatif-state`); !strings.Contains(msg, "last 2 finished jobs") || !strings.Contains(msg, "2 nodes") {
		t.Errorf("what-if caption: %q", msg)
	}
	// The same view for one queue's override, its jobs alone judged.
	do("etl's what-if", change("#whatif-queue", "etl"),
		waitFor("etl's view", `(document.querySelector('#whatif-state') || {textContent: ''}).textContent.includes("Queue etl's override")`),
		waitFor("etl's rows", `document.querySelectorAll('#whatif-table tbody tr').length === 6`))
	do("back to the cluster", change("#whatif-queue", ""),
		waitFor("the cluster's view", `(document.querySelector('#whatif-state') || {textContent: ''}).textContent.startsWith("The last")`))
	do("wrong secret", chromedp.SetValue(chromedp.CSS(`#p`), "0.3"), chromedp.SetValue(chromedp.CSS(`#secret`), "guess"),
		chromedp.Click(chromedp.CSS(`#review`)), chromedp.WaitVisible(chromedp.CSS(`#confirm-change`)),
		chromedp.Click(chromedp.CSS(`#confirm-change`)),
		waitFor("an error", `document.querySelector('#result').classList.contains('error')`))
	if msg := text(`#result`); !strings.Contains(msg, "the admin credential is wrong") {
		t.Errorf("wrong secret: %q", msg)
	}
	if got := f.Scheduler().PAltruism; got != 0.8 {
		t.Errorf("P(Altruism) %v after a refused change", got)
	}
	do("right secret", chromedp.SetValue(chromedp.CSS(`#secret`), adminKey), chromedp.SetValue(chromedp.CSS(`#who`), "ops-oncall"),
		chromedp.Click(chromedp.CSS(`#review`)), chromedp.WaitVisible(chromedp.CSS(`#confirm-change`)))
	if got := f.Scheduler().PAltruism; got != 0.8 {
		t.Errorf("P(Altruism) changed before the confirmation: %v", got)
	}
	// 0.3 was not replayed: the nearest, 0.25, against the current 0.8:
	// 55 s against 44 s, Jain 0.925 against 0.870, 1.0% slowed against
	// 3.2%.
	if msg := text(`#expected`); !strings.Contains(msg, "nearest setting replayed: 0.25") ||
		!strings.Contains(msg, "average JCT 55s (now 44s)") || !strings.Contains(msg, "0.925 (now 0.870)") ||
		!strings.Contains(msg, "1.0% of jobs slowed more than 20% against P(Altruism) 0 (now 3.2%)") {
		t.Errorf("expected change: %q", msg)
	}
	shot("ui-ops-confirm.png")
	do("confirm", chromedp.Click(chromedp.CSS(`#confirm-change`)),
		waitFor("the result", `document.querySelector('#result').classList.contains('ok')`))
	if msg := text(`#result`); !strings.Contains(msg, "P(Altruism) is now 0.3") || f.Scheduler().PAltruism != 0.3 {
		t.Errorf("after the change: %q, P %v", msg, f.Scheduler().PAltruism)
	}
	if n := count(`#altruism-history tbody tr`); n != 2 {
		t.Errorf("%d changes listed, want 2", n)
	}
	// After the change, what the apps measured: the fake's one succeeded
	// app (30 s) finished before it, none since.
	do("measured", chromedp.WaitVisible(chromedp.CSS(`#measured`)))
	if msg := text(`#measured`); !strings.Contains(msg, "from 0.8 to 0.3") || !strings.Contains(msg, "no app yet finished") ||
		!strings.Contains(msg, "before it, 1 app, average 30s") {
		t.Errorf("measured: %q", msg)
	}
	if ch := f.AltruismChanges(); ch[len(ch)-1].Who != "ops-oncall from 127.0.0.1" {
		t.Errorf("change by %q", ch[len(ch)-1].Who)
	}
	// A queue's override: chosen in the form, confirmed, listed.
	do("etl override", change("#queue", "etl"), chromedp.SetValue(chromedp.CSS(`#p`), "0.6"),
		chromedp.Click(chromedp.CSS(`#review`)), chromedp.WaitVisible(chromedp.CSS(`#confirm-change`)))
	if msg := text(`#confirm`); !strings.Contains(msg, "Set queue etl's P(Altruism) from 0.3 to 0.6?") ||
		!strings.Contains(msg, "Choose queue etl's override") {
		t.Errorf("confirmation for etl: %q", msg)
	}
	do("confirm etl", chromedp.Click(chromedp.CSS(`#confirm-change`)),
		waitFor("the result", `document.querySelector('#result').textContent.includes("etl")`),
		waitFor("the override listed", `document.querySelector('#queue-overrides').textContent.includes("etl: 0.6")`))
	if msg := text(`#result`); !strings.Contains(msg, "Queue etl's P(Altruism) is now 0.6") {
		t.Errorf("after etl's change: %q", msg)
	}
	if got := f.Scheduler().PAltruism; got != 0.3 {
		t.Errorf("the cluster's P(Altruism) moved to %v with a queue's override", got)
	}
	if first := text(`#altruism-history tbody tr`); !strings.Contains(first, "etl") || !strings.Contains(first, "0.6") {
		t.Errorf("newest change listed: %q", first)
	}
	shot("ui-ops.png")
}

// TestUILargeDAG draws TPC-DS q88, the widest DAG of the catalogue, as a
// job part-way through: one stage group per stage, one edge per
// dependency.
func TestUILargeDAG(t *testing.T) {
	job, err := workload.TPCDS("q88", 100)
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeBackend()
	h := &am.History{Job: "tpcds-q88", App: "application_1700000000000_0001", Attempt: 1, State: am.StateRunning,
		StartUnixMs: clusterTS + 12_000, UpdatedUnixMs: clusterTS + 99_000}
	edges := 0
	clock := int64(0)
	for i, st := range job.Stages {
		hs := am.HistoryStage{Name: st.Name, Tasks: st.Tasks, Parents: st.Parents, DurationMs: st.Duration.Milliseconds(),
			Demand: st.Demand, State: am.StateWaiting}
		edges += len(st.Parents)
		switch {
		case i < len(job.Stages)/2:
			hs.State, hs.Succeeded = am.StateSucceeded, st.Tasks
		case i < len(job.Stages)/2+3:
			hs.State, hs.Running = am.StateRunning, 1
		case i < len(job.Stages)/2+5:
			hs.State = am.StateRunnable
		}
		for k := 0; k < min(st.Tasks, 3) && hs.State != am.StateWaiting && hs.State != am.StateRunnable; k++ {
			kind := "DEFAULT"
			if (i+k)%3 == 0 {
				kind = "ALTRUISTIC"
			}
			task := am.HistoryTask{Stage: st.Name, Task: k, Node: fmt.Sprintf("nm%d:45454", 1+(i+k)%6), StartMs: clock,
				EndMs: clock + 2000 + int64(k)*500, Kind: kind, State: am.StateSucceeded, Succeeded: true}
			if hs.State == am.StateRunning {
				task.EndMs, task.State, task.Succeeded = 0, am.StateRunning, false
			}
			h.Tasks = append(h.Tasks, task)
			clock += 700
		}
		h.Stages = append(h.Stages, hs)
	}
	f.apps[0].history = h
	srv := httptest.NewServer(newTestHandler(f, adminKey, nil))
	defer srv.Close()
	b := newBrowser(t)
	b.do("app page", chromedp.Navigate(srv.URL+"/#/apps/application_1700000000000_0001"),
		chromedp.WaitVisible(chromedp.CSS(`#dag g.stage`)), chromedp.WaitVisible(chromedp.CSS(`#gantt rect.task`)))
	if n := b.count(`#dag g.stage`); n != len(job.Stages) {
		t.Errorf("%d stage groups, want %d", n, len(job.Stages))
	}
	if n := b.count(`#dag path.edge`); n != edges {
		t.Errorf("%d edges, want %d", n, edges)
	}
	if n := b.count(`#gantt rect.task`); n != len(h.Tasks) {
		t.Errorf("%d task bars, want %d", n, len(h.Tasks))
	}
	b.shot("ui-dag-large.png")
}

// TestUIEscapes: what apps report (names, tracking URLs) is shown as text,
// never run as markup or followed as a javascript: link.
func TestUIEscapes(t *testing.T) {
	f := newFakeBackend()
	f.apps[0].report.Name = proto.String(`<img id="injected" src="x">`)
	f.apps[0].report.TrackingUrl = proto.String(`javascript:document.title='pwned'`)
	srv := httptest.NewServer(newTestHandler(f, adminKey, nil))
	defer srv.Close()
	b := newBrowser(t)
	b.do("apps page", chromedp.Navigate(srv.URL+"/#/apps"), chromedp.WaitVisible(chromedp.CSS(`#apps tbody tr[data-app-id]`)))
	if n := b.count(`#injected`); n != 0 {
		t.Errorf("an app's name became markup")
	}
	if name := b.text(`#apps tr[data-app-id="application_1700000000000_0001"] td:nth-child(2)`); name != `<img id="injected" src="x">` {
		t.Errorf("name shown as %q", name)
	}
	b.do("app page", chromedp.Navigate(srv.URL+"/#/apps/application_1700000000000_0001"), chromedp.WaitVisible(chromedp.CSS(`#dag`)))
	if n := b.count(`#injected, a[href^="javascript"]`); n != 0 {
		t.Errorf("%d injected elements or javascript: links on the app page", n)
	}
}

// TestUIQueueTree: with a queue tree the cluster page lists every queue
// in the tree's order, indented by its depth, with its guarantee, maximum
// and share, and a leaf's P(Altruism), marked when it overrides the
// cluster's; the operations page offers the leaves' overrides only, by
// the names apps give them.
func TestUIQueueTree(t *testing.T) {
	f := treeBackend(fullPath)
	srv := httptest.NewServer(newTestHandler(f, adminKey, nil))
	defer srv.Close()
	b := newBrowser(t)
	b.do("cluster page", chromedp.Navigate(srv.URL+"/#/cluster"), chromedp.WaitVisible(chromedp.CSS(`#queues tr[data-queue]`)))
	type row struct {
		Queue, Depth, Class, Name, Min, Max, Share, Apps, P string
		Indent                                              float64
	}
	var rows []row
	b.eval("queue rows", `[...document.querySelectorAll('#queues tbody tr')].map((r) => ({Queue: r.dataset.queue,
		Depth: r.dataset.depth, Class: r.className, Name: r.cells[0].textContent, Min: r.cells[2].textContent,
		Max: r.cells[3].textContent, Share: r.cells[4].textContent, Apps: r.cells[6].textContent, P: r.cells[7].textContent,
		Indent: parseFloat(getComputedStyle(r.cells[0]).paddingLeft)}))`, &rows)
	want := []row{
		{Queue: "root", Depth: "0", Class: "parent", Name: "root", Min: "0", Max: "32 GB, 16 vcores, 1,000 MB/s disk",
			Share: "16 GB, 8 vcores", Apps: "2", P: ""},
		{Queue: "root.eng", Depth: "1", Class: "parent", Name: "\u2514 eng", Min: "16 GB, 8 vcores", Max: "24 GB, 12 vcores",
			Share: "16 GB, 8 vcores", Apps: "2", P: ""},
		{Queue: "root.eng.etl", Depth: "2", Class: "leaf", Name: "\u2514 etl", Min: "12 GB, 4 vcores", Max: "18 GB, 8 vcores",
			Share: "16 GB, 8 vcores", Apps: "1", P: "0.5 (override)"},
		{Queue: "root.eng.adhoc", Depth: "2", Class: "leaf", Name: "\u2514 adhoc", Min: "4 GB, 4 vcores", Max: "24 GB, 12 vcores",
			Share: "0", Apps: "1", P: "0.8"},
		{Queue: "root.ads", Depth: "1", Class: "leaf", Name: "\u2514 ads", Min: "8 GB, 4 vcores", Max: "32 GB, 16 vcores, 1,000 MB/s disk",
			Share: "0", Apps: "0", P: "0.8"},
	}
	if d := cmp.Diff(want, rows, cmpopts.IgnoreFields(row{}, "Indent")); d != "" {
		t.Errorf("queue rows (-want +got):\n%s", d)
	}
	if len(rows) == 5 && !(rows[0].Indent < rows[1].Indent && rows[1].Indent < rows[2].Indent && rows[2].Indent == rows[3].Indent &&
		rows[4].Indent == rows[1].Indent) {
		t.Errorf("indents %v, %v, %v, %v, %v do not follow the depths", rows[0].Indent, rows[1].Indent, rows[2].Indent,
			rows[3].Indent, rows[4].Indent)
	}
	b.shot("ui-queue-tree.png")

	b.do("ops page", chromedp.Navigate(srv.URL+"/#/ops"), chromedp.WaitVisible(chromedp.CSS(`#p-now`)),
		waitFor("the leaves", `document.querySelectorAll('#queue option').length === 4`))
	var options []string
	b.eval("override choices", `[...document.querySelectorAll('#queue option')].map((o) => o.value)`, &options)
	if !slices.Equal(options, []string{"", "root.eng.etl", "root.eng.adhoc", "root.ads"}) {
		t.Errorf("override choices %q, want the cluster and the three leaves", options)
	}
	if msg := b.text(`#queue-overrides`); !strings.Contains(msg, "root.eng.etl: 0.5") {
		t.Errorf("overrides listed: %q", msg)
	}
}

// TestUIPlacements: the cluster page and an app's page show where
// containers sat against their asks' locality: the node-local,
// rack-local and off-switch shares with their counts, of the containers
// whose asks named hosts or racks, the rest ("any") counted apart; with
// none that named any, a plain word that locality does not apply
// rather than 0% node-local.
func TestUIPlacements(t *testing.T) {
	f := newFakeBackend()
	srv := httptest.NewServer(newTestHandler(f, adminKey, nil))
	defer srv.Close()
	b := newBrowser(t)
	type card struct{ Kind, Value, Detail string }
	cards := func(sel string) []card {
		t.Helper()
		var got []card
		b.eval("placement cards", fmt.Sprintf(`[...document.querySelectorAll('%s .card')].map((c) => ({Kind: c.dataset.placement,
			Value: c.querySelector('.value').textContent, Detail: c.querySelector('.detail').textContent}))`, sel), &got)
		return got
	}

	// The cluster: 12, 4 and 4 of the 20 containers whose asks named
	// hosts or racks; the four AMs apart.
	b.do("cluster page", chromedp.Navigate(srv.URL+"/#/cluster"), chromedp.WaitVisible(chromedp.CSS(`#placements .card`)))
	want := []card{
		{"node-local", "60.0%", "12 containers on a host their asks named"},
		{"rack-local", "20.0%", "4 containers on a rack their asks named"},
		{"off-switch", "20.0%", "4 containers elsewhere, once delay scheduling stopped waiting"},
	}
	if d := cmp.Diff(want, cards("#placements")); d != "" {
		t.Errorf("the cluster's placements (-want +got):\n%s", d)
	}
	if msg := b.text(`#placements p`); !strings.Contains(msg, "Shares of the cluster's 20 containers whose asks named hosts or racks") ||
		!strings.Contains(msg, `4 containers more asked for none ("any"`) {
		t.Errorf("the cluster's caption: %q", msg)
	}

	// The DAG app: 3, 0 and 1 of 4; its AM apart.
	b.do("app page", chromedp.Navigate(srv.URL+"/#/apps/application_1700000000000_0001"),
		chromedp.WaitVisible(chromedp.CSS(`#app-placements .card`)))
	want = []card{
		{"node-local", "75.0%", "3 containers on a host their asks named"},
		{"rack-local", "0.0%", "0 containers on a rack their asks named"},
		{"off-switch", "25.0%", "1 container elsewhere, once delay scheduling stopped waiting"},
	}
	if d := cmp.Diff(want, cards("#app-placements")); d != "" {
		t.Errorf("app 1's placements (-want +got):\n%s", d)
	}
	if msg := b.text(`#app-placements p`); !strings.Contains(msg, "this app's 4 containers") || !strings.Contains(msg, "1 container more") {
		t.Errorf("app 1's caption: %q", msg)
	}

	// A finished Spark app whose one container, its AM, asked for no
	// host: no share at all, and said so.
	b.do("spark app", chromedp.Navigate(srv.URL+"/#/apps/application_1700000000000_0004"),
		chromedp.WaitVisible(chromedp.CSS(`#app-placements`)))
	if n := b.count(`#app-placements .card`); n != 0 {
		t.Errorf("%d share cards for an app with no locality asks", n)
	}
	if msg := b.text(`#app-placements`); !strings.Contains(msg, "Locality does not apply: this app's 1 container were all asked for with no host or rack named") {
		t.Errorf("app 4: %q", msg)
	}
	// An app not yet granted anything.
	b.do("accepted app", chromedp.Navigate(srv.URL+"/#/apps/application_1700000000000_0003"),
		chromedp.WaitVisible(chromedp.CSS(`#app-placements`)))
	if msg := b.text(`#app-placements`); !strings.Contains(msg, "No container granted") {
		t.Errorf("app 3: %q", msg)
	}

	// A cluster whose asks never named hosts: every container "any".
	f.mu.Lock()
	f.sched.Placements = Placements{Any: 7}
	f.mu.Unlock()
	b.do("cluster page, no locality", chromedp.Navigate(srv.URL+"/#/apps"), chromedp.Navigate(srv.URL+"/#/cluster"),
		chromedp.WaitVisible(chromedp.CSS(`#placements[data-placement="any"]`)))
	if msg := b.text(`#placements`); !strings.Contains(msg, "the cluster's 7 containers were all asked for with no host or rack named") ||
		strings.Contains(msg, "%") {
		t.Errorf("the cluster without locality asks: %q", msg)
	}
}
