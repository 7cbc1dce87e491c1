package driver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/user"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/internal/topology"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hdfspb"
	"github.com/loomrm/loom/workload"
)

// Input locality: the stages that name HDFS inputs (workload.Stage.Inputs)
// have their blocks' locations read from the NameNode when the AM starts,
// and each task asks for the hosts of its block (am.Config.Inputs).
//
// The namespace (does a path exist, is it a directory, what is in it) is
// read with colinmarc/hdfs. The block locations are read with Loom's own
// Hadoop IPC client and HDFS's getBlockLocations message (rpc/hdfspb):
// colinmarc/hdfs (v2.4.0, its newest) has no call that returns them.

// ClientProtocol is HDFS's ClientNamenodeProtocol as it is named on the
// wire.
const ClientProtocol = "org.apache.hadoop.hdfs.protocol.ClientProtocol"

// DefaultNameNodePort is the port of an hdfs:// URI that names none.
const DefaultNameNodePort = "8020"

// DefaultInputTimeout bounds how long the AM spends learning where its
// inputs are before it fails the job.
const DefaultInputTimeout = 2 * time.Minute

// inputBlock is one block of a stage's inputs: where it is in which file,
// and the hosts of the datanodes that hold its replicas.
type inputBlock struct {
	file   string
	offset int64
	hosts  []string
}

// taskHosts are the hosts of the block task reads: block task mod n of
// the stage's n blocks (workload.Stage.Inputs), none without blocks.
func taskHosts(blocks []inputBlock, task int) []string {
	if len(blocks) == 0 || task < 0 {
		return nil
	}
	return blocks[task%len(blocks)].hosts
}

// namenode is one NameNode (or HA pair) the inputs are on, and the two
// clients that speak to it.
type namenode struct {
	addrs   []string // the NameNode's address, or an HA nameservice's, in order
	fs      *hdfs.Client
	ipc     *rpc.Client
	timeout time.Duration // one call's
}

// inputLocator reads where stages' inputs are. It keeps one namenode per
// URI authority.
type inputLocator struct {
	conf    *hadoopconf.Conf
	user    string
	timeout time.Duration     // one call, or one connection
	intern  map[string]string // host names, shared by the blocks that name them

	mu     sync.Mutex // nns, closed and at: close ends the clients of a locator still at work
	nns    map[string]*namenode
	closed bool
	at     string // the stage and input being located, and its NameNode
}

func newInputLocator(conf *hadoopconf.Conf, user string, timeout time.Duration) *inputLocator {
	return &inputLocator{conf: conf, user: user, timeout: timeout, nns: map[string]*namenode{}, intern: map[string]string{}}
}

func (l *inputLocator) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	for _, nn := range l.nns {
		if nn.fs != nil {
			nn.fs.Close()
		}
		nn.ipc.Close()
	}
}

// inputError is an input the AM could not locate; the job fails with it.
func inputError(stage, in, format string, args ...any) error {
	return fmt.Errorf("stage %q: input %q: %s", stage, in, fmt.Sprintf(format, args...))
}

// resolve splits an input into its NameNode's key (the URI authority or
// nameservice), the NameNode's addresses and the path on it. A path, or
// hdfs:///path, is on fs.defaultFS's NameNode.
func (l *inputLocator) resolve(in string) (key string, addrs []string, p string, err error) {
	u, err := workload.ParseInput(in)
	if err != nil {
		return "", nil, "", err
	}
	host := u.Authority
	if host == "" {
		def, err := l.conf.String("fs.defaultFS")
		if err != nil {
			return "", nil, "", fmt.Errorf("input %q: %w", in, err)
		}
		du, err := url.Parse(def)
		if err != nil || du.Scheme != "hdfs" || du.Host == "" {
			if def == "" {
				def = "file:///, Hadoop's default"
			}
			return "", nil, "", fmt.Errorf("input %q names no NameNode, and fs.defaultFS (%s) is not an hdfs://namenode:port URI: "+
				"set fs.defaultFS in core-site.xml (in %s) or give hdfs://namenode:port%s", in, def, confDirName(l.conf), u.Path)
		}
		host = du.Host
	}
	if addrs, err = l.nameNodeAddrs(host); err != nil {
		return "", nil, "", fmt.Errorf("input %q: %w", in, err)
	}
	return host, addrs, u.Path, nil
}

