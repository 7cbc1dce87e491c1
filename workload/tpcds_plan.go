package workload

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// This file cuts a Spark "simplified" physical plan, the text format of
// Spark's plan-stability suite (one operator a line, a child indented two
// spaces deeper than its parent), into stages the way Spark's DAG scheduler
// does: every Exchange and BroadcastExchange ends a stage. The sizing of the
// stages it finds (tasks, durations, demands) lives in tpcds.go.

// planOpKind says how an operator line takes part in cutting.
type planOpKind int

const (
	planOpPlain planOpKind = iota
	// planOpExchange is a shuffle: the subtree below is the stage that
	// writes it.
	planOpExchange
	planOpBroadcast
	planOpReusedExchange
	// planOpSubquery covers Subquery and SubqueryBroadcast: both are run
	// before the stage that holds them, and share Spark's subquery ids.
	planOpSubquery
	planOpReusedSubquery
)

// planKinds maps the operator names that carry an id to their roles.
var planKinds = map[string]planOpKind{
	"Exchange":          planOpExchange,
	"BroadcastExchange": planOpBroadcast,
	"ReusedExchange":    planOpReusedExchange,
	"Subquery":          planOpSubquery,
	"SubqueryBroadcast": planOpSubquery,
	"ReusedSubquery":    planOpReusedSubquery,
}

// planLine is one operator of the plan.
type planLine struct {
	num   int // 1-based line number, for errors
	depth int
	op    string
	kind  planOpKind
	id    int  // the #N label of an operator with an id
	keyed bool // an Exchange with partitioning keys (not a single partition)
	table string
}

// planStage is a stage found while cutting, or a subquery that may turn out
// to be only a wrapper (see planCutter.resolve).
type planStage struct {
	name string
	// kind is planOpPlain for the result stage, else the operator that
	// started it (Exchange, BroadcastExchange or Subquery).
	kind  planOpKind
	keyed bool
	line  int
	// hasOps is set when an operator other than a stage boundary sits in
	// the stage: a subquery without any is a wrapper around its input.
	hasOps bool
	scans  []string // the tables it reads
}

// planRefKind says what an edge's source names.
type planRefKind int

const (
	planRefExchange planRefKind = iota
	planRefSubquery
)

// planEdge is a dependency found while reading: the output of the exchange
// or subquery with the given id is needed by stage to. data edges are read
// by the stage's tasks (shuffle or broadcast input); the others (subquery
// results) only order the stages.
type planEdge struct {
	ref  planRefKind
	id   int
	to   int
	data bool
	line int
	op   string
}

// planCut is a cut plan: real stages, with edges by stage index.
type planCut struct {
	stages []*planStage
	// parents[i] lists stage i's parents, in the order first met.
	parents [][]int
	// dataParents[i] is the subset whose output stage i's tasks read.
	dataParents [][]int
	// parts[i] says how stage i's task count follows from its inputs; nil
	// when it reads neither a table nor a shuffle.
	parts []*planPart
}

// planPartOp is a node of a partitioning expression.
type planPartOp int

const (
	// planPartScan is a table read: one partition per input split.
	planPartScan planPartOp = iota
	// planPartShuffle reads exchange #id: its partitions, or none for a
	// broadcast, which does not partition the stage.
	planPartShuffle
	// planPartUnion concatenates its inputs' partitions, as Spark's
	// UnionExec does.
	planPartUnion
	// planPartZip is any other operator with several inputs (a join): its
	// tasks follow the widest input (a sort-merge join's sides are
	// partitioned alike; a broadcast side adds none).
	planPartZip
)

// planPart is the partitioning of an operator's output, the way Spark
// derives an RDD's partitions from its lineage within a stage.
type planPart struct {
	op    planPartOp
	table string
	id    int // exchange id, for planPartShuffle
	stage int // the stage exchange #id resolves to, set by finish
	kids  []*planPart
}

// planCutter holds the state of one cut.
type planCutter struct {
	stages    []*planStage
	edges     []planEdge
	exchanges map[int]int // exchange id -> stage index
	subq      map[int]int // subquery id -> stage index
	// incoming[i] indexes the edges into stage i, for resolving wrappers.
	incoming map[int][]int
	// memo caches the real stages a wrapper subquery stands for.
	memo map[int][]int
	busy map[int]bool
	// parent[i] is the index of line i's parent line (-1 for the root),
	// and opened[i] the stage line i opens, or -1.
	parent []int
	opened []int
	// stageParts[i] is stage i's partitioning, by old stage index.
	stageParts map[int]*planPart
}

