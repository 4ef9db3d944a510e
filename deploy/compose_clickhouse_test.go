package deploy_test

import (
	"encoding/xml"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tideline-dev/tideline/pkg/storage"
)

// The deployment's ClickHouse keeps replaced parts for the lifetime the
// catch-up's disk figures were measured with (docs/operations.md, "Disk
// for a catch-up"), from a file its image reads (config.d).
func TestComposeClickHouseOldPartsLifetime(t *testing.T) {
	var cfg struct {
		XMLName   xml.Name `xml:"clickhouse"`
		MergeTree struct {
			OldPartsLifetime int `xml:"old_parts_lifetime"`
		} `xml:"merge_tree"`
	}
	clickHouseConfigFile(t, "clickhouse-merge-tree", &cfg)
	require.Equal(t, storage.RecommendedOldPartsLifetime, time.Duration(cfg.MergeTree.OldPartsLifetime)*time.Second)
}

// The deployment's ClickHouse has a cache of decompressed blocks for the
// reads that ask for it (storage's readSettings): a server's own default
// size is 0, the cache off.
func TestComposeClickHouseUncompressedCache(t *testing.T) {
	var cfg struct {
		XMLName               xml.Name `xml:"clickhouse"`
		UncompressedCacheSize int64    `xml:"uncompressed_cache_size"`
	}
	clickHouseConfigFile(t, "clickhouse-caches", &cfg)
	require.GreaterOrEqual(t, cfg.UncompressedCacheSize, int64(1<<30), "at least 1 GiB")
}

// clickHouseConfigFile reads into cfg the compose config named source,
// which the ClickHouse service must mount as a file its image reads
// (config.d/*.xml).
func clickHouseConfigFile(t *testing.T, source string, cfg any) {
	t.Helper()
	target := configTarget(t, readCompose(t).Services["clickhouse"], source)
	require.True(t, strings.HasPrefix(target, "/etc/clickhouse-server/config.d/") && strings.HasSuffix(target, ".xml"),
		"%s: config %s must be a config.d file, not %s", composePath, source, target)
	require.NoError(t, xml.Unmarshal([]byte(composeConfigs(t)[source]), cfg), "%s: config %s", composePath, source)
}

// The deployment's ClickHouse is the version the modern lanes of `make
// test` run: the image's major.minor is the pinned chDB's
// (scripts/install-tools.sh, CHDB_VERSION).
func TestComposeClickHouseIsTheTestedVersion(t *testing.T) {
	script, err := os.ReadFile("../scripts/install-tools.sh")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^CHDB_VERSION=(\d+\.\d+)\.`).FindSubmatch(script)
	require.NotNil(t, m, "CHDB_VERSION in scripts/install-tools.sh")
	image, _ := readCompose(t).Services["clickhouse"]["image"].(string)
	require.Equal(t, "clickhouse/clickhouse-server:"+string(m[1]), image, composePath)
}