func confDirName(c *hadoopconf.Conf) string {
	if d := c.ConfDir(); d != "" {
		return d
	}
	return "$HADOOP_CONF_DIR, which is not set"
}

// nameNodeAddrs are the addresses behind an hdfs:// authority: host:port
// as given; an HA nameservice's NameNodes (dfs.ha.namenodes.<ns>,
// dfs.namenode.rpc-address.<ns>.<nn>), in their order; a federated
// nameservice's (dfs.namenode.rpc-address.<ns>); else host:8020.
func (l *inputLocator) nameNodeAddrs(authority string) ([]string, error) {
	if h, p, err := net.SplitHostPort(authority); err == nil {
		return []string{net.JoinHostPort(h, p)}, nil
	}
	ns := authority
	if ids, ok := l.conf.Raw("dfs.ha.namenodes." + ns); ok && strings.TrimSpace(ids) != "" {
		var addrs []string
		for _, id := range strings.Split(ids, ",") {
			key := "dfs.namenode.rpc-address." + ns + "." + strings.TrimSpace(id)
			a, err := l.conf.String(key)
			if err != nil {
				return nil, err
			}
			if strings.TrimSpace(a) == "" {
				return nil, l.conf.Errorf(key, "is not set: NameNode %s of nameservice %s (dfs.ha.namenodes.%s) needs its address", id, ns, ns)
			}
			if _, _, err := net.SplitHostPort(strings.TrimSpace(a)); err != nil {
				return nil, l.conf.Errorf(key, "%q is not host:port (the NameNode %s of nameservice %s)", a, id, ns)
			}
			addrs = append(addrs, strings.TrimSpace(a))
		}
		return addrs, nil
	}
	if a, ok := l.conf.Raw("dfs.namenode.rpc-address." + ns); ok && strings.TrimSpace(a) != "" {
		key := "dfs.namenode.rpc-address." + ns
		a, err := l.conf.String(key)
		if err != nil {
			return nil, err
		}
		if _, _, err := net.SplitHostPort(strings.TrimSpace(a)); err != nil {
			return nil, l.conf.Errorf(key, "%q is not host:port", a)
		}
		return []string{strings.TrimSpace(a)}, nil
	}
	return []string{net.JoinHostPort(strings.Trim(authority, "[]"), DefaultNameNodePort)}, nil
}

// namenode connects to the NameNode behind key, once.
func (l *inputLocator) namenode(key string, addrs []string) (*namenode, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errors.New("gave up on the NameNodes")
	}
	if nn, ok := l.nns[key]; ok {
		return nn, nil
	}
	timeout := l.timeout
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &deadlineConn{Conn: c, timeout: timeout}, nil
	}
	nn := &namenode{addrs: addrs, timeout: timeout, ipc: rpc.NewClient(addrs[0], rpc.ClientOptions{User: l.user, Protocol: ClientProtocol,
		DialTimeout: timeout, CallTimeout: timeout, Failover: addrs[1:]})}
	fc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: addrs, User: l.user, NamenodeDialFunc: dial})
	if err != nil {
		nn.ipc.Close()
		return nil, fmt.Errorf("cannot reach the NameNode at %s: %v", strings.Join(addrs, ", "), err)
	}
	nn.fs = fc
	l.nns[key] = nn
	return nn, nil
}

// deadlineConn gives every read and write on a NameNode connection a
// deadline: the HDFS client sets none, and a NameNode that accepts a
// connection and never answers would hold the AM forever.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
}

func (c *deadlineConn) Read(b []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(c.timeout))
	return c.Conn.Read(b)
}

func (c *deadlineConn) Write(b []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
	return c.Conn.Write(b)
}

