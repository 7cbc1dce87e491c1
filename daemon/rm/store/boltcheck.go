package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
)

// checkBoltFile checks the structure of a bbolt file (format version 2,
// bbolt 1.x) from its bytes, without bbolt: the meta page bbolt would
// pick, the freelist, and every page of every bucket's B+tree, each
// bounded, in range, of the right type and reached once. bbolt trusts
// the file: on a damaged one it panics, faults on a page past the end
// of its memory map (which no recover catches) or, on a page that
// refers to itself, loops until the stack runs out. A file this check
// passes is one bbolt can walk safely. It also returns the transaction
// id of the meta page bbolt would use.
//
// The layout, from go.etcd.io/bbolt/internal/common (little-endian on
// the machines Loom runs on; bbolt writes native order):
//
//	page header   id u64, flags u16, count u16, overflow u32  (16 bytes)
//	meta          magic u32, version u32, pageSize u32, flags u32,
//	              root {pgid u64, sequence u64}, freelist u64, pgid u64,
//	              txid u64, checksum u64 (FNV-64a of the 56 bytes before)
//	branch elem   pos u32, ksize u32, pgid u64  (key at elem+pos)
//	leaf elem     flags u32, pos u32, ksize u32, vsize u32
//	              (key at elem+pos, value right after it)
//	bucket value  root u64, sequence u64, then, if root is 0, an inline
//	              leaf page
func checkBoltFile(data []byte) (txid uint64, err error) {
	c := boltChecker{data: data}
	m, err := c.pickMeta()
	if err != nil {
		return 0, err
	}
	return m.txid, c.checkTree(m)
}

const (
	boltMagic         = 0xED0CDAED
	boltVersion       = 2
	boltPageHeader    = 16
	boltMetaSize      = 64
	boltElemSize      = 16
	boltBucketHeader  = 16
	boltBranchFlag    = 0x01
	boltLeafFlag      = 0x02
	boltFreelistFlag  = 0x10
	boltBucketLeaf    = 0x01
	boltNoFreelist    = ^uint64(0)
	boltMaxDepth      = 64 // buckets within buckets and tree levels, together
	boltMinPageSize   = 1024
	boltMaxPageSize   = 1 << 24
	boltFreelistCount = 0xFFFF
)

var le = binary.LittleEndian

type boltMeta struct {
	which                      int // 0 or 1
	pageSize                   uint64
	root, freelist, hwm, txid  uint64
	magic, version, checksumOK bool
}

type boltChecker struct {
	data      []byte
	pageSize  uint64
	hwm       uint64
	reachable map[uint64]bool
	freed     map[uint64]bool
}

// readMeta reads the meta page whose header starts at off.
func (c *boltChecker) readMeta(which int, off uint64) (boltMeta, bool) {
	if off+boltPageHeader+boltMetaSize > uint64(len(c.data)) {
		return boltMeta{}, false
	}
	b := c.data[off+boltPageHeader : off+boltPageHeader+boltMetaSize]
	h := fnv.New64a()
	h.Write(b[:56])
	return boltMeta{
		which:      which,
		magic:      le.Uint32(b[0:]) == boltMagic,
		version:    le.Uint32(b[4:]) == boltVersion,
		pageSize:   uint64(le.Uint32(b[8:])),
		root:       le.Uint64(b[16:]),
		freelist:   le.Uint64(b[32:]),
		hwm:        le.Uint64(b[40:]),
		txid:       le.Uint64(b[48:]),
		checksumOK: le.Uint64(b[56:]) == h.Sum64(),
	}, true
}

func (m boltMeta) valid() bool { return m.magic && m.version && m.checksumOK }

func (m boltMeta) problem() string {
	switch {
	case !m.magic:
		return "no bbolt magic number"
	case !m.version:
		return "not bbolt's format version 2"
	case !m.checksumOK:
		return "checksum mismatch"
	}
	return "valid"
}

