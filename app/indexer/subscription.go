package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/indexer/jobs/webhook"
	"github.com/tideline-dev/tideline/pkg/indexer/lifecycle"
	"github.com/tideline-dev/tideline/pkg/stream"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// `indexer subscription add|list|pause|resume|remove`: webhook
// subscriptions to a chain's change stream. The steps are
// pkg/indexer/lifecycle's (subscriptions.go); URLs are never printed
// whole (they may hold a token).

func (a *app) subscriptionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "subscription",
		Short: "Add, list, pause, resume or remove webhook subscriptions to a chain's change stream",
		Long: `A subscription POSTs the events of a chain's change stream (the objects of
GET /v1/chains/{id}/stream) to a URL, one event per request, in order, at
least once, signed with HMAC-SHA256 when --secret-env names the workers'
environment variable holding the secret. Each is delivered by a Temporal
workflow (<chain>:webhook:<id>) on the chain's admin queue; see
docs/streaming.md, "Webhooks".`,
	}
	cmd.AddCommand(a.subscriptionAddCmd(), a.subscriptionListCmd(),
		a.subscriptionStateCmd("pause", webhook.Paused, "Pause a subscription: its delivery stops (at once) until resume"),
		a.subscriptionStateCmd("resume", webhook.Active, "Resume a paused or dead-lettered subscription: delivery goes on from its cursor"),
		a.subscriptionStateCmd("remove", webhook.Removed, "Remove a subscription: its delivery ends"))
	return cmd
}