// stageBlocks are the blocks of a stage's inputs, in order: the inputs as
// listed, a directory's files by path (recursively, skipping the names
// FileInputFormat hides: _SUCCESS, .crc files and the like), each file's
// blocks by offset. It stops looking blocks up after need, as no task
// reads a block past the stage's task count, and says whether it left
// any; it still checks that every input exists.
func (l *inputLocator) stageBlocks(ctx context.Context, s workload.Stage, need int) (blocks []inputBlock, files int, more bool, err error) {
	for _, in := range s.Inputs {
		key, addrs, p, err := l.resolve(in)
		if err != nil {
			return nil, 0, false, fmt.Errorf("stage %q: %w", s.Name, err)
		}
		l.mu.Lock()
		l.at = fmt.Sprintf("stage %q: input %q: the NameNode at %s", s.Name, in, strings.Join(addrs, ", "))
		l.mu.Unlock()
		nn, err := l.namenode(key, addrs)
		if err != nil {
			return nil, 0, false, inputError(s.Name, in, "%v", err)
		}
		if len(blocks) >= need {
			// Every input must exist, even one no task reads a block of.
			fi, err := nn.fs.Stat(p)
			if err != nil {
				return nil, 0, false, inputError(s.Name, in, "%v", nn.explain(err, l.user))
			}
			more = more || fi.IsDir() || fi.Size() > 0
			continue
		}
		var paths []fileLen
		if err := nn.walk(p, &paths); err != nil {
			return nil, 0, false, inputError(s.Name, in, "%v", nn.explain(err, l.user))
		}
		for _, f := range paths {
			if len(blocks) >= need {
				more = true
				break
			}
			bs, left, err := nn.blocks(ctx, f.path, f.length, need-len(blocks))
			if err != nil {
				return nil, 0, false, inputError(s.Name, in, "%s: %v", f.path, nn.explain(err, l.user))
			}
			files++
			for _, b := range bs {
				blocks = append(blocks, l.block(f.path, b))
			}
			more = more || left
		}
	}
	return blocks, files, more, nil
}

type fileLen struct {
	path   string
	length int64
}

// hidden is FileInputFormat's hiddenFileFilter.
func hidden(name string) bool { return strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".") }

// walk adds the file p, or the files under the directory p, to files.
func (nn *namenode) walk(p string, files *[]fileLen) error {
	fi, err := nn.fs.Stat(p)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		*files = append(*files, fileLen{p, fi.Size()})
		return nil
	}
	entries, err := nn.fs.ReadDir(p)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if hidden(e.Name()) {
			continue
		}
		q := path.Join(p, e.Name())
		if e.IsDir() {
			if err := nn.walk(q, files); err != nil {
				return err
			}
			continue
		}
		*files = append(*files, fileLen{q, e.Size()})
	}
	return nil
}

// blocks asks for the blocks of the file p, of length bytes, up to max of
// them, and says whether it left any; a NameNode may answer part of the
// range, so it asks again from the end of the last block it got.
func (nn *namenode) blocks(ctx context.Context, p string, length int64, max int) (out []*hdfspb.LocatedBlockProto, left bool, err error) {
	off := int64(0)
	for off < length && len(out) < max {
		resp := &hdfspb.GetBlockLocationsResponseProto{}
		req := &hdfspb.GetBlockLocationsRequestProto{Src: proto.String(p), Offset: proto.Uint64(uint64(off)), Length: proto.Uint64(uint64(length - off))}
		if err := nn.ipc.Call(ctx, ClientProtocol, "getBlockLocations", req, resp, rpc.Idempotent()); err != nil {
			return nil, false, err
		}
		if resp.Locations == nil {
			return nil, false, fs.ErrNotExist // an older NameNode's answer for a missing file
		}
		next := off
		for _, b := range resp.GetLocations().GetBlocks() {
			end := int64(b.GetOffset() + b.GetB().GetNumBytes())
			if end <= off || len(out) >= max {
				continue
			}
			out = append(out, b)
			next = end
		}
		if next == off {
			return out, false, nil // nothing more: the file is shorter than it was
		}
		off = next
	}
	return out, off < length, nil
}

