package localstack

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// GethOptions configure StartGethDev.
type GethOptions struct {
	// Period is the interval between blocks, rounded up to whole seconds
	// (geth's --dev.period unit). 0 seals a block only when a transaction
	// is pending.
	Period time.Duration
}

// StartGethDev starts `geth --dev` with its data and log under dir and
// waits until it answers eth_blockNumber. The dev account is prefunded and
// unlocked: eth_accounts[0] can send with eth_sendTransaction. The chain ID
// is 1337.
func StartGethDev(dir string, opts GethOptions) (*Node, error) {
	bin, err := ToolPath("geth")
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("geth: dir %q: %w", dir, err)
	}
	dataDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("geth: data dir: %w", err)
	}
	period := uint64(0)
	if opts.Period > 0 {
		period = uint64((opts.Period + time.Second - 1) / time.Second)
	}
	return startNode("geth", dir, true, func() (*Node, error) {
		httpPort, err := FreePort()
		if err != nil {
			return nil, fmt.Errorf("geth: free port for http: %w", err)
		}
		wsPort, err := FreePort()
		if err != nil {
			return nil, fmt.Errorf("geth: free port for ws: %w", err)
		}
		if wsPort == httpPort {
			// The kernel may hand back the port it just released.
			if wsPort, err = FreePort(); err != nil {
				return nil, fmt.Errorf("geth: free port for ws: %w", err)
			}
		}
		// --dev leaves the authenticated engine API closed (the beacon is
		// simulated in process), so no port is needed for it. --port 0
		// keeps the p2p listener, useless with --nodiscover --maxpeers 0,
		// off the fixed 30303 that a second geth would collide on.
		args := []string{
			"--dev", "--dev.period", strconv.FormatUint(period, 10),
			"--http", "--http.addr", "127.0.0.1", "--http.port", strconv.Itoa(httpPort),
			"--http.api", "eth,net,web3,debug",
			"--ws", "--ws.addr", "127.0.0.1", "--ws.port", strconv.Itoa(wsPort),
			"--ws.api", "eth,net,web3",
			"--datadir", dataDir,
			"--port", "0", "--nodiscover", "--maxpeers", "0", "--ipcdisable",
		}
		p, err := Start("geth", filepath.Join(dir, "geth.log"), bin, args...)
		if err != nil {
			return nil, err
		}
		return &Node{
			Name:    "geth",
			HTTPURL: "http://127.0.0.1:" + strconv.Itoa(httpPort),
			WSURL:   "ws://127.0.0.1:" + strconv.Itoa(wsPort),
			Dir:     dir,
			Process: p,
		}, nil
	})
}
