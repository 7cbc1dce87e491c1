package queueconf

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// ReadFairFile reads a Fair Scheduler allocation file; see ReadFair.
func ReadFairFile(path string) (*Tree, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadFair(f, path)
}

// ReadFair reads a Fair Scheduler allocation file (fair-scheduler.xml, as
// FairScheduler.md describes it). name is the file's name, for errors.
//
// Where Hadoop logs and carries on, ReadFair refuses with a precise error,
// because a configuration that silently means something else than its
// author thinks is worse than one that does not load:
//   - an element Hadoop does not know (Hadoop warns at the top level and
//     says nothing inside a queue, so a misspelt <maxRunningApp> would
//     quietly drop a limit); elements Hadoop knows that Loom does not use
//     (reservation settings) are listed in Tree.Ignored instead;
//   - an element or queue given twice (Hadoop keeps the last);
//   - minResources above maxResources (Hadoop warns);
//   - values Hadoop clamps or misreads: a negative fairSharePreemptionThreshold
//     (Hadoop makes it 0), create="yes" (Hadoop reads false), an illegal
//     default-rule queue (Hadoop falls back to root.default);
//   - an ACL written over several lines: Hadoop splits users from groups
//     at the first space, so "\n  alice\n" would make alice a group;
//   - counts of 0 (maxRunningApps, queueMaxAppsDefault, userMaxAppsDefault,
//     a user's maxRunningApps) and timeouts of 0: in Loom 0 means
//     unlimited or off, the opposite of what Hadoop does with them.
//
// Values above 1 for maxAMShare and fairSharePreemptionThreshold are cut
// to 1, as in Hadoop.
func ReadFair(r io.Reader, name string) (*Tree, error) {
	if r == nil {
		return nil, &Error{File: name, Reason: "no input"}
	}
	data, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return nil, &Error{File: name, Reason: err.Error()}
	}
	if len(data) > maxFileSize {
		return nil, &Error{File: name, Reason: fmt.Sprintf("the file is over %d MB", maxFileSize>>20)}
	}
	doc, err := parseXML(name, data)
	if err != nil {
		return nil, err
	}
	p := &fairParser{file: name, info: map[*Queue]*fairInfo{}, users: map[string]int{}, kids: map[*Queue]map[string]*Queue{}}
	return p.build(doc)
}

// fairParser holds what reading one allocation file needs.
type fairParser struct {
	file  string
	tree  *Tree
	info  map[*Queue]*fairInfo
	users map[string]int               // user name -> line
	kids  map[*Queue]map[string]*Queue // children by short name, while reading

	// top-level defaults
	defMinTimeout, defFairTimeout time.Duration
	defThreshold                  float64
	defPolicyNode                 *node // defaultQueueSchedulingPolicy
}

// fairInfo is what the file says of one queue: the elements given.
type fairInfo struct {
	n      *node
	fields map[string]*node // element name -> element (schedulingMode as schedulingPolicy)
}

func (p *fairParser) errf(n *node, queue, format string, args ...any) error {
	e := &Error{File: p.file, Queue: queue, Reason: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Element = n.line, n.name
	}
	return e
}

// Queue elements Hadoop's AllocationFileQueueParser knows.
var queueFields = []string{
	"minResources", "maxResources", "maxChildResources", "maxContainerAllocation",
	"maxRunningApps", "maxAMShare", "weight", "schedulingPolicy", "schedulingMode",
	"aclSubmitApps", "aclAdministerApps", "minSharePreemptionTimeout",
	"fairSharePreemptionTimeout", "fairSharePreemptionThreshold",
	"allowPreemptionFrom", "reservation",
	"aclAdministerReservations", "aclListReservations", "aclSubmitReservations",
}

// Top-level elements Hadoop's AllocationFileParser knows.
var topFields = []string{
	"queue", "pool", "user", "userMaxAppsDefault", "queueMaxAppsDefault",
	"queueMaxResourcesDefault", "queueMaxAMShareDefault",
	"defaultQueueSchedulingPolicy", "defaultQueueSchedulingMode",
	"defaultMinSharePreemptionTimeout", "defaultFairSharePreemptionTimeout",
	"fairSharePreemptionTimeout", "defaultFairSharePreemptionThreshold",
	"queuePlacementPolicy", "reservation-agent", "reservation-policy",
	"reservation-planner",
}

