package webui

import (
	"bytes"
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"time"
)

// The web UI: plain HTML, CSS and JavaScript modules, served as they are
// in the tree. Nothing is built and nothing is fetched from elsewhere.
//
//go:embed ui
var uiFiles embed.FS

// contentSecurityPolicy keeps the UI to its own origin: the machines are
// offline, and nothing injected can load or send anything elsewhere.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

func serveIndex(c *call) error {
	return serveUIFile(c, "ui/index.html")
}

func serveAsset(c *call) error {
	name := c.vars()["asset"]
	if !fs.ValidPath(name) || name == "index.html" {
		return notFound("no UI file %s", name)
	}
	return serveUIFile(c, "ui/"+name)
}

func serveUIFile(c *call, name string) error {
	data, err := uiFiles.ReadFile(name)
	if err != nil {
		return notFound("no UI file %s", c.r.URL.Path)
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = http.DetectContentType(data)
	}
	h := c.w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// The files change only with the binary: revalidate, and let the
	// ETag spare the transfer.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", etag(data))
	http.ServeContent(c.w, c.r, name, time.Time{}, bytes.NewReader(data))
	return nil
}

func etag(data []byte) string {
	var sum uint64 = 14695981039346656037
	for _, b := range data {
		sum ^= uint64(b)
		sum *= 1099511628211
	}
	const hex = "0123456789abcdef"
	out := []byte{'"'}
	for i := 60; i >= 0; i -= 4 {
		out = append(out, hex[sum>>uint(i)&0xf])
	}
	return string(append(out, '"'))
}
