package queueconf

import (
	"fmt"
	"strings"
)

// Rule is one rule of a fair queuePlacementPolicy.
type Rule struct {
	// Name: specified, user, primaryGroup, secondaryGroupExistingQueue,
	// nestedUserQueue, default or reject.
	Name string
	// Create: the rule may place an app in a queue that is not configured
	// (attribute create, default true). When false and the queue is not
	// configured, the next rule is tried.
	Create bool
	// Queue: the default rule's queue attribute, as a full path
	// ("root.default" when not given).
	Queue string
	// Nested: the rule inside this one, which gives the parent queue under
	// which this rule places the app: nestedUserQueue's inner rule, and, as
	// Hadoop's placement rules allow, a nested rule of user, primaryGroup or
	// secondaryGroupExistingQueue. nil when none.
	Nested *Rule
}

// Rule names.
const (
	RuleSpecified      = "specified"
	RuleUser           = "user"
	RulePrimaryGroup   = "primaryGroup"
	RuleSecondaryGroup = "secondaryGroupExistingQueue"
	RuleNestedUser     = "nestedUserQueue"
	RuleDefault        = "default"
	RuleReject         = "reject"
)

var ruleNames = []string{RuleSpecified, RuleUser, RulePrimaryGroup, RuleSecondaryGroup, RuleNestedUser, RuleDefault, RuleReject}

// DefaultPlacement is the policy Hadoop's Fair Scheduler uses when the
// allocation file has no queuePlacementPolicy, from two yarn-site.xml
// settings (QueuePlacementPolicy.fromConfiguration):
// yarn.scheduler.fair.user-as-default-queue and
// yarn.scheduler.fair.allow-undeclared-pools, both true by default, which
// gives: specified (create), then user (create). With user-as-default-queue
// false, or allow-undeclared-pools false, a default rule placing in
// root.default ends the policy, and the other rules create nothing when
// allow-undeclared-pools is false.
func DefaultPlacement(userAsDefaultQueue, allowUndeclaredPools bool) []Rule {
	rules := []Rule{{Name: RuleSpecified, Create: allowUndeclaredPools}}
	if userAsDefaultQueue {
		rules = append(rules, Rule{Name: RuleUser, Create: allowUndeclaredPools})
	}
	if !userAsDefaultQueue || !allowUndeclaredPools {
		rules = append(rules, Rule{Name: RuleDefault, Create: true, Queue: "root.default"})
	}
	return rules
}

// terminal reports whether the rule always places an app (so that rules
// after it are never reached), as Hadoop's QueuePlacementPolicy judges it:
// specified and secondaryGroupExistingQueue never are, reject always is,
// the others are when they may create their queue; a rule with a nested
// rule is terminal only when both are.
func (r *Rule) terminal() bool {
	var t bool
	switch r.Name {
	case RuleReject:
		t = true
	case RuleSpecified, RuleSecondaryGroup:
		t = false
	default:
		t = r.Create
	}
	if r.Nested != nil {
		t = t && r.Nested.terminal()
	}
	return t
}

// String renders the rule as in the allocation file, for messages.
func (r Rule) String() string {
	s := r.Name
	if !r.Create && r.Name != RuleReject {
		s += ` create="false"`
	}
	if r.Name == RuleDefault && r.Queue != "" && r.Queue != "root.default" {
		s += ` queue="` + r.Queue + `"`
	}
	if r.Nested != nil {
		s += "(" + r.Nested.String() + ")"
	}
	return s
}

