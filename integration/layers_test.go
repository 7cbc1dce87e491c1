package integration

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/loomrm/loom/"

// layer is where a package sits in the README's four layers.
func layer(pkg string) (name string, rank int) {
	switch {
	case pkg == "rpc" || strings.HasPrefix(pkg, "rpc/"):
		return "protocol", 2
	case strings.HasPrefix(pkg, "daemon/"):
		return "daemon", 3
	case strings.HasPrefix(pkg, "tool/"), strings.HasPrefix(pkg, "cmd/"), pkg == "integration":
		return "tool", 4
	case strings.HasPrefix(pkg, "internal/"):
		return "library", 0
	}
	return "core", 1
}

// daemonOf names the daemon a daemon/ package belongs to: daemon/rm/...
// is the RM's, daemon/nm/... the NM's. The web port is the RM's.
func daemonOf(pkg string) string {
	parts := strings.Split(pkg, "/")
	if parts[1] == "webui" {
		return "rm"
	}
	return parts[1]
}

// TestLayers holds the layout the README describes: imports point only
// down, the protocol knows no policy, daemons do not import each other,
// and the pure cores do not reach the network or start processes.
func TestLayers(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	pkgs := 0
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs++
		from := strings.TrimPrefix(p.ImportPath, module)
		fromLayer, fromRank := layer(from)
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				if fromLayer == "core" && (imp == "net" || strings.HasPrefix(imp, "net/") || imp == "os/exec") {
					t.Errorf("%s is a pure core but imports %s", from, imp)
				}
				continue
			}
			to := strings.TrimPrefix(imp, module)
			toLayer, toRank := layer(to)
			switch {
			case toLayer == "library":
			case fromLayer == "library":
				t.Errorf("%s is a shared library but imports %s (%s)", from, to, toLayer)
			case toRank > fromRank:
				t.Errorf("%s (%s) imports %s (%s): imports point only down", from, fromLayer, to, toLayer)
			case fromLayer == "protocol" && toLayer == "core" && to != "resource":
				t.Errorf("%s (protocol) imports %s: the protocol knows no policy, only resource/", from, to)
			case fromLayer == "daemon" && toLayer == "daemon" && daemonOf(from) != daemonOf(to):
				t.Errorf("%s imports %s: daemons share only protocol and cores", from, to)
			}
		}
	}
	if pkgs < 20 {
		t.Fatalf("go list found %d packages; expected the whole module", pkgs)
	}
}
