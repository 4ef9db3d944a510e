package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tideline-dev/tideline/pkg/simchain"
)

func (a *app) simchainCmd() *cobra.Command {
	cfg := simchain.DefaultConfig()
	cfg.Addr = "127.0.0.1:8545"
	cmd := &cobra.Command{
		Use:   "simchain",
		Short: "Serve a simulated Ethereum chain (JSON-RPC over HTTP and websocket) until Ctrl-C",
		Long: "Blocks are generated from the seed for any height, so a long chain costs no memory; the head is\n" +
			"--length at start and grows every --block-time. Faults (latency, timeouts, 429, 5xx, malformed answers)\n" +
			"are drawn per request from the seed. Reorgs and head jumps are triggered at runtime:\n" +
			"  curl -X POST 'http://ADDR/admin/reorg?depth=3'    curl -X POST 'http://ADDR/admin/jump?blocks=1000'",
		RunE: func(cmd *cobra.Command, _ []string) error {
			sim, err := simchain.Start(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer sim.Close()
			fmt.Printf(`
simulated chain %d (seed %d) is up, head %d, a block every %v:
  JSON-RPC   %s
  websocket  %s
  admin      %s/admin/{head,stats} (GET), %s/admin/{reorg?depth=N,jump?blocks=N,poison?heights=a,b,heal?heights=a,b} (POST)
Ctrl-C stops it.

`, cfg.ChainID, cfg.Seed, sim.Head(), cfg.BlockTime, sim.HTTPURL(), sim.WSURL(), sim.HTTPURL(), sim.HTTPURL())
			<-cmd.Context().Done()
			st := sim.Stats()
			fmt.Printf("served %d requests, %d calls, %.1f MB; injected %d timeouts, %d 429, %d 5xx, %d malformed\n",
				st.Requests, st.Calls, float64(st.BytesOut)/1e6, st.Timeouts, st.TooManyRequests, st.ServerErrors, st.Malformed)
			return nil
		},
	}
	simchainFlags(cmd, &cfg, "length", "head height at start")
	return cmd
}

// simchainFlags binds the chain's knobs; dev reuses them for --chain sim,
// where Length is the backlog.
func simchainFlags(cmd *cobra.Command, cfg *simchain.Config, lengthFlag, lengthUsage string) {
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "listen", cfg.Addr, "host:port of the JSON-RPC, websocket and admin endpoints")
	f.Uint64Var(&cfg.ChainID, "chain-id", cfg.ChainID, "eth_chainId")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "the same seed serves the same blocks")
	f.Uint64Var(&cfg.Length, lengthFlag, cfg.Length, lengthUsage)
	f.DurationVar(&cfg.BlockTime, "block-time", cfg.BlockTime, "time between blocks")
	f.IntVar(&cfg.TxsPerBlock, "txs", cfg.TxsPerBlock, "transactions per block")
	f.Float64Var(&cfg.LogsPerTx, "logs", cfg.LogsPerTx, "average logs per transaction")
	f.DurationVar(&cfg.Latency, "latency", cfg.Latency, "added to every request")
	f.Float64Var(&cfg.TimeoutRate, "timeout-rate", cfg.TimeoutRate, "share of requests held without an answer")
	f.DurationVar(&cfg.TimeoutHold, "timeout-hold", cfg.TimeoutHold, "how long a timed-out request is held before HTTP 504")
	f.Float64Var(&cfg.TooManyRequestsRate, "429-rate", cfg.TooManyRequestsRate, "share of requests answered HTTP 429")
	f.Float64Var(&cfg.ServerErrorRate, "5xx-rate", cfg.ServerErrorRate, "share of requests answered HTTP 500/502/503")
	f.Float64Var(&cfg.MalformedRate, "malformed-rate", cfg.MalformedRate, "share of calls answered with a malformed result")
	f.IntVar(&cfg.MaxBatchCalls, "max-batch", cfg.MaxBatchCalls, "largest JSON-RPC batch accepted")
	f.IntVar(&cfg.MaxResponseBytes, "max-response-bytes", cfg.MaxResponseBytes, "batch answers past this size refuse the remaining calls")
}
