package topology

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loomrm/loom/internal/hadoopconf"
)

func conf(kv ...string) *hadoopconf.Conf {
	c := hadoopconf.New(nil)
	for i := 0; i < len(kv); i += 2 {
		c.Set(kv[i], kv[i+1])
	}
	return c
}

func write(t *testing.T, name, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNoTopologyIsDefaultRack(t *testing.T) {
	r, err := New(conf())
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Resolve([]string{"a", "b"})
	if err != nil || !slices.Equal(got, []string{DefaultRack, DefaultRack}) {
		t.Errorf("got %v, %v", got, err)
	}
}

func TestTableMapping(t *testing.T) {
	table := write(t, "topology.table", "# host rack\n10.0.0.1 /dc1/rack1\n\nnode2.example.com   /dc1/rack2\n", 0o644)
	r, err := New(conf(KeyImpl, TableMapping, KeyTable, table))
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Resolve([]string{"10.0.0.1", "node2.example.com", "elsewhere"})
	want := []string{"/dc1/rack1", "/dc1/rack2", DefaultRack}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
}

// TestScriptMapping: the script gets at most number.args hosts per run
// and answers one rack per host; answers are cached.
func TestScriptMapping(t *testing.T) {
	log := filepath.Join(t.TempDir(), "calls")
	script := write(t, "rack.sh", `#!/bin/sh
echo "$#" >> `+log+`
for h in "$@"; do
  case "$h" in
    a*) printf '/dc1/rack-a ' ;;
    *) printf '/dc1/rack-other\n' ;;
  esac
done
`, 0o755)
	r, err := New(conf(KeyScript, script, KeyScriptArgs, "2"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Resolve([]string{"a1", "b1", "a2", "c1", "a3"})
	want := []string{"/dc1/rack-a", "/dc1/rack-other", "/dc1/rack-a", "/dc1/rack-other", "/dc1/rack-a"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
	if rack, err := r.Rack("b1"); err != nil || rack != "/dc1/rack-other" {
		t.Errorf("b1 again: %q %v", rack, err)
	}
	calls, _ := os.ReadFile(log)
	if string(calls) != "2\n2\n1\n" {
		t.Errorf("script runs by argument count %q, want 2, 2, 1 (and none for a cached host)", calls)
	}
}

// TestScriptFailures: a script that fails or answers wrongly puts its
// hosts on the default rack with an error saying why, and is asked again
// next time.
func TestScriptFailures(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"exits 3", "#!/bin/sh\necho broken >&2\nexit 3\n", "exit status 3 broken"},
		{"too few racks", "#!/bin/sh\necho /r1\n", "answered 1 racks for 2 hosts"},
		{"not a path", "#!/bin/sh\necho rack1 rack2\n", `rack "rack1" is not an absolute path`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := write(t, "rack.sh", tc.body, 0o755)
			r, err := New(conf(KeyScript, script))
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Resolve([]string{"h1", "h2"})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !slices.Equal(got, []string{DefaultRack, DefaultRack}) {
				t.Errorf("got %v, %v; want the default rack and an error with %q", got, err, tc.want)
			}
			if len(r.cache) != 0 {
				t.Errorf("a failed answer was cached: %v", r.cache)
			}
		})
	}
}

func TestBadConfig(t *testing.T) {
	dir := t.TempDir()
	notExec := write(t, "rack.sh", "#!/bin/sh\n", 0o644)
	badTable := write(t, "table", "h1 /r1 extra\n", 0o644)
	relTable := write(t, "table2", "h1 rack1\n", 0o644)
	for _, tc := range []struct {
		kv   []string
		want string
	}{
		{[]string{KeyScript, filepath.Join(dir, "missing.sh")}, "net.topology.script.file.name"},
		{[]string{KeyScript, notExec}, "is not an executable file"},
		{[]string{KeyScript, "/bin/true", KeyScriptArgs, "0"}, "at least one host"},
		{[]string{KeyScript, "/bin/true", KeyScriptArgs, "many"}, "not an integer"},
		{[]string{KeyImpl, TableMapping}, "net.topology.table.file.name"},
		{[]string{KeyImpl, TableMapping, KeyTable, filepath.Join(dir, "nope")}, "no such file"},
		{[]string{KeyImpl, TableMapping, KeyTable, badTable}, `line 1: want "host rack"`},
		{[]string{KeyImpl, TableMapping, KeyTable, relTable}, "not an absolute path"},
		{[]string{KeyImpl, "com.example.MyMapping"}, "a Java class Loom cannot run"},
	} {
		if _, err := New(conf(tc.kv...)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error with %q", tc.kv, err, tc.want)
		}
	}
}

// FuzzReadTable: any table file either parses into absolute racks or is
// refused with an error; it never panics.
func FuzzReadTable(f *testing.F) {
	f.Add("h1 /r1\n# c\n\nh2 /dc/r2\n")
	f.Add("h1\n")
	f.Add("h1 r1 r2\n")
	f.Fuzz(func(t *testing.T, body string) {
		p := filepath.Join(t.TempDir(), "t")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		tab, err := readTable(p)
		if err != nil {
			return
		}
		for h, r := range tab {
			if h == "" || checkRack(r) != nil {
				t.Errorf("accepted %q -> %q", h, r)
			}
		}
	})
}
