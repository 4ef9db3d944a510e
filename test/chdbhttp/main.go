// Command chdb-http serves ClickHouse's HTTP interface from chDB, the
// ClickHouse engine as a library: the modern engine of the tests (no
// modern ClickHouse server installs here; see README.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	lib := flag.String("lib", "", "path of libchdb.so")
	path := flag.String("path", "", "data folder (databases and tables)")
	listen := flag.String("listen", "127.0.0.1:8123", "host:port of the HTTP interface (loopback)")
	compat := flag.String("compatibility", "", "the compatibility setting of every request (as in a user profile), e.g. 24.8; empty: the engine's own defaults")
	version := flag.Bool("version", false, "print the engine's version and exit")
	flag.Parse()
	if *lib == "" {
		log.Fatal("chdb-http: -lib is required")
	}
	dir := *path
	if dir == "" || *version {
		tmp, err := os.MkdirTemp("", "chdb-http-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	eng, err := openEngine(*lib, dir)
	if err != nil {
		log.Fatalf("chdb-http: %v", err)
	}
	srv, err := newServer(eng, dir, *compat)
	if err != nil {
		eng.close()
		log.Fatalf("chdb-http: %v", err)
	}
	if *version {
		fmt.Println(srv.version)
		eng.close()
		return
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil || (host != "127.0.0.1" && host != "localhost" && host != "::1") {
		log.Fatalf("chdb-http: -listen %q must be a loopback host:port", *listen)
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("chdb-http: %v", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	log.Printf("chdb-http: engine %s (compatibility %q) on %s, data in %s", srv.version, *compat, l.Addr(), dir)
	if err := hs.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Printf("chdb-http: %v", err)
	}
	srv.mu.Lock()
	eng.close()
	srv.mu.Unlock()
}
