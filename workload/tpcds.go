package workload

import (
	"embed"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The TPC-DS catalogue: a stage DAG for each of the 103 TPC-DS v1.4 queries
// (q1..q99, with a/b variants of q14, q23, q24 and q39), cut from the
// physical plans that Spark's plan-stability suite approves
// (data/tpcds/README.md), and sized by the model below. docs/tpcds.md
// explains the derivation for users; this comment keeps every number next
// to its source.
//
// Stage cutting (tpcds_plan.go) follows Spark's DAG scheduler: every
// Exchange and BroadcastExchange ends a stage, a ReusedExchange reads an
// existing stage's output, and Subquery/SubqueryBroadcast blocks run before
// the stage that holds them.
//
// Sizing:
//
//   - Table bytes = rows × average row width. Rows per table and scale
//     factor are the TPC-DS specification's (Clause 3, database row
//     counts), listed in tpcdsRows. The copies of the specification we
//     could search give no per-table average row size (TPC-H's does, in its
//     Table 3; TPC-DS's does not), so the widths are Spark's own: the
//     sizeInBytes/rowCount of each table in Spark's TPCDSTableStats.scala
//     (sf100TableStats, "extracted from generated TPCDS data with SF=100"),
//     which is 8 bytes a row plus the measured average length of every
//     column. The quotients are exact integers; see tpcdsRowWidth.
//   - A table scan gives one partition per 128 MiB input split
//     (spark.sql.files.maxPartitionBytes): ceil(table bytes / 128 MiB), at
//     least 1.
//   - A keyed Exchange has min(200, tasks of the stage that writes it)
//     partitions: 200 is spark.sql.shuffle.partitions, and a writer with
//     few tasks writes little data, which adaptive execution would coalesce
//     into few partitions. A keyless Exchange (Spark prints no keys for a
//     single partition) has 1.
//   - A stage's task count follows the partitioning through its operators,
//     as an RDD's follows its lineage (planPart, tpcdsPartitions): a Union
//     adds its inputs' partitions, any other operator with several inputs
//     (a join) takes the widest, a broadcast input adds none. A stage that
//     reads neither a table nor a shuffle runs 1 task.
//   - Scan task duration = the task's bytes / tpcdsScanBytesPerSec, with
//     the rate measured on TPC-H: see tpcdsScanBytesPerSec.
//   - A task that scans nothing runs tpcdsShuffleTaskDuration, measured on
//     TPC-H: see there.
//   - No task is shorter than tpcdsMinTaskDuration.
//   - Demands come from TaskDemand (demand.go), the package's one demand
//     model.

const (
	// tpcdsSplitBytes is spark.sql.files.maxPartitionBytes' default.
	tpcdsSplitBytes = 128 << 20
	// tpcdsShufflePartitions is spark.sql.shuffle.partitions' default.
	tpcdsShufflePartitions = 200

	// tpcdsScanBytesPerSec is the rate at which one task scans table
	// bytes, calibrated on the measured TPC-H runs
	// (data/tpch/cloudlab_profiles.json, maxCores_50 profiles) of Q1 and
	// Q6, the two queries that only scan lineitem. For each of the 8
	// (query, scale) runs: bytes per task = SF × 6,001,215 rows × 112 B
	// (the TPC-H specification's typical lineitem row, clause 4.2.5
	// Table 3, which lists 641 MB for SF 1: 6,001,215 × 112 B = 641 MiB)
	// / the scan stage's task count, and rate = bytes per task / the
	// stage's mean task runtime. The 8 rates run from 11.67 to 19.89 MB/s;
	// their median (nearest rank, as Percentile computes it) is Q1 at 250g:
	// 250 × 6,001,215 × 112 B / 1499 tasks = 112,097,412 B a task, in a
	// mean 8368.587 ms: 13,395,022 B/s. A full 128 MiB split so takes
	// 134,217,728 / 13,395,022 = 10.02 s. TestTPCDSCalibration recomputes
	// this from the data.
	tpcdsScanBytesPerSec = 13_395_022

	// tpcdsShuffleTaskDuration is the median (nearest rank) of the mean
	// task runtimes of the 356 non-root stages (stages with a parent in
	// data/tpch/queries.yaml) of the 88 maxCores_50 TPC-H profiles: 462.5
	// ms. The README there warns that profile stages map to graph nodes
	// only approximately (profiles list stages longest first), which biases
	// this low; TestTPCDSCalibration recomputes it.
	tpcdsShuffleTaskDuration = 462500 * time.Microsecond

	// tpcdsMinTaskDuration is the shortest mean task runtime in any
	// maxCores_50 TPC-H profile: 53 ms. It stands for Spark's fixed cost
	// of a task (launch, file open), so that a scan of a 20-row table is
	// not a microsecond.
	tpcdsMinTaskDuration = 53 * time.Millisecond
)

// tpcdsScaleList holds the supported scale factors, in GB.
var tpcdsScaleList = []int{1, 100, 1000, 3000}

// tpcdsRows is the row count of every table at scale factors 1, 100, 1000
// and 3000 (the order of tpcdsScaleList), from the TPC-DS specification's
// table of database row counts (Clause 3); the SF 100 counts equal the
// rowCount of Spark's TPCDSTableStats.
var tpcdsRows = map[string][4]int64{
	"income_band":            {20, 20, 20, 20},
	"ship_mode":              {20, 20, 20, 20},
	"warehouse":              {5, 15, 20, 22},
	"reason":                 {35, 55, 65, 67},
	"web_site":               {30, 24, 54, 66},
	"call_center":            {6, 30, 42, 48},
	"store":                  {12, 402, 1002, 1350},
	"promotion":              {300, 1000, 1500, 1800},
	"household_demographics": {7200, 7200, 7200, 7200},
	"web_page":               {60, 2040, 3000, 3600},
	"catalog_page":           {11718, 20400, 30000, 36000},
	"time_dim":               {86400, 86400, 86400, 86400},
	"date_dim":               {73049, 73049, 73049, 73049},
	"item":                   {18000, 204000, 300000, 360000},
	"customer_demographics":  {1920800, 1920800, 1920800, 1920800},
	"customer_address":       {50000, 1000000, 6000000, 15000000},
	"customer":               {100000, 2000000, 12000000, 30000000},
	"web_returns":            {71763, 7197670, 71997522, 216003761},
	"catalog_returns":        {144067, 14404374, 143996756, 432018033},
	"store_returns":          {287514, 28795080, 287999764, 863989652},
	"inventory":              {11745000, 399330000, 783000000, 1033560000},
	"web_sales":              {719384, 72001237, 720000376, 2159968881},
	"catalog_sales":          {1441548, 143997065, 1439980416, 4320078880},
	"store_sales":            {2880404, 287997024, 2879987999, 8639936081},
}

// tpcdsRowWidth is each table's average row width in bytes: sizeInBytes /
// rowCount in Spark's TPCDSTableStats.sf100TableStats
// (sql/core/src/test/scala/org/apache/spark/sql/TPCDSTableStats.scala),
// e.g. store_sales 42,623,559,552 / 287,997,024 = 148. These are widths of
// decoded rows, not of compressed Parquet, so splits here are what the data
// would take uncompressed (see docs/tpcds.md, known gaps).
var tpcdsRowWidth = map[string]int64{
	"call_center":            534, // 16,020 / 30
	"catalog_page":           185, // 3,774,000 / 20,400
	"catalog_returns":        152, // 2,189,464,848 / 14,404,374
	"catalog_sales":          204, // 29,375,401,260 / 143,997,065
	"customer":               250, // 500,000,000 / 2,000,000
	"customer_address":       245, // 245,000,000 / 1,000,000
	"customer_demographics":  95,  // 182,476,000 / 1,920,800
	"date_dim":               264, // 19,284,936 / 73,049
	"household_demographics": 44,  // 316,800 / 7,200
	"income_band":            20,  // 400 / 20
	"inventory":              24,  // 9,583,920,000 / 399,330,000
	"item":                   462, // 94,248,000 / 204,000
	"promotion":              268, // 268,000 / 1,000
	"reason":                 66,  // 3,630 / 55
	"ship_mode":              121, // 2,420 / 20
	"store":                  516, // 207,432 / 402
	"store_returns":          168, // 4,837,573,440 / 28,795,080
	"store_sales":            148, // 42,623,559,552 / 287,997,024
	"time_dim":               126, // 10,886,400 / 86,400
	"warehouse":              257, // 3,855 / 15
	"web_page":               138, // 281,520 / 2,040
	"web_returns":            200, // 1,439,534,000 / 7,197,670
	"web_sales":              204, // 14,688,252,348 / 72,001,237
	"web_site":               490, // 11,760 / 24
}

//go:embed data/tpcds/*.simplified.txt
var tpcdsPlans embed.FS

const tpcdsPlanDir = "data/tpcds"
const tpcdsPlanSuffix = ".simplified.txt"

// TPCDSScales returns the supported scale factors (GB): 1, 100, 1000, 3000.
func TPCDSScales() []int { return slices.Clone(tpcdsScaleList) }

// TPCDSQueries returns the query names in natural order: "q1", "q2", ...,
// "q14a", "q14b", ..., "q99".
func TPCDSQueries() []string { return slices.Clone(tpcdsQueryList()) }

// tpcdsQueryList lists the embedded plans once.
var tpcdsQueryList = sync.OnceValue(func() []string {
	entries, err := tpcdsPlans.ReadDir(tpcdsPlanDir)
	if err != nil {
		// The directory is embedded at build time; it cannot be missing.
		return nil
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), tpcdsPlanSuffix); ok {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, tpcdsCompareQueries)
	return names
})

