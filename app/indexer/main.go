// Command indexer is tideline's binary: `worker` runs the Temporal workers of
// the configured chains, `migrate` brings the ClickHouse schema up to date,
// `dev` starts a whole local stack (Temporal, ClickHouse, anvil and a load
// generator) and a worker against it, `simchain` serves a simulated chain,
// `chain` adds, changes, pauses and removes chains while the workers run,
// `api` serves what was indexed over HTTP, `apikey` manages its keys.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/worker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// app holds what every subcommand shares: the config source.
type app struct {
	v          *viper.Viper
	configPath string
}

func newRoot() *cobra.Command {
	a := &app{v: config.New()}
	root := &cobra.Command{
		Use:           "indexer",
		Short:         "tideline: a blockchain indexer on Temporal and ClickHouse",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	f := root.PersistentFlags()
	f.StringVar(&a.configPath, "config", "", "YAML config file (see config.example.yaml); env TIDELINE_* and flags override it")
	f.String("log-level", "", "log.level: debug, info, warn or error")
	f.String("log-format", "", "log.format: json or console")
	f.String("metrics-listen", "", "metrics.listen: host:port of /metrics")
	f.String("temporal-host-port", "", "temporal.host_port")
	f.String("clickhouse-addr", "", "clickhouse.addr: host:port of clickhouse.protocol (native, the default: 9000 on a server; http: 8123)")
	for key, flag := range map[string]string{
		"log.level": "log-level", "log.format": "log-format", "metrics.listen": "metrics-listen",
		"temporal.host_port": "temporal-host-port", "clickhouse.addr": "clickhouse-addr",
	} {
		// Bound flags override file and env only when set on the command line.
		_ = a.v.BindPFlag(key, f.Lookup(flag))
	}
	root.AddCommand(a.workerCmd(), a.migrateCmd(), a.devCmd(), a.simchainCmd(), a.schedulerCmd(), a.statusCmd(), a.chainCmd(), a.subscriptionCmd(),
		a.apiCmd(), a.apikeyCmd())
	return root
}

func (a *app) load() (*config.Config, *zap.Logger, error) {
	cfg, err := config.Load(a.v, a.configPath)
	if err != nil {
		return nil, nil, err
	}
	log, err := newLogger(cfg.Log)
	if err != nil {
		return nil, nil, err
	}
	return cfg, log, nil
}

// newLogger builds the process's logger. One line per event in either
// format: a goroutine's stack comes with a panic, or with any warning or
// error at log.level debug. zap's presets add one to every error (json)
// or warning (console), and the Temporal SDK logs each failed attempt as
// an error: tens of lines per retry of an unreachable endpoint, which
// bury the line that says what failed. extra is for tests.
func newLogger(c config.Log, extra ...zap.Option) (*zap.Logger, error) {
	zc := zap.NewProductionConfig()
	if c.Format == "console" {
		zc = zap.NewDevelopmentConfig()
		zc.EncoderConfig.EncodeLevel = zapcore.CapitalColorLevelEncoder
	}
	lvl, err := zapcore.ParseLevel(c.Level)
	if err != nil {
		return nil, &config.KeyError{Key: "log.level", Reason: err.Error()}
	}
	zc.Level = zap.NewAtomicLevelAt(lvl)
	stacks := zapcore.DPanicLevel
	if lvl == zapcore.DebugLevel {
		stacks = zapcore.WarnLevel
	}
	zc.DisableStacktrace = true
	return zc.Build(append([]zap.Option{zap.AddStacktrace(stacks)}, extra...)...)
}

func (a *app) workerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal workers (scans, scheduling, indexing) of every configured chain",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.load()
			if err != nil {
				return err
			}
			defer log.Sync() //nolint:errcheck // nothing to do about a failed flush at exit
			return worker.Run(cmd.Context(), cfg, log)
		},
	}
}

func (a *app) migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or update the ClickHouse schema",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := a.load()
			if err != nil {
				return err
			}
			store, err := worker.OpenStore(cmd.Context(), cfg.ClickHouse, log)
			if err != nil {
				return err
			}
			defer store.Close()
			if err := store.Migrate(cmd.Context()); err != nil {
				return fmt.Errorf("clickhouse: migrate: %w", err)
			}
			log.Info("schema up to date", zap.String("database", cfg.ClickHouse.Database))
			return nil
		},
	}
}
