package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/config"
	"github.com/tideline-dev/tideline/pkg/indexer/worker"
	"github.com/tideline-dev/tideline/pkg/registry"
)

// `indexer chain list`, and the chains every command knows (the file's and
// the registry's).

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

// allChains are the chains the commands know: the config file's and the
// registry's that are not removed (the file wins). A definition that does
// not decode is left out, with a warning.
func (a *app) allChains(ctx context.Context, cfg *config.Config, log *zap.Logger) (map[string]config.Chain, error) {
	store, err := worker.OpenStore(ctx, cfg.ClickHouse, log)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	reg := &registry.Registry{Store: store.Records(), File: cfg.Chains}
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
