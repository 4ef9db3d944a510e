package localstack

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"text/template"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// clickHouseStartTimeout bounds how long a start waits for the server to
// answer a query. A cold 18.16 start with empty data takes about a second;
// a restart over existing parts loads their metadata first.
const clickHouseStartTimeout = 60 * time.Second

// clickHouseLogTail is how much of the server log goes into start errors.
const clickHouseLogTail = 4000

// ClickHouse is a local clickhouse-server running as a child process with
// all its state under one directory.
type ClickHouse struct {
	// Addr is host:port of the protocol clients use (Protocol): the native
	// protocol of a server, the HTTP interface of the modern engine
	// (StartChDB).
	Addr string
	// Protocol is "native" or "http": how to reach Addr (clickhouse-go's
	// Protocol, storage's clickhouse.protocol).
	Protocol string
	// Engine says what answers, for logs and test output: "server" or, for
	// StartChDB, "chdb <version>, compatibility <c>".
	Engine string
	// HTTPAddr is host:port of the HTTP interface, for curl and humans.
	HTTPAddr string
	// Dir holds the config, the data and the log.
	Dir string
	// Process is the running server; it changes on Restart.
	Process *Process

	bin        string
	args       []string
	configPath string
	logPath    string
}

// Native reports whether clients reach Addr over the native protocol.
func (c *ClickHouse) Native() bool { return c.Protocol != ProtocolHTTP }

// The protocols of ClickHouse.Protocol.
const (
	ProtocolNative = "native"
	ProtocolHTTP   = "http"
)

// ClickHouseOptions configure StartClickHouseWith; the zero value is one
// standalone server on free ports.
type ClickHouseOptions struct {
	// TCPPort is the native protocol's port; zero picks a free one. A
	// cluster's hosts must know each other's ports before they start.
	TCPPort int
	// Replica makes the server one replica of a one-shard cluster.
	Replica *ClickHouseReplica
	// MaxTableSizeToDrop, when not zero, is the server's
	// max_table_size_to_drop in bytes: it refuses to DROP a larger table
	// (production servers keep the 50 GB default).
	MaxTableSizeToDrop uint64
	// PartLog turns on system.part_log: a row for every part written,
	// merged or removed, which bench-catchup reads for the bytes merges
	// rewrite. Off by default, as on the servers the config stands for:
	// it is one more table written on every insert and merge.
	PartLog bool
	// OldPartsLifetime, when not zero, is the server's old_parts_lifetime
	// (whole seconds): how long a part replaced by a merge stays on disk.
	// Zero keeps the server's default, 8 minutes, which during a catch-up
	// holds several times the live data in replaced parts
	// (docs/operations.md, "Disk for a catch-up").
	OldPartsLifetime time.Duration
}

// ClickHouseReplica is one host's part in a cluster whose every host is a
// replica of the one shard, coordinated by ZooKeeper.
type ClickHouseReplica struct {
	// Cluster is the cluster's name in remote_servers (clickhouse.cluster).
	Cluster string
	// ZooKeeper is host:port of the coordinator.
	ZooKeeper string
	// Name is this replica's {replica} macro; every host's differs.
	Name string
	// Hosts are host:port (native protocol) of every replica, this one
	// included.
	Hosts []string
}

// StartClickHouse writes a config for a server listening on 127.0.0.1 only,
// on two free ports, keeping data and log under dir, starts it and waits
// until it answers `SELECT 1` over the native protocol.
func StartClickHouse(dir string) (*ClickHouse, error) {
	return StartClickHouseWith(dir, ClickHouseOptions{})
}