// tpcdsCompareQueries orders "q9" before "q10" and "q14a" before "q14b".
func tpcdsCompareQueries(a, b string) int {
	na, sa := tpcdsSplitQuery(a)
	nb, sb := tpcdsSplitQuery(b)
	if na != nb {
		return na - nb
	}
	return strings.Compare(sa, sb)
}

func tpcdsSplitQuery(q string) (int, string) {
	s := strings.TrimPrefix(q, "q")
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, _ := strconv.Atoi(s[:i])
	return n, s[i:]
}

// tpcdsScaleIndex returns the index of a scale factor in tpcdsScaleList.
func tpcdsScaleIndex(sf int) (int, error) {
	if i := slices.Index(tpcdsScaleList, sf); i >= 0 {
		return i, nil
	}
	return 0, fmt.Errorf("unsupported TPC-DS scale factor %d (valid: %s)", sf, tpcdsJoinInts(tpcdsScaleList))
}

func tpcdsJoinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// tpcdsTableNames lists the known tables, sorted, for error messages.
func tpcdsTableNames() []string {
	names := make([]string, 0, len(tpcdsRows))
	for n := range tpcdsRows {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// tpcdsEntry is one cached query: its job or why it failed.
type tpcdsEntry struct {
	job *Job
	err error
}

// tpcdsCatalogs parses every plan at one scale on first use, so that the
// 103 plans are read once per scale however often TPCDS is called.
var tpcdsCatalogs = func() map[int]func() map[string]tpcdsEntry {
	m := make(map[int]func() map[string]tpcdsEntry, len(tpcdsScaleList))
	for _, sf := range tpcdsScaleList {
		m[sf] = sync.OnceValue(func() map[string]tpcdsEntry { return tpcdsLoadScale(sf) })
	}
	return m
}()

func tpcdsLoadScale(sf int) map[string]tpcdsEntry {
	out := make(map[string]tpcdsEntry)
	for _, q := range tpcdsQueryList() {
		var e tpcdsEntry
		data, err := tpcdsPlans.ReadFile(tpcdsPlanDir + "/" + q + tpcdsPlanSuffix)
		if err != nil {
			e.err = fmt.Errorf("TPC-DS %s: %w", q, err)
		} else {
			e.job, e.err = ParseSparkPlan(tpcdsJobName(q, sf), string(data), sf)
		}
		out[q] = e
	}
	return out
}

func tpcdsJobName(q string, sf int) string { return fmt.Sprintf("tpcds-%s-sf%d", q, sf) }

// TPCDS returns the stage DAG of one query at a scale factor. Job.Name is
// e.g. "tpcds-q14a-sf100", Queue "default", Weight 1, Arrival 0. Each call
// returns a fresh copy.
func TPCDS(query string, scaleFactor int) (*Job, error) {
	if _, err := tpcdsScaleIndex(scaleFactor); err != nil {
		return nil, err
	}
	e, ok := tpcdsCatalogs[scaleFactor]()[query]
	if !ok {
		return nil, fmt.Errorf("unknown TPC-DS query %q (valid: %s)", query, strings.Join(tpcdsQueryList(), ", "))
	}
	if e.err != nil {
		return nil, e.err
	}
	return e.job.Clone(), nil
}

// ParseSparkPlan cuts a Spark simplified physical plan (the text format of
// the data files) into stages and sizes them for a TPC-DS scale factor.
// Every problem is returned as an error naming the line it is on.
func ParseSparkPlan(name string, plan string, scaleFactor int) (*Job, error) {
	sfi, err := tpcdsScaleIndex(scaleFactor)
	if err != nil {
		return nil, err
	}
	wrap := func(err error) error { return fmt.Errorf("plan %q: %w", name, err) }
	lines, err := planParseLines(plan)
	if err != nil {
		return nil, wrap(err)
	}
	cut, err := planCutStages(lines)
	if err != nil {
		return nil, wrap(err)
	}
	job, err := tpcdsSize(name, cut, sfi)
	if err != nil {
		return nil, wrap(err)
	}
	return job, nil
}

// tpcdsSize turns a cut plan into a job: the graph first (so that cycles
// through reused exchanges are caught and parents are sized before their
// children), then tasks, durations and demands.
func tpcdsSize(name string, cut *planCut, sfi int) (*Job, error) {
	job := &Job{Name: name, Queue: "default", Weight: 1, Stages: make([]Stage, len(cut.stages))}
	isShuffle := func(i int) bool { return cut.stages[i].kind == planOpExchange }
	for i, s := range cut.stages {
		st := Stage{Name: s.name, Tasks: 1, Duration: tpcdsMinTaskDuration}
		for _, p := range cut.parents[i] {
			st.Parents = append(st.Parents, cut.stages[p].name)
		}
		shape := StageShape{Scans: len(s.scans) > 0, Inputs: len(cut.dataParents[i])}
		for _, p := range cut.dataParents[i] {
			shape.Shuffles = shape.Shuffles || isShuffle(p)
		}
		st.Demand = TaskDemand(shape)
		job.Stages[i] = st
	}
	g, err := job.Graph()
	if err != nil {
		return nil, err
	}
	for _, i := range g.Order {
		s := cut.stages[i]
		var scanBytes float64
		scanTasks := 0
		for _, table := range s.scans {
			b := tpcdsTableBytes(table, sfi)
			scanBytes += b
			scanTasks += tpcdsSplits(b)
		}
		reads := false
		for _, p := range cut.dataParents[i] {
			reads = reads || isShuffle(p)
		}
		st := &job.Stages[i]
		st.Tasks = max(1, tpcdsPartitions(cut.parts[i], job, cut, sfi))
		d := time.Duration(0)
		if scanTasks > 0 {
			d = time.Duration(scanBytes / float64(scanTasks) / tpcdsScanBytesPerSec * float64(time.Second))
		}
		if scanTasks == 0 || reads {
			d = max(d, tpcdsShuffleTaskDuration)
		}
		st.Duration = max(d, tpcdsMinTaskDuration)
	}
	return job, nil
}

// tpcdsTableBytes is a table's size at the scale factor with index sfi.
func tpcdsTableBytes(table string, sfi int) float64 {
	return float64(tpcdsRows[table][sfi]) * float64(tpcdsRowWidth[table])
}

// tpcdsSplits is the number of input splits of a file of b bytes.
func tpcdsSplits(b float64) int {
	return max(1, int(math.Ceil(b/tpcdsSplitBytes)))
}

// tpcdsPartitions evaluates a partitioning expression: the number of tasks
// of the stage it belongs to, 0 when it reads neither a table nor a
// shuffle. Shuffle leaves name stages sized before (they are parents).
func tpcdsPartitions(p *planPart, job *Job, cut *planCut, sfi int) int {
	if p == nil {
		return 0
	}
	switch p.op {
	case planPartScan:
		return tpcdsSplits(tpcdsTableBytes(p.table, sfi))
	case planPartShuffle:
		x := cut.stages[p.stage]
		switch {
		case x.kind != planOpExchange:
			return 0 // a broadcast: every task gets all of it
		case x.keyed:
			return min(tpcdsShufflePartitions, job.Stages[p.stage].Tasks)
		default:
			return 1
		}
	}
	n := 0
	for _, k := range p.kids {
		m := tpcdsPartitions(k, job, cut, sfi)
		if p.op == planPartUnion {
			n += m
		} else {
			n = max(n, m)
		}
	}
	return n
}
