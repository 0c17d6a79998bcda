package chclient_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
)

// TestInsertToStalledServerTimesOut: an INSERT whose data a server (here a proxy in front of
// ClickHouse 18.16) stops taking in the middle, without closing the connection, fails once the
// URL's read_timeout has passed without progress, with an error that says so, and nothing is
// stored; the same INSERT once the server takes data again stores its rows once. Until
// 2026-12-08 clickhouse-go's read_timeout bounded only reads: the INSERT's write waited without
// end (a local run's bundle, its messages unacknowledged, and a drain with it).
func TestInsertToStalledServerTimesOut(t *testing.T) {
	ctx := context.Background()
	srv := chtest.New(t)
	srv.MustExec(t, "CREATE TABLE big (id UInt32, s String) ENGINE = MergeTree ORDER BY id")
	proxy := srv.Proxy(t)
	cfg := srv.Config()
	cfg.URL = proxy.URL() + "?read_timeout=1s"
	cfg.Compression = "none" // the marker travels as it is
	conn, err := chclient.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// 40 MiB of rows: more than the kernel's buffers on both sides of the proxy hold, so that the
	// client's write itself waits once the proxy stops reading.
	const rows = 80
	ids, values := make([]uint32, rows), make([]string, rows)
	for i := range ids {
		ids[i], values[i] = uint32(i), strings.Repeat("x", 512<<10)
	}
	values[0] = "stall-marker" + values[0]
	insert := func() error {
		done := make(chan error, 1)
		go func() {
			done <- chclient.Insert(ctx, conn, srv.Database, "big", []string{"id", "s"}, []any{ids, values}, nil, false, chclient.Identity{})
		}()
		select {
		case err := <-done:
			return err
		case <-time.After(2 * time.Minute): // the read timeout is 1 s
			t.Fatal("the INSERT to a server that takes no data is still waiting after 2 minutes (read_timeout=1s)")
			return nil
		}
	}

	proxy.StallUploadsHolding([]byte("stall-marker"))
	err = insert()
	var ne net.Error
	if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("INSERT to a stalled server: got %v, want a timeout", err)
	}
	if want := "took none of the bytes sent to it for 1s (the ?read_timeout= option of the ClickHouse URL)"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if c := chclient.Classify(err); c != chclient.Transient {
		t.Errorf("Classify(%v) = %v, want transient", err, c)
	}
	if got := srv.MustQuery(t, "SELECT count() FROM big"); got != "0" {
		t.Errorf("rows stored by the stalled INSERT: %s, want 0", got)
	}

	proxy.StallUploadsHolding(nil)
	if err := insert(); err != nil {
		t.Fatalf("INSERT once the server takes data again: %v", err)
	}
	if got := srv.MustQuery(t, "SELECT count(), uniqExact(id) FROM big"); got != "80\t80" {
		t.Errorf("rows stored: %s, want 80 distinct", got)
	}
}

// TestSilentServerAtConnect: a server that accepts the connection and never answers fails Open
// within the dial timeout, with the sentence of the native protocol's handshake, not one of the
// read timeout (1 h here), whose deadline it was not.
func TestSilentServerAtConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	cfg := chclient.Config{URL: "clickhouse://" + ln.Addr().String() + "?dial_timeout=1s&read_timeout=1h", Database: "default", Username: "default"}
	conn, err := chclient.Open(context.Background(), cfg)
	if err == nil {
		conn.Close()
		t.Fatal("Open of a server that never answers succeeded")
	}
	if !strings.Contains(err.Error(), "did not answer the native protocol's handshake in time") || strings.Contains(err.Error(), "?read_timeout= option") {
		t.Errorf("Open of a server that never answers: %v; want the handshake's sentence, without read_timeout", err)
	}
}
