package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loomrm/loom/daemon/rm/server"
	"github.com/loomrm/loom/internal/logagg"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// yarnLogsFlags are `yarn logs`'s flags, which it spells with one dash.
var yarnLogsFlags = []string{"applicationId", "containerId", "log_files", "appOwner", "nodeAddress", "list_nodes"}

func logsCommand() *cobra.Command {
	var f rmFlags
	var app, container, owner, node string
	var files []string
	var listNodes bool
	cmd := &cobra.Command{
		Use:   "logs -applicationId APP_ID",
		Short: "Print a finished application's aggregated container logs, as yarn logs does",
		Long: "Reads the logs NodeManagers aggregated when the application ended (yarn.log-aggregation-enable)\n" +
			"from yarn.nodemanager.remote-app-log-dir, on the local filesystem or HDFS. Takes yarn logs's\n" +
			"flags with one dash or two.",
		Example: "  loom logs -applicationId application_1700000000000_0001\n" +
			"  loom logs -applicationId application_1700000000000_0001 -containerId container_1700000000000_0001_01_000002 -log_files stderr",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			for i, a := range args {
				for _, name := range yarnLogsFlags {
					if a == "-"+name || strings.HasPrefix(a, "-"+name+"=") {
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
			if rest := cmd.Flags().Args(); app == "" && len(rest) == 1 {
				app = rest[0]
			} else if len(rest) > 0 {
				return fmt.Errorf("unexpected arguments %q", rest)
			}
			if app == "" {
				return errors.New("no application: give -applicationId APP_ID")
			}
			if _, err := rpc.ParseAppID(app); err != nil {
				return fmt.Errorf("-applicationId %q: %v", app, err)
			}
			return printLogs(cmd.Context(), cmd.OutOrStdout(), &f, logsQuery{app: app, container: container, owner: owner,
				node: node, files: files, listNodes: listNodes})
		},
	}
	f.add(cmd, false)
	fl := cmd.Flags()
	fl.StringVar(&app, "applicationId", "", "the application")
	fl.StringVar(&container, "containerId", "", "only this container")
	fl.StringSliceVar(&files, "log_files", nil, "only these log files (stdout, stderr, ...), comma-separated")
	fl.StringVar(&owner, "appOwner", "", "the application's user (default: asked of the RM, else you)")
	fl.StringVar(&node, "nodeAddress", "", "only the containers of this node, host:port")
	fl.BoolVar(&listNodes, "list_nodes", false, "list the nodes that have logs of the application, and stop")
	fl.BoolP("help", "h", false, "help for logs")
	return cmd
}

type logsQuery struct {
	app, container, owner, node string
	files                       []string
	listNodes                   bool
}

// printLogs finds the app's aggregated logs and prints them in yarn
// logs's layout, container by container.
func printLogs(ctx context.Context, w io.Writer, f *rmFlags, q logsQuery) error {
	c, err := f.load(server.Defaults, server.ConfFiles)
	if err != nil {
		return err
	}
	on, err := c.Bool(logagg.KeyEnabled)
	if err != nil {
		return err
	}
	// The RM knows the app's owner and whether it is over.
	var rep *pb.ApplicationReportProto
	if ac, done, err := f.client(ctx); err == nil {
		id, _ := rpc.ParseAppID(q.app)
		if r, err := ac.GetApplicationReport(ctx, &pb.GetApplicationReportRequestProto{ApplicationId: id}); err == nil {
			rep = r.GetApplicationReport()
		}
		done()
	}
	owner := q.owner
	if owner == "" && rep != nil {
		owner = rep.GetUser()
	}
	if owner == "" {
		u, err := user.Current()
		if err != nil {
			return fmt.Errorf("no -appOwner, the RM did not say, and: %v", err)
		}
		owner = u.Username
	}
	remote, _ := c.String(logagg.KeyRemoteDir)
	suffix, _ := c.String(logagg.KeySuffix)
	defaultFS, err := c.String("fs.defaultFS")
	if err != nil {
		defaultFS = ""
	}
	st, root, err := logagg.Open(ctx, remote, defaultFS, owner)
	if err != nil {
		return err
	}
	defer st.Close()
	dir := logagg.AppDir(root, owner, suffix, q.app)
	nodes := map[string]bool{}
	lastContainer := ""
	printed := 0
	err = logagg.Read(st, dir, func(l logagg.Log, r io.Reader) error {
		if q.node != "" && l.Node != q.node || q.container != "" && l.Container != q.container ||
			len(q.files) > 0 && !slices.Contains(q.files, l.File) {
			return nil
		}
		if q.listNodes {
			if !nodes[l.Node] {
				nodes[l.Node] = true
				fmt.Fprintln(w, l.Node)
			}
			return nil
		}
		if l.Container != lastContainer {
			fmt.Fprintf(w, "Container: %s on %s\nLogAggregationType: AGGREGATED\n%s\n", l.Container, l.Node, strings.Repeat("=", 40))
			lastContainer = l.Container
		}
		fmt.Fprintf(w, "LogType:%s\nLogLastModifiedTime:%s\nLogLength:%d\nLogContents:\n", l.File,
			l.ModTime.UTC().Format(time.UnixDate), l.Size)
		if _, err := io.Copy(w, r); err != nil {
			return err
		}
		fmt.Fprintf(w, "\nEnd of LogType:%s\n%s\n\n", l.File, strings.Repeat("*", 80))
		printed++
		return nil
	})
	switch {
	case errors.Is(err, logagg.ErrNoLogs):
		why := "its logs were not aggregated"
		switch {
		case !on:
			why = "log aggregation is off (" + logagg.KeyEnabled + "=false): its logs stay on the NodeManagers, in yarn.nodemanager.log-dirs " +
				"and at http://<node>:8042/node/containerlogs/<container id>/<user>"
		case rep != nil && rep.GetFinishTime() == 0:
			why = "it has not finished (" + strings.TrimPrefix(rep.GetYarnApplicationState().String(), "") + "): logs are aggregated when it ends; " +
				"until then read them at http://<node>:8042/node/containerlogs/<container id>/<user>"
		case rep != nil:
			why = "its log aggregation status is " + strings.TrimPrefix(rep.GetLogAggregationStatus().String(), "LOG_")
		}
		return fmt.Errorf("no logs of %s for %s under %s: %s", q.app, owner, dir, why)
	case err != nil:
		return err
	}
	if !q.listNodes && printed == 0 {
		return fmt.Errorf("the logs of %s hold nothing that matches (container %q, node %q, files %v)", q.app, q.container, q.node, q.files)
	}
	return nil
}