// placement reads a queuePlacementPolicy element, checking it as Hadoop
// does (the last rule must always place the app, no rule before it may),
// and more: unknown attributes and elements are errors (Hadoop ignores
// them), as are create values other than true and false and an illegal
// default-rule queue.
func (p *fairParser) placement(n *node) ([]Rule, error) {
	const where = "queuePlacementPolicy"
	if err := p.onlyAttrs(n, ""); err != nil {
		return nil, err
	}
	if n.hasText() {
		return nil, p.errf(n, "", "unexpected text %q", clip(n.text.String()))
	}
	var rules []Rule
	var nodes []*node
	for _, k := range n.kids {
		if k.name != "rule" {
			return nil, p.errf(k, "", "unknown element in <%s>: rules are written <rule name=\"...\"/>", where)
		}
		r, err := p.rule(k, false)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
		nodes = append(nodes, k)
	}
	if len(rules) == 0 {
		return nil, p.errf(n, "", "the placement policy has no rules")
	}
	for i, r := range rules {
		if r.Name != RuleDefault {
			continue
		}
		if e := p.tree.lookup(r.Queue); e != nil || r.Create {
			if _, _, err := p.tree.settle(r.Queue); err != nil {
				return nil, p.errf(nodes[i], "", "rule default: queue %s: %v", r.Queue, err)
			}
		}
	}
	for i := range rules[:len(rules)-1] {
		if rules[i].terminal() {
			return nil, p.errf(nodes[i], "", "rule %d (%s) always places the app, so the rules after it can never be reached", i+1, rules[i])
		}
	}
	if last := len(rules) - 1; !rules[last].terminal() {
		return nil, p.errf(nodes[last], "", "the last rule (%s) can pass the app on, leaving it nowhere: end with reject, or a default, user or primaryGroup rule that may create its queue", rules[last])
	}
	return rules, nil
}

// rule reads one <rule>; nested is true for a rule inside another.
func (p *fairParser) rule(n *node, nested bool) (Rule, error) {
	if err := p.onlyAttrs(n, "", "name", "create", "queue"); err != nil {
		return Rule{}, err
	}
	if n.hasText() {
		return Rule{}, p.errf(n, "", "unexpected text %q", clip(n.text.String()))
	}
	name, ok := n.attr("name")
	if !ok || name == "" {
		return Rule{}, p.errf(n, "", "a rule needs a name attribute (one of %s)", strings.Join(ruleNames, ", "))
	}
	known := false
	for _, k := range ruleNames {
		if k == name {
			known = true
		} else if strings.EqualFold(k, name) {
			return Rule{}, p.errf(n, "", "unknown rule %q (did you mean %q? names are case-sensitive)", name, k)
		}
	}
	if !known {
		return Rule{}, p.errf(n, "", "unknown rule %q (one of %s)", name, strings.Join(ruleNames, ", "))
	}
	r := Rule{Name: name, Create: true}
	if c, ok := n.attr("create"); ok {
		switch strings.ToLower(strings.TrimSpace(c)) {
		case "true":
		case "false":
			r.Create = false
		default:
			return Rule{}, p.errf(n, "", "rule %s: create=%q is not true or false", name, c)
		}
	}
	if q, ok := n.attr("queue"); ok {
		if name != RuleDefault {
			return Rule{}, p.errf(n, "", "rule %s: the queue attribute only applies to the default rule", name)
		}
		if q != "" {
			if err := checkQueuePath(q); err != nil {
				return Rule{}, p.errf(n, "", "rule default: queue=%q: %v", q, err)
			}
			r.Queue = assureRoot(q)
		}
	}
	if name == RuleDefault && r.Queue == "" {
		r.Queue = "root.default"
	}
	for _, k := range n.kids {
		if k.name != "rule" {
			return Rule{}, p.errf(k, "", "unknown element in rule %s", name)
		}
		if nested {
			return Rule{}, p.errf(k, "", "rules nest only one level deep")
		}
		if r.Nested != nil {
			return Rule{}, p.errf(k, "", "rule %s has more than one nested rule", name)
		}
		inner, err := p.rule(k, true)
		if err != nil {
			return Rule{}, err
		}
		switch {
		case inner.Name == RuleReject || inner.Name == RuleNestedUser:
			return Rule{}, p.errf(k, "", "rule %s can't be nested in another rule", inner.Name)
		case name == RuleSpecified || name == RuleDefault || name == RuleReject:
			return Rule{}, p.errf(k, "", "rule %s takes no nested rule", name)
		case inner.Name == name || name == RuleNestedUser && inner.Name == RuleUser:
			return Rule{}, p.errf(k, "", "rule %s can't be nested in a rule of the same kind (%s)", inner.Name, name)
		}
		r.Nested = &inner
	}
	if name == RuleNestedUser && r.Nested == nil {
		return Rule{}, p.errf(n, "", "rule nestedUserQueue needs a nested <rule> that gives the parent queue")
	}
	return r, nil
}