// unknown makes the error for an element Hadoop does not know, suggesting
// a known one that differs only in case.
func (p *fairParser) unknown(n *node, queue, where string, known []string) error {
	for _, k := range known {
		if strings.EqualFold(k, n.name) {
			return p.errf(n, queue, "unknown element in %s (did you mean <%s>? names are case-sensitive)", where, k)
		}
	}
	return p.errf(n, queue, "unknown element in %s", where)
}

func (p *fairParser) build(doc *node) (*Tree, error) {
	if doc.name != "allocations" {
		return nil, p.errf(doc, "", "the top-level element is <%s>, not <allocations>: not a Fair Scheduler allocation file", doc.name)
	}
	if doc.hasText() {
		return nil, p.errf(doc, "", "unexpected text %q", clip(doc.text.String()))
	}
	t := &Tree{
		Kind:                   KindFair,
		Source:                 p.file,
		UserMaxApps:            map[string]int{},
		QueueMaxAMShareDefault: 0.5,
		DefaultPolicy:          PolicyFair,
	}
	p.tree = t
	p.defThreshold = 0.5
	var queues []*node
	var placement *node
	var legacyFairTimeout *node
	seen := map[string]*node{}
	for _, n := range doc.kids {
		switch n.name {
		case "queue", "pool":
			queues = append(queues, n)
			continue
		case "user":
			if err := p.user(n); err != nil {
				return nil, err
			}
			continue
		}
		key := n.name
		if key == "defaultQueueSchedulingMode" {
			key = "defaultQueueSchedulingPolicy"
		}
		if prev, dup := seen[key]; dup {
			return nil, p.errf(n, "", "given twice (also at line %d)", prev.line)
		}
		seen[key] = n
		var err error
		switch n.name {
		case "userMaxAppsDefault":
			t.UserMaxAppsDefault, err = p.count(n, "")
		case "queueMaxAppsDefault":
			t.QueueMaxAppsDefault, err = p.count(n, "")
		case "queueMaxResourcesDefault":
			t.QueueMaxResourcesDefault, err = p.resources(n, "")
		case "queueMaxAMShareDefault":
			t.QueueMaxAMShareDefault, err = p.amShare(n, "")
		case "defaultQueueSchedulingPolicy", "defaultQueueSchedulingMode":
			t.DefaultPolicy, err = p.policy(n, "")
			p.defPolicyNode = n
			if err == nil && t.DefaultPolicy == PolicyFIFO {
				err = p.errf(n, "", "the default policy can't be fifo (it would apply to parent queues, and fifo is for leaf queues only)")
			}
		case "defaultMinSharePreemptionTimeout":
			p.defMinTimeout, err = p.seconds(n, "")
		case "defaultFairSharePreemptionTimeout":
			p.defFairTimeout, err = p.seconds(n, "")
		case "fairSharePreemptionTimeout":
			legacyFairTimeout = n // Hadoop's older spelling of the default
		case "defaultFairSharePreemptionThreshold":
			p.defThreshold, err = p.threshold(n, "")
		case "queuePlacementPolicy":
			placement = n
		case "reservation-agent", "reservation-policy", "reservation-planner":
			p.ignore(n, "", "reservations are not supported by Loom")
		default:
			err = p.unknown(n, "", "<allocations>", topFields)
		}
		if err != nil {
			return nil, err
		}
	}
	if legacyFairTimeout != nil && seen["defaultFairSharePreemptionTimeout"] == nil {
		var err error
		if p.defFairTimeout, err = p.seconds(legacyFairTimeout, ""); err != nil {
			return nil, err
		}
	}

	// Queues: a root element, alone, or the top-level queues under root.
	root := &Queue{Name: "root", IsParent: true}
	p.info[root] = &fairInfo{fields: map[string]*node{}}
	for _, n := range queues {
		v, _ := n.attr("name")
		if strings.EqualFold(strings.TrimSpace(v), "root") {
			if len(queues) > 1 {
				return nil, p.errf(n, "root", "when the root queue is configured, every other queue must be inside it (%d top-level queue elements)", len(queues))
			}
			if strings.TrimSpace(v) != "root" {
				return nil, p.errf(n, "", "queue name %q: write the root queue as \"root\"", v)
			}
			if err := p.queueBody(n, root); err != nil {
				return nil, err
			}
		}
	}
	if len(queues) != 1 || p.info[root].n == nil {
		for _, n := range queues {
			if err := p.queue(n, root); err != nil {
				return nil, err
			}
		}
	}
	if root.Child("default") == nil {
		// Hadoop's QueueManager creates root.default at start.
		d := &Queue{Name: "root.default", Parent: root, Implicit: true}
		p.info[d] = &fairInfo{fields: map[string]*node{}}
		root.Children = append(root.Children, d)
	}
	t.Root = root
	if err := p.resolve(root); err != nil {
		return nil, err
	}

	if placement != nil {
		rules, err := p.placement(placement)
		if err != nil {
			return nil, err
		}
		t.Placement = rules
	} else {
		t.Placement = DefaultPlacement(true, true)
		t.PlacementDefaulted = true
	}
	return t, nil
}