// planParseLines splits the plan text into operator lines and checks the
// indentation. Blank lines are skipped.
func planParseLines(plan string) ([]planLine, error) {
	var lines []planLine
	prevDepth, prevNum := -1, 0
	for i, raw := range strings.Split(plan, "\n") {
		num := i + 1
		text := strings.TrimRight(raw, " \t\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		body := strings.TrimLeft(text, " ")
		indent := len(text) - len(body)
		if body[0] == '\t' {
			return nil, fmt.Errorf("line %d: indented with a tab; indent with two spaces a level", num)
		}
		if !planStartsWithLetter(body) {
			return nil, fmt.Errorf("line %d: operator name starts with %q; expected a letter", num, body[:1])
		}
		if indent%2 != 0 {
			return nil, fmt.Errorf("line %d: indented by %d spaces; each level is two spaces", num, indent)
		}
		depth := indent / 2
		switch {
		case prevDepth < 0 && depth != 0:
			return nil, fmt.Errorf("line %d: the first operator is indented by %d spaces; the root must not be indented", num, indent)
		case prevDepth >= 0 && depth == 0:
			return nil, fmt.Errorf("line %d: a second root operator (the plan's root is on line %d); a plan has one root", num, lines[0].num)
		case depth > prevDepth+1:
			return nil, fmt.Errorf("line %d: indented %d levels deeper than line %d; a child is indented exactly one level (two spaces) more than its parent",
				num, depth-prevDepth, prevNum)
		}
		l, err := planParseOperator(num, depth, body)
		if err != nil {
			return nil, err
		}
		lines = append(lines, l)
		prevDepth, prevNum = depth, num
	}
	if len(lines) == 0 {
		return nil, errors.New("the plan is empty")
	}
	return lines, nil
}

// planStartsWithLetter reports whether an operator name starts the way
// Spark's node names do, so that stray text gets a clear error.
func planStartsWithLetter(s string) bool {
	c := s[0]
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// planParseOperator reads one operator line (without its indentation).
func planParseOperator(num, depth int, body string) (planLine, error) {
	fields := strings.Fields(body)
	l := planLine{num: num, depth: depth, op: fields[0]}
	kind, special := planKinds[l.op]
	if special {
		l.kind = kind
		last := fields[len(fields)-1]
		if len(fields) < 2 || !strings.HasPrefix(last, "#") {
			return l, fmt.Errorf("line %d: %s has no #id label at the end of the line", num, l.op)
		}
		id, err := strconv.Atoi(last[1:])
		if err != nil || id < 0 || last[1] == '+' || last[1] == '-' {
			return l, fmt.Errorf("line %d: %s has a malformed id %q; expected # followed by digits", num, l.op, last)
		}
		l.id = id
		if kind == planOpExchange {
			// Spark prints an Exchange's partitioning keys in brackets;
			// without them it is a single-partition shuffle.
			keys := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(body, l.op), last))
			l.keyed = keys != "" && keys != "[]"
		}
	}
	if l.op == "Scan" {
		// "Scan <format> <catalog>.<db>.<table> [columns]"
		if len(fields) < 3 {
			return l, fmt.Errorf("line %d: Scan names no table; expected \"Scan <format> <database>.<table>\"", num)
		}
		name := fields[2]
		l.table = name[strings.LastIndexByte(name, '.')+1:]
		if _, ok := tpcdsRows[l.table]; !ok {
			return l, fmt.Errorf("line %d: Scan of %q: not a TPC-DS table (known: %s)", num, l.table, strings.Join(tpcdsTableNames(), ", "))
		}
	}
	return l, nil
}

