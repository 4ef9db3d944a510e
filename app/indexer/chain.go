package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/worker"
	"github.com/tideline-dev/tideline/pkg/registry"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// chainEnv is what the chain commands use: the config, the database with
// the registry on it, and (when a command needs it) Temporal.
type chainEnv struct {
	cfg   *config.Config
	log   *zap.Logger
	store *storage.ClickHouse
	reg   *registry.Registry
	tc    client.Client
}

func (a *app) chainEnv(ctx context.Context, withTemporal bool) (*chainEnv, func(), error) {
	cfg, log, err := a.load()
	if err != nil {
		return nil, nil, err
	}
	store, err := worker.OpenStore(ctx, cfg.ClickHouse, log)
	if err != nil {
		return nil, nil, err
	}
	closeAll := func() { store.Close(); _ = log.Sync() }
	// The registry's table comes with the schema; a worker would migrate
	// too, but the command may come first.
	if err := store.Migrate(ctx); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("clickhouse: migrate: %w", err)
	}
	e := &chainEnv{cfg: cfg, log: log, store: store,
		reg: &registry.Registry{Store: store, File: cfg.Chains, PollInterval: cfg.Registry.PollInterval}}
	if withTemporal {
		if e.tc, err = temporal.Dial(ctx, cfg.Temporal, log); err != nil {
			closeAll()
			return nil, nil, err
		}
		closeAll = func() { e.tc.Close(); store.Close(); _ = log.Sync() }
	}
	return e, closeAll, nil
}

func (a *app) chainCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chain",
		Short: "Add, change, pause, resume or remove chains while the workers run (the chain registry)",
		Long: `Chains defined here are stored in ClickHouse (table chain_registry) and
picked up by every running worker within registry.poll_interval, without a
restart. A chain declared in the config file wins over the registry: its ID
cannot be added, changed or removed here. Endpoint URLs should name their
secrets as environment variables of the workers (${NAME}); see
docs/operations.md, "Chains at runtime".`,
	}
	cmd.AddCommand(a.chainAddCmd(), a.chainUpdateCmd(), a.chainListCmd(),
		a.chainPauseCmd(), a.chainResumeCmd(), a.chainRemoveCmd())
	return cmd
}

// definitionFlags are the flags that say a chain's settings.
type definitionFlags struct {
	file         string
	changes      registry.Changes
	allowLiteral bool
}

func (f *definitionFlags) add(cmd *cobra.Command, update bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.file, "file", "", "YAML file with the chain's settings, the keys of one entry under `chains:` in the config file"+
		map[bool]string{true: " (replaces the stored settings)", false: ""}[update])
	fl.StringArrayVar(&f.changes.Endpoints, "endpoint", nil, "endpoint name=URL (repeatable); reference secrets as ${NAME}, expanded from each worker's environment")
	fl.StringArrayVar(&f.changes.Set, "set", nil, "key=value of any chain setting, e.g. block_time=12s, expected_chain_id=1, push.endpoint=ws (repeatable)")
	fl.BoolVar(&f.allowLiteral, "allow-literal-url", false, "store endpoint URLs that look like they hold a credential as they are (only if they do not)")
	if update {
		fl.StringArrayVar(&f.changes.DropEndpoints, "drop-endpoint", nil, "remove an endpoint by name (repeatable)")
		fl.StringArrayVar(&f.changes.Unset, "unset", nil, "key whose default applies again (repeatable)")
	}
}

// settings builds the settings from base (nil for none), the file and the
// changes.
func (f *definitionFlags) settings(base map[string]any) (map[string]any, error) {
	s := map[string]any{}
	if base != nil {
		s = registry.CloneSettings(base)
	}
	if f.file != "" {
		b, err := os.ReadFile(f.file)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		if s, err = registry.ParseSettingsYAML(b); err != nil {
			return nil, fmt.Errorf("--file %s: %w", f.file, err)
		}
	}
	if err := f.changes.Apply(s); err != nil {
		return nil, err
	}
	return s, nil
}

