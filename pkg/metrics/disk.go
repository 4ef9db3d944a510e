package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DiskFigures are what the database holds on the ClickHouse server's disk
// (storage.DiskUsage), read at each scrape.
type DiskFigures struct {
	LiveBytes      uint64
	ReplacedBytes  uint64
	BytesPerHeight float64
	// FreeBytes is reported only when FreeKnown: a remote 18.16 server
	// cannot tell it (a node exporter on its host can).
	FreeBytes uint64
	FreeKnown bool
}

// diskReadTimeout bounds the read behind one scrape.
const diskReadTimeout = 5 * time.Second

// diskCollector asks for the figures at each scrape, so they are as fresh
// as the scrape and cost nothing between scrapes. A failed read reports no
// disk series for that scrape rather than failing the whole scrape.
type diskCollector struct {
	read                            func(context.Context) (DiskFigures, error)
	live, replaced, perHeight, free *prometheus.Desc
}

// RegisterDisk registers the disk series, filled by read at each scrape.
// They carry no chain_id: every chain's tables share the server's disk.
func RegisterDisk(reg prometheus.Registerer, read func(context.Context) (DiskFigures, error)) {
	reg.MustRegister(&diskCollector{
		read: read,
		live: prometheus.NewDesc("indexer_clickhouse_live_bytes",
			"Bytes of the database's active parts on the ClickHouse server: the indexed data.", nil, nil),
		replaced: prometheus.NewDesc("indexer_clickhouse_replaced_bytes",
			"Bytes of parts a merge replaced that the server still keeps (old_parts_lifetime): a catch-up's transient disk.", nil, nil),
		perHeight: prometheus.NewDesc("indexer_clickhouse_bytes_per_height",
			"Live bytes per indexed height, every chain together: what each height still to index will need.", nil, nil),
		free: prometheus.NewDesc("indexer_clickhouse_free_bytes",
			"Free bytes of the disk holding the data (system.disks, or the file system of a server on this machine); absent when unknown.", nil, nil),
	})
}

func (c *diskCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.live
	ch <- c.replaced
	ch <- c.perHeight
	ch <- c.free
}

func (c *diskCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), diskReadTimeout)
	defer cancel()
	f, err := c.read(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, float64(f.LiveBytes))
	ch <- prometheus.MustNewConstMetric(c.replaced, prometheus.GaugeValue, float64(f.ReplacedBytes))
	ch <- prometheus.MustNewConstMetric(c.perHeight, prometheus.GaugeValue, f.BytesPerHeight)
	if f.FreeKnown {
		ch <- prometheus.MustNewConstMetric(c.free, prometheus.GaugeValue, float64(f.FreeBytes))
	}
}