// pickMeta finds the page size as bbolt does (meta page 0's, else the
// first valid meta page at 1 KiB << i), then picks the meta page bbolt
// would: the valid one with the higher transaction id.
func (c *boltChecker) pickMeta() (boltMeta, error) {
	if len(c.data) < boltPageHeader+boltMetaSize {
		return boltMeta{}, fmt.Errorf("%d bytes, too short to be a store", len(c.data))
	}
	m0, _ := c.readMeta(0, 0)
	ps := uint64(0)
	if m0.valid() {
		ps = m0.pageSize
	} else {
		for i := 0; i <= 14; i++ {
			pos := uint64(1024) << i
			if int64(pos) >= int64(len(c.data))-1024 {
				break
			}
			if m, ok := c.readMeta(1, pos); ok && m.valid() {
				ps = m.pageSize
				break
			}
		}
		if ps == 0 {
			return boltMeta{}, fmt.Errorf("both meta pages are invalid (page 0: %s); not a bbolt file, or a damaged one", m0.problem())
		}
	}
	if ps < boltMinPageSize || ps > boltMaxPageSize || ps&(ps-1) != 0 {
		return boltMeta{}, fmt.Errorf("page size %d is not a power of two between %d and %d", ps, boltMinPageSize, boltMaxPageSize)
	}
	c.pageSize = ps
	if uint64(len(c.data)) < 2*ps {
		return boltMeta{}, fmt.Errorf("%d bytes, shorter than its two meta pages of %d bytes", len(c.data), ps)
	}
	m1, _ := c.readMeta(1, ps)
	a, b := m0, m1
	if m1.txid > m0.txid {
		a, b = m1, m0
	}
	var m boltMeta
	switch {
	case a.valid():
		m = a
	case b.valid():
		m = b
	default:
		return boltMeta{}, fmt.Errorf("both meta pages are invalid (page 0: %s; page 1: %s)", m0.problem(), m1.problem())
	}
	if m.pageSize != ps {
		return boltMeta{}, fmt.Errorf("meta page %d says the page size is %d, meta page 0 says %d", m.which, m.pageSize, ps)
	}
	if m.hwm < 3 || m.hwm > uint64(len(c.data))/ps {
		return boltMeta{}, fmt.Errorf("meta page %d says the file has %d pages; it holds %d", m.which, m.hwm, uint64(len(c.data))/ps)
	}
	c.hwm = m.hwm
	return m, nil
}

func (c *boltChecker) checkTree(m boltMeta) error {
	c.reachable = map[uint64]bool{0: true, 1: true}
	c.freed = map[uint64]bool{}
	if m.freelist != boltNoFreelist {
		if err := c.checkFreelist(m.freelist); err != nil {
			return err
		}
	}
	if m.root == 0 {
		return fmt.Errorf("meta page %d: the root bucket has no page", m.which)
	}
	if err := c.visit(m.root, 0, "root bucket"); err != nil {
		return err
	}
	if m.freelist == boltNoFreelist {
		return nil
	}
	for id := uint64(2); id < c.hwm; id++ {
		if !c.reachable[id] && !c.freed[id] {
			return fmt.Errorf("page %d is neither in use nor free", id)
		}
	}
	return nil
}

// page returns page id's header fields and its bytes (with overflow),
// marking its pages reached.
func (c *boltChecker) page(id uint64, what string) (flags, count uint16, p []byte, err error) {
	if id < 2 || id >= c.hwm {
		return 0, 0, nil, fmt.Errorf("%s: page %d is out of range (2 to %d)", what, id, c.hwm-1)
	}
	off := id * c.pageSize
	h := c.data[off : off+boltPageHeader]
	if got := le.Uint64(h); got != id {
		return 0, 0, nil, fmt.Errorf("%s: page %d says it is page %d", what, id, got)
	}
	flags, count = le.Uint16(h[8:]), le.Uint16(h[10:])
	overflow := uint64(le.Uint32(h[12:]))
	if overflow >= c.hwm-id {
		return 0, 0, nil, fmt.Errorf("%s: page %d runs %d pages past the end of the file", what, id, overflow)
	}
	for i := id; i <= id+overflow; i++ {
		if c.reachable[i] {
			return 0, 0, nil, fmt.Errorf("%s: page %d is referred to twice", what, i)
		}
		if c.freed[i] {
			return 0, 0, nil, fmt.Errorf("%s: page %d is in use and free", what, i)
		}
		c.reachable[i] = true
	}
	return flags, count, c.data[off : off+(overflow+1)*c.pageSize], nil
}

