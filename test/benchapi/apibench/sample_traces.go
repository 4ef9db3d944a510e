package apibench

import (
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/tideline-dev/tideline/test/benchapi/load"
)

// sampleTraces draws the trace routes' inputs from the same heights: per
// height, the first transaction with an inner frame and that frame's
// receiver (none on an index built without -traces).
func (b *bench) sampleTraces(in *load.Inputs, where string, scan func(string, func(driver.Rows) error) error) error {
	if b.opts.Traces == "" {
		return nil
	}
	return scan("SELECT tx_hash, to_address FROM traces WHERE "+fmt.Sprintf(where, "block_number")+
		" AND depth = 1 AND to_address != '' ORDER BY block_number, tx_index, trace_index LIMIT 1 BY block_number",
		func(r driver.Rows) error {
			var tx, to string
			err := r.Scan(&tx, &to)
			in.TracedTxs, in.InternalAddresses = append(in.TracedTxs, tx), append(in.InternalAddresses, to)
			return err
		})
}
