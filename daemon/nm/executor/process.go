package executor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/loomrm/loom/rpc"
)

// AddrFileEnv names the file an executor process writes its address to,
// when no flag names one.
const AddrFileEnv = "LOOM_EXECUTOR_ADDR_FILE"

// ProcessOptions configure the executor process (`loom executor`).
type ProcessOptions struct {
	// Listen is where to serve ExecutorProtocol (127.0.0.1:0).
	Listen string
	// AddrFile, when set, receives the address once it is listening,
	// written whole (through a rename), with a trailing newline.
	AddrFile string
	Log      zerolog.Logger
}

// RunProcess is the long-lived executor process: it serves
// ExecutorProtocol until ctx ends, then revokes every lease (killing
// command tasks), reports what is left and stops.
func RunProcess(ctx context.Context, opts ProcessOptions) error {
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("executor: listening on %s: %w", opts.Listen, err)
	}
	q := NewCompletions()
	e := New(Options{Report: q.Add, LimitMemory: true})
	log := opts.Log.With().Str("component", "executor-rpc").Logger()
	srv := rpc.NewServer(rpc.ServerOptions{Logger: &log})
	srv.Register(Protocol(e, q))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	if opts.AddrFile != "" {
		if err := writeAddr(opts.AddrFile, addr); err != nil {
			srv.Close()
			e.Close()
			return err
		}
	}
	opts.Log.Info().Str("address", addr).Int("pid", os.Getpid()).Msg("executor listening")
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	opts.Log.Info().Msg("executor stopping: revoking every lease")
	e.Close()
	srv.Close()
	if err != nil && !errors.Is(err, rpc.ErrServerClosed) {
		return fmt.Errorf("executor: %w", err)
	}
	return nil
}

func writeAddr(path, addr string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o600); err != nil {
		return fmt.Errorf("executor: writing its address: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("executor: writing its address: %w", err)
	}
	return nil
}