func (p *fairParser) ignore(n *node, queue, why string) {
	q := ""
	if queue != "" {
		q = "queue " + queue + ": "
	}
	p.tree.Ignored = append(p.tree.Ignored, fmt.Sprintf("%s:%d: %s<%s>: ignored: %s", p.file, n.line, q, n.name, why))
}

// user reads <user name="..."><maxRunningApps>N</maxRunningApps></user>.
func (p *fairParser) user(n *node) error {
	if err := p.onlyAttrs(n, "", "name"); err != nil {
		return err
	}
	raw, ok := n.attr("name")
	name := strings.TrimSpace(raw)
	if !ok || name == "" {
		return p.errf(n, "", "a user element needs a name attribute")
	}
	if n.hasText() {
		return p.errf(n, "", "user %s: unexpected text %q", name, clip(n.text.String()))
	}
	if prev, dup := p.users[name]; dup {
		return p.errf(n, "", "user %s is given twice (also at line %d)", name, prev)
	}
	p.users[name] = n.line
	found := false
	for _, f := range n.kids {
		if f.name != "maxRunningApps" {
			return p.unknown(f, "", "<user name=\""+name+"\">", []string{"maxRunningApps"})
		}
		if found {
			return p.errf(f, "", "user %s: given twice", name)
		}
		found = true
		v, err := p.count(f, "")
		if err != nil {
			return err
		}
		p.tree.UserMaxApps[name] = v
	}
	return nil
}

// queue reads a <queue> or <pool> element under parent.
func (p *fairParser) queue(n *node, parent *Queue) error {
	raw, ok := n.attr("name")
	short := strings.TrimSpace(raw)
	where := parent.Name + ".?"
	switch {
	case !ok:
		return p.errf(n, where, "a queue needs a name attribute")
	case short == "":
		return p.errf(n, where, "the queue name is empty or only white space")
	case strings.Contains(short, "."):
		return p.errf(n, parent.Name+"."+short, "queue name %q contains a period: nest <queue> elements instead", short)
	case strings.IndexFunc(short, badNameRune) >= 0:
		return p.errf(n, parent.Name+"."+short, "queue name %q contains white space or a control character", short)
	}
	path := parent.Name + "." + short
	kids := p.kids[parent]
	if kids == nil {
		kids = map[string]*Queue{}
		p.kids[parent] = kids
	}
	if prev := kids[short]; prev != nil {
		line := 0
		if in := p.info[prev]; in != nil && in.n != nil {
			line = in.n.line
		}
		return p.errf(n, path, "the queue is defined twice (also at line %d)", line)
	}
	if parent.Depth()+1 > MaxDepth {
		return p.errf(n, path, "queues nest deeper than %d levels", MaxDepth)
	}
	q := &Queue{Name: path, Parent: parent}
	kids[short] = q
	parent.Children = append(parent.Children, q)
	return p.queueBody(n, q)
}

func badNameRune(r rune) bool {
	return r <= ' ' || r == 0x7f || r == 0x85 || r == 0xa0 || r == 0x2028 || r == 0x2029 || r == 0xfeff
}

