// Package browser starts the headless Chromium the web UI's tests drive.
package browser

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/chromedp/chromedp"
)

// Path finds the browser: $LOOM_CHROMIUM, or Debian's chromium.
func Path() (string, error) {
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

// Options start Chromium headless with a fresh profile in userDataDir, and
// without the background connections a machine with no network refuses.
func Options(path, userDataDir string) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(userDataDir), chromedp.WindowSize(1440, 1000),
	}
}
