package driver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/internal/topology"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/namenodetest"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/workload"
)

// TestTaskHosts: task i reads block i mod n, by hand.
func TestTaskHosts(t *testing.T) {
	blocks := []inputBlock{{hosts: []string{"h1", "h2"}}, {hosts: []string{"h3"}}, {}}
	want := [][]string{{"h1", "h2"}, {"h3"}, nil, {"h1", "h2"}, {"h3"}, nil, {"h1", "h2"}}
	for task, w := range want {
		if got := taskHosts(blocks, task); !slices.Equal(got, w) {
			t.Errorf("task %d reads on %v, want %v", task, got, w)
		}
	}
	if got := taskHosts(nil, 3); got != nil {
		t.Errorf("a stage without blocks: task 3 on %v", got)
	}
}

// warehouse is a NameNode holding a table directory (two data files, a
// subdirectory, the files FileInputFormat hides), a file and an empty
// file; it answers one block per getBlockLocations and two entries per
// getListing, so that the AM has to ask again for the rest.
func warehouse(t *testing.T) *namenodetest.NameNode {
	t.Helper()
	nn, err := namenodetest.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nn.Close() })
	nn.MaxBlocks, nn.ListLimit = 1, 2
	mb := int64(1 << 20)
	nn.AddFile("/warehouse/lineitem/part-00000", namenodetest.Block{Length: 128 * mb, Hosts: []string{"dnA", "dnB"}},
		namenodetest.Block{Length: 10 * mb, Hosts: []string{"dnB", "dnC"}})
	nn.AddFile("/warehouse/lineitem/part-00001", namenodetest.Block{Length: 5 * mb, Hosts: []string{"dnC", "dnA"}})
	nn.AddFile("/warehouse/lineitem/_SUCCESS")
	nn.AddFile("/warehouse/lineitem/.part-00000.crc", namenodetest.Block{Length: 1024, Hosts: []string{"dnZ"}})
	nn.AddFile("/warehouse/lineitem/sub/part-00002", namenodetest.Block{Length: mb, Hosts: []string{"dnD"}})
	nn.AddFile("/dim/d.csv", namenodetest.Block{Length: mb, Hosts: []string{"dnA"}})
	nn.AddFile("/empty")
	return nn
}