// queueBody reads a queue element's attributes and fields into q.
func (p *fairParser) queueBody(n *node, q *Queue) error {
	in := &fairInfo{n: n, fields: map[string]*node{}}
	p.info[q] = in
	if err := p.onlyAttrs(n, q.Name, "name", "type"); err != nil {
		return err
	}
	typ, _ := n.attr("type")
	if typ != "" && typ != "parent" && typ != "leaf" {
		return p.errf(n, q.Name, "type=%q: the type is \"parent\" or \"leaf\"", typ)
	}
	if n.hasText() {
		return p.errf(n, q.Name, "unexpected text %q", clip(n.text.String()))
	}
	for _, f := range n.kids {
		if f.name == "queue" || f.name == "pool" {
			if err := p.queue(f, q); err != nil {
				return err
			}
			continue
		}
		key := f.name
		if key == "schedulingMode" {
			key = "schedulingPolicy"
		}
		if prev, dup := in.fields[key]; dup {
			return p.errf(f, q.Name, "given twice (also at line %d)", prev.line)
		}
		in.fields[key] = f
		var err error
		switch f.name {
		case "minResources":
			q.Min, err = p.resources(f, q.Name)
		case "maxResources":
			q.Max, err = p.resources(f, q.Name)
		case "maxChildResources":
			q.MaxChildResources, err = p.resources(f, q.Name)
		case "maxContainerAllocation":
			q.MaxContainerAllocation, err = p.resources(f, q.Name)
		case "maxRunningApps":
			q.MaxRunningApps, err = p.count(f, q.Name)
		case "maxAMShare":
			q.MaxAMShare, err = p.amShare(f, q.Name)
		case "weight":
			q.Weight, err = p.weight(f, q.Name)
		case "schedulingPolicy", "schedulingMode":
			q.Policy, err = p.policy(f, q.Name)
		case "aclSubmitApps":
			q.SubmitACL, err = p.acl(f, q.Name)
		case "aclAdministerApps":
			q.AdminACL, err = p.acl(f, q.Name)
		case "minSharePreemptionTimeout":
			q.MinSharePreemptionTimeout, err = p.seconds(f, q.Name)
		case "fairSharePreemptionTimeout":
			q.FairSharePreemptionTimeout, err = p.seconds(f, q.Name)
		case "fairSharePreemptionThreshold":
			q.FairSharePreemptionThreshold, err = p.threshold(f, q.Name)
		case "allowPreemptionFrom":
			q.AllowPreemptionFrom, err = p.boolean(f, q.Name)
		case "reservation":
			if len(f.kids) > 0 {
				err = p.errf(f.kids[0], q.Name, "unexpected element inside <reservation>")
			}
			q.Reservable = true
		case "aclAdministerReservations", "aclListReservations", "aclSubmitReservations":
			if _, err = p.acl(f, q.Name); err == nil {
				p.ignore(f, q.Name, "reservations are not supported by Loom")
			}
		default:
			err = p.unknown(f, q.Name, "a queue", append(queueFields, "queue", "pool"))
		}
		if err != nil {
			return err
		}
	}
	q.IsParent = len(q.Children) > 0 || typ == "parent" || q.Parent == nil
	if typ == "leaf" && len(q.Children) > 0 {
		return p.errf(n, q.Name, "type=\"leaf\", but the queue has child queues")
	}
	if typ == "leaf" && q.Parent == nil {
		return p.errf(n, q.Name, "the root queue can't be a leaf")
	}
	if q.IsParent {
		for _, el := range []string{"reservation", "maxAMShare"} {
			if f := in.fields[el]; f != nil {
				return p.errf(f, q.Name, "a parent queue (one with child queues or type=\"parent\") can't have <%s>: it applies to leaf queues only", el)
			}
		}
	}
	return nil
}

