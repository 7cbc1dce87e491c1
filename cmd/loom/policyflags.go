package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/loomrm/loom/rm"
)

// policyFlags are the scheduling policy's knobs as loom sim and loom mini
// take them, with the RM's defaults (rm.DefaultPolicyConfig), checked
// by rm.PolicyConfig as the RM checks its loom.scheduler.* keys.
type policyFlags struct {
	pAltruism   float64
	order       string
	leftoverCap float64
	tetrisFair  float64
	recall      float64
	slack       float64
	growth      bool
}

func (p *policyFlags) register(fl *pflag.FlagSet) {
	d := rm.DefaultPolicyConfig()
	fl.Float64Var(&p.pAltruism, "p-altruism", d.PAltruism, "P(Altruism): the probability that a job yields at a decision")
	fl.StringVar(&p.order, "leftover-order", d.LeftoverOrder.String(), "srtf (both steps by least remaining work), efficiency-first (in-share packed) or jct-first (leftover packed)")
	fl.Float64Var(&p.leftoverCap, "leftover-cap", d.LeftoverCap,
		"bound a job's holding, in multiples of its share, while it takes from the leftover (0: none, the paper's pure SRTF)")
	fl.Float64Var(&p.tetrisFair, "tetris-fairness", d.TetrisFairness,
		"Tetris's fairness knob f, 0 to 1: 0 packs across every job (the paper's baseline), 1 serves only the job furthest below its fair share")
	fl.Float64Var(&p.recall, "recall", d.Recall,
		"Carbyne: a job below its share whose due tasks have waited this many times its remaining critical path takes leftover-paid containers back (0: off)")
	fl.Float64Var(&p.slack, "promise-slack", d.PromiseSlack,
		"Carbyne: a job whose fluid finish moved past 1 + this times the span it was first promised moves up the leftover's order (0: off)")
	fl.BoolVar(&p.growth, "share-growth", d.ShareGrowth,
		"Carbyne: each job plans against its share as it grows while the other jobs finish (processor sharing), so it yields more now and takes more later, by the same T_k")
}

// config is the checked policy config; a bad knob is named by its flag.
func (p policyFlags) config(policy string) (rm.PolicyConfig, error) {
	c, err := rm.ParsePolicyConfig(policy, p.pAltruism, p.order, p.leftoverCap)
	if err == nil {
		c.TetrisFairness, c.Recall, c.PromiseSlack, c.ShareGrowth = p.tetrisFair, p.recall, p.slack, p.growth
		err = c.Validate()
	}
	var pe *rm.PolicyError
	if errors.As(err, &pe) {
		err = fmt.Errorf("--%s: %s", pe.Knob, pe.Err)
		if pe.Knob == "policy" && policy == rm.PolicyCarbyne {
			err = fmt.Errorf("--policies: %s", pe.Err)
		}
	}
	return c, err
}