// block is a located block's file, offset and replica hosts (a datanode's
// host name, as YARN's nodes are named by theirs; its address when it has
// none). A corrupt block's replicas are no place to read it.
func (l *inputLocator) block(file string, b *hdfspb.LocatedBlockProto) inputBlock {
	ib := inputBlock{file: file, offset: int64(b.GetOffset())}
	if b.GetCorrupt() {
		return ib
	}
	for _, loc := range b.GetLocs() {
		h := loc.GetId().GetHostName()
		if h == "" {
			h = loc.GetId().GetIpAddr()
		}
		if h == "" || slices.Contains(ib.hosts, h) {
			continue
		}
		if s, ok := l.intern[h]; ok {
			h = s
		} else {
			l.intern[h] = h
		}
		ib.hosts = append(ib.hosts, h)
	}
	return ib
}

// explain turns the clients' errors into what an operator acts on.
func (nn *namenode) explain(err error, user string) error {
	var re *rpc.RemoteError
	var ce *rpc.ConnError
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("the NameNode at %s did not answer within %v: %v", strings.Join(nn.addrs, ", "), nn.timeout, err)
	case errors.Is(err, fs.ErrNotExist) || errors.As(err, &re) && re.Class == "java.io.FileNotFoundException":
		return fmt.Errorf("the path does not exist on the NameNode at %s", strings.Join(nn.addrs, ", "))
	case errors.Is(err, fs.ErrPermission) || errors.As(err, &re) && re.Class == "org.apache.hadoop.security.AccessControlException":
		return fmt.Errorf("permission denied to %s on the NameNode at %s (%v)", user, strings.Join(nn.addrs, ", "), err)
	case errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		strings.Contains(err.Error(), "no available namenodes"):
		return fmt.Errorf("cannot reach the NameNode at %s: %v", strings.Join(nn.addrs, ", "), err)
	}
	return fmt.Errorf("the NameNode at %s: %v", strings.Join(nn.addrs, ", "), err)
}

