package verify

import (
	"context"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Traces counts, for a chain indexed with traces, the heights of [0,
// head] whose newest mark says their traces are not in, and the call
// frames stored (canonical, FINAL).
func Traces(ctx context.Context, conn driver.Conn, chainID string, head uint64) (untraced, frames uint64, err error) {
	err = conn.QueryRow(ctx, "SELECT count() FROM (SELECT number FROM indexed_heights WHERE chain_id = ? AND number <= ?"+
		" GROUP BY number HAVING argMax(traced, version) = 0)", chainID, head).Scan(&untraced)
	if err != nil {
		return 0, 0, fmt.Errorf("verify: untraced heights of %s: %w", chainID, err)
	}
	err = conn.QueryRow(ctx, "SELECT count() FROM traces FINAL WHERE chain_id = ? AND block_number <= ? AND is_canonical = 1",
		chainID, head).Scan(&frames)
	if err != nil {
		return 0, 0, fmt.Errorf("verify: frames of %s: %w", chainID, err)
	}
	return untraced, frames, nil
}