// checkQueuePath checks a queue path given in configuration or requested
// by an app: no empty components (so no leading, trailing or double
// period), no white space.
func checkQueuePath(q string) error {
	if q == "" {
		return fmt.Errorf("the queue name is empty")
	}
	if strings.IndexFunc(q, badNameRune) >= 0 {
		return fmt.Errorf("the queue name contains white space or a control character")
	}
	for _, c := range strings.Split(q, ".") {
		if c == "" {
			return fmt.Errorf("the queue name has an empty component (a leading, trailing or double period)")
		}
	}
	return nil
}

// assureRoot puts "root." in front of a path that lacks it.
func assureRoot(q string) string {
	if q == "root" || strings.HasPrefix(q, "root.") {
		return q
	}
	return "root." + q
}

// cleanName makes a user or group name a queue name as Hadoop does: trimmed,
// periods replaced by "_dot_".
func cleanName(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), ".", "_dot_")
}

// Place returns the leaf queue an app goes to: by the placement rules in a
// fair tree, or, in a capacity tree, the requested queue (by full path, path
// without "root." or leaf name; "default" when none was requested).
// requested may be "" or "default" for none. When the rule that placed the
// app may create its queue and the queue is not configured, Place returns
// the full path of the leaf to create and created=true; the caller adds it
// (and any missing parents). Errors wrap ErrRejected (a reject rule),
// ErrNoRule (every rule passed the app on; the error says why each did),
// ErrNotLeaf, ErrNoQueue, ErrStopped (capacity), ErrQueueName (an illegal
// requested, user or group name), ErrNoGroups (primaryGroup with no groups)
// and ErrCannotMake (a queue to create would sit under a leaf).
//
// The fair rules behave as Hadoop's placement rules do: specified passes on
// "default" and refuses a name with white space around it or a leading or
// trailing period; user and group names have periods replaced by "_dot_";
// secondaryGroupExistingQueue tries groups[1:] (groups[0] is the primary
// group, as FairScheduler.md describes it) and only configured queues;
// a nested rule must give a parent queue (or one to create), not a leaf.
// Queues the caller added to the tree count as configured here, whereas
// Hadoop does not count queues it created at run time.
func (t *Tree) Place(requested, user string, groups []string) (leaf string, created bool, err error) {
	if t == nil || t.Root == nil {
		return "", false, fmt.Errorf("%w: no queue configuration", ErrNoQueue)
	}
	req := requested
	if req == "" {
		req = "default"
	}
	if t.Kind == KindCapacity {
		return t.placeCapacity(req)
	}
	var why []string
	for i := range t.Placement {
		r := &t.Placement[i]
		q, reason, err := t.apply(r, req, user, groups)
		if err != nil {
			return "", false, fmt.Errorf("placement rule %d (%s): %w", i+1, r.Name, err)
		}
		if q == "" {
			why = append(why, fmt.Sprintf("rule %d (%s): %s", i+1, r.Name, reason))
			continue
		}
		leaf, created, err := t.settle(q)
		if err != nil {
			return "", false, fmt.Errorf("placement rule %d (%s): %w", i+1, r.Name, err)
		}
		return leaf, created, nil
	}
	if len(why) == 0 {
		why = append(why, "the policy has no rules")
	}
	return "", false, fmt.Errorf("%w (queue %q, user %q): %s", ErrNoRule, requested, user, strings.Join(why, "; "))
}

