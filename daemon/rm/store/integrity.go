package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/crc64"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// What the local store keeps to notice that its file lies: a checksum
// on each record, a digest of all of them, and a marker beside the file.

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	ecma       = crc64.MakeTable(crc64.ECMA)
)

// recordSum is a record's CRC32C, over where it is stored as well as
// its bytes, so that a record whose key was damaged fails too.
func recordSum(where string, data []byte) uint32 {
	h := crc32.New(castagnoli)
	h.Write([]byte(where))
	h.Write([]byte{0})
	h.Write(data)
	return h.Sum32()
}

// sealRecord is a record as the local store (layout 2) stores it: its
// CRC32C, big-endian, then its bytes.
func sealRecord(where string, data []byte) []byte {
	out := make([]byte, 4, 4+len(data))
	binary.BigEndian.PutUint32(out, recordSum(where, data))
	return append(out, data...)
}

// openRecord checks a sealed record and returns its bytes (aliasing v).
func openRecord(where string, v []byte) ([]byte, error) {
	if len(v) < 4 {
		return nil, fmt.Errorf("%s: %d bytes, too short for its checksum", where, len(v))
	}
	data := v[4:]
	if want, got := binary.BigEndian.Uint32(v), recordSum(where, data); want != got {
		return nil, fmt.Errorf("%s: checksum mismatch (stored %08x, computed %08x)", where, want, got)
	}
	return data, nil
}

// digest sums up every app, attempt and secret record: how many there
// are and the XOR of each one's CRC-64 (over where it is and its bytes).
// Kept in the store and updated with each write, it catches a record
// that vanished (a damaged page that lost an element still reads as a
// well-formed page) or one that appeared.
type digest struct {
	apps, records int64
	sum           uint64
}

func recordHash(where string, data []byte) uint64 {
	h := crc64.New(ecma)
	h.Write([]byte(where))
	h.Write([]byte{0})
	h.Write(data)
	return h.Sum64()
}

func (d *digest) add(where string, data []byte) {
	d.records++
	d.sum ^= recordHash(where, data)
}

func (d *digest) remove(where string, data []byte) {
	d.records--
	d.sum ^= recordHash(where, data)
}

func (d digest) String() string {
	return fmt.Sprintf("apps %d records %d sum %016x", d.apps, d.records, d.sum)
}

func parseDigest(s string) (digest, error) {
	var d digest
	_, err := fmt.Sscanf(s, "apps %d records %d sum %x", &d.apps, &d.records, &d.sum)
	if err != nil || d.String() != s {
		return digest{}, fmt.Errorf("%q is not a digest", s)
	}
	return d, nil
}

// LocalMarker is the file beside rmstate.db that records what the store
// held when the RM last started, counted an epoch or stopped: its id,
// epoch, bbolt transaction and number of apps. With it the RM tells a
// store file that was emptied, removed, replaced or rolled back from
// one that is new, and refuses the first kind. Removing it (or the
// whole directory) is how to start fresh on purpose.
const LocalMarker = LocalFile + ".marker"

// marker is the marker file's content.
type marker struct {
	id          string
	epoch, txid int64
	apps        int64
}

const markerHeader = "# Loom RM state store marker: what " + LocalFile + " beside it held when last written.\n" +
	"# The RM refuses to start from a store that is missing, empty, another store or older than this.\n" +
	"# To start fresh (or from an older copy) on purpose, remove this file.\n"

func (m marker) encode() []byte {
	body := fmt.Sprintf("store-id %s\nepoch %d\ntxid %d\napps %d\n", m.id, m.epoch, m.txid, m.apps)
	return []byte(fmt.Sprintf("%s%scrc32c %08x\n", markerHeader, body, crc32.Checksum([]byte(body), castagnoli)))
}

func parseMarker(data []byte) (marker, error) {
	var m marker
	var body bytes.Buffer
	var sum string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, " ")
		if !ok || seen[k] {
			return m, fmt.Errorf("line %q", line)
		}
		seen[k] = true
		var err error
		switch k {
		case "store-id":
			m.id = v
		case "epoch":
			m.epoch, err = strconv.ParseInt(v, 10, 64)
		case "txid":
			m.txid, err = strconv.ParseInt(v, 10, 64)
		case "apps":
			m.apps, err = strconv.ParseInt(v, 10, 64)
		case "crc32c":
			sum = v
		default:
			err = errors.New("unknown field")
		}
		if err != nil {
			return m, fmt.Errorf("line %q: %v", line, err)
		}
		if k != "crc32c" {
			body.WriteString(line + "\n")
		}
	}
	if len(seen) != 5 {
		return m, errors.New("fields missing")
	}
	if want := fmt.Sprintf("%08x", crc32.Checksum(body.Bytes(), castagnoli)); sum != want {
		return m, fmt.Errorf("checksum mismatch (stored %s, computed %s)", sum, want)
	}
	return m, nil
}

// readMarker reads the marker at p; nil if there is none.
func readMarker(p string) (*marker, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("local store marker %s: %w", p, err)
	}
	m, err := parseMarker(data)
	if err != nil {
		return nil, fmt.Errorf("local store marker %s is damaged (%v): it cannot vouch for %s; "+
			"if the store is the one you expect, remove the marker and the RM writes a new one", p, err, filepath.Join(filepath.Dir(p), LocalFile))
	}
	return &m, nil
}

// writeMarker replaces the marker at p durably: a temporary file,
// fsync'd, renamed over it, and the directory fsync'd.
func writeMarker(p string, m marker) error {
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		_, err = f.Write(m.encode())
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err == nil {
		err = syncDir(filepath.Dir(p))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("local store marker %s: %w", p, err)
	}
	return nil
}
