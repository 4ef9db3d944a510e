package benchkit

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/tideline-dev/tideline/pkg/localstack"
	"github.com/tideline-dev/tideline/pkg/simchain"
	"github.com/tideline-dev/tideline/pkg/temporal"
)

// Stack is the local Temporal dev server and ClickHouse of one run, started
// fresh as the integration tests start them.
type Stack struct {
	Temporal   *localstack.Temporal
	ClickHouse *localstack.ClickHouse
}

// StartStack starts the Temporal dev server with its database in
// temporalDir, then ClickHouse in clickhouseDir, and adds their stops to c.
func StartStack(c *Cleanup, temporalDir, clickhouseDir string, topts localstack.TemporalOptions) (*Stack, error) {
	return StartStackWith(c, temporalDir, clickhouseDir, topts, localstack.ClickHouseOptions{})
}

// StartStackWith is StartStack with ClickHouse's options (bench-catchup
// turns the part log on).
func StartStackWith(c *Cleanup, temporalDir, clickhouseDir string, topts localstack.TemporalOptions, chopts localstack.ClickHouseOptions) (*Stack, error) {
	tmp, err := localstack.StartTemporal(temporalDir, topts)
	if err != nil {
		return nil, fmt.Errorf("start temporal: %w", err)
	}
	c.Add(tmp.Stop)
	ch, err := localstack.StartClickHouseWith(clickhouseDir, chopts)
	if err != nil {
		return nil, fmt.Errorf("start clickhouse: %w", err)
	}
	c.Add(ch.Stop)
	return &Stack{Temporal: tmp, ClickHouse: ch}, nil
}

// Processes are the stack's server processes by name, for their CPU time.
func (s *Stack) Processes() map[string]*localstack.Process {
	return map[string]*localstack.Process{"clickhouse": s.ClickHouse.Process, "temporal": s.Temporal.Process}
}

// StartSim serves the simulated chain and adds its Close to c. It does not
// take the run's context: an interrupt stops the chain in the cleanup,
// after the worker that reads it.
func StartSim(c *Cleanup, cfg simchain.Config) (*simchain.Sim, error) {
	sim, err := simchain.Start(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("start the simulated chain: %w", err)
	}
	c.Add(func() { sim.Close() })
	return sim, nil
}

// DialTemporal connects a client to the dev server's default namespace,
// with the SDK's log silenced, and adds its Close to c.
func DialTemporal(ctx context.Context, c *Cleanup, hostPort string) (client.Client, error) {
	tc, err := client.DialContext(ctx, client.Options{HostPort: hostPort, Namespace: "default", Logger: temporal.NewLogger(zap.NewNop())})
	if err != nil {
		return nil, fmt.Errorf("temporal client for %s: %w", hostPort, err)
	}
	c.Add(tc.Close)
	return tc, nil
}

// OpenConn opens a plain ClickHouse connection to database, for the
// benchmarks' own SQL (checks, inputs), with a read timeout long enough
// for a check over a whole chain; it adds its Close to c.
func OpenConn(c *Cleanup, addr, database string) (driver.Conn, error) {
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr: []string{addr}, Auth: clickhouse.Auth{Database: database, Username: "default"},
		DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("open ClickHouse %s, database %s: %w", addr, database, err)
	}
	c.Add(func() { conn.Close() })
	return conn, nil
}
