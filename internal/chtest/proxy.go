package chtest

import (
	"bytes"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy is a TCP proxy in front of the ClickHouse server's native port, which a test can take
// down (every open connection is reset and new ones are refused) and bring up again, to make the
// server unreachable for the pipeline without stopping the server other tests share.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
	// cuts, when above 0, is how many more connections to reset in the middle of an upload.
	cuts     int
	cutAfter int64
	// marker, when set, resets every connection whose upload holds it (CutUploadsHolding).
	marker []byte

	uploaded atomic.Int64 // bytes sent to the server
}

// Uploaded returns the bytes the proxy has sent to the server, over every connection.
func (p *Proxy) Uploaded() int64 { return p.uploaded.Load() }

// CutUploads resets the next n connections that upload more than after bytes to the server, in
// the middle of that upload: an INSERT cut this way is never committed by the server.
func (p *Proxy) CutUploads(n int, after int64) {
	p.mu.Lock()
	p.cuts, p.cutAfter = n, after
	p.mu.Unlock()
}

// CutUploadsHolding resets, from now on, every connection whose upload holds marker, before the
// bytes that hold it reach the server: an INSERT of rows holding it (sent without compression)
// never commits, while the others pass. nil stops it.
func (p *Proxy) CutUploadsHolding(marker []byte) {
	p.mu.Lock()
	p.marker = marker
	p.mu.Unlock()
}

// Cuts returns how many cuts CutUploads has yet to make.
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// Proxy starts a proxy to the server's native port for the rest of the test.
func (s *Server) Proxy(t testing.TB) *Proxy {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	return NewProxy(t, u.Host)
}

// NewProxy starts a proxy to target (host:port) for the rest of the test: any TCP service, such
// as the Pub/Sub emulator.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.Down() })
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the clickhouse:// URL of the proxy.
func (p *Proxy) URL() string { return "clickhouse://" + p.ln.Addr().String() }

// Down resets every open connection and refuses new ones until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // RST, as a crashed server would
		}
		c.Close()
		delete(p.conns, c)
	}
}

// Up accepts connections again.
func (p *Proxy) Up() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
			c.Close()
			continue
		}
		p.conns[c] = true
		p.mu.Unlock()
		go p.pipe(c)
	}
}

// upload copies client to server, and resets both when a cut is due.
func (p *Proxy) upload(server, client net.Conn) {
	buf := make([]byte, 32<<10)
	var sent int64
	var tail []byte // the end of the last read, for a marker across two reads
	for {
		n, err := client.Read(buf)
		if n > 0 {
			p.mu.Lock()
			cut := p.cuts > 0 && sent+int64(n) > p.cutAfter
			if cut {
				p.cuts--
			}
			marked := len(p.marker) > 0 && bytes.Contains(append(tail, buf[:n]...), p.marker)
			if len(p.marker) > 0 {
				tail = append(tail[:0], buf[max(0, n-len(p.marker)):n]...)
			}
			p.mu.Unlock()
			if cut || marked {
				half := max(0, int(p.cutAfter-sent))
				if marked {
					half = 0
				}
				server.Write(buf[:half])
				for _, c := range []net.Conn{client, server} {
					if tc, ok := c.(*net.TCPConn); ok {
						tc.SetLinger(0)
					}
					c.Close()
				}
				return
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
			sent += int64(n)
			p.uploaded.Add(int64(n))
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) pipe(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	p.conns[server] = true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.upload(server, client); done <- struct{}{} }()
	go func() { io.Copy(client, server); done <- struct{}{} }()
	<-done
	client.Close()
	server.Close()
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}