// hdfsUser is who the AM is to HDFS (SIMPLE auth): HADOOP_USER_NAME, else
// the app's user the NodeManager names in USER (as MapReduce's AM takes
// it), else the process's owner.
func hdfsUser() string {
	for _, k := range []string{"HADOOP_USER_NAME", "USER"} {
		if u := os.Getenv(k); u != "" {
			return u
		}
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "loom"
}

// inputLocality is what the AM core needs of the inputs: each task's
// hosts and each host's rack.
type inputLocality struct {
	blocks [][]inputBlock // by stage
	racks  map[string]string
	rackOf func(string) string
}

func (il *inputLocality) inputs(stage, task int) []string {
	if stage < 0 || stage >= len(il.blocks) {
		return nil
	}
	return taskHosts(il.blocks[stage], task)
}

func (il *inputLocality) rack(host string) string {
	if r, ok := il.racks[host]; ok {
		return r
	}
	return il.rackOf(host)
}

// locateInputs reads where the job's inputs are, for the stages that
// name any and have tasks left (skip names the stages a recovered
// attempt found done), and places their hosts on racks. Nil when no
// stage needs it.
//
// An input that cannot be located fails the job, as a MapReduce or Tez
// job whose input path does not exist fails when its splits are
// computed: the tasks read those inputs, so a missing path or a
// NameNode out of reach is an error in the job or the cluster for the
// user to see, not a reason to run slower, and the message says which
// stage, input, path and NameNode.
func locateInputs(ctx context.Context, job *workload.Job, skip []string, conf *hadoopconf.Conf, timeout time.Duration, log zerolog.Logger) (*inputLocality, error) {
	some := false
	for _, s := range job.Stages {
		some = some || len(s.Inputs) > 0 && !slices.Contains(skip, s.Name)
	}
	if !some {
		return nil, nil
	}
	if timeout <= 0 {
		timeout = DefaultInputTimeout
	}
	if conf == nil {
		conf = hadoopconf.New(nil)
		if err := conf.LoadDir(hadoopconf.Dir(""), "core-site.xml", "hdfs-site.xml"); err != nil {
			return nil, fmt.Errorf("reading the Hadoop configuration for the job's inputs: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	// One call gets half the time at most (20 s, Hadoop's
	// ipc.client.connect.timeout), so that a NameNode that does not
	// answer is named by the call that waited for it.
	l := newInputLocator(conf, hdfsUser(), min(timeout/2, 20*time.Second))
	type result struct {
		il  *inputLocality
		err error
	}
	done := make(chan result, 1)
	go func() {
		il := &inputLocality{blocks: make([][]inputBlock, len(job.Stages))}
		for i, s := range job.Stages {
			if len(s.Inputs) == 0 || slices.Contains(skip, s.Name) {
				continue
			}
			blocks, files, more, err := l.stageBlocks(ctx, s, s.Tasks)
			if err != nil {
				done <- result{err: err}
				return
			}
			il.blocks[i] = blocks
			logStage(log, s, blocks, files, more)
		}
		done <- result{il: il}
	}()
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		l.close() // ends the calls in flight
		<-done
		l.mu.Lock()
		at := l.at
		l.mu.Unlock()
		res.err = fmt.Errorf("%s: learning where the job's inputs are took longer than the AM allows, %v (%w)", at, timeout, ctx.Err())
	}
	l.close()
	if res.err != nil {
		return nil, res.err
	}
	il := res.il
	il.racks, il.rackOf = racksOf(conf, il.blocks, log)
	log.Info().Dur("took", time.Since(start).Round(time.Millisecond)).Int("hosts", len(il.racks)).
		Msg("located the job's inputs: tasks ask for their blocks' hosts")
	return il, nil
}

// logStage says how a stage's tasks map onto its blocks, and warns where
// that is not one block per task.
func logStage(log zerolog.Logger, s workload.Stage, blocks []inputBlock, files int, more bool) {
	ev := log.Info()
	msg := fmt.Sprintf("stage %s: its %d tasks read one block each", s.Name, s.Tasks)
	switch {
	case len(blocks) == 0:
		ev, msg = log.Warn(), fmt.Sprintf("stage %s: its inputs have no blocks (empty files): its tasks run anywhere", s.Name)
	case len(blocks) < s.Tasks:
		ev, msg = log.Warn(), fmt.Sprintf("stage %s: %d tasks over %d blocks: task i reads block i mod %d, so tasks %d to %d read blocks others read too",
			s.Name, s.Tasks, len(blocks), len(blocks), len(blocks), s.Tasks-1)
	case more:
		ev, msg = log.Warn(), fmt.Sprintf("stage %s: its %d tasks read the first %d blocks of its inputs, and no task the rest: "+
			"give it as many tasks as blocks to read them all", s.Name, s.Tasks, s.Tasks)
	}
	ev.Strs("inputs", s.Inputs).Int("files", files).Int("blocks_located", len(blocks)).Msg(msg)
}

// racksOf places every block host on its rack with the AM's topology
// configuration (net.topology.*, as the RM places nodes), resolving them
// all at once. Where the topology cannot be read or a host not placed,
// the host is on /default-rack and a warning says why: racks only refine
// the requests.
func racksOf(conf *hadoopconf.Conf, blocks [][]inputBlock, log zerolog.Logger) (map[string]string, func(string) string) {
	var hosts []string
	seen := map[string]bool{}
	for _, bs := range blocks {
		for _, b := range bs {
			for _, h := range b.hosts {
				if !seen[h] {
					seen[h] = true
					hosts = append(hosts, h)
				}
			}
		}
	}
	res, err := topology.New(conf)
	if err != nil {
		log.Warn().Err(err).Msg("cannot read the rack topology: every input host is on " + topology.DefaultRack)
		racks := map[string]string{}
		for _, h := range hosts {
			racks[h] = topology.DefaultRack
		}
		return racks, func(string) string { return topology.DefaultRack }
	}
	racks := map[string]string{}
	got, err := res.Resolve(hosts)
	if err != nil {
		log.Warn().Err(err).Msg("could not place some input hosts on racks")
	}
	for i, h := range hosts {
		racks[h] = got[i]
	}
	return racks, func(h string) string {
		r, err := res.Rack(h)
		if err != nil {
			log.Warn().Err(err).Str("host", h).Msg("could not place a host on its rack")
		}
		return r
	}
}
