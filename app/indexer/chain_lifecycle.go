package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/registry"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// `indexer chain pause|resume|remove`.

func (a *app) chainPauseCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "pause <chain>",
		Short: "Pause a chain: its Schedules and scheduler stop starting work; running workflows finish",
		Long: `pause stores the chain as paused and pauses it in Temporal at once: its
HeadScan and GapScan Schedules are paused, and its running catch-up
scheduler (if any) stops starting heights and waits. IndexBlock and
IndexRange workflows already running finish. The workers stop its push
source within registry.poll_interval and keep it paused (a Schedule or
scheduler resumed by anything else is paused again). indexer chain resume
undoes it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.setPaused(cmd, args[0], true)
		},
	}
}

func (a *app) chainResumeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "resume <chain>",
		Short: "Resume a paused chain: its Schedules and scheduler run again and it catches up",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.setPaused(cmd, args[0], false)
		},
	}
}

// setPaused is pause and resume: the stored state first (so that workers
// keep it), then Temporal at once (so that nothing waits for a poll).
func (a *app) setPaused(cmd *cobra.Command, id string, paused bool) error {
	ctx := cmd.Context()
	e, done, err := a.chainEnv(ctx, true)
	if err != nil {
		return err
	}
	defer done()
	state, verb := registry.Active, "resumed"
	if paused {
		state, verb = registry.Paused, "paused"
	}
	_, changed, err := e.reg.SetState(ctx, id, state, false)
	if err != nil {
		return err
	}
	schedules, err := temporal.SetSchedulesPaused(ctx, e.tc, id, paused)
	if err != nil {
		return err
	}
	// Workers may have done it first: say how things are, not what this
	// command changed.
	exist, nPaused, err := temporal.SchedulesPaused(ctx, e.tc, id)
	if err != nil {
		return err
	}
	running, err := temporal.SignalSchedulerPause(ctx, e.tc, id, paused)
	if err != nil {
		return err
	}
	if !paused {
		// Catch up now rather than at the next interval.
		if err := temporal.TriggerSchedule(ctx, e.tc, temporal.HeadScanScheduleID(id)); err != nil {
			e.log.Warn("could not start a HeadScan at once; it runs at its next interval", zap.String("chain_id", id), zap.Error(err))
		}
	}
	out := cmd.OutOrStdout()
	if !changed {
		fmt.Fprintf(out, "chain %s was %s already; ", id, verb)
	} else {
		fmt.Fprintf(out, "chain %s %s: ", id, verb)
	}
	sched := "no scheduler running"
	if running {
		sched = "scheduler " + temporal.SchedulerID(id) + " " + verb
	}
	if paused {
		fmt.Fprintf(out, "%d of %d Schedules paused, %s\n", nPaused, exist, sched)
	} else {
		fmt.Fprintf(out, "%d of %d Schedules running, %s\n", exist-nPaused, exist, sched)
	}
	if paused {
		fmt.Fprintln(out, "running IndexBlock and IndexRange workflows finish; workers stop its push source within "+e.cfg.Registry.PollInterval.String())
	}
	e.log.Info("chain "+verb, zap.String("chain_id", id), zap.Strings("schedules", schedules), zap.Bool("scheduler", running))
	return nil
}

func (a *app) chainRemoveCmd() *cobra.Command {
	var (
		dropData, yes bool
		wait          time.Duration
	)
	cmd := &cobra.Command{
		Use:   "remove <chain>",
		Short: "Stop a chain everywhere, keeping its data (or deleting it with --drop-data); without --yes, only list",
		Long: `remove stores the chain as removed, deletes its Schedules and terminates its
scheduler and every running workflow of it; the workers stop polling its
task queues within registry.poll_interval. Its rows stay in ClickHouse
unless --drop-data: then they are deleted from every table (one ALTER TABLE
… DELETE mutation per table, which runs in the background; the command
waits up to --wait for them), and every worker that ran the chain deletes
again what it wrote before it stopped. Without --yes it only prints what
it would do.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			ctx := cmd.Context()
			e, done, err := a.chainEnv(ctx, true)
			if err != nil {
				return err
			}
			defer done()
			out := cmd.OutOrStdout()
			if !yes {
				if _, ok := e.cfg.Chains[id]; ok {
					return &registry.DeclaredInFileError{ID: id}
				}
				if _, found, err := e.reg.Get(ctx, id); err != nil {
					return err
				} else if !found {
					return &registry.NotFoundError{ID: id}
				}
				res, err := temporal.RemoveChain(ctx, e.tc, e.cfg.Temporal.Namespace, id, true)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "chain %s: would delete %d Schedules and terminate %d running workflows\n", id, len(res.Schedules), len(res.Workflows))
				if dropData {
					rows, err := e.store.ChainRows(ctx, id)
					if err != nil {
						return err
					}
					fmt.Fprintf(out, "and delete its rows: %s\n", formatRows(rows))
				} else {
					fmt.Fprintln(out, "its rows would be kept (--drop-data deletes them)")
				}
				fmt.Fprintln(out, "run again with --yes to do it")
				return nil
			}
			if _, _, err := e.reg.SetState(ctx, id, registry.Removed, dropData); err != nil {
				return err
			}
			res, err := temporal.RemoveChain(ctx, e.tc, e.cfg.Temporal.Namespace, id, false)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "chain %s removed: %d Schedules deleted, %d running workflows terminated; workers stop it within %s\n",
				id, len(res.Schedules), len(res.Workflows), e.cfg.Registry.PollInterval)
			e.log.Info("chain removed", zap.String("chain_id", id), zap.Int("schedules", len(res.Schedules)),
				zap.Int("workflows", len(res.Workflows)), zap.Bool("drop_data", dropData))
			if !dropData {
				fmt.Fprintln(out, "its rows are kept")
				return nil
			}
			tables, err := e.store.DeleteChainRows(ctx, id)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "deleting its rows from %d tables (%s)\n", len(tables), strings.Join(tables, ", "))
			if err := waitMutations(ctx, e.store, wait); err != nil {
				return err
			}
			fmt.Fprintln(out, "its rows are deleted")
			return nil
		},
	}
	cmd.Flags().BoolVar(&dropData, "drop-data", false, "delete the chain's rows from every table")
	cmd.Flags().BoolVar(&yes, "yes", false, "do it (without it: only list)")
	cmd.Flags().DurationVar(&wait, "wait", 5*time.Minute, "with --drop-data: how long to wait for the deletions to finish")
	return cmd
}

// waitMutations waits until the database has no unfinished mutation.
func waitMutations(ctx context.Context, store *storage.ClickHouse, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		n, err := store.PendingMutations(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d deletions still running after %s; they go on in the background (system.mutations)", n, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func formatRows(rows map[string]uint64) string {
	var parts []string
	var total uint64
	for _, t := range slices.Sorted(maps.Keys(rows)) {
		if rows[t] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", t, rows[t]))
			total += rows[t]
		}
	}
	if total == 0 {
		return "none stored"
	}
	return fmt.Sprintf("%d rows (%s)", total, strings.Join(parts, ", "))
}
