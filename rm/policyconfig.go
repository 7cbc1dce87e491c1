package rm

import (
	"fmt"
	"math"
	"strings"

	"github.com/loomrm/loom/altruism"
)

// The policies, as the Carbyne paper names them.
const (
	PolicyCarbyne = "carbyne"
	PolicyDRF     = "drf"
	PolicyTetris  = "tetris"
	PolicySJF     = "sjf"
)

// PolicyNames are the policies: the baselines, then Carbyne, the order the
// simulator compares them in.
var PolicyNames = []string{PolicyDRF, PolicyTetris, PolicySJF, PolicyCarbyne}

// DefaultLeftoverCap is Loom's default bound on what a job may hold while
// it takes from the leftover: twice its share. Uncapped, the leftover goes
// wholly to whichever job has least work left (the paper's SRTF), which at
// load 1 costs some 0.08 of Jain's index against DRF; capped at twice the
// share it costs about 0.05, for a slightly smaller JCT gain.
const DefaultLeftoverCap = 2

// DefaultRecall is Loom's default for PolicyConfig.Recall: a job below its
// share takes leftover-paid containers back once its due tasks have waited a
// quarter of its remaining critical path (recall.go). Off (0), 7.6% of
// the heavy-tailed mix's jobs ran below 0.8x of their DRF time; at 0.25,
// 0.4%, with TPC-H, TPC-DS and their mix within noise of off (measured
// before recall was held to one round per ShareInterval: at 0.1, TPC-H's
// jobs fell behind more often, 4.0% below 0.8x against 2.4% off, and at
// 0.5 and 1 the heavy-tailed mix kept 3-4% below 0.8x).
const DefaultRecall = 0.25

// DefaultPromiseSlack is Loom's default for PolicyConfig.PromiseSlack: a job
// whose fluid finish has moved past 2.5 times the span it was first
// promised moves up the leftover's order (promise.go). On seeds 2 and 3 it
// took the three large jobs that fell below 0.5x of their DRF time (TPC-H,
// the mix) to 0.52-0.59x, for 0.7% of the average gain; at 1 a one-task job
// of the heavy-tailed mix fell to 0.33x behind late large ones
// (docs/results/altruism.md).
const DefaultPromiseSlack = 1.5

// PolicyConfig is the scheduling policy and its knobs. It is parsed and
// checked here once, with one set of defaults, for every place that takes
// them: loom sim, loom mini, the RM's configuration and the web UI's
// operations page. Which policy does what is decided here too, so that no
// other package compares policy names.
type PolicyConfig struct {
	// Policy is carbyne, drf, tetris or sjf.
	Policy string
	// PAltruism is the probability that a job yields at a decision
	// (Carbyne's; the baselines' AMs never yield).
	PAltruism float64
	// LeftoverOrder is the order Carbyne hands the leftover out in.
	LeftoverOrder altruism.LeftoverOrder
	// LeftoverCap bounds what a job may hold while it takes from the
	// leftover, in multiples of its share (0: no bound).
	LeftoverCap float64
	// TetrisFairness is Tetris's fairness knob f in [0, 1] (Tetris only):
	// 0 considers every app at each pick (the performance setting the
	// Carbyne paper compares against), 1 only the one furthest below its
	// fair share.
	TetrisFairness float64
	// Recall (Carbyne only): a job below its share whose DEFAULT asks
	// have waited this many times its remaining critical path takes
	// leftover-paid containers back (recall.go); 0 is off.
	Recall float64
	// PromiseSlack (Carbyne only): a job whose fluid finish moved past
	// 1 + PromiseSlack times the span it was first promised moves up the
	// leftover's order (promise.go); 0 is off.
	PromiseSlack float64
	// ShareGrowth (Carbyne only): each AM plans against its share as it
	// would grow while the other jobs finish under processor sharing
	// (Core.ShareGrowth), not against its current share alone.
	ShareGrowth bool
}

// DefaultShareGrowth is Loom's default for PolicyConfig.ShareGrowth: on.
// Measured on TPC-H, TPC-DS, their mix and the heavy-tailed mix, online
// at loads 1 to 4 and in batch (docs/results/altruism.md, "Planning
// against the share as it grows"), it makes Carbyne faster against DRF on
// every one, for some of Jain's index.
const DefaultShareGrowth = true