func (a *app) subscriptionAddCmd() *cobra.Command {
	var (
		url, filter, include, secretEnv string
		fromSeq, fromHeight             uint64
	)
	cmd := &cobra.Command{
		Use:   "add <chain> --url URL",
		Short: "Subscribe a URL to a chain's change stream, from its next event (or --from-seq, --from-height)",
		Long: `add stores a subscription (table subscriptions) and starts its delivery.
--filter keeps the events with a matching log (address=0x…, topic0=0x…,
event='Transfer(address,address,uint256)'; repeat a key for alternatives)
or, with transactions included and addresses alone, a transaction from or
to an address; block_removed events are always delivered. --include says
what each block_added event carries (transactions, logs, token_transfers,
traces). The URL is stored in ClickHouse and never printed or logged
whole; the secret is read by each worker from the variable --secret-env
names, and stored nowhere.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			f, err := webhook.ParseFilter(filter)
			if err != nil {
				return fmt.Errorf("--filter: %w", err)
			}
			inc, err := stream.ParseInclude(include)
			if err != nil {
				return fmt.Errorf("--include: %w", err)
			}
			if err := webhook.CheckURL(url); err != nil {
				return fmt.Errorf("--url: %w", err)
			}
			var at lifecycle.StartAt
			if cmd.Flags().Changed("from-seq") {
				at.Seq = &fromSeq
			}
			if cmd.Flags().Changed("from-height") {
				at.Height = &fromHeight
			}
			e, done, err := a.chainEnv(ctx, true)
			if err != nil {
				return err
			}
			defer done()
			if err := a.knownChain(ctx, e.cfg, e.log, args[0]); err != nil {
				return err
			}
			subs := &lifecycle.Subscriptions{Store: e.store.Records(), Stream: e.store.Reader().Stream(), Temporal: e.tc, SearchAttributes: true}
			sub, err := subs.Add(ctx, webhook.Subscription{ChainID: args[0], URL: url, Filter: f, Include: inc, SecretEnv: secretEnv}, at)
			if sub.ID == "" {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "subscription %s added to chain %s: %s, delivering after seq %d (workflow %s)\n",
				sub.ID, sub.ChainID, webhook.ShowURL(sub.URL), sub.StartAfter, temporal.WebhookID(sub.ChainID, sub.ID))
			if secretEnv == "" {
				fmt.Fprintln(out, "unsigned: without --secret-env the receiver cannot tell these requests from anyone's")
			} else if _, ok := os.LookupEnv(secretEnv); !ok {
				fmt.Fprintf(out, "note: %s is not set here; every worker needs it in its environment, or the delivery fails and retries\n", secretEnv)
			}
			e.log.Info("subscription added", zap.String("chain_id", sub.ChainID), zap.String("subscription", sub.ID))
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&url, "url", "", "where events are POSTed (http or https; may hold a token: stored, never printed)")
	fl.StringVar(&filter, "filter", "", "address=0x…,topic0=0x…,event='Sig(types)': deliver only matching events and rows")
	fl.StringVar(&include, "include", "", "what block_added events carry: transactions,logs,token_transfers,traces")
	fl.StringVar(&secretEnv, "secret-env", "", "the workers' environment variable holding the HMAC-SHA256 signing secret")
	fl.Uint64Var(&fromSeq, "from-seq", 0, "deliver from this seq of the chain's stream on")
	fl.Uint64Var(&fromHeight, "from-height", 0, "deliver from the first event at this height or above")
	_ = cmd.MarkFlagRequired("url")
	return cmd
}

// listedSubscription is a row of `subscription list --json`.
type listedSubscription struct {
	ID         string `json:"id"`
	ChainID    string `json:"chain_id"`
	State      string `json:"state"`
	Delivery   string `json:"delivery"` // the workflow's state, or not running / unknown
	URL        string `json:"url"`      // scheme and host only
	Filter     string `json:"filter,omitempty"`
	Include    string `json:"include,omitempty"`
	SecretEnv  string `json:"secret_env,omitempty"`
	Cursor     uint64 `json:"cursor"`
	Delivered  uint64 `json:"delivered"`
	Failures   uint64 `json:"failures"`
	LastError  string `json:"last_error,omitempty"`
	Unanswered string `json:"unanswered,omitempty"`
}

func (a *app) subscriptionListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [chain]",
		Short: "List the subscriptions (of a chain), with their delivery's state and cursor",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			e, done, err := a.chainEnv(ctx, true)
			if err != nil {
				return err
			}
			defer done()
			chainID := ""
			if len(args) == 1 {
				chainID = args[0]
			}
			subs := &lifecycle.Subscriptions{Store: e.store.Records(), Stream: e.store.Reader().Stream(), Temporal: e.tc}
			all, err := subs.List(ctx, chainID)
			if err != nil {
				return err
			}
			rows := make([]listedSubscription, len(all))
			for i, l := range all {
				rows[i] = listedSubscription{ID: l.ID, ChainID: l.ChainID, State: l.State, URL: webhook.ShowURL(l.URL),
					Filter: l.Filter.String(), Include: webhook.IncludeString(l.Include), SecretEnv: l.SecretEnv,
					Cursor: l.Progress.Cursor, Delivered: l.Progress.Delivered, Failures: l.Progress.Failures,
					LastError: l.Progress.LastError, Delivery: l.Progress.State}
				switch {
				case l.Unanswered != nil:
					rows[i].Delivery, rows[i].Unanswered = "unknown", l.Unanswered.Error()
				case !l.Running:
					rows[i].Delivery, rows[i].Cursor = "not running", l.StartAfter
				}
			}
			return printSubscriptions(cmd.OutOrStdout(), rows, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printSubscriptions(out io.Writer, rows []listedSubscription, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCHAIN\tSTATE\tDELIVERY\tCURSOR\tDELIVERED\tFAILURES\tURL\tFILTER\tINCLUDE\tSECRET ENV")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", r.ID, r.ChainID, r.State, r.Delivery, r.Cursor,
			r.Delivered, r.Failures, r.URL, dash(r.Filter), dash(r.Include), dash(r.SecretEnv))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if r.LastError != "" {
			fmt.Fprintf(out, "%s: last error: %s\n", r.ID, r.LastError)
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// subscriptionStateCmd is pause, resume and remove.
func (a *app) subscriptionStateCmd(verb, state, short string) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " <id>",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			e, done, err := a.chainEnv(ctx, true)
			if err != nil {
				return err
			}
			defer done()
			subs := &lifecycle.Subscriptions{Store: e.store.Records(), Stream: e.store.Reader().Stream(), Temporal: e.tc, SearchAttributes: true}
			start := time.Now()
			rec, stored, err := subs.SetState(ctx, args[0], state)
			if rec.ChainID == "" {
				return err
			}
			out := cmd.OutOrStdout()
			if stored {
				fmt.Fprintf(out, "subscription %s of chain %s: %s\n", rec.ID, rec.ChainID, state)
			} else {
				fmt.Fprintf(out, "subscription %s of chain %s was %s already\n", rec.ID, rec.ChainID, state)
			}
			if err != nil {
				return fmt.Errorf("stored, but its delivery (workflow %s) was not told: %w", temporal.WebhookID(rec.ChainID, rec.ID), err)
			}
			fmt.Fprintf(out, "delivery %s told (%v)\n", temporal.WebhookID(rec.ChainID, rec.ID), time.Since(start).Round(time.Millisecond))
			e.log.Info("subscription "+verb, zap.String("chain_id", rec.ChainID), zap.String("subscription", rec.ID))
			return nil
		},
	}
}
