package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/apikeys"
	"github.com/tideline-dev/tideline/pkg/storage"
)

// `indexer apikey`: the query API's keys (pkg/apikeys), stored in
// ClickHouse (table api_keys) and read by every `indexer api` within
// api.keys_refresh.

func (a *app) apikeyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "apikey",
		Short: "Create, list, limit or revoke the query API's keys",
		Long: `Keys of the query API (indexer api), stored hashed in ClickHouse (table
api_keys). A request carries one as the X-API-Key header, Authorization:
Bearer, or Etherscan's apikey parameter on the Etherscan routes. Each key
has its own rate limit; requests without a key are served under
api.rate_limit per client address, or refused when api.anonymous is off.
Every running API applies a change within api.keys_refresh. See
docs/operations.md, "API keys".`,
	}
	cmd.AddCommand(a.apikeyCreateCmd(), a.apikeyListCmd(), a.apikeyUpdateCmd(), a.apikeyRevokeCmd())
	return cmd
}

// listedKey is one key as create and list print it (never its hash).
type listedKey struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Key       string    `json:"key,omitempty"` // create only
	Rate      float64   `json:"rate"`
	Burst     uint32    `json:"burst"`
	CreatedAt time.Time `json:"created_at"`
	Revoked   bool      `json:"revoked"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

func listed(r storage.APIKeyRecord) listedKey {
	return listedKey{ID: r.ID, Name: r.Name, Rate: r.Rate, Burst: r.Burst, CreatedAt: r.CreatedAt,
		Revoked: r.Revoked, RevokedAt: r.RevokedAt}
}

func rateText(rate float64) string {
	if rate <= 0 {
		return "unlimited"
	}
	return strconv.FormatFloat(rate, 'f', -1, 64) + "/s"
}

func limitFlags(cmd *cobra.Command, l *apikeys.Limits) {
	cmd.Flags().Float64Var(&l.Rate, "rate", l.Rate, "requests per second the key may make (0 = no limit)")
	cmd.Flags().Uint32Var(&l.Burst, "burst", l.Burst, "requests the key may make at once")
}

// withStore runs f with the database of the commands (chainEnv: the
// config, ClickHouse migrated).
func (a *app) withStore(cmd *cobra.Command, f func(ctx context.Context, e *chainEnv) error) error {
	ctx := cmd.Context()
	e, done, err := a.chainEnv(ctx, false)
	if err != nil {
		return err
	}
	defer done()
	return f(ctx, e)
}

func writeJSONOut(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (a *app) apikeyCreateCmd() *cobra.Command {
	var (
		l      = apikeys.DefaultLimits
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "create <name>",
		Short: "Make a new key and print it, once (only its SHA-256 is stored)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd, func(ctx context.Context, e *chainEnv) error {
				c, err := apikeys.Create(ctx, e.store.Records(), args[0], l)
				if err != nil {
					return err
				}
				e.log.Info("API key created", zap.String("key_id", c.Record.ID), zap.String("name", c.Record.Name))
				out := cmd.OutOrStdout()
				if asJSON {
					k := listed(c.Record)
					k.Key = c.Key
					return writeJSONOut(out, k)
				}
				fmt.Fprintf(out, "API key %s created for %q: %s, burst %d\n", c.Record.ID, c.Record.Name, rateText(l.Rate), l.Burst)
				fmt.Fprintf(out, "key: %s\n", c.Key)
				fmt.Fprintf(out, "This is the only time the key is shown: tideline stores its SHA-256 only.\n")
				fmt.Fprintf(out, "Running APIs accept it within %s (api.keys_refresh).\n", e.cfg.API.KeysRefresh)
				return nil
			})
		},
	}
	limitFlags(cmd, &l)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (id, name, key, rate, burst, created_at)")
	return cmd
}

func (a *app) apikeyListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the keys: id, name, rate, burst, created, revoked (never the key or its hash)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withStore(cmd, func(ctx context.Context, e *chainEnv) error {
				recs, err := apikeys.List(ctx, e.store.Records())
				if err != nil {
					return err
				}
				rows := make([]listedKey, 0, len(recs))
				for _, r := range recs {
					rows = append(rows, listed(r))
				}
				if asJSON {
					return writeJSONOut(cmd.OutOrStdout(), rows)
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tNAME\tRATE\tBURST\tCREATED\tREVOKED")
				for _, r := range rows {
					revoked := "-"
					if r.Revoked {
						revoked = r.RevokedAt.UTC().Format(time.RFC3339)
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, r.Name, rateText(r.Rate), r.Burst,
						r.CreatedAt.UTC().Format(time.RFC3339), revoked)
				}
				return w.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) apikeyUpdateCmd() *cobra.Command {
	var l apikeys.Limits
	cmd := &cobra.Command{
		Use:   "update <id>",
		Short: "Change a key's rate and/or burst; running APIs apply them within api.keys_refresh",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var c apikeys.LimitChange // a flag not given keeps the key's value
			if cmd.Flags().Changed("rate") {
				c.Rate = &l.Rate
			}
			if cmd.Flags().Changed("burst") {
				c.Burst = &l.Burst
			}
			return a.withStore(cmd, func(ctx context.Context, e *chainEnv) error {
				rec, err := apikeys.SetLimits(ctx, e.store.Records(), args[0], c)
				if err != nil {
					return err
				}
				e.log.Info("API key limits changed", zap.String("key_id", rec.ID), zap.Float64("rate", rec.Rate), zap.Uint32("burst", rec.Burst))
				fmt.Fprintf(cmd.OutOrStdout(), "API key %s (%s): %s, burst %d; running APIs apply it within %s (api.keys_refresh)\n",
					rec.ID, rec.Name, rateText(rec.Rate), rec.Burst, e.cfg.API.KeysRefresh)
				return nil
			})
		},
	}
	limitFlags(cmd, &l)
	return cmd
}

func (a *app) apikeyRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke <id>",
		Short: "Revoke a key for good; running APIs refuse it within api.keys_refresh",
		Long: `revoke stores the key as revoked; every running API refuses it (401) at its
next read of the keys, within api.keys_refresh. It cannot be undone: give
the holder a new key. A leaked key's id is the first 12 hex digits of its
SHA-256: printf %s "$KEY" | sha256sum | cut -c1-12`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd, func(ctx context.Context, e *chainEnv) error {
				rec, already, err := apikeys.Revoke(ctx, e.store.Records(), args[0])
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if already {
					fmt.Fprintf(out, "API key %s (%s) was already revoked at %s\n", rec.ID, rec.Name, rec.RevokedAt.UTC().Format(time.RFC3339))
					return nil
				}
				e.log.Info("API key revoked", zap.String("key_id", rec.ID), zap.String("name", rec.Name))
				fmt.Fprintf(out, "API key %s (%s) revoked; running APIs refuse it within %s (api.keys_refresh)\n",
					rec.ID, rec.Name, e.cfg.API.KeysRefresh)
				return nil
			})
		},
	}
}
