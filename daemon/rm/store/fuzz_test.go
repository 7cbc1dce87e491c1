package store

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fuzzTemplate is a store with some apps, made once per process: its
// file, its marker and what it holds.
var fuzzTemplate struct {
	once       sync.Once
	db, marker []byte
	state      *State
	pageSize   int
	err        error
}

func loadFuzzTemplate(f *testing.F) {
	fuzzTemplate.once.Do(func() {
		dir, err := os.MkdirTemp("", "loom-store-fuzz")
		if err != nil {
			fuzzTemplate.err = err
			return
		}
		defer os.RemoveAll(dir)
		fuzzTemplate.state = fillStore(f, dir)
		fuzzTemplate.db, err = os.ReadFile(filepath.Join(dir, LocalFile))
		if err == nil {
			fuzzTemplate.marker, err = os.ReadFile(filepath.Join(dir, LocalMarker))
		}
		fuzzTemplate.err = err
		c := boltChecker{data: fuzzTemplate.db}
		if m, err := c.pickMeta(); err == nil {
			fuzzTemplate.pageSize = int(m.pageSize)
		}
	})
	if fuzzTemplate.err != nil {
		f.Fatal(fuzzTemplate.err)
	}
}

// FuzzOpenLocalCorrupted damages a valid store file at fuzzer-chosen
// offsets (the meta pages included) and opens and loads it: that must
// either give back exactly what the store held or fail, and never
// panic or hang. mode picks how bytes are damaged: XOR (bit flips),
// overwrite, or truncate the file at off.
func FuzzOpenLocalCorrupted(f *testing.F) {
	loadFuzzTemplate(f)
	ps := uint32(fuzzTemplate.pageSize)
	for _, seed := range []struct {
		mode byte
		off  uint32
		b    []byte
	}{
		{0, 16, []byte{0x01}},                    // meta 0's magic
		{0, 16 + 48, []byte{0x01}},               // meta 0's txid
		{0, ps + 16 + 40, []byte{0x01}},          // meta 1's page count
		{1, 2 * ps, []byte{0xff, 0xff, 0xff}},    // page 2's header
		{1, 3*ps + 8, []byte{0x01, 0x00}},        // page 3's flags: a branch
		{0, 3*ps + 10, []byte{0x03}},             // page 3's count
		{0, 4*ps + 16, []byte{0x80, 0, 0, 0, 1}}, // an element
		{1, 5*ps + 16 + 8, []byte{4, 0, 0, 0}},   // a child pgid
		{2, 3 * ps, nil},                         // truncated
		{0, 100, nil},                            // nothing
	} {
		f.Add(seed.mode, seed.off, seed.b)
	}
	f.Fuzz(func(t *testing.T, mode byte, off uint32, b []byte) {
		data := append([]byte{}, fuzzTemplate.db...)
		o := int(off % uint32(len(data)))
		switch mode % 3 {
		case 0:
			for i, x := range b {
				data[(o+i)%len(data)] ^= x
			}
		case 1:
			for i, x := range b {
				data[(o+i)%len(data)] = x
			}
		case 2:
			data = data[:o]
		}
		dir := t.TempDir()
		check(t, "write store", os.WriteFile(filepath.Join(dir, LocalFile), data, 0o600))
		check(t, "write marker", os.WriteFile(filepath.Join(dir, LocalMarker), fuzzTemplate.marker, 0o600))
		st, err := openWithin(t, dir, 20*time.Second)
		if err != nil {
			return
		}
		if d := cmp.Diff(fuzzTemplate.state, st); d != "" {
			t.Fatalf("a damaged store loaded, and not as it was (-want +got):\n%s", d)
		}
	})
}
