package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A backend makes a fresh, empty place for a store and returns how to
// open the store there; each call of the opener opens the same place, so
// that tests can close and reopen it as an RM restart does.
type backend struct {
	name  string
	fresh func(t *testing.T) func() (Store, error)
}

func backends() []backend {
	return []backend{
		{"local", func(t *testing.T) func() (Store, error) {
			dir := t.TempDir()
			return func() (Store, error) { return Open(Config{Kind: KindLocal, Dir: dir}) }
		}},
		{"zookeeper", func(t *testing.T) func() (Store, error) {
			cfg := zkTestConfig(t)
			return func() (Store, error) { return Open(cfg) }
		}},
		// The HDFS store's logic, over the local filesystem (file:// URIs
		// take the same path through Open as hdfs:// ones).
		{"hdfs-logic-on-local-fs", func(t *testing.T) func() (Store, error) {
			uri := "file://" + t.TempDir() + "/rmstore"
			return func() (Store, error) { return Open(Config{Kind: KindHDFS, HDFSURI: uri}) }
		}},
	}
}

// TestConformance runs every backend through the same behaviour.
func TestConformance(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range conformanceCases {
				t.Run(c.name, func(t *testing.T) {
					open := b.fresh(t)
					c.run(t, open)
				})
			}
		})
	}
}

var conformanceCases = []struct {
	name string
	run  func(t *testing.T, open func() (Store, error))
}{
	{"EmptyLoadsEmpty", testEmpty},
	{"PutReplaceRemoveSurviveReopen", testRoundTrip},
	{"AttemptNeedsItsApp", testAttemptNeedsApp},
	{"RemoveAppRemovesAttempts", testRemoveApp},
	{"EpochIncrementsAcrossReopen", testEpoch},
	{"ConcurrentWriters", testConcurrent},
	{"RefusesBadNames", testBadNames},
	{"ClosedStoreRefusesCalls", testClosed},
}

