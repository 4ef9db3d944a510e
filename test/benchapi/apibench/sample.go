package apibench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/tideline-dev/tideline/test/benchapi/load"
)

// sample draws the requests' inputs from the index: -samples random
// heights (seeded), their blocks' hashes and times, the first transaction
// of each (its hash, sender and recipient) and the first log of each when
// it has a topic (its position, address and topic0).
func (b *bench) sample(ctx context.Context) (*load.Inputs, error) {
	r := rand.New(rand.NewPCG(b.opts.Seed, 99))
	in := &load.Inputs{}
	for range b.opts.Samples {
		in.Heights = append(in.Heights, r.Uint64N(b.opts.N+1))
	}
	list := make([]string, len(in.Heights))
	for i, h := range in.Heights {
		list[i] = fmt.Sprint(h)
	}
	where := "chain_id = '" + chainID + "' AND %s IN (" + strings.Join(list, ",") + ")"
	scan := func(sql string, f func(driver.Rows) error) error {
		rows, err := b.conn.Query(ctx, sql)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := f(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	if err := scan("SELECT hash, toUInt32(timestamp) FROM blocks WHERE "+fmt.Sprintf(where, "number"), func(r driver.Rows) error {
		var h string
		var ts uint32
		err := r.Scan(&h, &ts)
		in.Blocks, in.Times = append(in.Blocks, h), append(in.Times, uint64(ts))
		return err
	}); err != nil {
		return nil, err
	}
	if err := scan("SELECT hash, from_address, to_address FROM transactions WHERE "+fmt.Sprintf(where, "block_number")+
		" AND tx_index = 0", func(r driver.Rows) error {
		var h, from, to string
		err := r.Scan(&h, &from, &to)
		in.Txs = append(in.Txs, h)
		in.Addresses = append(in.Addresses, from)
		if to != "" {
			in.Addresses = append(in.Addresses, to)
		}
		return err
	}); err != nil {
		return nil, err
	}
	if err := scan("SELECT block_number, address, topic0, topic1 FROM logs WHERE "+fmt.Sprintf(where, "block_number")+
		" AND log_index = 0 AND topic_count > 0", func(r driver.Rows) error {
		var l load.LogInput
		err := r.Scan(&l.Height, &l.Address, &l.Topic0, &l.Topic1)
		in.Logs = append(in.Logs, l)
		return err
	}); err != nil {
		return nil, err
	}
	// Tokens and holders: the transfers of the same heights (none on an
	// index built with clickhouse.skip_token_transfers).
	if err := scan("SELECT token_address, to_address FROM token_transfers WHERE "+fmt.Sprintf(where, "block_number")+
		" AND standard = 'erc20'", func(r driver.Rows) error {
		var token, to string
		err := r.Scan(&token, &to)
		in.Tokens, in.Holders = append(in.Tokens, token), append(in.Holders, to)
		return err
	}); err != nil {
		return nil, err
	}
	if err := b.sampleTraces(in, where, scan); err != nil {
		return nil, err
	}
	if len(in.Blocks) == 0 || len(in.Txs) == 0 || len(in.Logs) == 0 {
		return nil, fmt.Errorf("no inputs drawn: %d blocks, %d transactions, %d logs", len(in.Blocks), len(in.Txs), len(in.Logs))
	}
	b.say("inputs: %d heights, %d block hashes, %d transaction hashes, %d addresses, %d log filters, %d token transfers, %d traced transactions",
		len(in.Heights), len(in.Blocks), len(in.Txs), len(in.Addresses), len(in.Logs), len(in.Tokens), len(in.TracedTxs))
	return in, nil
}