// DefaultPolicyConfig is Carbyne with P(Altruism) 1, efficiency first,
// the leftover capped at twice a job's share, AMs planning against their
// projected share.
func DefaultPolicyConfig() PolicyConfig {
	return PolicyConfig{Policy: PolicyCarbyne, PAltruism: 1, LeftoverOrder: altruism.SRTFFirst, LeftoverCap: DefaultLeftoverCap, Recall: DefaultRecall,
		PromiseSlack: DefaultPromiseSlack, ShareGrowth: DefaultShareGrowth}
}

// PolicyError is a knob with a value it cannot take; Knob is its name as
// loom's flags spell it (policy, p-altruism, leftover-order,
// leftover-cap), so that each front end can name its own key for it.
type PolicyError struct {
	Knob string
	Err  string
}

func (e *PolicyError) Error() string { return e.Knob + ": " + e.Err }

// Validate checks every knob.
func (c PolicyConfig) Validate() error {
	if !isPolicy(c.Policy) {
		return &PolicyError{"policy", fmt.Sprintf("unknown policy %q (want %s)", c.Policy, strings.Join(PolicyNames, ", "))}
	}
	if err := CheckPAltruism(c.PAltruism); err != nil {
		return err
	}
	if c.LeftoverOrder != altruism.EfficiencyFirst && c.LeftoverOrder != altruism.JCTFirst && c.LeftoverOrder != altruism.SRTFFirst {
		return &PolicyError{"leftover-order", fmt.Sprintf("unknown leftover order %d", c.LeftoverOrder)}
	}
	if math.IsNaN(c.LeftoverCap) || math.IsInf(c.LeftoverCap, 0) || c.LeftoverCap < 0 {
		return &PolicyError{"leftover-cap", fmt.Sprintf("%v must be a finite multiple of a share, at least 0 (0 means no cap)", c.LeftoverCap)}
	}
	if math.IsNaN(c.Recall) || math.IsInf(c.Recall, 0) || c.Recall < 0 {
		return &PolicyError{"recall", fmt.Sprintf("%v must be a finite multiple of a job's critical path, at least 0 (0 means off)", c.Recall)}
	}
	if math.IsNaN(c.PromiseSlack) || math.IsInf(c.PromiseSlack, 0) || c.PromiseSlack < 0 {
		return &PolicyError{"promise-slack", fmt.Sprintf("%v must be a finite part of a job's first promised span, at least 0 (0 means off)", c.PromiseSlack)}
	}
	if !(c.TetrisFairness >= 0 && c.TetrisFairness <= 1) {
		return &PolicyError{"tetris-fairness", fmt.Sprintf("%v is not between 0 and 1", c.TetrisFairness)}
	}
	return nil
}

// CheckPAltruism checks a P(Altruism), as set at start or while the RM
// runs.
func CheckPAltruism(p float64) error {
	if !(p >= 0 && p <= 1) {
		return &PolicyError{"p-altruism", fmt.Sprintf("%v is not between 0 and 1", p)}
	}
	return nil
}

// ParsePolicyConfig reads the knobs as loom's flags and the loom.scheduler.*
// keys spell them, and checks them.
func ParsePolicyConfig(policy string, pAltruism float64, order string, leftoverCap float64) (PolicyConfig, error) {
	o, err := altruism.ParseLeftoverOrder(order)
	if err != nil {
		return PolicyConfig{}, &PolicyError{"leftover-order", err.Error()}
	}
	c := PolicyConfig{Policy: policy, PAltruism: pAltruism, LeftoverOrder: o, LeftoverCap: leftoverCap, Recall: DefaultRecall,
		PromiseSlack: DefaultPromiseSlack, ShareGrowth: DefaultShareGrowth}
	return c, c.Validate()
}

// NodePolicy is the core's node pass for the config.
func (c PolicyConfig) NodePolicy() (Policy, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	switch {
	case c.Policy == PolicyCarbyne && c.LeftoverCap > 0:
		return CarbyneCapped(c.LeftoverOrder, c.LeftoverCap), nil
	case c.Policy == PolicyTetris && c.TetrisFairness > 0:
		return TetrisFair(c.TetrisFairness), nil
	}
	return ParsePolicy(c.Policy, c.LeftoverOrder)
}

// Altruistic says whether AMs plan altruistically under the config's
// policy (see the function Altruistic).
func (c PolicyConfig) Altruistic() bool { return Altruistic(c.Policy) }

// EffectivePAltruism is the P(Altruism) AMs are told: the config's under
// Carbyne, 0 under a baseline, whose AMs never yield.
func (c PolicyConfig) EffectivePAltruism(p float64) float64 {
	if !c.Altruistic() {
		return 0
	}
	return p
}

func isPolicy(name string) bool {
	for _, p := range PolicyNames {
		if p == name {
			return true
		}
	}
	return false
}
