package rm

import (
	"errors"
	"math"
	"testing"

	"github.com/loomrm/loom/altruism"
)

func TestPolicyConfig(t *testing.T) {
	d := DefaultPolicyConfig()
	if d != (PolicyConfig{Policy: PolicyCarbyne, PAltruism: 1, LeftoverOrder: altruism.SRTFFirst, LeftoverCap: 2, Recall: 0.25, PromiseSlack: 1.5, ShareGrowth: true}) {
		t.Fatalf("defaults %+v", d)
	}
	for _, bad := range []struct {
		knob string
		set  func(*PolicyConfig)
	}{
		{"recall", func(c *PolicyConfig) { c.Recall = -1 }},
		{"recall", func(c *PolicyConfig) { c.Recall = math.Inf(1) }},
		{"promise-slack", func(c *PolicyConfig) { c.PromiseSlack = -0.5 }},
		{"promise-slack", func(c *PolicyConfig) { c.PromiseSlack = math.NaN() }},
	} {
		c := DefaultPolicyConfig()
		bad.set(&c)
		var pe *PolicyError
		if err := c.Validate(); !errors.As(err, &pe) || pe.Knob != bad.knob {
			t.Errorf("%+v: err = %v, want a PolicyError for %s", c, err, bad.knob)
		}
	}
	tests := []struct {
		name           string
		policy, order  string
		p, leftoverCap float64
		knob           string // the bad one, or ""
		node           string // the node pass's name
		altruistic     bool
		effectiveP     float64
	}{
		{"carbyne capped", "carbyne", "efficiency-first", 0.5, 2, "", "carbyne", true, 0.5},
		{"carbyne uncapped", "carbyne", "jct-first", 1, 0, "", "carbyne", true, 1},
		{"carbyne srtf", "carbyne", "srtf", 1, 2, "", "carbyne", true, 1},
		{"drf never yields", "drf", "efficiency-first", 1, 2, "", "drf", false, 0},
		{"tetris", "tetris", "efficiency-first", 0.3, 0, "", "tetris", false, 0},
		{"sjf", "sjf", "efficiency-first", 1, 2, "", "sjf", false, 0},
		{"unknown policy", "fifo", "efficiency-first", 1, 2, "policy", "", false, 0},
		{"P above 1", "carbyne", "efficiency-first", 1.01, 2, "p-altruism", "", false, 0},
		{"P NaN", "carbyne", "efficiency-first", math.NaN(), 2, "p-altruism", "", false, 0},
		{"unknown order", "carbyne", "fastest-first", 1, 2, "leftover-order", "", false, 0},
		{"negative cap", "carbyne", "efficiency-first", 1, -0.5, "leftover-cap", "", false, 0},
		{"infinite cap", "carbyne", "efficiency-first", 1, math.Inf(1), "leftover-cap", "", false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParsePolicyConfig(tc.policy, tc.p, tc.order, tc.leftoverCap)
			if tc.knob != "" {
				var pe *PolicyError
				if !errors.As(err, &pe) || pe.Knob != tc.knob {
					t.Fatalf("err = %v, want a PolicyError for %s", err, tc.knob)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pol, err := c.NodePolicy()
			if err != nil || pol.Name() != tc.node {
				t.Fatalf("node pass %v %v, want %s", pol, err, tc.node)
			}
			if capped, ok := pol.(carbyne); ok && capped.cap != tc.leftoverCap {
				t.Errorf("carbyne's leftover cap %v, want %v", capped.cap, tc.leftoverCap)
			}
			if c.Altruistic() != tc.altruistic || c.EffectivePAltruism(c.PAltruism) != tc.effectiveP {
				t.Errorf("altruistic %v, AMs told P %v; want %v, %v", c.Altruistic(), c.EffectivePAltruism(c.PAltruism), tc.altruistic, tc.effectiveP)
			}
		})
	}
}