// StartClickHouseWith is StartClickHouse with options.
func StartClickHouseWith(dir string, opts ClickHouseOptions) (*ClickHouse, error) {
	bin, err := ToolPath("clickhouse-server")
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: data dir %q: %w", dir, err)
	}
	tcpPort := opts.TCPPort
	if tcpPort == 0 {
		if tcpPort, err = FreePort(); err != nil {
			return nil, fmt.Errorf("clickhouse: free port for native protocol: %w", err)
		}
	}
	httpPort, err := freePortBut(tcpPort)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: free port for http: %w", err)
	}
	var cluster *clusterConfig
	if r := opts.Replica; r != nil {
		zkHost, zkPort, err := net.SplitHostPort(r.ZooKeeper)
		if err != nil {
			return nil, fmt.Errorf("clickhouse: zookeeper address %q: %w", r.ZooKeeper, err)
		}
		// Replicas fetch each other's parts over the interserver port.
		inter, err := freePortBut(tcpPort, httpPort)
		if err != nil {
			return nil, fmt.Errorf("clickhouse: free port for interserver http: %w", err)
		}
		cluster = &clusterConfig{Name: r.Cluster, ZooKeeperHost: zkHost, ZooKeeperPort: zkPort, Replica: r.Name, InterserverPort: inter}
		for _, h := range r.Hosts {
			host, port, err := net.SplitHostPort(h)
			if err != nil {
				return nil, fmt.Errorf("clickhouse: replica address %q: %w", h, err)
			}
			cluster.Hosts = append(cluster.Hosts, hostPort{host, port})
		}
	}
	configPath := filepath.Join(dir, "config.xml")
	c := &ClickHouse{
		Addr:       net.JoinHostPort("127.0.0.1", strconv.Itoa(tcpPort)),
		Protocol:   ProtocolNative,
		Engine:     "server",
		HTTPAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort)),
		Dir:        dir,
		bin:        bin,
		args:       []string{"--config-file=" + configPath},
		configPath: configPath,
		logPath:    filepath.Join(dir, "clickhouse-server.log"),
	}
	if err := c.writeConfig(tcpPort, httpPort, cluster, opts); err != nil {
		return nil, err
	}
	if err := c.start(); err != nil {
		return nil, err
	}
	return c, nil
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s). Data stays.
func (c *ClickHouse) Stop() {
	if c.Process != nil {
		c.Process.Stop()
	}
}

// Restart stops the server and starts it again on the same ports and data
// directory, so clients reconnect to the same address and find their data.
func (c *ClickHouse) Restart() error {
	c.Stop()
	return c.start()
}

func (c *ClickHouse) start() error {
	p, err := Start("clickhouse", c.logPath, c.bin, c.args...)
	if err != nil {
		return err
	}
	c.Process = p
	ctx, cancel := context.WithTimeout(context.Background(), clickHouseStartTimeout)
	defer cancel()
	if err := c.waitReady(ctx); err != nil {
		p.Stop()
		return fmt.Errorf("clickhouse on %s (log %s): %w\n--- log tail ---\n%s",
			c.Addr, c.logPath, err, p.Tail(clickHouseLogTail))
	}
	return nil
}