func (a *app) chainAddCmd() *cobra.Command {
	var (
		def    definitionFlags
		paused bool
	)
	cmd := &cobra.Command{
		Use:   "add <chain>",
		Short: "Define a new chain; running workers start indexing it within registry.poll_interval",
		Long: `add stores a new chain in the registry after checking its settings (the
config file's keys and rules: a bad value names its key) and that every
endpoint answers, with the expected chain id when expected_chain_id is set.
${NAME} references in URLs are expanded from this command's environment
for the check, and from each worker's when it dials; the registry keeps the
references, never the values.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			ctx := cmd.Context()
			e, done, err := a.chainEnv(ctx, false)
			if err != nil {
				return err
			}
			defer done()
			settings, err := def.settings(nil)
			if err != nil {
				return err
			}
			ch, err := e.reg.Prepare(id, settings, def.allowLiteral)
			if err != nil {
				return err
			}
			if err := e.reg.CheckAdd(ctx, id); err != nil {
				return err
			}
			heads, err := checkEndpoints(ctx, id, ch, e.log)
			if err != nil {
				return err
			}
			state := registry.Active
			if paused {
				state = registry.Paused
			}
			d, err := e.reg.Add(ctx, id, settings, state)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "chain %s added (%s): endpoints %s answered\n", id, d.State, heads)
			fmt.Fprintf(out, "running workers start it within %s (registry.poll_interval)\n", e.cfg.Registry.PollInterval)
			e.log.Info("chain added", zap.String("chain_id", id), zap.String("state", string(d.State)),
				zap.Strings("endpoints", registry.EndpointNames(ch)))
			return nil
		},
	}
	def.add(cmd, false)
	cmd.Flags().BoolVar(&paused, "paused", false, "add it paused (nothing is indexed until indexer chain resume)")
	return cmd
}

func (a *app) chainUpdateCmd() *cobra.Command {
	var def definitionFlags
	cmd := &cobra.Command{
		Use:   "update <chain>",
		Short: "Change a stored chain's settings; the workers restart it with them within registry.poll_interval",
		Long: `update changes the settings of a chain of the registry: --file replaces
them, --endpoint, --drop-endpoint, --set and --unset edit them. The result
is checked as add checks a new chain (keys, values, endpoints answering),
and the chain keeps its state (active or paused). Each worker restarts the
chain with the new settings at its next poll; running workflows go on. A
running catch-up scheduler keeps the mode (range_size) it started with.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			ctx := cmd.Context()
			e, done, err := a.chainEnv(ctx, false)
			if err != nil {
				return err
			}
			defer done()
			cur, err := e.reg.Current(ctx, id)
			if err != nil {
				return err
			}
			settings, err := def.settings(cur.Settings)
			if err != nil {
				return err
			}
			ch, err := e.reg.Prepare(id, settings, def.allowLiteral)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if (registry.Definition{Settings: settings}).Fingerprint() == cur.Fingerprint() {
				fmt.Fprintf(out, "chain %s: settings unchanged; nothing stored\n", id)
				return nil
			}
			heads, err := checkEndpoints(ctx, id, ch, e.log)
			if err != nil {
				return err
			}
			d, err := e.reg.Update(ctx, id, settings)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "chain %s updated (%s): endpoints %s answered\n", id, d.State, heads)
			fmt.Fprintf(out, "running workers restart it with the new settings within %s (registry.poll_interval)\n", e.cfg.Registry.PollInterval)
			e.log.Info("chain updated", zap.String("chain_id", id), zap.Strings("endpoints", registry.EndpointNames(ch)))
			return nil
		},
	}
	def.add(cmd, true)
	return cmd
}

// checkEndpoints asks every endpoint of the chain for its head (with the
// chain id, when expected_chain_id is set), each on its own, and returns
// "name (head N), …". URLs are expanded from this process's environment
// and never shown: errors name the endpoint's key.
func checkEndpoints(ctx context.Context, id string, ch config.Chain, log *zap.Logger) (string, error) {
	prefix := "chains." + id
	dial, err := config.ExpandEndpoints(prefix, ch, os.LookupEnv)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m := rpc.NewMetrics(prometheus.NewRegistry())
	var answered []string
	for _, name := range registry.EndpointNames(ch) {
		key := prefix + ".endpoints." + name
		c, err := rpc.NewEthereum(ctx, rpc.EthereumConfig{
			ChainID: id, EndpointName: name, URL: dial.Endpoints[name],
			Timeout: ch.RPC.Timeout, MaxAttempts: min(ch.RPC.MaxAttempts, 2),
			ExpectedChainID: ch.ExpectedChainID,
		}, log, m)
		if err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		head, err := c.HeadHeight(ctx)
		c.Close()
		var wrong *rpc.WrongChainError
		switch {
		case errors.As(err, &wrong):
			return "", fmt.Errorf("%s: serves chain id %d, expected_chain_id is %d", key, wrong.Got, wrong.Want)
		case err != nil:
			return "", fmt.Errorf("%s: does not answer: %w", key, err)
		}
		answered = append(answered, fmt.Sprintf("%s (head %d)", name, head))
	}
	if ch.ExpectedChainID == 0 {
		log.Warn(prefix + ".expected_chain_id is not set: the endpoints are not checked for serving the right chain")
	}
	return strings.Join(answered, ", "), nil
}