func (c *boltChecker) checkFreelist(id uint64) error {
	flags, count, p, err := c.page(id, "freelist")
	if err != nil {
		return err
	}
	if flags != boltFreelistFlag {
		return fmt.Errorf("freelist: page %d has type %#x, not a freelist", id, flags)
	}
	n, start := uint64(count), uint64(boltPageHeader)
	if count == boltFreelistCount {
		if len(p) < boltPageHeader+8 {
			return fmt.Errorf("freelist: page %d is too short for its count", id)
		}
		n, start = le.Uint64(p[boltPageHeader:]), boltPageHeader+8
	}
	if n > (uint64(len(p))-start)/8 {
		return fmt.Errorf("freelist: page %d says it lists %d pages; it has room for %d", id, n, (uint64(len(p))-start)/8)
	}
	for i := range n {
		f := le.Uint64(p[start+8*i:])
		if f < 2 || f >= c.hwm {
			return fmt.Errorf("freelist: free page %d is out of range (2 to %d)", f, c.hwm-1)
		}
		if c.freed[f] {
			return fmt.Errorf("freelist: page %d is free twice", f)
		}
		if c.reachable[f] {
			return fmt.Errorf("freelist: page %d is free and in use", f)
		}
		c.freed[f] = true
	}
	return nil
}

// visit checks the tree under page id.
func (c *boltChecker) visit(id uint64, depth int, what string) error {
	if depth > boltMaxDepth {
		return fmt.Errorf("%s: nested more than %d deep at page %d", what, boltMaxDepth, id)
	}
	flags, count, p, err := c.page(id, what)
	if err != nil {
		return err
	}
	return c.node(p, flags, count, depth, fmt.Sprintf("%s: page %d", what, id))
}

// node checks a page's elements: p is the page from its header on (an
// inline page is a bucket value's tail).
func (c *boltChecker) node(p []byte, flags, count uint16, depth int, where string) error {
	size := uint64(len(p))
	if boltPageHeader+uint64(count)*boltElemSize > size {
		return fmt.Errorf("%s: %d elements do not fit in %d bytes", where, count, size)
	}
	// slice returns p[off+pos : off+pos+n], or false if that is not in p.
	slice := func(off, pos, n uint64) ([]byte, bool) {
		if pos > size || n > size || off+pos+n > size {
			return nil, false
		}
		return p[off+pos : off+pos+n], true
	}
	var prev []byte
	switch flags {
	case boltBranchFlag:
		if count == 0 {
			return fmt.Errorf("%s: a branch page with no elements", where)
		}
		for i := range uint64(count) {
			off := boltPageHeader + i*boltElemSize
			e := p[off : off+boltElemSize]
			key, ok := slice(off, uint64(le.Uint32(e[0:])), uint64(le.Uint32(e[4:])))
			if !ok {
				return fmt.Errorf("%s: element %d's key lies outside the page", where, i)
			}
			if i > 0 && bytes.Compare(prev, key) >= 0 {
				return fmt.Errorf("%s: element %d's key is out of order", where, i)
			}
			prev = key
			if err := c.visit(le.Uint64(e[8:]), depth+1, where); err != nil {
				return err
			}
		}
	case boltLeafFlag:
		for i := range uint64(count) {
			off := boltPageHeader + i*boltElemSize
			e := p[off : off+boltElemSize]
			pos, ksize, vsize := uint64(le.Uint32(e[4:])), uint64(le.Uint32(e[8:])), uint64(le.Uint32(e[12:]))
			kv, ok := slice(off, pos, ksize+vsize)
			if !ok {
				return fmt.Errorf("%s: element %d's key or value lies outside the page", where, i)
			}
			key, value := kv[:ksize], kv[ksize:]
			if i > 0 && bytes.Compare(prev, key) >= 0 {
				return fmt.Errorf("%s: element %d's key is out of order", where, i)
			}
			prev = key
			if le.Uint32(e[0:])&boltBucketLeaf == 0 {
				continue
			}
			sub := fmt.Sprintf("%s: bucket %q", where, key)
			if len(value) < boltBucketHeader {
				return fmt.Errorf("%s: %d bytes, too short for a bucket", sub, len(value))
			}
			root := le.Uint64(value)
			if root != 0 {
				if err := c.visit(root, depth+1, sub); err != nil {
					return err
				}
				continue
			}
			inline := value[boltBucketHeader:]
			if len(inline) < boltPageHeader {
				return fmt.Errorf("%s: inline page too short", sub)
			}
			if depth+1 > boltMaxDepth {
				return fmt.Errorf("%s: nested more than %d deep", sub, boltMaxDepth)
			}
			iflags, icount := le.Uint16(inline[8:]), le.Uint16(inline[10:])
			if iflags != boltLeafFlag {
				return fmt.Errorf("%s: inline page has type %#x, not a leaf", sub, iflags)
			}
			if err := c.node(inline, iflags, icount, depth+1, sub+" (inline)"); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%s: type %#x, not a branch or a leaf", where, flags)
	}
	return nil
}
