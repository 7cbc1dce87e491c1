package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/loomrm/loom/daemon/rm/server"
	"github.com/loomrm/loom/internal/hadoopconf"
)

// haadminCommand is `yarn rmadmin`'s HA part: which RM is active.
func haadminCommand() *cobra.Command {
	var cf confFlags
	var state, all, toActive, toStandby bool
	cmd := &cobra.Command{
		Use:   "haadmin (-getServiceState RM_ID | -getAllServiceState | -transitionToActive RM_ID | -transitionToStandby RM_ID)",
		Short: "Ask the RMs of an HA cluster which is active, as yarn rmadmin -getServiceState does",
		Long: "Reads each RM's state (active or standby) from its web port, at the addresses yarn-site.xml gives its\n" +
			"rm-id. Loom elects its active RM through ZooKeeper (automatic failover), so manual transitions are\n" +
			"refused, as YARN refuses them then.",
		Example:            "  loom haadmin -getServiceState rm1\n  loom haadmin -getAllServiceState",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			for i, a := range args {
				for _, name := range []string{"getServiceState", "getAllServiceState", "transitionToActive", "transitionToStandby"} {
					if a == "-"+name {
						args[i] = "-" + a
					}
				}
			}
			if err := cmd.Flags().Parse(args); err != nil {
				return err
			}
			if help, _ := cmd.Flags().GetBool("help"); help {
				return cmd.Help()
			}
			c, err := cf.load(server.Defaults, server.ConfFiles)
			if err != nil {
				return err
			}
			on, ids, err := c.HAEnabled()
			if err != nil {
				return err
			}
			if !on {
				return fmt.Errorf("%s is not true: this cluster has one ResourceManager", hadoopconf.KeyHAEnabled)
			}
			rest := cmd.Flags().Args()
			out := cmd.OutOrStdout()
			switch {
			case toActive || toStandby:
				auto, err := c.Bool("yarn.resourcemanager.ha.automatic-failover.enabled")
				if err != nil {
					return err
				}
				if auto {
					return errors.New("Refusing to manually manage HA state, since it may cause a split-brain scenario or other incorrect state. " +
						"Loom's RMs elect the active one through ZooKeeper (yarn.resourcemanager.ha.automatic-failover.enabled): stop the active RM to make another one active")
				}
				if len(rest) != 1 {
					return errors.New("-transitionToActive and -transitionToStandby take one rm-id")
				}
				target := "active"
				if toStandby {
					target = "standby"
				}
				return transition(c, rest[0], target)
			case all:
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				for _, id := range ids {
					st, err := serviceState(c, id)
					if err != nil {
						st = "unreachable (" + err.Error() + ")"
					}
					fmt.Fprintf(tw, "%s\t%s\n", id, st)
				}
				return tw.Flush()
			case state:
				if len(rest) != 1 {
					return errors.New("-getServiceState takes one rm-id")
				}
				st, err := serviceState(c, rest[0])
				if err != nil {
					return err
				}
				fmt.Fprintln(out, st)
				return nil
			}
			return cmd.Help()
		},
	}
	cf.add(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&state, "getServiceState", false, "print one RM's state: active or standby")
	fl.BoolVar(&all, "getAllServiceState", false, "print every RM's state")
	fl.BoolVar(&toActive, "transitionToActive", false, "refused: the active RM is elected")
	fl.BoolVar(&toStandby, "transitionToStandby", false, "refused: the active RM is elected")
	fl.BoolP("help", "h", false, "help for haadmin")
	return cmd
}

// serviceState is an RM's haState, lower-cased as yarn rmadmin prints it.
func serviceState(c *hadoopconf.Conf, id string) (string, error) {
	on, ids, err := c.HAEnabled()
	if err != nil || !on {
		return "", err
	}
	known := false
	for _, x := range ids {
		known = known || x == id
	}
	if !known {
		return "", fmt.Errorf("%q is not one of %s %v", id, hadoopconf.KeyHAIDs, ids)
	}
	web, err := c.RMAddrOf("yarn.resourcemanager.webapp.address", id)
	if err != nil {
		return "", err
	}
	web = strings.Replace(web, "0.0.0.0:", "127.0.0.1:", 1)
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + web + "/ws/v1/cluster/info")
	if err != nil {
		return "", fmt.Errorf("%s at %s: %v", id, web, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var ci struct{ ClusterInfo struct{ HAState string } }
	if err := json.Unmarshal(b, &ci); err != nil || ci.ClusterInfo.HAState == "" {
		return "", fmt.Errorf("%s at %s: not a ResourceManager's answer: %.100s", id, web, b)
	}
	return strings.ToLower(ci.ClusterInfo.HAState), nil
}

// transition asks an RM, through its web port and with the admin
// credential (loom.admin.secret), to become active or standby (manual
// failover).
func transition(c *hadoopconf.Conf, id, state string) error {
	secret, err := c.String("loom.admin.secret")
	if err != nil || secret == "" {
		return errors.New("manual transitions need the admin credential: set loom.admin.secret (as on the RMs)")
	}
	web, err := c.RMAddrOf("yarn.resourcemanager.webapp.address", id)
	if err != nil {
		return err
	}
	web = strings.Replace(web, "0.0.0.0:", "127.0.0.1:", 1)
	req, err := http.NewRequest(http.MethodPut, "http://"+web+"/ws/v1/loom/ha/state", strings.NewReader(`{"state":"`+state+`"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+secret)
	hc := http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s at %s: %v", id, web, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s refused to become %s: %s", id, state, strings.TrimSpace(string(b)))
	}
	return nil
}