// clusterConf is a client configuration: fs.defaultFS on nn, racks from
// a topology table (dnA and dnB on /r1, dnC on /r2, dnD in none).
func clusterConf(t *testing.T, nn *namenodetest.NameNode) *hadoopconf.Conf {
	t.Helper()
	table := filepath.Join(t.TempDir(), "topology.table")
	if err := os.WriteFile(table, []byte("dnA /r1\ndnB /r1\ndnC /r2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := hadoopconf.New(nil)
	c.Set("fs.defaultFS", "hdfs://"+nn.Addr)
	c.Set(topology.KeyImpl, topology.TableMapping)
	c.Set(topology.KeyTable, table)
	return c
}

func job(stages ...workload.Stage) *workload.Job {
	for i := range stages {
		stages[i].Demand, stages[i].Duration = fairness.New(1024, 1), time.Second
	}
	return &workload.Job{Name: "q", Stages: stages}
}

// TestLocateInputs: a stage's blocks are its inputs' in order (the
// table's files by path, hidden ones skipped, its subdirectory's too,
// then the file given by path on fs.defaultFS), and its tasks take them
// in turn; a stage of fewer tasks than blocks looks up only as many; a
// stage without inputs has none. The hosts' racks come from the
// topology table.
func TestLocateInputs(t *testing.T) {
	nn := warehouse(t)
	t.Setenv("HADOOP_USER_NAME", "etl")
	j := job(
		workload.Stage{Name: "scan", Tasks: 6, Inputs: []string{"hdfs://" + nn.Addr + "/warehouse/lineitem", "/dim/d.csv", "hdfs:///empty"}},
		workload.Stage{Name: "head", Tasks: 2, Inputs: []string{"/warehouse/lineitem/"}},
		workload.Stage{Name: "agg", Tasks: 1, Parents: []string{"scan"}},
		workload.Stage{Name: "done", Tasks: 1, Inputs: []string{"/gone"}},
	)
	il, err := locateInputs(context.Background(), j, []string{"done"}, clusterConf(t, nn), 10*time.Second, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	// scan: part-00000's two blocks, part-00001's, sub/part-00002's,
	// d.csv's; task 5 wraps to block 0.
	want := map[int][][]string{
		0: {{"dnA", "dnB"}, {"dnB", "dnC"}, {"dnC", "dnA"}, {"dnD"}, {"dnA"}, {"dnA", "dnB"}},
		1: {{"dnA", "dnB"}, {"dnB", "dnC"}},
		2: {nil},
		3: {nil}, // a stage a recovered attempt found done is not looked up
	}
	for stage, tasks := range want {
		for task, w := range tasks {
			if got := il.inputs(stage, task); !slices.Equal(got, w) {
				t.Errorf("stage %d task %d reads on %v, want %v", stage, task, got, w)
			}
		}
	}
	for host, rack := range map[string]string{"dnA": "/r1", "dnB": "/r1", "dnC": "/r2", "dnD": topology.DefaultRack} {
		if got := il.rack(host); got != rack {
			t.Errorf("%s is on %s, want %s", host, got, rack)
		}
	}
	// scan: one call for each of the 4 files with blocks, one more for
	// part-00000's second block (answered one at a time), none for the
	// empty file; head: part-00000's two blocks, and no more.
	if got := nn.Calls("getBlockLocations"); got != 5+2 {
		t.Errorf("%d getBlockLocations calls, want 7", got)
	}
	if u := nn.Users(); !slices.Equal(u, []string{"etl"}) {
		t.Errorf("the NameNode was called by %v, want etl (HADOOP_USER_NAME)", u)
	}
}

// TestLocateInputsErrors: an input that cannot be located fails with a
// message naming the stage, the input and the NameNode, in bounded time.
func TestLocateInputsErrors(t *testing.T) {
	nn := warehouse(t)
	closed := func() string {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		defer ln.Close()
		return ln.Addr().String()
	}()
	hung, err := namenodetest.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	hung.Hang(true)
	slow, err := namenodetest.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	for i := range 4 {
		slow.AddFile(fmt.Sprintf("/t/part-%d", i), namenodetest.Block{Length: 10, Hosts: []string{"dnA"}})
	}
	slow.Delay = 300 * time.Millisecond // each under a call's 1 s, all over the AM's 2 s
	tests := []struct {
		name   string
		inputs []string
		tasks  int
		conf   func(*hadoopconf.Conf)
		want   string
	}{
		{"a missing path", []string{"/warehouse/orders"}, 2, nil,
			`stage "scan": input "/warehouse/orders": the path does not exist on the NameNode at ` + nn.Addr},
		{"a missing path after enough blocks", []string{"/dim/d.csv", "hdfs://" + nn.Addr + "/nope"}, 1, nil,
			`stage "scan": input "hdfs://` + nn.Addr + `/nope": the path does not exist`},
		{"a path with no fs.defaultFS", []string{"/dim/d.csv"}, 1, func(c *hadoopconf.Conf) { c.Set("fs.defaultFS", "file:///") },
			`stage "scan": input "/dim/d.csv" names no NameNode, and fs.defaultFS (file:///) is not an hdfs://namenode:port URI`},
		{"a NameNode that is not there", []string{"hdfs://" + closed + "/x"}, 1, nil,
			`stage "scan": input "hdfs://` + closed + `/x": cannot reach the NameNode at ` + closed},
		{"a NameNode that never answers", []string{"hdfs://" + hung.Addr + "/x"}, 1, nil,
			`stage "scan": input "hdfs://` + hung.Addr + `/x": the NameNode at ` + hung.Addr + ` did not answer within 1s`},
		{"a NameNode too slow for all the calls", []string{"hdfs://" + slow.Addr + "/t"}, 4, nil,
			`stage "scan": input "hdfs://` + slow.Addr + `/t": the NameNode at ` + slow.Addr + `: learning where the job's inputs are took longer than the AM allows, 2s`},
		{"an HA nameservice without its NameNode's address", []string{"hdfs://prod/x"}, 1,
			func(c *hadoopconf.Conf) {
				c.Set("dfs.ha.namenodes.prod", "nn1,nn2")
				c.Set("dfs.namenode.rpc-address.prod.nn1", nn.Addr)
			},
			`stage "scan": input "hdfs://prod/x": default: dfs.namenode.rpc-address.prod.nn2: is not set: NameNode nn2 of nameservice prod`},
		{"a bad input", []string{"s3a://bucket/t"}, 1, nil, `stage "scan": input "s3a://bucket/t": scheme "s3a" is not HDFS`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := clusterConf(t, nn)
			if tc.conf != nil {
				tc.conf(c)
			}
			start := time.Now()
			il, err := locateInputs(context.Background(), job(workload.Stage{Name: "scan", Tasks: tc.tasks, Inputs: tc.inputs}), nil, c, 2*time.Second, zerolog.Nop())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("locateInputs = %v, %v; want an error saying %q", il, err, tc.want)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v to fail (timeout 2s)", took)
			}
			t.Log(err)
		})
	}
}

// TestLocateInputsHA: an HA nameservice's NameNodes are tried in turn;
// the first is down.
func TestLocateInputsHA(t *testing.T) {
	nn := warehouse(t)
	down := func() string {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		defer ln.Close()
		return ln.Addr().String()
	}()
	c := clusterConf(t, nn)
	c.Set("fs.defaultFS", "hdfs://prod")
	c.Set("dfs.ha.namenodes.prod", "nn1, nn2")
	c.Set("dfs.namenode.rpc-address.prod.nn1", down)
	c.Set("dfs.namenode.rpc-address.prod.nn2", nn.Addr)
	il, err := locateInputs(context.Background(), job(workload.Stage{Name: "scan", Tasks: 1, Inputs: []string{"/dim/d.csv"}}), nil, c, 10*time.Second, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if got := il.inputs(0, 0); !slices.Equal(got, []string{"dnA"}) {
		t.Errorf("task 0 reads on %v, want dnA", got)
	}
}

// askRM answers allocate calls with no containers, records them, and
// records the finish.
type askRM struct {
	mu     sync.Mutex
	asks   [][]string
	finish *pb.FinishApplicationMasterRequestProto
}

func (f *askRM) start(t *testing.T) string {
	srv := rpc.NewServer(rpc.ServerOptions{})
	srv.Register(rpc.Protocol{Name: rpc.ApplicationMasterProtocol, Methods: []rpc.Method{
		rpc.Unary("allocate", func(ctx context.Context, req *pb.AllocateRequestProto) (*pb.AllocateResponseProto, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.asks = append(f.asks, wire(t, req))
			return &pb.AllocateResponseProto{ResponseId: proto.Int32(req.GetResponseId() + 1)}, nil
		}),
		rpc.Unary("finishApplicationMaster", func(ctx context.Context, req *pb.FinishApplicationMasterRequestProto) (*pb.FinishApplicationMasterResponseProto, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.finish = req
			return &pb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(true)}, nil
		})}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestRunAsksWhereTheInputsAre: the AM process reads its stage's block
// locations and asks for their hosts and racks beside the "*" ask. By
// hand, for scan's 3 tasks on part-00000's two blocks ({dnA,dnB},
// {dnB,dnC}) and part-00001's ({dnC,dnA}): dnA 2, dnB 2, dnC 2; each
// task once on each rack it has a replica on (dnA and dnB on /r1, dnC on
// /r2): /r1 3, /r2 2.
func TestRunAsksWhereTheInputsAre(t *testing.T) {
	nn := warehouse(t)
	rm := &askRM{}
	cl := Dial(Launch{Addr: rm.start(t), Attempt: "appattempt_1700000000000_0001_000001"})
	defer cl.Close()
	d, err := am.NewDAG(job(workload.Stage{Name: "scan", Tasks: 3, Inputs: []string{"/warehouse/lineitem"}}), am.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Client: cl, DAG: d, Log: zerolog.Nop(), HadoopConf: clusterConf(t, nn), Tick: 10 * time.Millisecond}
	// The deadline may end the run in its main loop or inside an
	// allocate call (CI saw the second): either is "until stopped".
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.Run(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v, want it to run until stopped", err)
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	// The first call has no asks (the AM's first contact); the second
	// asks for every task and where.
	if len(rm.asks) < 3 {
		t.Fatalf("%d allocate calls", len(rm.asks))
	}
	want := []string{"0 * 3", "0 /r1 3", "0 /r2 2", "0 dnA 2", "0 dnB 2", "0 dnC 2"}
	if diff := cmp.Diff(want, rm.asks[1]); diff != "" {
		t.Errorf("asks (-want +got):\n%s", diff)
	}
	if rm.asks[2] != nil && !slices.Equal(rm.asks[2], []string{"0 * 3"}) {
		t.Errorf("the next call asked %v, want the * ask alone (nothing changed)", rm.asks[2])
	}
}

// TestRunFailsAJobWhoseInputIsMissing: the job fails at once, before it
// asks for anything, with the stage, input and NameNode in its
// diagnostics and its history.
func TestRunFailsAJobWhoseInputIsMissing(t *testing.T) {
	nn := warehouse(t)
	rm := &askRM{}
	cl := Dial(Launch{Addr: rm.start(t), Attempt: "appattempt_1700000000000_0001_000001"})
	defer cl.Close()
	d, err := am.NewDAG(job(workload.Stage{Name: "scan", Tasks: 3, Inputs: []string{"/warehouse/orders"}}), am.Config{})
	if err != nil {
		t.Fatal(err)
	}
	history := filepath.Join(t.TempDir(), "h.json")
	r := &Runner{Client: cl, DAG: d, Log: zerolog.Nop(), HadoopConf: clusterConf(t, nn), HistoryPath: history}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = r.Run(ctx)
	want := fmt.Sprintf(`stage "scan": input "/warehouse/orders": the path does not exist on the NameNode at %s`, nn.Addr)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run = %v, want %q", err, want)
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if len(rm.asks) != 0 {
		t.Errorf("asked %v for a job that cannot run", rm.asks)
	}
	if rm.finish.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_FAILED || !strings.Contains(rm.finish.GetDiagnostics(), want) {
		t.Errorf("finished %v %q, want FAILED saying %q", rm.finish.GetFinalApplicationStatus(), rm.finish.GetDiagnostics(), want)
	}
	if h := readHistory(t, history); !strings.Contains(h.Diagnostics, want) {
		t.Errorf("history diagnostics %q, want %q", h.Diagnostics, want)
	}
}

// BenchmarkLocateInputs: a table of 1,000 one-block files, 3 replicas
// over 100 hosts, for a stage of 1,000 tasks, on the loopback NameNode
// stand-in: one getFileInfo and a paged listing for the directory, one
// getBlockLocations per file.
func BenchmarkLocateInputs(b *testing.B) {
	nn, err := namenodetest.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer nn.Close()
	for i := range 1000 {
		nn.AddFile(fmt.Sprintf("/t/part-%05d", i), namenodetest.Block{Length: 128 << 20,
			Hosts: []string{fmt.Sprintf("dn%d", i%100), fmt.Sprintf("dn%d", (i+1)%100), fmt.Sprintf("dn%d", (i+2)%100)}})
	}
	c := hadoopconf.New(nil)
	c.Set("fs.defaultFS", "hdfs://"+nn.Addr)
	j := job(workload.Stage{Name: "scan", Tasks: 1000, Inputs: []string{"/t"}})
	for b.Loop() {
		il, err := locateInputs(context.Background(), j, nil, c, time.Minute, zerolog.Nop())
		if err != nil || len(il.blocks[0]) != 1000 {
			b.Fatal(err)
		}
	}
}
