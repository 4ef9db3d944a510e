package storage

import (
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tideline-dev/tideline/pkg/config"
)

// The values of clickhouse.protocol: how the process talks to the server.
//
// Native is the default and what the benchmarks measure. HTTP is for
// servers only reachable over it (a proxy or a hosted service that opens
// 8123/8443 only) and for the modern engine of the tests (pkg/localstack
// StartChDB). Every statement of this package runs the same over both: the
// driver binds arguments on the client either way, inserts are Native
// blocks either way, and a server's error is a *clickhouse.Exception
// either way, so errors.As on it (readErr, the migrations) holds. What HTTP
// lacks: the progress packets a backfill migration logs (it logs its start
// and end only), and per-read deadlines (readTimeout).
const (
	ProtocolNative = "native"
	ProtocolHTTP   = "http"
)

// driverProtocol is the driver's option for a clickhouse.protocol value;
// empty is native.
func driverProtocol(p string) clickhouse.Protocol {
	if p == ProtocolHTTP {
		return clickhouse.HTTP
	}
	return clickhouse.Native
}

// protocolName is the protocol's name in errors and logs.
func protocolName(p string) string {
	if p == ProtocolHTTP {
		return ProtocolHTTP
	}
	return ProtocolNative
}

// readTimeout is the driver's ReadTimeout. Over the native protocol it
// bounds each read of the connection, and a server sends progress packets
// while a long statement runs, so QueryTimeout fits. Over HTTP it bounds
// the wait for the answer's headers, which a server sends once an INSERT …
// SELECT has finished: a backfill migration (MigrateTimeout) would be cut
// off at QueryTimeout. There every statement is bounded by its context
// instead (queryContext, readContext, backfill), so the driver's bound is
// the longest of them.
func readTimeout(cfg config.ClickHouse) time.Duration {
	if cfg.Protocol == ProtocolHTTP {
		return max(cfg.QueryTimeout, cfg.MigrateTimeout)
	}
	return cfg.QueryTimeout
}
