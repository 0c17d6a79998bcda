package chtest

import (
	"bytes"
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
	// lose, when set, has the answer of the next connection whose upload holds it lost
	// (LoseAnswer).
	lose []byte
	// stall, when set, stalls every connection whose upload holds it (StallUploadsHolding);
	// stalled is closed by Down, which lets them go.
	stall   []byte
	stalled chan struct{}

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

// LoseAnswer has the next connection whose upload holds marker (within one read) send it to
// the server whole, and resets the client's side of it once the server answers: a statement
// the server ran, whose answer the client never gets.
func (p *Proxy) LoseAnswer(marker []byte) {
	p.mu.Lock()
	p.lose = marker
	p.mu.Unlock()
}

// StallUploadsHolding stalls, from now on, every connection whose upload holds marker, before
// the bytes that hold it reach the server: the proxy passes nothing more of it either way, reads
// nothing more from the client and closes neither side, as a server or a network that has gone
// silent without a reset, until Down. The server never gets the rest of the upload, so an INSERT
// of rows holding it (sent without compression) never commits. nil stops it for new uploads.
func (p *Proxy) StallUploadsHolding(marker []byte) {
	p.mu.Lock()
	p.stall = marker
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
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}, stalled: make(chan struct{})}
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
	close(p.stalled)
	p.stalled = make(chan struct{})
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

// upload copies client to server, and resets both when a cut is due; lost is set when the
// answer to what it sent is to be lost (LoseAnswer); stalled is closed when the connection is
// to stall (StallUploadsHolding), and upload then waits for Down.
func (p *Proxy) upload(server, client net.Conn, lost *atomic.Bool, stalled chan struct{}) {
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
			stall := len(p.stall) > 0 && bytes.Contains(append(tail, buf[:n]...), p.stall)
			if keep := max(len(p.marker), len(p.stall)); keep > 0 {
				tail = append(tail[:0], buf[max(0, n-keep):n]...)
			}
			released := p.stalled
			if len(p.lose) > 0 && bytes.Contains(buf[:n], p.lose) {
				p.lose = nil
				lost.Store(true)
			}
			p.mu.Unlock()
			if stall {
				close(stalled)
				<-released
				return
			}
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
	var lost atomic.Bool
	stalled := make(chan struct{})
	p.mu.Lock()
	released := p.stalled
	p.mu.Unlock()
	go func() { p.upload(server, client, &lost, stalled); done <- struct{}{} }()
	go func() { p.download(client, server, &lost, stalled, released); done <- struct{}{} }()
	<-done
	client.Close()
	server.Close()
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// download copies server to client, and resets the client's side instead of passing on the
// server's answer once lost is set; once stalled is closed it passes nothing more and waits
// for released (Down).
func (p *Proxy) download(client, server net.Conn, lost *atomic.Bool, stalled, released chan struct{}) {
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		select {
		case <-stalled:
			<-released
			return
		default:
		}
		if n > 0 && lost.Load() {
			if tc, ok := client.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
			client.Close()
			return
		}
		if n > 0 {
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
