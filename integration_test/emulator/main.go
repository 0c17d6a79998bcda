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
)

func main() {
	port := flag.Int("port", 8085, "TCP port to listen on (0 picks a free one)")
	flag.Parse()

	srv, err := start(*port)
	if err != nil {
		fmt.Fprintf(os.Stderr, "emulator: %v\n", err)
		os.Exit(1)
	}
	_, p, _ := net.SplitHostPort(srv.Addr)
	fmt.Printf("PUBSUB_EMULATOR_HOST=127.0.0.1:%s\n", p)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	fmt.Fprintf(os.Stderr, "emulator: %v: stopping\n", s)
	srv.Close()
}

// start listens on 127.0.0.1 explicitly (pstest.NewServerWithPort listens on "localhost", which
// may resolve to ::1 only) and turns pstest's panic on a busy port into an error.
func start(port int) (srv *pstest.Server, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("listening on 127.0.0.1:%d: %v", port, r)
		}
	}()
	return pstest.NewServerWithAddress(fmt.Sprintf("127.0.0.1:%d", port)), nil
}
