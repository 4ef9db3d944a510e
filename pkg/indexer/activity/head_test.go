package activity_test

import (
	"errors"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/indexer/activity"
	"github.com/tideline-dev/tideline/pkg/rpc"
)

// A node whose block at its head is refused (here a transaction's
// position that does not fit, as a node answering inconsistently sent)
// holds every height above the last confirmed head, and no IndexBlock
// runs to say so: the scan's head read logs the height, the endpoint,
// the method and the field at fault, and counts it.
func TestARefusedHeadBlockIsLoggedAndCounted(t *testing.T) {
	f := newReorgFixture(t, 0)
	f.node.grow('a', 5, func(uint64) int { return 2 })
	bad := &rpc.MalformedError{Method: "eth_getBlockByNumber", Endpoint: "main", Height: 5,
		Field: "transactions[1].transactionIndex", Reason: "2 at position 1"}
	f.node.mu.Lock()
	f.node.refuse = map[uint64]error{5: bad}
	f.node.mu.Unlock()

	_, err := f.env.ExecuteActivity(f.acts.HeadHeight, f.chainID)
	require.Error(t, err, "a head whose block is refused is not used")
	var app *sdktemporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, activity.ErrTypeMalformedResponse, app.Type(), "typed as the refusal it is")

	logged := f.logs.FilterMessageSnippet("the node's block at its head was refused").All()
	require.Len(t, logged, 1)
	require.Equal(t, zap.WarnLevel, logged[0].Level)
	fields := logged[0].ContextMap()
	require.Equal(t, uint64(5), fields["height"])
	require.Equal(t, "main", fields["endpoint"])
	require.Equal(t, "eth_getBlockByNumber", fields["method"])
	require.Equal(t, "transactions[1].transactionIndex", fields["field"])
	require.Equal(t, "2 at position 1", fields["reason"])
	var m dto.Metric
	require.NoError(t, f.acts.Metrics.IndexErrors.WithLabelValues(f.chainID, "head").Write(&m))
	require.Equal(t, 1.0, m.GetCounter().GetValue(), "indexer_block_index_errors_total{stage=\"head\"}")

	// Taken once the node answers well: the head is used, nothing more is
	// logged.
	f.node.mu.Lock()
	f.node.refuse = nil
	f.node.mu.Unlock()
	v, err := f.env.ExecuteActivity(f.acts.HeadHeight, f.chainID)
	require.NoError(t, err)
	var head uint64
	require.NoError(t, v.Get(&head))
	require.Equal(t, uint64(5), head)
	require.Len(t, f.logs.FilterMessageSnippet("the node's block at its head was refused").All(), 1)
}
