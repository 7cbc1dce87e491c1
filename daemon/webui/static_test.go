package webui

import (
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func TestStatic(t *testing.T) {
	h := newTestHandler(newFakeBackend(), adminKey, nil)
	a := serve(h, http.MethodGet, "/", "")
	if a.code != 200 || a.contentType() != "text/html; charset=utf-8" {
		t.Fatalf("/: %d %q", a.code, a.contentType())
	}
	page := string(a.body)
	for _, want := range []string{`<script type="module" src="/ui/js/main.js">`, `<link rel="stylesheet" href="/ui/style.css">`, `<main id="main">`} {
		if !strings.Contains(page, want) {
			t.Errorf("/ lacks %s", want)
		}
	}
	if csp := a.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	for path, ct := range map[string]string{
		"/ui/js/main.js":      "text/javascript; charset=utf-8",
		"/ui/js/dag.js":       "text/javascript; charset=utf-8",
		"/ui/style.css":       "text/css; charset=utf-8",
		"/ui/favicon.svg":     "image/svg+xml",
		"/ui/js/pages/app.js": "text/javascript; charset=utf-8",
	} {
		a := serve(h, http.MethodGet, path, "")
		if a.code != 200 || a.contentType() != ct || len(a.body) == 0 {
			t.Errorf("%s: %d %q, want 200 %q", path, a.code, a.contentType(), ct)
		}
		if a.header.Get("ETag") == "" {
			t.Errorf("%s: no ETag", path)
		}
		// An unchanged file is not sent again.
		if again := serve(h, http.MethodGet, path, "", "If-None-Match", a.header.Get("ETag")); again.code != http.StatusNotModified {
			t.Errorf("%s with its ETag: %d", path, again.code)
		}
	}
	if a := serve(h, http.MethodHead, "/", ""); a.code != 200 || a.contentType() != "text/html; charset=utf-8" {
		t.Errorf("HEAD /: %d %q", a.code, a.contentType())
	}
	// A path that climbs out is cleaned first, and never serves the tree.
	if a := serve(h, http.MethodGet, "/ui/../webui.go", ""); a.code == 200 {
		t.Errorf("/ui/../webui.go served")
	}
	for _, path := range []string{"/ui/nope.js", "/ui/index.html", "/nope", "/ui/js%2F..%2F..%2Fwebui.go"} {
		if a := serve(h, http.MethodGet, path, ""); a.code != 404 {
			t.Errorf("%s: %d, want 404", path, a.code)
		}
	}
	if a := serve(h, http.MethodPost, "/", ""); a.code != 405 {
		t.Errorf("POST /: %d, want 405", a.code)
	}
}

// TestAssetsSelfContained: every module import and every URL in the UI is
// one of ours, so that an offline machine renders it whole.
func TestAssetsSelfContained(t *testing.T) {
	h := newTestHandler(newFakeBackend(), adminKey, nil)
	imports := regexp.MustCompile(`(?m)^import [^'"]*['"]([^'"]+)['"]`)
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	err := fs.WalkDir(uiFiles, "ui", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := uiFiles.ReadFile(path)
		text := string(data)
		if m := external.FindString(strings.ReplaceAll(text, "http://www.w3.org/2000/svg", "")); m != "" {
			t.Errorf("%s refers to %s: the UI must load nothing from elsewhere", path, m)
		}
		if !strings.HasSuffix(path, ".js") {
			return nil
		}
		dir := path[:strings.LastIndex(path, "/")]
		for _, m := range imports.FindAllStringSubmatch(text, -1) {
			target := m[1]
			for strings.HasPrefix(target, "../") {
				target = target[3:]
				dir = dir[:strings.LastIndex(dir, "/")]
			}
			target = dir + "/" + strings.TrimPrefix(target, "./")
			url := "/" + target
			if a := serve(h, http.MethodGet, url, ""); a.code != 200 {
				t.Errorf("%s imports %s, which is served as %d", path, m[1], a.code)
			}
			dir = path[:strings.LastIndex(path, "/")]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
