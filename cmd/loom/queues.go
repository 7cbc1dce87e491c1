package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// queueRow is a queue as `loom queues` shows it.
type queueRow struct {
	Path string `json:"path"`
	// Depth is how far below root it sits, for the table's indentation.
	Depth int `json:"depth"`
	// Capacity is its part of its parent (its weight among its
	// siblings'); MaxCapacity and Used are of the cluster.
	Capacity    float32 `json:"capacity"`
	MaxCapacity float32 `json:"max_capacity"`
	Used        float32 `json:"used"`
	Apps        int     `json:"apps"`
	State       string  `json:"state"`
	// NodeLabels are the labels it may use and DefaultLabel its apps'
	// default (with node labels on).
	NodeLabels   []string `json:"node_labels,omitempty"`
	DefaultLabel string   `json:"default_node_label,omitempty"`
}

func queuesCommand() *cobra.Command {
	var f rmFlags
	var name string
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "Show the queue tree, as yarn queue -status does for each queue",
		Long: `Show the RM's queues (getQueueInfo, recursively): each queue's part of its
parent, its maximum and use as parts of the cluster, and its unfinished apps.`,
		Example: "  loom queues\n  loom queues --queue root.eng --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ac, done, err := f.client(ctx)
			if err != nil {
				return err
			}
			defer done()
			resp, err := ac.GetQueueInfo(ctx, &pb.GetQueueInfoRequestProto{QueueName: proto.String(name),
				IncludeChildQueues: proto.Bool(true), Recursive: proto.Bool(true), IncludeApplications: proto.Bool(true)})
			if err != nil {
				return err
			}
			rows := queueRows(resp.GetQueueInfo(), 0, nil)
			if f.json {
				return printJSON(cmd.OutOrStdout(), rows)
			}
			labels := false
			for _, r := range rows {
				labels = labels || len(r.NodeLabels) > 0
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			head := "queue\tcapacity\tmax capacity\tused\tapps\tstate"
			if labels {
				head += "\tnode labels\tdefault label"
			}
			fmt.Fprintln(tw, head)
			for _, r := range rows {
				fmt.Fprintf(tw, "%s%s\t%.1f%%\t%.1f%%\t%.1f%%\t%d\t%s", strings.Repeat("  ", r.Depth), r.Path,
					100*r.Capacity, 100*r.MaxCapacity, 100*r.Used, r.Apps, r.State)
				if labels {
					def := r.DefaultLabel
					if def == "" {
						def = "-"
					}
					fmt.Fprintf(tw, "\t%s\t%s", strings.Join(r.NodeLabels, ","), def)
				}
				fmt.Fprintln(tw)
			}
			return tw.Flush()
		},
	}
	f.add(cmd, true)
	cmd.Flags().StringVar(&name, "queue", "root", "the queue to start from")
	return cmd
}

// queueRows flattens a queue and its children, parents first.
func queueRows(q *pb.QueueInfoProto, depth int, rows []queueRow) []queueRow {
	if q == nil {
		return rows
	}
	path := q.GetQueuePath()
	if path == "" {
		path = q.GetQueueName()
	}
	apps := 0
	for _, a := range q.GetApplications() {
		switch a.GetYarnApplicationState() {
		case pb.YarnApplicationStateProto_FINISHED, pb.YarnApplicationStateProto_FAILED, pb.YarnApplicationStateProto_KILLED:
		default:
			apps++
		}
	}
	rows = append(rows, queueRow{Path: path, Depth: depth, Capacity: q.GetCapacity(), MaxCapacity: q.GetMaximumCapacity(),
		Used: q.GetCurrentCapacity(), Apps: apps, State: strings.TrimPrefix(q.GetState().String(), "Q_"),
		NodeLabels: q.GetAccessibleNodeLabels(), DefaultLabel: q.GetDefaultNodeLabelExpression()})
	for _, ch := range q.GetChildQueues() {
		rows = queueRows(ch, depth+1, rows)
	}
	return rows
}