// planCutStages cuts parsed lines into stages and resolves every id.
func planCutStages(lines []planLine) (*planCut, error) {
	c := &planCutter{
		exchanges:  map[int]int{},
		subq:       map[int]int{},
		incoming:   map[int][]int{},
		memo:       map[int][]int{},
		busy:       map[int]bool{},
		parent:     make([]int, len(lines)),
		opened:     make([]int, len(lines)),
		stageParts: map[int]*planPart{},
	}
	if k := lines[0].kind; k != planOpPlain {
		return nil, fmt.Errorf("line %d: the plan's root is %s; the root is an operator of the final stage", lines[0].num, lines[0].op)
	}
	c.stages = append(c.stages, &planStage{name: "s0", line: lines[0].num})

	// open[d] is the index of the line at depth d on the path to the
	// current line. childStage[d] is the stage its children belong to: the
	// stage it opens, or else its own. hasChild[d] records whether it has
	// children yet, so that a boundary without input is caught.
	var open, childStage []int
	var hasChild []bool
	closeTo := func(depth int) error {
		for len(open) > depth {
			last := lines[open[len(open)-1]]
			if !hasChild[len(open)-1] {
				switch last.kind {
				case planOpExchange, planOpBroadcast, planOpSubquery:
					return fmt.Errorf("line %d: %s #%d has no input below it", last.num, last.op, last.id)
				}
			}
			open = open[:len(open)-1]
			hasChild = hasChild[:len(hasChild)-1]
			childStage = childStage[:len(childStage)-1]
		}
		return nil
	}
	for li, l := range lines {
		if err := closeTo(l.depth); err != nil {
			return nil, err
		}
		stage := 0
		c.parent[li] = -1
		if l.depth > 0 {
			c.parent[li] = open[l.depth-1]
			parent := lines[open[l.depth-1]]
			switch parent.kind {
			case planOpReusedExchange, planOpReusedSubquery:
				return nil, fmt.Errorf("line %d: %s #%d (line %d) reuses another operator's output and cannot have children",
					l.num, parent.op, parent.id, parent.num)
			}
			hasChild[l.depth-1] = true
			stage = childStage[l.depth-1]
		}
		own := stage
		switch l.kind {
		case planOpPlain:
			c.stages[stage].hasOps = true
			if l.table != "" {
				c.stages[stage].scans = append(c.stages[stage].scans, l.table)
			}
		case planOpExchange, planOpBroadcast:
			if prev, dup := c.exchanges[l.id]; dup {
				return nil, fmt.Errorf("line %d: exchange #%d is defined twice (lines %d and %d)", l.num, l.id, c.stages[prev].line, l.num)
			}
			name := "x" + strconv.Itoa(l.id)
			if l.kind == planOpBroadcast {
				name = "bx" + strconv.Itoa(l.id)
			}
			own = c.addStage(&planStage{name: name, kind: l.kind, keyed: l.keyed, line: l.num})
			c.exchanges[l.id] = own
			c.addEdge(planEdge{ref: planRefExchange, id: l.id, to: stage, data: true, line: l.num, op: l.op})
		case planOpSubquery:
			if prev, dup := c.subq[l.id]; dup {
				return nil, fmt.Errorf("line %d: subquery #%d is defined twice (lines %d and %d)", l.num, l.id, c.stages[prev].line, l.num)
			}
			own = c.addStage(&planStage{name: "sq" + strconv.Itoa(l.id), kind: planOpSubquery, line: l.num})
			c.subq[l.id] = own
			c.addEdge(planEdge{ref: planRefSubquery, id: l.id, to: stage, line: l.num, op: l.op})
		case planOpReusedExchange:
			c.addEdge(planEdge{ref: planRefExchange, id: l.id, to: stage, data: true, line: l.num, op: l.op})
		case planOpReusedSubquery:
			c.addEdge(planEdge{ref: planRefSubquery, id: l.id, to: stage, line: l.num, op: l.op})
		}
		c.opened[li] = -1
		if own != stage {
			c.opened[li] = own
		}
		open = append(open, li)
		hasChild = append(hasChild, false)
		childStage = append(childStage, own)
	}
	if err := closeTo(0); err != nil {
		return nil, err
	}
	c.partitionings(lines)
	return c.finish()
}

// partitionings builds every stage's partitioning expression. Lines come
// parent first, so walking them backwards meets every child before its
// parent.
func (c *planCutter) partitionings(lines []planLine) {
	kids := make([][]*planPart, len(lines))
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		in := kids[i]
		var out *planPart
		switch l.kind {
		case planOpPlain:
			switch {
			case l.table != "":
				out = planCombine(planPartZip, append([]*planPart{{op: planPartScan, table: l.table}}, in...))
			case l.op == "Union":
				out = planCombine(planPartUnion, in)
			default:
				out = planCombine(planPartZip, in)
			}
		case planOpExchange, planOpBroadcast, planOpSubquery:
			c.stageParts[c.opened[i]] = planCombine(planPartZip, in)
			if l.kind == planOpExchange {
				out = &planPart{op: planPartShuffle, id: l.id}
			}
		case planOpReusedExchange:
			out = &planPart{op: planPartShuffle, id: l.id}
		}
		if p := c.parent[i]; p >= 0 && out != nil {
			kids[p] = append(kids[p], out)
		}
		if i == 0 {
			c.stageParts[0] = out
		}
	}
}

