// Package namenodetest is an HDFS NameNode for tests: it serves the
// namespace and block-location calls of ClientNamenodeProtocol
// (getFileInfo, getListing, getBlockLocations, getServerDefaults) over
// Hadoop IPC, with
// Loom's IPC server and HDFS's own messages (rpc/hdfspb), from a tree the
// test builds. An HDFS client, colinmarc/hdfs or Loom's AM, talks to it
// as to a NameNode. It stores no data: a file is its blocks' lengths and
// the datanodes said to hold them. There is no HDFS on a test machine;
// this is the closest stand-in that still exercises the wire.
package namenodetest

import (
	"context"
	"fmt"
	"net"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	"github.com/loomrm/loom/rpc/hdfspb"
)

// Protocol is ClientNamenodeProtocol's name on the wire.
const Protocol = "org.apache.hadoop.hdfs.protocol.ClientProtocol"

// ClassFileNotFound is the exception a NameNode throws for a path that
// is not there (or not a file, where one is needed).
const ClassFileNotFound = "java.io.FileNotFoundException"

// DefaultXferPort is Hadoop 3's dfs.datanode.address port.
const DefaultXferPort = 9866

// Block is one block of a file: its length and the hosts of the
// datanodes that hold its replicas, in the order the NameNode lists them.
type Block struct {
	Length int64
	Hosts  []string
}

type inode struct {
	dir      bool
	blocks   []Block
	modified time.Time
}

// NameNode is a running fake NameNode.
type NameNode struct {
	// Addr is where it listens, host:port.
	Addr string
	// ListLimit is how many entries one getListing answers, as
	// dfs.ls.limit (1000) bounds a real NameNode's; the client asks
	// again after the last one for the rest.
	ListLimit int
	// MaxBlocks, when positive, is how many blocks one getBlockLocations
	// answers at most, as a real NameNode may answer less than the range
	// asked for; the client asks again from the next offset.
	MaxBlocks int
	// Racks, when set, gives datanodes' network locations by host;
	// others are on /default-rack.
	Racks map[string]string
	// XferPort is the data port datanodes are said to serve on
	// (DefaultXferPort when 0).
	XferPort uint32
	// Delay, when set, is how long every call waits before it is
	// answered: a slow NameNode.
	Delay time.Duration

	mu    sync.Mutex
	tree  map[string]*inode
	calls map[string]int
	users map[string]bool
	hang  chan struct{} // when set, calls wait for it to close
	srv   *rpc.Server
}

// Start starts a NameNode on addr ("127.0.0.1:0" picks a port) with an
// empty root directory.
func Start(addr string) (*NameNode, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	n := &NameNode{Addr: ln.Addr().String(), ListLimit: 1000,
		tree:  map[string]*inode{"/": {dir: true, modified: time.Now()}},
		calls: map[string]int{}, users: map[string]bool{}}
	n.srv = rpc.NewServer(rpc.ServerOptions{})
	n.srv.Register(rpc.Protocol{Name: Protocol, Methods: []rpc.Method{
		rpc.Unary("getFileInfo", n.getFileInfo),
		rpc.Unary("getListing", n.getListing),
		rpc.Unary("getBlockLocations", n.getBlockLocations),
		rpc.Unary("getServerDefaults", n.getServerDefaults),
	}})
	go n.srv.Serve(ln)
	return n, nil
}

// Close stops serving and ends every connection.
func (n *NameNode) Close() error {
	n.Hang(false)
	return n.srv.Close()
}

// AddFile adds a file of the given blocks, and its parent directories.
func (n *NameNode) AddFile(p string, blocks ...Block) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p = path.Clean(p)
	n.mkdirs(path.Dir(p))
	n.tree[p] = &inode{blocks: blocks, modified: time.Now()}
}

// AddDir adds a directory and its parents.
func (n *NameNode) AddDir(p string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mkdirs(path.Clean(p))
}

func (n *NameNode) mkdirs(p string) {
	for ; ; p = path.Dir(p) {
		if _, ok := n.tree[p]; !ok {
			n.tree[p] = &inode{dir: true, modified: time.Now()}
		}
		if p == "/" {
			return
		}
	}
}

// Calls is how many calls of method it has served.
func (n *NameNode) Calls(method string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls[method]
}

// Users are the users calls came from (SIMPLE auth: who the client says
// it is).
func (n *NameNode) Users() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for u := range n.users {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// Hang makes every call from now on wait, unanswered, until Hang(false)
// or Close: a NameNode that accepts connections and never answers.
func (n *NameNode) Hang(on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case on && n.hang == nil:
		n.hang = make(chan struct{})
	case !on && n.hang != nil:
		close(n.hang)
		n.hang = nil
	}
}