// apply runs one rule: the queue it gives, or "" and why it passed the app
// on, or an error when the app is to be rejected.
func (t *Tree) apply(r *Rule, req, user string, groups []string) (string, string, error) {
	switch r.Name {
	case RuleReject:
		return "", "", ErrRejected
	case RuleSpecified:
		if req != strings.TrimSpace(req) || strings.HasPrefix(req, ".") || strings.HasSuffix(req, ".") {
			return "", "", fmt.Errorf("%w: requested queue %q", ErrQueueName, req)
		}
		if req == "default" {
			return "", "no queue was requested", nil
		}
		if err := checkQueuePath(req); err != nil {
			return "", "", fmt.Errorf("%w: requested queue %q: %v", ErrQueueName, req, err)
		}
		return t.createOrExisting(r, assureRoot(req))
	case RuleDefault:
		return t.createOrExisting(r, r.Queue)
	case RuleUser, RuleNestedUser:
		name := cleanName(user)
		if err := checkQueuePath(name); err != nil {
			return "", "", fmt.Errorf("%w: user %q: %v", ErrQueueName, user, err)
		}
		parent, why, err := t.parentOf(r, req, user, groups)
		if parent == "" || err != nil {
			return "", why, err
		}
		return t.createOrExisting(r, parent+"."+name)
	case RulePrimaryGroup:
		if len(groups) == 0 || strings.TrimSpace(groups[0]) == "" {
			return "", "", fmt.Errorf("%w: user %q", ErrNoGroups, user)
		}
		name := cleanName(groups[0])
		if err := checkQueuePath(name); err != nil {
			return "", "", fmt.Errorf("%w: group %q: %v", ErrQueueName, groups[0], err)
		}
		parent, why, err := t.parentOf(r, req, user, groups)
		if parent == "" || err != nil {
			return "", why, err
		}
		return t.createOrExisting(r, parent+"."+name)
	case RuleSecondaryGroup:
		parent, why, err := t.parentOf(r, req, user, groups)
		if parent == "" || err != nil {
			return "", why, err
		}
		if len(groups) > 1 {
			for _, g := range groups[1:] {
				name := cleanName(g)
				if checkQueuePath(name) != nil {
					continue
				}
				if q := parent + "." + name; t.lookup(q) != nil {
					return q, "", nil
				}
			}
		}
		return "", fmt.Sprintf("no secondary group of user %q has a queue under %s", user, parent), nil
	}
	return "", "unknown rule", nil
}

// parentOf is the queue a user or group rule places under: root, or what
// its nested rule gives, which must not be a leaf.
func (t *Tree) parentOf(r *Rule, req, user string, groups []string) (string, string, error) {
	if r.Nested == nil {
		return t.Root.Name, "", nil
	}
	q, why, err := t.apply(r.Nested, req, user, groups)
	if err != nil || q == "" {
		return "", "nested rule " + r.Nested.Name + ": " + why, err
	}
	if e := t.lookup(q); e != nil && !e.IsParent {
		return "", fmt.Sprintf("nested rule %s gives %s, a leaf queue", r.Nested.Name, q), nil
	}
	return q, "", nil
}

// createOrExisting gives q if the rule may create it or it is configured.
func (t *Tree) createOrExisting(r *Rule, q string) (string, string, error) {
	if r.Create || t.lookup(q) != nil {
		return q, "", nil
	}
	return "", q + ` does not exist and the rule has create="false"`, nil
}

// settle checks the queue a rule gave: an existing leaf, or a leaf that
// can be created.
func (t *Tree) settle(q string) (string, bool, error) {
	if e := t.lookup(q); e != nil {
		if e.IsParent {
			return "", false, fmt.Errorf("%w: %s is a parent queue; apps go to leaf queues", ErrNotLeaf, q)
		}
		return q, false, nil
	}
	parts := strings.Split(q, ".")
	if len(parts) > MaxDepth {
		return "", false, fmt.Errorf("%w: %s would be deeper than %d levels", ErrCannotMake, q, MaxDepth)
	}
	if parts[0] != t.Root.Name {
		return "", false, fmt.Errorf("%w: %s is not under %s", ErrCannotMake, q, t.Root.Name)
	}
	a := t.Root
	for _, c := range parts[1:] {
		next := a.Child(c)
		if next == nil {
			break
		}
		a = next
	}
	if !a.IsParent {
		return "", false, fmt.Errorf("%w: %s would be under %s, a leaf queue", ErrCannotMake, q, a.Name)
	}
	return q, true, nil
}

// placeCapacity: the requested queue must exist, be a leaf and be running.
func (t *Tree) placeCapacity(req string) (string, bool, error) {
	q := t.Find(req)
	if q == nil {
		return "", false, fmt.Errorf("%w: %q (the capacity scheduler does not create queues on submission)", ErrNoQueue, req)
	}
	if q.IsParent {
		return "", false, fmt.Errorf("%w: %s is a parent queue; apps go to leaf queues", ErrNotLeaf, q.Name)
	}
	var stopped *Queue // the highest stopped queue on the path: where the stop comes from
	for x := q; x != nil; x = x.Parent {
		if x.State == StateStopped {
			stopped = x
		}
	}
	switch {
	case stopped == q:
		return "", false, fmt.Errorf("%w: %s is STOPPED and accepts no new apps", ErrStopped, q.Name)
	case stopped != nil:
		return "", false, fmt.Errorf("%w: %s is under %s, which is STOPPED; it accepts no new apps", ErrStopped, q.Name, stopped.Name)
	}
	return q.Name, false, nil
}
