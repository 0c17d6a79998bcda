// Command emulator is an in-memory Pub/Sub emulator for the tests and the demo: it serves
// cloud.google.com/go/pubsub/v2/pstest on 127.0.0.1:<port>, prints
// PUBSUB_EMULATOR_HOST=127.0.0.1:<port> on stdout once it accepts connections, and serves until
// SIGINT or SIGTERM.
//
// Like every pstest server it keeps everything in memory, drops messages never delivered for 10
// minutes, and rescans a subscription's whole backlog every 10 ms (keep backlogs bounded); its
// StreamingPull serves about 100 messages per second, so pull with the unary Pull RPC.
//
//	go run ./integration_test/emulator -port 8085
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
)

func main() {
	port := flag.Int("port", 8085, "TCP port to listen on (0 picks a free one)")
	flag.Parse()

	e, err := start(*port)
	if err != nil {
		fmt.Fprintf(os.Stderr, "emulator: %v\n", err)
		os.Exit(1)
	}
	_, p, _ := net.SplitHostPort(e.Addr)
	fmt.Printf("PUBSUB_EMULATOR_HOST=127.0.0.1:%s\n", p)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	fmt.Fprintf(os.Stderr, "emulator: %v: stopping\n", s)
	e.Close()
}

// emulator is pstest's fake served on 127.0.0.1.
type emulator struct {
	Addr string // 127.0.0.1:<port>
	srv  *pstest.Server
	g    *grpc.Server
}

// start listens on 127.0.0.1 explicitly (pstest's own servers listen on "localhost", which may
// resolve to ::1 only), and serves pstest's fake with requests of up to 12 MiB, as the tests'
// emulator does (pubsubtest.Serve): Pub/Sub takes messages of 10 MB, and pstest's own server
// keeps gRPC's default of 4 MiB, so that a larger message failed to publish with only "context
// deadline exceeded".
func start(port int) (*emulator, error) {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, err
	}
	srv := pstest.NewServer()
	return &emulator{Addr: l.Addr().String(), srv: srv, g: pubsubtest.Serve(l, srv)}, nil
}

// Close stops serving and the fake.
func (e *emulator) Close() {
	e.g.Stop()
	e.srv.Close()
}
