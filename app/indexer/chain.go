package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/lifecycle"
	"github.com/tideline-dev/tideline/pkg/indexer/worker"
	"github.com/tideline-dev/tideline/pkg/registry"
	"github.com/tideline-dev/tideline/pkg/rpc"
	"github.com/tideline-dev/tideline/pkg/storage"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// `indexer chain` and its add and update commands (list: chain_list.go;
// pause, resume and remove: chain_lifecycle.go).

// chainEnv is what the chain commands use: the config, the database with
// the registry on it, and (when a command needs it) Temporal, with the
// chain lifecycle over both.
type chainEnv struct {
	cfg   *config.Config
	log   *zap.Logger
	store *storage.ClickHouse
	reg   *registry.Registry
	tc    client.Client
	life  *lifecycle.Chains
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
		reg: &registry.Registry{Store: store.Records(), File: cfg.Chains, PollInterval: cfg.Registry.PollInterval}}
	if withTemporal {
		if e.tc, err = temporal.Dial(ctx, cfg.Temporal, log); err != nil {
			closeAll()
			return nil, nil, err
		}
		closeAll = func() { e.tc.Close(); store.Close(); _ = log.Sync() }
		e.life = &lifecycle.Chains{Temporal: e.tc, Namespace: cfg.Temporal.Namespace, Registry: e.reg, Rows: store.Records()}
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
// chain id, when expected_chain_id is set), each on its own, and with
// traces on which tracers it has, and returns "name (head N), …" and the
// tracer chosen; a traces setting the endpoints cannot serve is refused. URLs are expanded from this process's environment
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
	var probes []rpc.TraceSupport
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
		if err == nil && ch.Traces.Enabled() {
			probes = append(probes, c.ProbeTraces(ctx))
		}
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
	summary := strings.Join(answered, ", ")
	if ch.Traces.Enabled() {
		// The tracer the workers will choose, or why they would refuse it.
		mode, err := rpc.ChooseTraces(ch.Traces.Mode, probes)
		if err != nil {
			return "", &config.KeyError{Key: prefix + ".traces.mode", Reason: err.Error()}
		}
		chosen := string(mode)
		if mode == rpc.TracesOff {
			chosen = "none (no endpoint can trace: indexed without traces)"
		}
		summary += fmt.Sprintf("; traces %s: %s (%s)", ch.Traces.Mode, chosen, rpc.DescribeTraceSupport(probes))
	}
	return summary, nil
}
