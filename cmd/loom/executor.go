package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/loomrm/loom/daemon/nm/executor"
)

func executorCommand() *cobra.Command {
	var listen, addrFile string
	cmd := &cobra.Command{
		Use:   "executor",
		Short: "Run an app's executor on this node (the NodeManager starts it)",
		Long: `Run an app's executor: the long-lived process that runs one app's tasks on
one node. The NodeManager starts it for the app's first container asking for
one (LOOM_EXECUTOR=1) and hands it that container, and each later one, as a
lease; the AM installs task templates and starts tasks over ExecutorProtocol
(org.loom.executor.ExecutorProtocolPB).

Once listening, it writes its address to --addr-file (or $LOOM_EXECUTOR_ADDR_FILE).
SIGINT or SIGTERM revokes every lease, killing command tasks, and stops it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if addrFile == "" {
				addrFile = os.Getenv(executor.AddrFileEnv)
			}
			log := daemonLogger()
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return executor.RunProcess(ctx, executor.ProcessOptions{Listen: listen, AddrFile: addrFile, Log: log})
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "where to serve ExecutorProtocol, host:port; port 0 picks one")
	cmd.Flags().StringVar(&addrFile, "addr-file", "", "file to write the address to once listening (default $"+executor.AddrFileEnv+")")
	return cmd
}