func mustOpen(t *testing.T, open func() (Store, error)) Store {
	t.Helper()
	s, err := open()
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustLoad(t *testing.T, s Store) *State {
	t.Helper()
	st, err := s.Load(context.Background())
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return st
}

func check(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func testEmpty(t *testing.T, open func() (Store, error)) {
	s := mustOpen(t, open)
	want := &State{Apps: map[string]App{}, Secrets: map[string][]byte{}}
	if d := cmp.Diff(want, mustLoad(t, s)); d != "" {
		t.Errorf("a new store (-want +got):\n%s", d)
	}
	// Opening it again (an RM restart before anything was written) is
	// still empty, and no error.
	check(t, "close", s.Close())
	if d := cmp.Diff(want, mustLoad(t, mustOpen(t, open))); d != "" {
		t.Errorf("reopened (-want +got):\n%s", d)
	}
}

func testRoundTrip(t *testing.T, open func() (Store, error)) {
	ctx := context.Background()
	s := mustOpen(t, open)
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	const app1, app2, app3 = "application_1700000000000_0001", "application_1700000000000_0002", "application_1700000000000_0003"
	const att1, att2 = "appattempt_1700000000000_0001_000001", "appattempt_1700000000000_0001_000002"
	check(t, "put app1", s.PutApp(ctx, app1, []byte("submitted")))
	check(t, "replace app1", s.PutApp(ctx, app1, []byte("finished: SUCCEEDED")))
	check(t, "put att1", s.PutAttempt(ctx, app1, att1, []byte("launched")))
	check(t, "replace att1", s.PutAttempt(ctx, app1, att1, []byte("failed")))
	check(t, "put att2", s.PutAttempt(ctx, app1, att2, binary))
	check(t, "put app2 (empty record)", s.PutApp(ctx, app2, nil))
	check(t, "put app3", s.PutApp(ctx, app3, []byte("x")))
	check(t, "put app3's attempt", s.PutAttempt(ctx, app3, "appattempt_1700000000000_0003_000001", []byte("y")))
	check(t, "remove app3", s.RemoveApp(ctx, app3))
	check(t, "remove an app never stored", s.RemoveApp(ctx, "application_1700000000000_0099"))
	check(t, "put secret", s.PutSecret(ctx, "amrm-master-key-1", []byte("k1")))
	check(t, "replace secret", s.PutSecret(ctx, "amrm-master-key-1", []byte("k1'")))
	check(t, "put secret 2", s.PutSecret(ctx, "container-master-key-7", binary))
	check(t, "put secret 3", s.PutSecret(ctx, "amrm-master-key-0", []byte("old")))
	check(t, "remove secret 3", s.RemoveSecret(ctx, "amrm-master-key-0"))
	check(t, "remove a secret never stored", s.RemoveSecret(ctx, "nope"))

	want := &State{
		Apps: map[string]App{
			app1: {Data: []byte("finished: SUCCEEDED"), Attempts: map[string][]byte{att1: []byte("failed"), att2: binary}},
			app2: {Data: []byte{}, Attempts: map[string][]byte{}},
		},
		Secrets: map[string][]byte{"amrm-master-key-1": []byte("k1'"), "container-master-key-7": binary},
	}
	if d := cmp.Diff(want, mustLoad(t, s)); d != "" {
		t.Errorf("load (-want +got):\n%s", d)
	}
	check(t, "close", s.Close())
	if d := cmp.Diff(want, mustLoad(t, mustOpen(t, open))); d != "" {
		t.Errorf("load after reopen (-want +got):\n%s", d)
	}
}

func testAttemptNeedsApp(t *testing.T, open func() (Store, error)) {
	ctx := context.Background()
	s := mustOpen(t, open)
	err := s.PutAttempt(ctx, "application_1_0001", "appattempt_1_0001_000001", []byte("a"))
	if !errors.Is(err, ErrNoApp) {
		t.Errorf("attempt of an app never stored: got %v, want ErrNoApp", err)
	}
	check(t, "put app", s.PutApp(ctx, "application_1_0001", []byte("a")))
	check(t, "remove app", s.RemoveApp(ctx, "application_1_0001"))
	err = s.PutAttempt(ctx, "application_1_0001", "appattempt_1_0001_000001", []byte("a"))
	if !errors.Is(err, ErrNoApp) {
		t.Errorf("attempt of a removed app: got %v, want ErrNoApp", err)
	}
	if st := mustLoad(t, s); len(st.Apps) != 0 {
		t.Errorf("refused attempts left apps behind: %v", st.Apps)
	}
}

func testRemoveApp(t *testing.T, open func() (Store, error)) {
	ctx := context.Background()
	s := mustOpen(t, open)
	const app = "application_2_0001"
	check(t, "put app", s.PutApp(ctx, app, []byte("v1")))
	for i := range 3 {
		check(t, "put attempt", s.PutAttempt(ctx, app, fmt.Sprintf("appattempt_2_0001_00000%d", i+1), []byte("a")))
	}
	check(t, "put other app", s.PutApp(ctx, "application_2_0002", []byte("other")))
	check(t, "put other attempt", s.PutAttempt(ctx, "application_2_0002", "appattempt_2_0002_000001", []byte("b")))
	check(t, "remove app", s.RemoveApp(ctx, app))
	check(t, "remove app again", s.RemoveApp(ctx, app))
	// Stored again under the same id, the app has none of the old
	// attempts: they went with it, not just out of sight.
	check(t, "put app again", s.PutApp(ctx, app, []byte("v2")))
	check(t, "close", s.Close())
	want := map[string]App{
		app:                  {Data: []byte("v2"), Attempts: map[string][]byte{}},
		"application_2_0002": {Data: []byte("other"), Attempts: map[string][]byte{"appattempt_2_0002_000001": []byte("b")}},
	}
	if d := cmp.Diff(want, mustLoad(t, mustOpen(t, open)).Apps); d != "" {
		t.Errorf("apps (-want +got):\n%s", d)
	}
}

func testEpoch(t *testing.T, open func() (Store, error)) {
	ctx := context.Background()
	s := mustOpen(t, open)
	for want := int64(1); want <= 2; want++ {
		got, err := s.BumpEpoch(ctx)
		check(t, "bump", err)
		if got != want {
			t.Errorf("bump: got %d, want %d", got, want)
		}
	}
	check(t, "close", s.Close())
	s = mustOpen(t, open)
	if got := mustLoad(t, s).Epoch; got != 2 {
		t.Errorf("epoch after reopen: got %d, want 2", got)
	}
	got, err := s.BumpEpoch(ctx)
	check(t, "bump after reopen", err)
	if got != 3 {
		t.Errorf("bump after reopen: got %d, want 3", got)
	}
}

func testConcurrent(t *testing.T, open func() (Store, error)) {
	ctx := context.Background()
	s := mustOpen(t, open)
	const writers, each = 8, 6
	// Writers also replace one shared app and secret, so that their
	// writes race on the same records too.
	check(t, "put shared app", s.PutApp(ctx, "application_3_shared", []byte("start")))
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*4+writers)
	epochs := make(chan int64, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				app := fmt.Sprintf("application_3_%02d%02d", w, i)
				errs <- s.PutApp(ctx, app, []byte(app))
				errs <- s.PutAttempt(ctx, app, "appattempt_"+app[len("application_"):]+"_000001", []byte("attempt of "+app))
				errs <- s.PutSecret(ctx, fmt.Sprintf("key-%d-%d", w, i), []byte{byte(w), byte(i)})
				errs <- s.PutApp(ctx, "application_3_shared", []byte("shared"))
			}
			n, err := s.BumpEpoch(ctx)
			errs <- err
			epochs <- n
		}()
	}
	wg.Wait()
	close(errs)
	close(epochs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent write: %v", err)
		}
	}
	var got []int64
	for n := range epochs {
		got = append(got, n)
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	for i, n := range got {
		if n != int64(i+1) {
			t.Errorf("concurrent bumps returned %v, want 1..%d once each", got, writers)
			break
		}
	}

	want := newState()
	want.Epoch = writers
	want.Apps["application_3_shared"] = App{Data: []byte("shared"), Attempts: map[string][]byte{}}
	for w := range writers {
		for i := range each {
			app := fmt.Sprintf("application_3_%02d%02d", w, i)
			want.Apps[app] = App{Data: []byte(app), Attempts: map[string][]byte{
				"appattempt_" + app[len("application_"):] + "_000001": []byte("attempt of " + app)}}
			want.Secrets[fmt.Sprintf("key-%d-%d", w, i)] = []byte{byte(w), byte(i)}
		}
	}
	if d := cmp.Diff(want, mustLoad(t, s)); d != "" {
		t.Errorf("load (-want +got):\n%s", d)
	}
}