// resolve applies defaults and inheritance down the tree, and checks what
// needs the whole queue (min vs max, policy vs parent policy).
func (p *fairParser) resolve(q *Queue) error {
	t := p.tree
	in := p.info[q]
	f := in.fields
	parent := q.Parent
	q.State = StateRunning
	if f["weight"] == nil {
		q.Weight = 1
	}
	if f["maxResources"] == nil {
		q.Max = t.QueueMaxResourcesDefault.Clone()
	}
	if f["maxRunningApps"] == nil {
		q.MaxRunningApps = t.QueueMaxAppsDefault
	}
	if f["maxAMShare"] == nil {
		q.MaxAMShare = t.QueueMaxAMShareDefault
	}
	if f["schedulingPolicy"] == nil {
		q.Policy = t.DefaultPolicy
	}
	if q.IsParent && q.Policy == PolicyFIFO {
		return p.errf(f["schedulingPolicy"], q.Name, "fifo is only for leaf queues; a parent queue takes fair or drf")
	}
	if parent != nil && parent.Policy == PolicyFair && q.Policy == PolicyDRF {
		n := f["schedulingPolicy"]
		if n == nil {
			n = p.defPolicyNode
		}
		return p.errf(n, q.Name, "drf can't be used under a parent queue (%s) whose policy is fair: make the parent drf, or use fair or fifo here", parent.Name)
	}
	if f["aclSubmitApps"] == nil {
		q.SubmitACL = defaultACL(q)
	}
	if f["aclAdministerApps"] == nil {
		q.AdminACL = defaultACL(q)
	}
	if f["minSharePreemptionTimeout"] == nil {
		q.MinSharePreemptionTimeout = p.defMinTimeout
		if parent != nil {
			q.MinSharePreemptionTimeout = parent.MinSharePreemptionTimeout
		}
	}
	if f["fairSharePreemptionTimeout"] == nil {
		q.FairSharePreemptionTimeout = p.defFairTimeout
		if parent != nil {
			q.FairSharePreemptionTimeout = parent.FairSharePreemptionTimeout
		}
	}
	if f["fairSharePreemptionThreshold"] == nil {
		q.FairSharePreemptionThreshold = p.defThreshold
		if parent != nil {
			q.FairSharePreemptionThreshold = parent.FairSharePreemptionThreshold
		}
	}
	if f["allowPreemptionFrom"] == nil {
		q.AllowPreemptionFrom = true
	}
	if parent != nil && !parent.AllowPreemptionFrom {
		q.AllowPreemptionFrom = false
	}
	if typ, bad := exceeds(q.Min, q.Max); bad {
		maxName := "maxResources"
		if f["maxResources"] == nil {
			maxName = "queueMaxResourcesDefault"
		}
		return p.errf(f["minResources"], q.Name, "minResources (%s) is above %s (%s) for %s", q.Min, maxName, q.Max, typ)
	}
	if typ, bad := exceeds(q.MaxContainerAllocation, q.Max); bad {
		return p.errf(f["maxContainerAllocation"], q.Name, "maxContainerAllocation (%s) is above the queue's maximum (%s) for %s", q.MaxContainerAllocation, q.Max, typ)
	}
	for _, c := range q.Children {
		if err := p.resolve(c); err != nil {
			return err
		}
	}
	return nil
}

// defaultACL is Hadoop's default for a queue whose ACL is not set: "*" for
// root, nobody for the others (the ACLs of the ancestors still apply).
func defaultACL(q *Queue) ACL {
	if q.Parent == nil {
		return ACL{All: true}
	}
	return ACL{}
}

