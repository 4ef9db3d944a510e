package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// nodeStartTimeout bounds how long a node start waits for eth_blockNumber.
// anvil answers within a second; geth --dev needs a few to set up its
// genesis and dev account.
const nodeStartTimeout = 60 * time.Second

// nodeLogTail is how much of a node's log goes into start errors.
const nodeLogTail = 4000

// Node is a local Ethereum node (anvil or geth) running as a child process
// and listening on 127.0.0.1 only.
type Node struct {
	Name    string // "anvil" or "geth"
	HTTPURL string // http://127.0.0.1:port
	WSURL   string // ws://127.0.0.1:port
	Dir     string // holds the log (and geth's data)
	Process *Process
}

// Stop ends the node (SIGTERM, then SIGKILL after 10 s).
func (n *Node) Stop() {
	if n != nil && n.Process != nil {
		n.Process.Stop()
	}
}

// AnvilOptions configure StartAnvil.
type AnvilOptions struct {
	// BlockTime is the interval between mined blocks; 0 mines one block per
	// transaction as soon as it arrives (automine).
	BlockTime time.Duration
	// Port for HTTP and websocket JSON-RPC; 0 picks a free one.
	Port int
	// ChainID; 0 keeps anvil's default 31337.
	ChainID uint64
	// Network is anvil's --network ("optimism": OP-stack deposit
	// transactions and receipts); "" is Ethereum.
	Network string
}

// AnvilDefaultKey is the private key of anvil's prefunded account 0 (from
// its well-known test mnemonic): public knowledge, for local chains only.
const AnvilDefaultKey = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"

// StartAnvil starts anvil with its log in dir/anvil.log and waits until it
// answers eth_blockNumber. anvil serves HTTP and websockets on one port.
func StartAnvil(dir string, opts AnvilOptions) (*Node, error) {
	bin, err := ToolPath("anvil")
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("anvil: dir %q: %w", dir, err)
	}
	return startNode("anvil", dir, opts.Port == 0, func() (*Node, error) {
		port := opts.Port
		if port == 0 {
			if port, err = FreePort(); err != nil {
				return nil, fmt.Errorf("anvil: free port: %w", err)
			}
		} else if err := portFree(port); err != nil {
			// Otherwise the node already listening there would answer
			// the readiness probe and pass for ours.
			return nil, fmt.Errorf("anvil: %w", err)
		}
		args := []string{"--host", "127.0.0.1", "--port", strconv.Itoa(port)}
		if opts.BlockTime > 0 {
			args = append(args, "--block-time", strconv.FormatFloat(opts.BlockTime.Seconds(), 'f', -1, 64))
		}
		if opts.ChainID != 0 {
			args = append(args, "--chain-id", strconv.FormatUint(opts.ChainID, 10))
		}
		if opts.Network != "" {
			args = append(args, "--network", opts.Network)
		}
		p, err := Start("anvil", filepath.Join(dir, "anvil.log"), bin, args...)
		if err != nil {
			return nil, err
		}
		return &Node{
			Name:    "anvil",
			HTTPURL: "http://127.0.0.1:" + strconv.Itoa(port),
			WSURL:   "ws://127.0.0.1:" + strconv.Itoa(port),
			Dir:     dir,
			Process: p,
		}, nil
	})
}

// startNode runs launch and waits for the node to answer. With a port of
// our choosing it retries a few times: FreePort releases the port before the
// node binds it, and another process may take it in between.
func startNode(name, dir string, freePorts bool, launch func() (*Node, error)) (*Node, error) {
	tries := 1
	if freePorts {
		tries = 3
	}
	var lastErr error
	for i := 0; i < tries; i++ {
		n, err := launch()
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), nodeStartTimeout)
		err = waitRPC(ctx, n.HTTPURL, n.Process)
		cancel()
		if err == nil && n.Process.Exited() {
			err = fmt.Errorf("process exited; the answer came from another process on the port")
		}
		if err == nil {
			return n, nil
		}
		n.Process.Stop()
		tail := n.Process.Tail(nodeLogTail)
		lastErr = fmt.Errorf("%s on %s (log %s): %w\n--- log tail ---\n%s", name, n.HTTPURL, n.Process.LogPath, err, tail)
		if !strings.Contains(strings.ToLower(tail), "address already in use") {
			break
		}
	}
	return nil, lastErr
}

// portFree checks that nothing listens on 127.0.0.1:port.
func portFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port %d is not free: %w", port, err)
	}
	return l.Close()
}

// waitRPC polls eth_blockNumber until it answers, the process dies or ctx
// ends. An open port is not enough: geth opens it before its chain is ready.
func waitRPC(ctx context.Context, url string, p *Process) error {
	client := &http.Client{Timeout: 2 * time.Second}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`)
	var lastErr error
	for {
		if p.Exited() {
			return fmt.Errorf("process exited before answering (last error: %v)", lastErr)
		}
		lastErr = blockNumber(ctx, client, url, body)
		if lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for eth_blockNumber: %w (last error: %v)", ctx.Err(), lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func blockNumber(ctx context.Context, client *http.Client, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	var msg struct {
		Result *string          `json:"result"`
		Error  *json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		return fmt.Errorf("decoding eth_blockNumber answer: %w", err)
	}
	if msg.Error != nil {
		return fmt.Errorf("eth_blockNumber: %s", *msg.Error)
	}
	if msg.Result == nil {
		return fmt.Errorf("eth_blockNumber: no result")
	}
	return nil
}
