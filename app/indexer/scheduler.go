package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/temporal"
)

func (a *app) schedulerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Operate a chain's catch-up scheduler",
	}
	var yes bool
	reset := &cobra.Command{
		Use:   "reset <chain>",
		Short: "Stop a chain's scheduler and its in-flight indexing workflows (data is kept; without --yes, only list them)",
		Long: `reset terminates the chain's SchedulerWorkflow and every running IndexBlock
and IndexRange workflow of the chain, for a scheduler that holds the chain
hostage (docs/operations.md, runbook "Scheduler stuck"). Stored data is not
touched: heights whose workflows are stopped are not indexed yet, and the
next HeadScan and GapScan start them again (a new scheduler if the backlog
is large). Without --yes it only prints what it would stop.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			chainID := args[0]
			cfg, log, err := a.load()
			if err != nil {
				return err
			}
			defer log.Sync() //nolint:errcheck // nothing to do about a failed flush at exit
			if err := a.knownChain(cmd.Context(), cfg, log, chainID); err != nil {
				return err
			}
			c, err := temporal.Dial(cmd.Context(), cfg.Temporal, log)
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := temporal.ResetScheduler(cmd.Context(), c, cfg.Temporal.Namespace, chainID, !yes)
			if err != nil {
				return err
			}
			verb := "would stop"
			if yes {
				verb = "stopped"
			}
			sched := "no running scheduler"
			if res.Scheduler {
				sched = "the scheduler " + temporal.SchedulerID(chainID)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "chain %s: %s %s and %d indexing workflows\n", chainID, verb, sched, len(res.Indexing))
			if !yes && (res.Scheduler || len(res.Indexing) > 0) {
				fmt.Fprintln(cmd.OutOrStdout(), "run again with --yes to stop them")
			}
			log.Info("scheduler reset", zap.String("chain_id", chainID), zap.Bool("dry_run", !yes),
				zap.Bool("scheduler", res.Scheduler), zap.Int("indexing_workflows", len(res.Indexing)))
			return nil
		},
	}
	reset.Flags().BoolVar(&yes, "yes", false, "stop them (without it: only list)")
	cmd.AddCommand(reset)
	return cmd
}