// listedChain is one row of `chain list`.
type listedChain struct {
	ChainID      string    `json:"chain_id"`
	State        string    `json:"state"`
	Source       string    `json:"source"`
	Endpoints    []string  `json:"endpoints"` // names only: URLs may hold keys
	PushEndpoint string    `json:"push_endpoint,omitempty"`
	DropData     bool      `json:"drop_data,omitempty"`
	Shadowed     bool      `json:"shadowed,omitempty"`
	UpdatedAt    time.Time `json:"updated_at,omitzero"`
	Error        string    `json:"error,omitempty"`
}

func (a *app) chainListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the chains of the config file and of the registry: state, source, endpoint names",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			e, done, err := a.chainEnv(ctx, false)
			if err != nil {
				return err
			}
			defer done()
			defs, err := e.reg.Definitions(ctx)
			if err != nil {
				return err
			}
			updated := map[string]time.Time{}
			for _, d := range defs {
				updated[d.ID] = d.UpdatedAt
			}
			var rows []listedChain
			for _, en := range registry.Merge(e.cfg.Chains, defs) {
				row := listedChain{ChainID: en.ID, State: string(en.State), Source: string(en.Source),
					DropData: en.DropData, Shadowed: en.Shadowed, Endpoints: []string{}}
				if en.Source == registry.SourceRegistry {
					row.UpdatedAt = updated[en.ID]
				}
				if en.Err != nil {
					row.Error = en.Err.Error()
				} else {
					row.Endpoints = registry.EndpointNames(en.Chain)
					row.PushEndpoint = en.Chain.Push.Endpoint
				}
				rows = append(rows, row)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			printChains(cmd.OutOrStdout(), rows)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printChains(out io.Writer, rows []listedChain) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CHAIN\tSTATE\tSOURCE\tENDPOINTS\tPUSH\tUPDATED")
	for _, r := range rows {
		state, source := r.State, r.Source
		if r.DropData {
			state += " (data dropped)"
		}
		if r.Shadowed {
			source += " (a registry row of this ID is ignored)"
		}
		eps := strings.Join(r.Endpoints, ",")
		if r.Error != "" {
			eps = "invalid: " + r.Error
		}
		push, upd := r.PushEndpoint, "-"
		if push == "" {
			push = "-"
		}
		if !r.UpdatedAt.IsZero() {
			upd = r.UpdatedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ChainID, state, source, eps, push, upd)
	}
	w.Flush()
}

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

// allChains are the chains the commands know: the config file's and the
// registry's that are not removed (the file wins). A definition that does
// not decode is left out, with a warning.
func (a *app) allChains(ctx context.Context, cfg *config.Config, log *zap.Logger) (map[string]config.Chain, error) {
	store, err := worker.OpenStore(ctx, cfg.ClickHouse, log)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	reg := &registry.Registry{Store: store, File: cfg.Chains}
	defs, err := reg.Definitions(ctx)
	if err != nil {
		// A database from before the registry: the file's chains only.
		log.Warn("cannot read the chain registry; the config file's chains only", zap.Error(err))
		return cfg.Chains, nil
	}
	out := map[string]config.Chain{}
	for _, e := range registry.Merge(cfg.Chains, defs) {
		switch {
		case e.State == registry.Removed:
		case e.Err != nil:
			log.Warn("stored chain definition is not valid; left out", zap.String("chain_id", e.ID), zap.Error(e.Err))
		default:
			out[e.ID] = e.Chain
		}
	}
	return out, nil
}

// knownChain is nil for a chain of the file or the registry, else an
// error naming it.
func (a *app) knownChain(ctx context.Context, cfg *config.Config, log *zap.Logger, id string) error {
	all, err := a.allChains(ctx, cfg, log)
	if err != nil {
		return err
	}
	if _, ok := all[id]; !ok {
		return &config.KeyError{Key: "chains." + id, Reason: "no such chain in the configuration or the chain registry"}
	}
	return nil
}
