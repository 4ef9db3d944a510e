package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tideline-dev/tideline/internal/testkit"
	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// nextHead waits for one head or the end of the subscription.
func nextHead(t *testing.T, heads <-chan rpc.Head, errs <-chan error) rpc.Head {
	t.Helper()
	select {
	case h, ok := <-heads:
		if !ok {
			t.Fatalf("subscription ended: %v", <-errs)
		}
		return h
	case <-time.After(30 * time.Second):
		t.Fatal("no head within 30s")
	}
	return rpc.Head{}
}

// endOf waits for the subscription to end and returns why.
func endOf(t *testing.T, heads <-chan rpc.Head, errs <-chan error) error {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-heads:
			if !ok {
				select {
				case err := <-errs:
					return err
				default:
					t.Fatal("heads closed with no reason waiting on errs")
				}
			}
		case <-timeout:
			t.Fatal("subscription did not end within 30s")
		}
	}
}

// A real anvil's newHeads: every mined block arrives once, in order, with
// the hash and parent hash the node reports for the height.
func TestSubscribeHeadsOnAnvil(t *testing.T) {
	node, err := localstack.StartAnvil(t.TempDir(), localstack.AnvilOptions{})
	require.NoError(t, err)
	t.Cleanup(node.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	c := newNodeClient(t, ctx, "anvil-ws", node.WSURL, reg)
	raw, err := gethrpc.DialContext(ctx, node.HTTPURL)
	require.NoError(t, err)
	defer raw.Close()

	sctx, stop := context.WithCancel(ctx)
	heads, errs, err := c.SubscribeHeads(sctx)
	require.NoError(t, err)
	for want := uint64(1); want <= 3; want++ {
		require.NoError(t, raw.CallContext(ctx, nil, "evm_mine"))
		h := nextHead(t, heads, errs)
		require.Equal(t, want, h.Number)
		var b struct {
			Hash       string `json:"hash"`
			ParentHash string `json:"parentHash"`
		}
		require.NoError(t, raw.CallContext(ctx, &b, "eth_getBlockByNumber", hexutil.EncodeUint64(want), false))
		require.Equal(t, b.Hash, h.Hash)
		require.Equal(t, b.ParentHash, h.ParentHash)
	}
	stop()
	require.ErrorIs(t, endOf(t, heads, errs), context.Canceled)
	require.Equal(t, 1.0, testkit.Sum(t, reg, "rpc_requests_total", map[string]string{"method": "eth_subscribe(newHeads)"}))
	require.Zero(t, testkit.Sum(t, reg, "rpc_errors_total", nil))
}

// fakeHeads is an eth namespace whose newHeads subscription sends the
// given notifications, verbatim, then stays open.
type fakeHeads struct{ notes []string }

func (f *fakeHeads) NewHeads(ctx context.Context) (*gethrpc.Subscription, error) {
	n, ok := gethrpc.NotifierFromContext(ctx)
	if !ok {
		return nil, gethrpc.ErrNotificationsUnsupported
	}
	sub := n.CreateSubscription()
	for _, note := range f.notes {
		// Sent before the subscription's answer: the notifier holds them
		// until the client has the subscription ID.
		if err := n.Notify(sub.ID, json.RawMessage(note)); err != nil {
			return nil, err
		}
	}
	return sub, nil
}

// serveHeads runs a websocket JSON-RPC server with fakeHeads and returns a
// ws URL holding a "secret" path, and the server, whose Stop drops every
// connection.
func serveHeads(t *testing.T, notes ...string) (string, *gethrpc.Server) {
	t.Helper()
	srv := gethrpc.NewServer()
	require.NoError(t, srv.RegisterName("eth", &fakeHeads{notes: notes}))
	hs := httptest.NewServer(srv.WebsocketHandler([]string{"*"}))
	t.Cleanup(func() { hs.Close(); srv.Stop() })
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/secret-key-123", srv
}

func headJSON(number, hash, parent string) string {
	return fmt.Sprintf(`{"number":%q,"hash":%q,"parentHash":%q,"timestamp":"0x1"}`, number, hash, parent)
}

// A head whose hash is not 32 bytes of hex ends the subscription with a
// *MalformedError naming the field, the height and the endpoint by name;
// the good head before it is delivered.
func TestSubscribeHeadsMalformed(t *testing.T) {
	cases := []struct {
		name, note, field string
	}{
		{"hash not hex", headJSON("0x8", "0xnothex", hash(7)), "hash"},
		{"short parent", headJSON("0x8", hash(8), "0x1234"), "parentHash"},
		{"number without 0x", headJSON("8", hash(8), hash(7)), "number"},
		{"number missing", fmt.Sprintf(`{"hash":%q,"parentHash":%q}`, hash(8), hash(7)), "number"},
		{"not an object", `"0x8"`, "result"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url, _ := serveHeads(t, headJSON("0x7", hash(7), hash(6)), c.note)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			reg := prometheus.NewRegistry()
			e, err := rpc.NewEthereum(ctx, rpc.EthereumConfig{ChainID: "local", EndpointName: "stream", URL: url},
				zaptest.NewLogger(t), rpc.NewMetrics(reg))
			require.NoError(t, err)
			defer e.Close()
			heads, errs, err := e.SubscribeHeads(ctx)
			require.NoError(t, err)
			require.Equal(t, rpc.Head{Number: 7, Hash: hash(7), ParentHash: hash(6)}, nextHead(t, heads, errs))

			err = endOf(t, heads, errs)
			var mal *rpc.MalformedError
			require.ErrorAs(t, err, &mal)
			require.Equal(t, c.field, mal.Field)
			require.Equal(t, "stream", mal.Endpoint)
			require.Equal(t, "eth_subscribe(newHeads)", mal.Method)
			if c.field != "number" && c.field != "result" {
				require.Equal(t, uint64(8), mal.Height)
			}
			require.NotContains(t, err.Error(), "secret-key-123")
			require.Equal(t, 1.0, testkit.Sum(t, reg, "rpc_errors_total", map[string]string{"kind": rpc.KindMalformed}))
		})
	}
}

// A lost connection ends the subscription with a *TransientError whose text
// has no trace of the URL.
func TestSubscribeHeadsConnectionLost(t *testing.T) {
	url, srv := serveHeads(t, headJSON("0x1", hash(1), hash(0)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := rpc.NewEthereum(ctx, rpc.EthereumConfig{ChainID: "local", EndpointName: "stream", URL: url}, zaptest.NewLogger(t), nil)
	require.NoError(t, err)
	defer e.Close()
	heads, errs, err := e.SubscribeHeads(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(1), nextHead(t, heads, errs).Number)
	srv.Stop()
	err = endOf(t, heads, errs)
	t.Log(err)
	require.True(t, rpc.IsTransient(err), "got %T %v", err, err)
	require.False(t, errors.Is(err, context.Canceled))
	require.NotContains(t, err.Error(), "secret-key-123")
	require.NotContains(t, err.Error(), strings.TrimSuffix(strings.TrimPrefix(url, "ws://"), "/secret-key-123"))
}