// waitReady polls until the native port accepts a connection and answers a
// query: the port opens before the server has loaded its tables, so an open
// port alone is not ready.
func (c *ClickHouse) waitReady(ctx context.Context) error {
	var last error
	for {
		if c.Process.Exited() {
			return fmt.Errorf("server exited during start: %v", c.Process.waitErr)
		}
		if last = c.selectOne(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s: %w", clickHouseStartTimeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *ClickHouse) selectOne(ctx context.Context) error {
	nc, err := net.DialTimeout("tcp", c.Addr, time.Second)
	if err != nil {
		return err
	}
	nc.Close()
	opts := &clickhouse.Options{Addr: []string{c.Addr}, DialTimeout: time.Second}
	if !c.Native() {
		opts.Protocol = clickhouse.HTTP
	}
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var one uint8
	if err := conn.QueryRow(qctx, "SELECT 1").Scan(&one); err != nil {
		return err
	}
	if one != 1 {
		return errors.New("SELECT 1 returned " + strconv.Itoa(int(one)))
	}
	return nil
}

// The root element is <yandex>: 18.16 (the only server packaged here) does
// not know <clickhouse>, and modern servers still accept <yandex>. Logging
// goes to the console, which Start sends to the log file, so one file holds
// everything and Tail shows it. Timezone is UTC so DateTime text is stable.
// On SIGTERM the server waits for open connections, and an idle one only
// notices the shutdown when its poll (poll_interval in the users profile,
// 10 s by default) times out; clients hold idle pooled connections, so
// without the short poll every Stop would run into Process.Stop's SIGKILL.
var clickHouseConfig = template.Must(template.New("config").Parse(`<?xml version="1.0"?>
<yandex>
    <logger>
        <level>information</level>
        <console>1</console>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>{{.TCPPort}}</tcp_port>
    <http_port>{{.HTTPPort}}</http_port>
    <path>{{.Dir}}/data/</path>
    <tmp_path>{{.Dir}}/tmp/</tmp_path>
    <user_files_path>{{.Dir}}/user_files/</user_files_path>
    <format_schema_path>{{.Dir}}/format_schemas/</format_schema_path>
    <users_config>{{.Dir}}/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mlock_executable>false</mlock_executable>
    <max_concurrent_queries>100</max_concurrent_queries>
    <shutdown_wait_unfinished>2</shutdown_wait_unfinished>
    <mark_cache_size>268435456</mark_cache_size>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
{{- with .MaxTableSizeToDrop}}
    <max_table_size_to_drop>{{.}}</max_table_size_to_drop>
{{- end}}
{{- with .OldPartsLifetime}}
    <merge_tree>
        <old_parts_lifetime>{{.}}</old_parts_lifetime>
    </merge_tree>
{{- end}}
{{- if .PartLog}}
    <part_log>
        <database>system</database>
        <table>part_log</table>
        <flush_interval_milliseconds>7500</flush_interval_milliseconds>
    </part_log>
{{- end}}
{{- with .Cluster}}
    <interserver_http_host>127.0.0.1</interserver_http_host>
    <interserver_http_port>{{.InterserverPort}}</interserver_http_port>
    <zookeeper>
        <node><host>{{.ZooKeeperHost}}</host><port>{{.ZooKeeperPort}}</port></node>
    </zookeeper>
    <remote_servers>
        <{{.Name}}>
            <shard>
                <internal_replication>true</internal_replication>
{{- range .Hosts}}
                <replica><host>{{.Host}}</host><port>{{.Port}}</port></replica>
{{- end}}
            </shard>
        </{{.Name}}>
    </remote_servers>
    <macros>
        <shard>01</shard>
        <replica>{{.Replica}}</replica>
    </macros>
    <distributed_ddl>
        <path>/clickhouse/task_queue/ddl</path>
    </distributed_ddl>
{{- end}}
</yandex>
`))

// clusterConfig is the replication part of a server's configuration.
type clusterConfig struct {
	Name                         string
	ZooKeeperHost, ZooKeeperPort string
	Replica                      string
	InterserverPort              int
	Hosts                        []hostPort
}

type hostPort struct{ Host, Port string }

// freePortBut returns a free port other than the ones given: the kernel
// may hand back a port it just released.
func freePortBut(taken ...int) (int, error) {
	for range 10 {
		p, err := FreePort()
		if err != nil {
			return 0, err
		}
		if !slices.Contains(taken, p) {
			return p, nil
		}
	}
	return 0, errors.New("no free port other than the ones taken")
}

// ReadOnlyUser is the dev stack's user for data teams' SQL (no password,
// loopback only): profile ReadOnlyProfile, readonly = 1 with limits on
// memory and time, as docs/querying.md sets one up for production.
const (
	ReadOnlyUser    = "tideline_reader"
	ReadOnlyProfile = "tideline_readonly"
	// ReadOnlyMaxMemory (bytes) and ReadOnlyMaxSeconds are its limits.
	ReadOnlyMaxMemory  = 2_000_000_000
	ReadOnlyMaxSeconds = 60
)

var clickHouseUsers = fmt.Sprintf(`<?xml version="1.0"?>
<yandex>
    <profiles>
        <default>
            <poll_interval>1</poll_interval>
        </default>
        <%[1]s>
            <readonly>1</readonly>
            <max_memory_usage>%[3]d</max_memory_usage>
            <max_execution_time>%[4]d</max_execution_time>
            <poll_interval>1</poll_interval>
        </%[1]s>
    </profiles>
    <users>
        <%[2]s>
            <password></password>
            <networks>
                <ip>::1</ip>
                <ip>127.0.0.1</ip>
            </networks>
            <profile>%[1]s</profile>
            <quota>default</quota>
        </%[2]s>
        <default>
            <password></password>
            <networks>
                <ip>::1</ip>
                <ip>127.0.0.1</ip>
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
</yandex>
`, ReadOnlyProfile, ReadOnlyUser, ReadOnlyMaxMemory, ReadOnlyMaxSeconds)

func (c *ClickHouse) writeConfig(tcpPort, httpPort int, cluster *clusterConfig, opts ClickHouseOptions) error {
	for _, sub := range []string{"data", "tmp", "user_files", "format_schemas"} {
		if err := os.MkdirAll(filepath.Join(c.Dir, sub), 0o755); err != nil {
			return fmt.Errorf("clickhouse: %w", err)
		}
	}
	var escaped bytes.Buffer
	if err := xml.EscapeText(&escaped, []byte(c.Dir)); err != nil {
		return fmt.Errorf("clickhouse: escaping dir %q: %w", c.Dir, err)
	}
	var buf bytes.Buffer
	err := clickHouseConfig.Execute(&buf, struct {
		Dir                string
		TCPPort, HTTPPort  int
		Cluster            *clusterConfig
		MaxTableSizeToDrop uint64
		PartLog            bool
		OldPartsLifetime   int64
	}{escaped.String(), tcpPort, httpPort, cluster, opts.MaxTableSizeToDrop, opts.PartLog,
		int64(opts.OldPartsLifetime.Round(time.Second) / time.Second)})
	if err != nil {
		return fmt.Errorf("clickhouse: config template: %w", err)
	}
	if err := os.WriteFile(c.configPath, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("clickhouse: %w", err)
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "users.xml"), []byte(clickHouseUsers), 0o644); err != nil {
		return fmt.Errorf("clickhouse: %w", err)
	}
	return nil
}
