package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/stretchr/testify/require"
)

// What a node answers for a receipt decides whether WaitReceipts waits:
// geth's "transaction indexing is in progress" (-32000) is "not yet", a
// method the node lacks is not.
func TestReceiptServerErrorIsNotYet(t *testing.T) {
	for _, tc := range []struct {
		answer string
		notYet bool
	}{
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"transaction indexing is in progress","data":"transaction indexing is in progress"}}`, true},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"the method does not exist"}}`, false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(tc.answer))
		}))
		ec, err := ethclient.Dial(srv.URL)
		require.NoError(t, err)
		_, err = ec.TransactionReceipt(context.Background(), common.Hash{1})
		require.Error(t, err)
		require.NotErrorIs(t, err, ethereum.NotFound)
		require.Equal(t, tc.notYet, notYet(err), tc.answer)
		ec.Close()
		srv.Close()
	}
}
