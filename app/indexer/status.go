package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/muesli/termenv"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/worker"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/status"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

func (a *app) statusCmd() *cobra.Command {
	var (
		asJSON   bool
		watch    bool
		interval time.Duration
		// queryTimeout bounds the scheduler's progress query.
		queryTimeout time.Duration
		only         []string
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each chain's head, watermark, lag and catch-up progress",
		Long: `status reads each configured chain's head from its node, its watermark
from ClickHouse and, while a catch-up runs, the scheduler's progress query:
heights started of the total with a progress bar, in flight, the rate and
the time left at that rate, per priority bucket. --json prints the same
for scripts; --watch refreshes until interrupted.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.load()
			if err != nil {
				return err
			}
			defer log.Sync() //nolint:errcheck // nothing to do about a failed flush at exit
			ctx := cmd.Context()
			// The file's chains and the registry's (but removed ones).
			all, err := a.allChains(ctx, cfg, log)
			if err != nil {
				return err
			}
			ids := make([]string, 0, len(all))
			for id := range all {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			if len(only) > 0 {
				for _, id := range only {
					if _, ok := all[id]; !ok {
						return &config.KeyError{Key: "chains." + id, Reason: "no such chain in the configuration or the chain registry"}
					}
				}
				ids = only
			}
			tc, err := temporal.Dial(ctx, cfg.Temporal, log)
			if err != nil {
				return err
			}
			defer tc.Close()
			store, err := worker.OpenStore(ctx, cfg.ClickHouse, log)
			if err != nil {
				return err
			}
			defer store.Close()
			m := rpc.NewMetrics(prometheus.NewRegistry())
			clients := map[string]rpc.Client{}
			// A chain whose endpoints cannot be dialled is shown with the
			// error as its head's, not left out nor failing the others.
			dialErrs := map[string]error{}
			var want []status.Want
			for _, id := range ids {
				ch := all[id]
				want = append(want, status.Want{ChainID: id, StartHeight: ch.StartHeight, BlockTime: ch.BlockTime})
				dial, err := config.ExpandEndpoints("chains."+id, ch, os.LookupEnv)
				if err != nil {
					dialErrs[id] = err
					continue
				}
				c, err := worker.DialChain(ctx, id, dial, log, m)
				if err != nil {
					dialErrs[id] = err
					continue
				}
				defer c.Close()
				clients[id] = c
			}
			src := status.Sources{
				Head: func(ctx context.Context, id string) (uint64, error) {
					if err := dialErrs[id]; err != nil {
						return 0, err
					}
					return clients[id].HeadHeight(ctx)
				},
				Watermark:    store.Watermark,
				Temporal:     tc,
				QueryTimeout: queryTimeout,
				Traces:       tracesBackfill(store, all),
			}
			out := cmd.OutOrStdout()
			profile := termenv.Ascii
			tty := out == os.Stdout && term.IsTerminal(int(os.Stdout.Fd()))
			if tty {
				profile = termenv.EnvColorProfile()
			}
			// The --watch refresh of a CLI, not a retry: a source that fails
			// shows in the report and the next refresh asks again.
			for {
				chains := status.Collect(ctx, src, want)
				if asJSON {
					if err := status.JSON(out, chains); err != nil {
						return err
					}
				} else {
					if watch && tty {
						termenv.NewOutput(os.Stdout).ClearScreen()
					}
					fmt.Fprintf(out, "%s\n", time.Now().UTC().Format(time.RFC3339))
					status.Render(out, chains, profile)
				}
				if !watch {
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(interval):
				}
			}
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (one document per refresh)")
	cmd.Flags().BoolVar(&watch, "watch", false, "refresh until interrupted")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "refresh interval with --watch")
	cmd.Flags().DurationVar(&queryTimeout, "query-timeout", 5*time.Second, "how long to wait for a scheduler's progress query (a busy scheduler answers late; its range is shown without it)")
	cmd.Flags().StringSliceVar(&only, "chain", nil, "only these chains (repeatable; default: all configured)")
	return cmd
}

// tracesBackfill reads the traces backfill of the chains that trace.
func tracesBackfill(store *storage.ClickHouse, chains map[string]config.Chain) func(context.Context, string) (*status.Traces, error) {
	return func(ctx context.Context, id string) (*status.Traces, error) {
		if !chains[id].Traces.Enabled() {
			return nil, nil
		}
		b, err := store.Traces().TraceBackfillState(ctx, id)
		if err != nil {
			return nil, err
		}
		return &status.Traces{Running: b.Running(), Top: b.Top, Floor: b.Floor, Next: b.Next, Done: b.Done}, nil
	}
}