func testBadNames(t *testing.T, open func() (Store, error)) {
	ctx := context.Background()
	s := mustOpen(t, open)
	check(t, "put app", s.PutApp(ctx, "application_4_0001", nil))
	for _, bad := range []string{"", ".hidden", "..", "a/b", "nul\x00"} {
		if err := s.PutApp(ctx, bad, nil); !errors.Is(err, ErrInvalidName) {
			t.Errorf("PutApp(%q): got %v, want ErrInvalidName", bad, err)
		}
		if err := s.PutAttempt(ctx, "application_4_0001", bad, nil); !errors.Is(err, ErrInvalidName) {
			t.Errorf("PutAttempt(%q): got %v, want ErrInvalidName", bad, err)
		}
		if err := s.PutSecret(ctx, bad, nil); !errors.Is(err, ErrInvalidName) {
			t.Errorf("PutSecret(%q): got %v, want ErrInvalidName", bad, err)
		}
		if err := s.RemoveApp(ctx, bad); !errors.Is(err, ErrInvalidName) {
			t.Errorf("RemoveApp(%q): got %v, want ErrInvalidName", bad, err)
		}
	}
	if err := s.PutAttempt(ctx, "application_4_0001", "application_4_0001", nil); !errors.Is(err, ErrInvalidName) {
		t.Errorf("an attempt named as its app: got %v, want ErrInvalidName", err)
	}
}

func testClosed(t *testing.T, open func() (Store, error)) {
	ctx := context.Background()
	s := mustOpen(t, open)
	check(t, "close", s.Close())
	check(t, "second close", s.Close())
	if err := s.PutApp(ctx, "application_5_0001", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("PutApp after close: got %v, want ErrClosed", err)
	}
	if _, err := s.Load(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Load after close: got %v, want ErrClosed", err)
	}
	if _, err := s.BumpEpoch(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("BumpEpoch after close: got %v, want ErrClosed", err)
	}
}