// enter counts a call and returns the tree, locked; callers unlock.
func (n *NameNode) enter(ctx context.Context, method string) error {
	n.mu.Lock()
	n.calls[method]++
	if call, ok := rpc.CallFromContext(ctx); ok {
		n.users[call.User] = true
	}
	hang, delay := n.hang, n.Delay
	n.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if hang != nil {
		select {
		case <-hang:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	n.mu.Lock()
	return nil
}

// clean checks a path as the NameNode does: absolute, and normalized.
func clean(src string) (string, error) {
	if !strings.HasPrefix(src, "/") {
		return "", rpc.Errorf("org.apache.hadoop.fs.InvalidPathException", "Invalid path name Path is not absolute: %s", src)
	}
	if p := path.Clean(src); p != src && p+"/" != src {
		return "", rpc.Errorf("org.apache.hadoop.fs.InvalidPathException", "Invalid path name Invalid file name: %s", src)
	}
	return path.Clean(src), nil
}

func (n *NameNode) status(p string, in *inode, name string, locations bool) *hdfspb.HdfsFileStatusProto {
	st := &hdfspb.HdfsFileStatusProto{Path: []byte(name), Owner: proto.String("hdfs"), Group: proto.String("supergroup"),
		ModificationTime: proto.Uint64(uint64(in.modified.UnixMilli())), AccessTime: proto.Uint64(uint64(in.modified.UnixMilli())),
		FileId: proto.Uint64(uint64(len(p)))}
	if in.dir {
		st.FileType = hdfspb.HdfsFileStatusProto_IS_DIR.Enum()
		st.Length = proto.Uint64(0)
		st.Permission = &hdfspb.FsPermissionProto{Perm: proto.Uint32(0o755)}
		return st
	}
	st.FileType = hdfspb.HdfsFileStatusProto_IS_FILE.Enum()
	st.Length = proto.Uint64(uint64(in.length()))
	st.Permission = &hdfspb.FsPermissionProto{Perm: proto.Uint32(0o644)}
	st.BlockReplication = proto.Uint32(3)
	st.Blocksize = proto.Uint64(128 << 20)
	if locations {
		st.Locations = n.located(p, in, 0, in.length())
	}
	return st
}

func (in *inode) length() int64 {
	var l int64
	for _, b := range in.blocks {
		l += b.Length
	}
	return l
}

// located is a file's blocks that overlap [offset, offset+length), at
// most MaxBlocks of them.
func (n *NameNode) located(p string, in *inode, offset, length int64) *hdfspb.LocatedBlocksProto {
	lb := &hdfspb.LocatedBlocksProto{FileLength: proto.Uint64(uint64(in.length())), UnderConstruction: proto.Bool(false),
		IsLastBlockComplete: proto.Bool(true)}
	port := n.XferPort
	if port == 0 {
		port = DefaultXferPort
	}
	var at int64
	for i, b := range in.blocks {
		start := at
		at += b.Length
		if at <= offset || start >= offset+length {
			continue
		}
		if n.MaxBlocks > 0 && len(lb.Blocks) >= n.MaxBlocks {
			break
		}
		blk := &hdfspb.LocatedBlockProto{
			B: &hdfspb.ExtendedBlockProto{PoolId: proto.String("BP-loom-test"), BlockId: proto.Uint64(uint64(1<<30 + 1000*len(p) + i)),
				GenerationStamp: proto.Uint64(1001), NumBytes: proto.Uint64(uint64(b.Length))},
			Offset: proto.Uint64(uint64(start)), Corrupt: proto.Bool(false),
			BlockToken: &hadooppb.TokenProto{Identifier: []byte{}, Password: []byte{}, Kind: proto.String(""), Service: proto.String("")}}
		for j, h := range b.Hosts {
			ip := h
			if net.ParseIP(h) == nil {
				ip = "127.0.0.1"
			}
			rack := "/default-rack"
			if r, ok := n.Racks[h]; ok {
				rack = r
			}
			blk.Locs = append(blk.Locs, &hdfspb.DatanodeInfoProto{
				Id: &hdfspb.DatanodeIDProto{IpAddr: proto.String(ip), HostName: proto.String(h),
					DatanodeUuid: proto.String(fmt.Sprintf("dn-%s", h)), XferPort: proto.Uint32(port),
					InfoPort: proto.Uint32(9864), IpcPort: proto.Uint32(9867)},
				Location: proto.String(rack), AdminState: hdfspb.DatanodeInfoProto_NORMAL.Enum()})
			blk.StorageTypes = append(blk.StorageTypes, hdfspb.StorageTypeProto_DISK)
			blk.StorageIDs = append(blk.StorageIDs, fmt.Sprintf("DS-%s-%d", h, j))
			blk.IsCached = append(blk.IsCached, false)
		}
		lb.Blocks = append(lb.Blocks, blk)
	}
	return lb
}

func (n *NameNode) getFileInfo(ctx context.Context, req *hdfspb.GetFileInfoRequestProto) (*hdfspb.GetFileInfoResponseProto, error) {
	if err := n.enter(ctx, "getFileInfo"); err != nil {
		return nil, err
	}
	defer n.mu.Unlock()
	p, err := clean(req.GetSrc())
	if err != nil {
		return nil, err
	}
	in, ok := n.tree[p]
	if !ok {
		return &hdfspb.GetFileInfoResponseProto{}, nil // a NameNode answers no status, not an error
	}
	return &hdfspb.GetFileInfoResponseProto{Fs: n.status(p, in, "", false)}, nil
}

func (n *NameNode) getListing(ctx context.Context, req *hdfspb.GetListingRequestProto) (*hdfspb.GetListingResponseProto, error) {
	if err := n.enter(ctx, "getListing"); err != nil {
		return nil, err
	}
	defer n.mu.Unlock()
	p, err := clean(req.GetSrc())
	if err != nil {
		return nil, err
	}
	in, ok := n.tree[p]
	if !ok {
		return &hdfspb.GetListingResponseProto{}, nil
	}
	if !in.dir {
		// A file lists as itself, with an empty name.
		return &hdfspb.GetListingResponseProto{DirList: &hdfspb.DirectoryListingProto{
			PartialListing: []*hdfspb.HdfsFileStatusProto{n.status(p, in, "", req.GetNeedLocation())}, RemainingEntries: proto.Uint32(0)}}, nil
	}
	// Children in byte order of their names, after startAfter.
	var names []string
	prefix := strings.TrimSuffix(p, "/") + "/"
	for q := range n.tree {
		if q != "/" && strings.HasPrefix(q, prefix) && !strings.Contains(q[len(prefix):], "/") {
			if name := q[len(prefix):]; name > string(req.GetStartAfter()) {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	limit := n.ListLimit
	if limit <= 0 {
		limit = 1000
	}
	page := names[:min(limit, len(names))]
	dl := &hdfspb.DirectoryListingProto{RemainingEntries: proto.Uint32(uint32(len(names) - len(page)))}
	for _, name := range page {
		q := prefix + name
		dl.PartialListing = append(dl.PartialListing, n.status(q, n.tree[q], name, req.GetNeedLocation()))
	}
	return &hdfspb.GetListingResponseProto{DirList: dl}, nil
}

func (n *NameNode) getBlockLocations(ctx context.Context, req *hdfspb.GetBlockLocationsRequestProto) (*hdfspb.GetBlockLocationsResponseProto, error) {
	if err := n.enter(ctx, "getBlockLocations"); err != nil {
		return nil, err
	}
	defer n.mu.Unlock()
	p, err := clean(req.GetSrc())
	if err != nil {
		return nil, err
	}
	in, ok := n.tree[p]
	switch {
	case !ok:
		return nil, rpc.Errorf(ClassFileNotFound, "File does not exist: %s", req.GetSrc())
	case in.dir:
		return nil, rpc.Errorf(ClassFileNotFound, "Path is not a file: %s", req.GetSrc())
	}
	off, length := req.GetOffset(), req.GetLength()
	if off > 1<<62 || length > 1<<62 {
		return nil, rpc.Errorf("org.apache.hadoop.HadoopIllegalArgumentException", "offset %d or length %d out of range", off, length)
	}
	return &hdfspb.GetBlockLocationsResponseProto{Locations: n.located(p, in, int64(off), int64(length))}, nil
}

func (n *NameNode) getServerDefaults(ctx context.Context, req *hdfspb.GetServerDefaultsRequestProto) (*hdfspb.GetServerDefaultsResponseProto, error) {
	if err := n.enter(ctx, "getServerDefaults"); err != nil {
		return nil, err
	}
	defer n.mu.Unlock()
	// Hadoop 3's defaults.
	return &hdfspb.GetServerDefaultsResponseProto{ServerDefaults: &hdfspb.FsServerDefaultsProto{BlockSize: proto.Uint64(128 << 20),
		BytesPerChecksum: proto.Uint32(512), WritePacketSize: proto.Uint32(64 << 10), Replication: proto.Uint32(3),
		FileBufferSize: proto.Uint32(4096), ChecksumType: hdfspb.ChecksumTypeProto_CHECKSUM_CRC32C.Enum()}}, nil
}