// planCombine joins the partitionings of an operator's inputs; an operator
// with one input keeps it.
func planCombine(op planPartOp, in []*planPart) *planPart {
	switch len(in) {
	case 0:
		return nil
	case 1:
		return in[0]
	}
	return &planPart{op: op, kids: in}
}

func (c *planCutter) addStage(s *planStage) int {
	c.stages = append(c.stages, s)
	return len(c.stages) - 1
}

func (c *planCutter) addEdge(e planEdge) {
	c.edges = append(c.edges, e)
	c.incoming[e.to] = append(c.incoming[e.to], len(c.edges)-1)
}

// isWrapper reports whether stage i is a subquery with no operator of its
// own (a SubqueryBroadcast around a BroadcastExchange): it is not a stage,
// and whoever waits for it waits for what it wraps.
func (c *planCutter) isWrapper(i int) bool {
	s := c.stages[i]
	return s.kind == planOpSubquery && !s.hasOps
}

// source returns the stage an edge's id names.
func (c *planCutter) source(e planEdge) (int, error) {
	if e.ref == planRefExchange {
		if i, ok := c.exchanges[e.id]; ok {
			return i, nil
		}
		return 0, fmt.Errorf("line %d: %s #%d: no exchange #%d in the plan", e.line, e.op, e.id, e.id)
	}
	if i, ok := c.subq[e.id]; ok {
		return i, nil
	}
	return 0, fmt.Errorf("line %d: %s #%d: no subquery #%d in the plan", e.line, e.op, e.id, e.id)
}

// resolve returns the real stages that stage i stands for: itself, or for a
// wrapper subquery the real stages feeding it.
func (c *planCutter) resolve(i int) ([]int, error) {
	if !c.isWrapper(i) {
		return []int{i}, nil
	}
	if r, ok := c.memo[i]; ok {
		return r, nil
	}
	if c.busy[i] {
		return nil, fmt.Errorf("line %d: subquery %s depends on itself", c.stages[i].line, c.stages[i].name)
	}
	c.busy[i] = true
	defer delete(c.busy, i)
	var out []int
	seen := map[int]bool{}
	for _, ei := range c.incoming[i] {
		src, err := c.source(c.edges[ei])
		if err != nil {
			return nil, err
		}
		srcs, err := c.resolve(src)
		if err != nil {
			return nil, err
		}
		for _, s := range srcs {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	c.memo[i] = out
	return out, nil
}

// finish resolves every edge into a real stage, drops wrapper subqueries and
// renumbers the stages that remain.
func (c *planCutter) finish() (*planCut, error) {
	keep := make([]int, len(c.stages)) // old index -> new index, or -1
	cut := &planCut{}
	for i, s := range c.stages {
		if c.isWrapper(i) {
			keep[i] = -1
			continue
		}
		keep[i] = len(cut.stages)
		cut.stages = append(cut.stages, s)
	}
	cut.parents = make([][]int, len(cut.stages))
	cut.dataParents = make([][]int, len(cut.stages))
	cut.parts = make([]*planPart, len(cut.stages))
	for old, p := range c.stageParts {
		if keep[old] >= 0 {
			cut.parts[keep[old]] = p
		}
	}
	seen := make([]map[int]bool, len(cut.stages))
	seenData := make([]map[int]bool, len(cut.stages))
	for _, e := range c.edges {
		src, err := c.source(e)
		if err != nil {
			return nil, err
		}
		if keep[e.to] < 0 {
			// Folded into whoever waits for the wrapper (see resolve),
			// but an unknown id inside it must still be reported.
			continue
		}
		srcs, err := c.resolve(src)
		if err != nil {
			return nil, err
		}
		to := keep[e.to]
		for _, s := range srcs {
			from := keep[s]
			if from == to {
				return nil, fmt.Errorf("line %d: %s #%d makes stage %s wait for its own output", e.line, e.op, e.id, cut.stages[to].name)
			}
			if seen[to] == nil {
				seen[to], seenData[to] = map[int]bool{}, map[int]bool{}
			}
			if !seen[to][from] {
				seen[to][from] = true
				cut.parents[to] = append(cut.parents[to], from)
			}
			if e.data && !seenData[to][from] {
				seenData[to][from] = true
				cut.dataParents[to] = append(cut.dataParents[to], from)
			}
		}
	}
	// Exchange ids in partitionings name stages only now that every id
	// is known (and checked above: each leaf comes from a line that also
	// made an edge).
	stack := slices.Clone(cut.parts)
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if p == nil {
			continue
		}
		if p.op == planPartShuffle {
			p.stage = keep[c.exchanges[p.id]]
		}
		stack = append(stack, p.kids...)
	}
	return cut, nil
}
