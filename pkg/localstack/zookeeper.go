package localstack

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// zooKeeperJar is where Debian's zookeeper package puts the server; its
// manifest names the libraries it needs.
const zooKeeperJar = "/usr/share/java/zookeeper.jar"

// ZooKeeper is a standalone ZooKeeper server, the coordinator of
// replicated ClickHouse tables (ClickHouse 18.16 has no Keeper of its own).
type ZooKeeper struct {
	*Process
	// Addr is host:port of its client port.
	Addr string
}

// StartZooKeeper starts ZooKeeper (Debian's package, on the machine's Java)
// with its data under dir, on a free port of 127.0.0.1, and waits until the
// port accepts connections.
func StartZooKeeper(dir string) (*ZooKeeper, error) {
	if _, err := os.Stat(zooKeeperJar); err != nil {
		return nil, fmt.Errorf("zookeeper (%s): %w", zooKeeperJar, ErrToolMissing)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java: %w", ErrToolMissing)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	// A short tick: sessions of a test stack are local and short-lived.
	cfg := fmt.Sprintf("tickTime=500\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\nmaxClientCnxns=0\n",
		filepath.Join(dir, "data"), port)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	p, err := Start("zookeeper", filepath.Join(dir, "zookeeper.log"), java,
		"-Xmx256m", "-cp", zooKeeperJar+":/usr/share/java/slf4j-simple.jar", "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath)
	if err != nil {
		return nil, err
	}
	zk := &ZooKeeper{Process: p, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := zk.waitServing(ctx); err != nil {
		p.Stop()
		return nil, fmt.Errorf("zookeeper did not come up: %w\n%s", err, p.Tail(2000))
	}
	return zk, nil
}

// waitServing waits until the server serves sessions, not only accepts
// connections: it opens its port before it loads its database and closes
// early sessions, and ClickHouse 18.16 does not survive a failed first
// session well. `srvr` (a four-letter command on by default) reports the
// server's mode only once it serves.
func (z *ZooKeeper) waitServing(ctx context.Context) error {
	var last string
	for {
		if z.Exited() {
			return fmt.Errorf("exited")
		}
		if c, err := net.DialTimeout("tcp", z.Addr, time.Second); err == nil {
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			_, _ = c.Write([]byte("srvr"))
			b, _ := io.ReadAll(c)
			c.Close()
			last = string(b)
			if strings.Contains(last, "Mode: standalone") {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last answer to srvr: %q)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
