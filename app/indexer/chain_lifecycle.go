package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/indexer/lifecycle"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// `indexer chain pause|resume|remove`: flags and printing. The steps and
// their order are pkg/indexer/lifecycle's, shared with the workers.

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

// setPaused is pause and resume (lifecycle.Pause, lifecycle.Resume).
func (a *app) setPaused(cmd *cobra.Command, id string, paused bool) error {
	ctx := cmd.Context()
	e, done, err := a.chainEnv(ctx, true)
	if err != nil {
		return err
	}
	defer done()
	pause, verb := e.life.Resume, "resumed"
	if paused {
		pause, verb = e.life.Pause, "paused"
	}
	res, err := pause(ctx, id)
	if err != nil {
		return err
	}
	if res.HeadScan != nil {
		e.log.Warn("could not start a HeadScan at once; it runs at its next interval", zap.String("chain_id", id), zap.Error(res.HeadScan))
	}
	printPaused(cmd.OutOrStdout(), res, verb)
	if paused {
		fmt.Fprintln(cmd.OutOrStdout(), "running IndexBlock and IndexRange workflows finish; workers stop its push source within "+e.cfg.Registry.PollInterval.String())
	}
	e.log.Info("chain "+verb, zap.String("chain_id", id), zap.Strings("schedules", res.SchedulesChanged),
		zap.Bool("scheduler", res.Scheduler != lifecycle.NoScheduler), zap.Bool("scheduler_signalled", res.Signalled))
	return nil
}

// printPaused says how the chain stands (workers may have paused or
// resumed it first), not only what this command changed.
func printPaused(out io.Writer, res lifecycle.PauseResult, verb string) {
	if !res.Stored {
		fmt.Fprintf(out, "chain %s was %s already; ", res.ChainID, verb)
	} else {
		fmt.Fprintf(out, "chain %s %s: ", res.ChainID, verb)
	}
	sched := "no scheduler running"
	switch res.Scheduler {
	case lifecycle.SchedulerPaused, lifecycle.SchedulerActive:
		sched = "scheduler " + temporal.SchedulerID(res.ChainID) + " " + verb
	case lifecycle.SchedulerUnknown:
		sched = "scheduler " + temporal.SchedulerID(res.ChainID) + " not signalled"
	}
	n := len(res.Schedules) // every one is as asked, or an error was returned
	if res.Paused {
		fmt.Fprintf(out, "%d of %d Schedules paused, %s\n", n, n, sched)
	} else {
		fmt.Fprintf(out, "%d of %d Schedules running, %s\n", n, n, sched)
	}
	if res.Unanswered != nil {
		fmt.Fprintf(out, "%v; the workers ask it again at every poll\n", res.Unanswered)
	}
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
				plan, err := e.life.PlanRemove(ctx, id, dropData)
				if err != nil {
					return err
				}
				printRemovePlan(out, plan)
				return nil
			}
			res, err := e.life.Remove(ctx, id, dropData)
			if len(lifecycle.Failures(err)) == 0 && err != nil {
				return err // refused: nothing done
			}
			fmt.Fprintf(out, "chain %s removed: %d Schedules deleted, %d running workflows stopped; workers stop it within %s\n",
				id, len(res.Schedules), len(res.Workflows), e.cfg.Registry.PollInterval)
			e.log.Info("chain removed", zap.String("chain_id", id), zap.Int("schedules", len(res.Schedules)),
				zap.Int("workflows", len(res.Workflows)), zap.Bool("drop_data", dropData))
			if err != nil {
				return err
			}
			if !dropData {
				fmt.Fprintln(out, "its rows are kept")
				return nil
			}
			fmt.Fprintf(out, "deleting its rows from %d tables (%s)\n", len(res.Tables), strings.Join(res.Tables, ", "))
			if err := e.life.WaitRowsDeleted(ctx, wait); err != nil {
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

func printRemovePlan(out io.Writer, plan lifecycle.Removal) {
	fmt.Fprintf(out, "chain %s: would delete %d Schedules and terminate %d running workflows\n", plan.ChainID, len(plan.Schedules), len(plan.Workflows))
	if plan.DropData {
		fmt.Fprintf(out, "and delete its rows: %s\n", formatRows(plan.Rows))
	} else {
		fmt.Fprintln(out, "its rows would be kept (--drop-data deletes them)")
	}
	fmt.Fprintln(out, "run again with --yes to do it")
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