func (p *fairParser) onlyAttrs(n *node, queue string, allowed ...string) error {
	for _, a := range n.attrs {
		ok := false
		for _, w := range allowed {
			if a.Name.Local == w {
				ok = true
			}
		}
		if !ok {
			return p.errf(n, queue, "unknown attribute %s=%q (allowed: %s)", a.Name.Local, a.Value, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// value returns a field's text, trimmed; it must have no child elements
// and not be empty.
func (p *fairParser) value(n *node, queue string) (string, error) {
	if len(n.kids) > 0 {
		return "", p.errf(n, queue, "expects a value, not the element <%s>", n.kids[0].name)
	}
	if err := p.onlyAttrs(n, queue); err != nil {
		return "", err
	}
	v := strings.TrimSpace(n.text.String())
	if v == "" {
		return "", p.errf(n, queue, "the value is empty")
	}
	return v, nil
}

func (p *fairParser) resources(n *node, queue string) (Amount, error) {
	v, err := p.value(n, queue)
	if err != nil {
		return Amount{}, err
	}
	a, err := ParseResources(v)
	if err != nil {
		return Amount{}, p.errf(n, queue, "%v", err)
	}
	return a, nil
}

// count reads a positive number of apps.
func (p *fairParser) count(n *node, queue string) (int, error) {
	v, err := p.value(n, queue)
	if err != nil {
		return 0, err
	}
	c, err := strconv.ParseInt(v, 10, 32)
	switch {
	case err != nil && isDigits(strings.TrimPrefix(strings.TrimPrefix(v, "-"), "+")):
		return 0, p.errf(n, queue, "%q is too large", v)
	case err != nil:
		return 0, p.errf(n, queue, "%q is not an integer", v)
	case c < 0:
		return 0, p.errf(n, queue, "%q must not be negative", v)
	case c == 0:
		return 0, p.errf(n, queue, "0 is not supported: in Hadoop it lets no app run, in Loom 0 means unlimited; leave the element out for no limit")
	}
	return int(c), nil
}

// number reads a Java float literal as Hadoop's Float.parseFloat would
// (a trailing f or d allowed), refusing NaN and infinities.
func (p *fairParser) number(n *node, queue string) (float64, error) {
	v, err := p.value(n, queue)
	if err != nil {
		return 0, err
	}
	s := v
	if c := s[len(s)-1]; c == 'f' || c == 'F' || c == 'd' || c == 'D' {
		s = s[:len(s)-1]
	}
	lower := strings.ToLower(s)
	if strings.Contains(lower, "inf") || strings.Contains(lower, "nan") || strings.Contains(lower, "x") || strings.Contains(lower, "_") {
		return 0, p.errf(n, queue, "%q is not a finite number", v)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, p.errf(n, queue, "%q is not a number", v)
	}
	return f, nil
}

func (p *fairParser) weight(n *node, queue string) (float64, error) {
	w, err := p.number(n, queue)
	if err == nil && w < 0 {
		err = p.errf(n, queue, "%s: a weight must not be negative", fmtNum(w))
	}
	return w, err
}

// amShare reads maxAMShare: -1 (not checked) or a fraction; above 1 is cut
// to 1 as in Hadoop.
func (p *fairParser) amShare(n *node, queue string) (float64, error) {
	f, err := p.number(n, queue)
	if err != nil {
		return 0, err
	}
	if f < 0 && f != -1 {
		return 0, p.errf(n, queue, "%s: the AM share is a fraction from 0 to 1, or -1 for no limit", fmtNum(f))
	}
	return math.Min(f, 1), nil
}

// threshold reads a fair-share preemption threshold: 0 to 1 (above is cut
// to 1, as in Hadoop).
func (p *fairParser) threshold(n *node, queue string) (float64, error) {
	f, err := p.number(n, queue)
	if err == nil && f < 0 {
		err = p.errf(n, queue, "%s: the threshold is a fraction from 0 to 1", fmtNum(f))
	}
	return math.Min(f, 1), err
}

// seconds reads a preemption timeout in seconds.
func (p *fairParser) seconds(n *node, queue string) (time.Duration, error) {
	v, err := p.value(n, queue)
	if err != nil {
		return 0, err
	}
	s, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil && isDigits(strings.TrimPrefix(strings.TrimPrefix(v, "-"), "+")):
		return 0, p.errf(n, queue, "%q seconds is too long; leave the element out to never preempt", v)
	case err != nil:
		return 0, p.errf(n, queue, "%q is not a whole number of seconds", v)
	case s < 0:
		return 0, p.errf(n, queue, "%q: a timeout must not be negative", v)
	case s == 0:
		return 0, p.errf(n, queue, "0 seconds is not supported: in Loom a timeout of 0 means never; write 1 to preempt as soon as possible")
	case s > int64(math.MaxInt64/time.Second):
		return 0, p.errf(n, queue, "%q seconds is too long; leave the element out to never preempt", v)
	}
	return time.Duration(s) * time.Second, nil
}

func (p *fairParser) boolean(n *node, queue string) (bool, error) {
	v, err := p.value(n, queue)
	if err != nil {
		return false, err
	}
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, p.errf(n, queue, "%q is not true or false", v)
}

// Hadoop's class names for the built-in policies, also accepted.
var policyClasses = map[string]string{
	"org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.policies.fairsharepolicy":                PolicyFair,
	"org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.policies.dominantresourcefairnesspolicy": PolicyDRF,
	"org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.policies.fifopolicy":                     PolicyFIFO,
}

func (p *fairParser) policy(n *node, queue string) (string, error) {
	v, err := p.value(n, queue)
	if err != nil {
		return "", err
	}
	l := strings.ToLower(v)
	switch l {
	case PolicyFair, PolicyDRF, PolicyFIFO:
		return l, nil
	}
	if pol, ok := policyClasses[l]; ok {
		return pol, nil
	}
	return "", p.errf(n, queue, "unknown scheduling policy %q (fair, drf or fifo; custom policy classes are not supported)", v)
}

// acl reads an ACL exactly as written (a leading space matters).
func (p *fairParser) acl(n *node, queue string) (ACL, error) {
	if len(n.kids) > 0 {
		return ACL{}, p.errf(n, queue, "expects an ACL, not the element <%s>", n.kids[0].name)
	}
	if err := p.onlyAttrs(n, queue); err != nil {
		return ACL{}, err
	}
	v := n.text.String()
	if v == "" {
		return ACL{}, p.errf(n, queue, "the ACL is empty; write \"*\" for everyone or a single space for nobody")
	}
	if strings.ContainsAny(v, "\n\r\t") {
		return ACL{}, p.errf(n, queue, "the ACL %q is not on one line: Hadoop splits users from groups at the first space, so write \"user1,user2 group1,group2\" (or \" group1\") on one line", clip(v))
	}
	return ParseACL(v), nil
}

// clip shortens text for a message.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > 40 {
		return string(r[:37]) + "..."
	}
	return s
}
