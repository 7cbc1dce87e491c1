// Command loom is Loom's one binary. Subcommands are wiring only: the
// policy, the simulator and the catalogues live in their packages.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "loom:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "loom",
		Short: "Loom: a YARN-compatible resource manager that schedules DAG jobs altruistically",
		Long: `Loom shares a cluster between DAG query engines. The ResourceManager gives each
job its Dominant Resource Fair share; each job's application master plans its
DAG within that share and yields what it does not need now; the leftover goes
to the jobs closest to finishing, packed tightly (Carbyne, OSDI'16).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(simCommand(), tuneCommand(), workloadCommand(), benchCommand(), rmCommand(), nmCommand(), amCommand(), executorCommand(), submitCommand(), appsCommand(), killCommand(), nodesCommand(), queuesCommand(), logsCommand(), haadminCommand(), miniCommand())
	return root
}
