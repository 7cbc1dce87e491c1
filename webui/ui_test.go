package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath finds the browser the UI test drives: $LOOM_CHROMIUM, or
// Debian's chromium.
func chromiumPath() (string, error) {
	if p := os.Getenv("LOOM_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium on this machine (looked for /usr/bin/chromium, chromium, chromium-browser, " +
		"google-chrome and $LOOM_CHROMIUM): install it with `apt-get install -y chromium` (Debian), as CI does")
}

// TestUI serves the UI on the fake cluster and drives it in headless
// Chromium: the apps table lists the apps and sorts and filters them, the
// DAG has one stage group per stage, the Gantt one bar per task attempt,
// and P(Altruism) changes only after a confirmation. Screenshots land in
// testdata/ to be looked at.
func TestUI(t *testing.T) {
	browser, err := chromiumPath()
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeBackend()
	srv := httptest.NewServer(newTestHandler(f, adminKey, nil))
	defer srv.Close()

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1440, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	// Any script error fails the test.
	var mu sync.Mutex
	var jsErrors []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			// The browser logs every 4xx the UI expects (an app without
			// history, a refused credential); only the page's own errors count.
			if m.IsException() || m.Type == chromedp.ConsoleError && m.Source == "" {
				mu.Lock()
				jsErrors = append(jsErrors, m.String())
				mu.Unlock()
			}
		}
	}()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(what, js string, v any) {
		t.Helper()
		res, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](js))
		if err == nil {
			err = json.Unmarshal(res, v)
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	waitFor := func(what, js string) chromedp.Action[chromedp.Void] {
		poll := chromedp.Poll[bool](js, chromedp.WithPollingTimeout(5*time.Second))
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := poll(ctx, tg)
			if err != nil {
				err = fmt.Errorf("waiting for %s: %w", what, err)
			}
			return chromedp.Void{}, err
		}
	}
	change := func(sel, value string) chromedp.Action[chromedp.Void] {
		return chromedp.Steps(chromedp.SetValue(chromedp.CSS(sel), value), func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q).dispatchEvent(new Event('change'))`, sel))(ctx, tg)
			return chromedp.Void{}, err
		})
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join("testdata", name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	count := func(sel string) int {
		t.Helper()
		var n int
		eval("count "+sel, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel), &n)
		return n
	}
	rowIDs := func() []string {
		t.Helper()
		var ids []string
		eval("row ids", `[...document.querySelectorAll('#apps tbody tr[data-app-id]')].map(r => r.dataset.appId.slice(-4))`, &ids)
		return ids
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}

	// Apps: newest first, then sorted by name, then only the running.
	do("apps page", chromedp.Navigate(srv.URL+"/#/apps"), chromedp.WaitVisible(chromedp.CSS(`#apps tbody tr[data-app-id]`)))
	if got := rowIDs(); !slices.Equal(got, []string{"0005", "0004", "0003", "0002", "0001"}) {
		t.Errorf("apps %v, want all five newest first", got)
	}
	shot("ui-apps.png")
	do("sort by name", chromedp.Click(chromedp.CSS(`#apps th[data-key="name"] button`)))
	if got := rowIDs(); !slices.Equal(got, []string{"0005", "0002", "0003", "0004", "0001"}) {
		t.Errorf("apps by name %v", got)
	}
	do("sort by name, descending", chromedp.Click(chromedp.CSS(`#apps th[data-key="name"] button`)))
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
	do("app page", chromedp.Click(chromedp.CSS(`#apps tr[data-app-id="application_1700000000000_0001"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`#dag g.stage`)), chromedp.WaitVisible(chromedp.CSS(`#gantt rect.task`)),
		chromedp.WaitVisible(chromedp.CSS(`#share`)))
	if n := count(`#dag g.stage`); n != 4 {
		t.Errorf("%d stage groups in the DAG, want 4", n)
	}
	var states map[string]string
	eval("stage states", `Object.fromEntries([...document.querySelectorAll('#dag g.stage')].map(g => [g.dataset.stage, g.dataset.state]))`, &states)
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
	shot("ui-cluster.png")

	// Operations: a wrong credential is refused, the right one applies
	// after the confirmation.
	do("ops page", chromedp.Navigate(srv.URL+"/#/ops"), chromedp.WaitVisible(chromedp.CSS(`#p-now`)))
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
	shot("ui-ops-confirm.png")
	do("confirm", chromedp.Click(chromedp.CSS(`#confirm-change`)),
		waitFor("the result", `document.querySelector('#result').classList.contains('ok')`))
	if msg := text(`#result`); !strings.Contains(msg, "P(Altruism) is now 0.3") || f.Scheduler().PAltruism != 0.3 {
		t.Errorf("after the change: %q, P %v", msg, f.Scheduler().PAltruism)
	}
	if n := count(`#altruism-history tbody tr`); n != 2 {
		t.Errorf("%d changes listed, want 2", n)
	}
	if ch := f.AltruismChanges(); ch[len(ch)-1].Who != "ops-oncall from 127.0.0.1" {
		t.Errorf("change by %q", ch[len(ch)-1].Who)
	}
	shot("ui-ops.png")

	mu.Lock()
	defer mu.Unlock()
	if len(jsErrors) > 0 {
		t.Errorf("script errors:\n%s", strings.Join(jsErrors, "\n"))
	}
}
