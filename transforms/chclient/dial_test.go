package chclient

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestIdleReadCountsFromTheRequest: a Read that began while the connection was idle (net/http's
// reader of a pooled connection waits so for the next answer) is given idle from the request
// written since, not from when it began: an answer that comes within idle of the request is
// read. Before, the Read's deadline counted from its start, so a connection idle in the pool for
// most of read_timeout failed the first request sent on it with "sent nothing" although the
// server answered in time (the INSERT then retried, after the server may have committed it).
func TestIdleReadCountsFromTheRequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const idle = time.Second
	go func() {
		srv, err := ln.Accept()
		if err != nil {
			return
		}
		defer srv.Close()
		buf := make([]byte, 7)
		if _, err := io.ReadFull(srv, buf); err != nil { // the request
			return
		}
		time.Sleep(idle / 2) // the server's work: within idle of the request
		srv.Write([]byte("answer"))
		io.Copy(io.Discard, srv)
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn := &idleConn{Conn: raw, idle: idle}
	defer conn.Close()
	read := make(chan error, 1)
	go func() { // the reader waiting on the idle connection
		buf := make([]byte, 6)
		_, err := io.ReadFull(conn, buf)
		read <- err
	}()
	time.Sleep(idle * 7 / 10) // idle in the pool for most of idle
	if _, err := conn.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != nil {
		t.Errorf("reading the answer sent %v after the request, the connection idle %v before it: %v; want it read (idle %v)", idle/2, idle*7/10, err, idle)
	}
}
