package webui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/internal/logagg"
)

// aggregatedLogs writes app 2's (bob's) logs as a NodeManager aggregates
// them, and returns the config that finds them.
func aggregatedLogs(t *testing.T) *LogsConfig {
	t.Helper()
	remote := t.TempDir()
	src := filepath.Join(t.TempDir(), "c1")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "stdout"), []byte("rows loaded: 42\n"), 0o644)
	os.WriteFile(filepath.Join(src, "stderr"), []byte("<script>alert(1)</script>\n"), 0o644)
	st, root, err := logagg.Open(context.Background(), remote, "", "bob")
	if err != nil {
		t.Fatal(err)
	}
	dir := logagg.AppDir(root, "bob", "", "application_1700000000000_0002")
	if _, err := logagg.Write(st, dir, "nm2:45454", []logagg.Container{{ID: "container_1700000000000_0002_01_000001", Dirs: []string{src}}}); err != nil {
		t.Fatal(err)
	}
	return &LogsConfig{RemoteDir: remote}
}

// TestAppLogs: an app's aggregated logs are listed and served as plain
// text; an app without them, an unknown file and aggregation off say so.
func TestAppLogs(t *testing.T) {
	f := newFakeBackend()
	h := newServer(f, Config{Log: zerolog.Nop(), Logs: aggregatedLogs(t)}, fakeNow).handler()
	var logs dao.AppLogs
	decode(t, serve(h, http.MethodGet, "/ws/v1/loom/apps/application_1700000000000_0002/logs", ""), &logs)
	if len(logs.Logs) != 2 || logs.Logs[1].File != "stdout" || logs.Logs[1].Size != 16 || logs.Logs[1].Node != "nm2:45454" {
		t.Errorf("logs %+v", logs)
	}
	a := serve(h, http.MethodGet, "/ws/v1/loom/apps/application_1700000000000_0002/logs/container_1700000000000_0002_01_000001/stderr", "")
	if a.code != 200 || string(a.body) != "<script>alert(1)</script>\n" || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") ||
		a.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("stderr: %d %q %v", a.code, a.body, a.header)
	}
	remoteException(t, serve(h, http.MethodGet, "/ws/v1/loom/apps/application_1700000000000_0002/logs/container_1700000000000_0002_01_000001/syslog", ""),
		http.StatusNotFound, "NotFoundException")
	decode(t, serve(h, http.MethodGet, "/ws/v1/loom/apps/application_1700000000000_0001/logs", ""), &logs)
	if len(logs.Logs) != 0 || !strings.Contains(logs.Message, "when it ends") {
		t.Errorf("a running app's logs: %+v", logs)
	}
	remoteException(t, serve(h, http.MethodGet, "/ws/v1/loom/apps/application_1700000000000_0099/logs", ""), http.StatusNotFound, "NotFoundException")
	off := newServer(f, Config{Log: zerolog.Nop()}, fakeNow).handler()
	decode(t, serve(off, http.MethodGet, "/ws/v1/loom/apps/application_1700000000000_0002/logs", ""), &logs)
	if !strings.Contains(logs.Message, "yarn.log-aggregation-enable") {
		t.Errorf("with aggregation off: %+v", logs)
	}
}

// TestUILogs: a finished app's page lists its aggregated logs, each a
// link to its text.
func TestUILogs(t *testing.T) {
	f := newFakeBackend()
	srv := httptest.NewServer(newServer(f, Config{Log: zerolog.Nop(), Logs: aggregatedLogs(t)}, fakeNow).handler())
	defer srv.Close()
	b := newBrowser(t)
	b.do("finished app", chromedp.Navigate(srv.URL+"/#/apps/application_1700000000000_0002"), chromedp.WaitVisible(chromedp.CSS(`#logs a.log-file`)))
	if n := b.count(`#logs a.log-file`); n != 2 {
		t.Errorf("%d log links, want 2", n)
	}
	var href string
	b.eval("stdout link", `[...document.querySelectorAll('#logs a.log-file')].find(a => a.textContent === 'stdout').href`, &href)
	resp, err := http.Get(href)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := make([]byte, 64)
	n, _ := resp.Body.Read(body)
	if resp.StatusCode != 200 || string(body[:n]) != "rows loaded: 42\n" {
		t.Errorf("the stdout link %s: %d %q", href, resp.StatusCode, body[:n])
	}
	b.shot("ui-app-logs.png")
}
