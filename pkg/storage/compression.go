package storage

import (
	"fmt"
	"net"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// The values of clickhouse.compression: how the native protocol's blocks
// travel between the process and the server.
const (
	// CompressionAuto sends blocks uncompressed to a server on this
	// machine (a loopback address or "localhost") and LZ4 to any other.
	CompressionAuto = "auto"
	// CompressionLZ4 compresses every block with LZ4 (18.16 and modern
	// servers speak it natively).
	CompressionLZ4 = "lz4"
	// CompressionNone sends blocks as they are.
	CompressionNone = "none"
)

// compressionValues lists the accepted values, for errors.
var compressionValues = []string{CompressionAuto, CompressionLZ4, CompressionNone}

// effectiveCompression is what a setting means for a server at addr: lz4
// or none. Raw JSON-like columns (inputs, log data, trace frames) compress
// several-fold, which saves a network; on loopback there is no network to
// save and the LZ4 pass was 8-14 % of the worker's CPU in a catch-up
// (docs/performance.md), so auto leaves it out there.
func effectiveCompression(setting, addr string) (string, error) {
	switch setting {
	case CompressionLZ4, CompressionNone:
		return setting, nil
	case "", CompressionAuto:
		if isLoopback(addr) {
			return CompressionNone, nil
		}
		return CompressionLZ4, nil
	}
	return "", fmt.Errorf("clickhouse.compression: %q is not one of %s", setting, strings.Join(compressionValues, ", "))
}

// driverCompression is the driver's option for an effective compression.
func driverCompression(effective string) *clickhouse.Compression {
	if effective == CompressionLZ4 {
		return &clickhouse.Compression{Method: clickhouse.CompressionLZ4}
	}
	return nil
}

// isLoopback reports whether host:port names this machine: a loopback IP
// or "localhost". A name that must be resolved counts as remote.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
