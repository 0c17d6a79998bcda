package chclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// withIdleTimeout has o's connections (both protocols) dial through dialIdle, so that
// o.ReadTimeout also bounds a write that makes no progress and, over HTTP, a read of an answer
// that stops. clickhouse-go v2.51.0 sets only read deadlines from ReadTimeout (native protocol:
// one for the whole answer; HTTP: http.Transport.ResponseHeaderTimeout, from the end of the
// request's body to its headers), and no write deadline unless the query's context has one: a
// server, or a proxy or load balancer in front of it, that stops reading in the middle of an
// INSERT's data (its receive buffer full, a host gone without a reset) held the INSERT, and the
// bundle with it, without end, its messages waiting unacknowledged.
func withIdleTimeout(o *clickhouse.Options) {
	tlsConf := o.TLS
	if o.Protocol == clickhouse.HTTP {
		tlsConf = nil // http.Transport does TLS itself, over the connection dialIdle gives
	}
	dialTimeout, idle := o.DialTimeout, o.ReadTimeout
	o.DialContext = func(ctx context.Context, addr string) (net.Conn, error) {
		return dialIdle(ctx, addr, dialTimeout, idle, tlsConf)
	}
}

// dialIdle dials addr within dialTimeout (over TLS with tlsConf when it is not nil, handshake
// included, as clickhouse-go's own dial does) and returns the connection as an idleConn with
// idle as its timeout.
func dialIdle(ctx context.Context, addr string, dialTimeout, idle time.Duration, tlsConf *tls.Config) (net.Conn, error) {
	if dialTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, dialTimeout)
		defer cancel()
	}
	raw, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	conn := net.Conn(&idleConn{Conn: raw, idle: idle})
	if tlsConf == nil {
		return conn, nil
	}
	conf := tlsConf.Clone()
	if conf.ServerName == "" {
		// As tls.Dial: the host of the address.
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		conf.ServerName = host
	}
	tc := tls.Client(conn, conf)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return tc, nil
}

// idleConn is a connection on which each Write, and each Read while no read deadline is set,
// must make progress within idle: a Write gets a deadline of idle from each chunk of at most
// idleChunk bytes it hands the kernel (a large block to a slow network is not cut short), a Read
// a deadline of idle from its start or from the last Write since (a request sent on a connection
// whose reader was waiting), unless a deadline set by its owner (SetDeadline,
// SetReadDeadline, SetWriteDeadline: clickhouse-go's, from ReadTimeout or the query's context)
// comes sooner. A Write or Read past its deadline fails with an error for which
// os.IsTimeout / net.Error.Timeout is true ("i/o timeout").
type idleConn struct {
	net.Conn
	idle time.Duration

	mu            sync.Mutex
	read, written time.Time // the deadlines the owner set, zero for none
	reading       bool      // a Read under the deadline of idle is under way
}

// idleChunk is the most bytes a Write hands the kernel under one deadline.
const idleChunk = 1 << 20

func (c *idleConn) Write(p []byte) (int, error) {
	if c.idle <= 0 {
		return c.Conn.Write(p)
	}
	n := 0
	for n < len(p) {
		end := min(len(p), n+idleChunk)
		c.mu.Lock()
		idle := time.Now().Add(c.idle)
		d := sooner(c.written, idle)
		err := c.Conn.SetWriteDeadline(d)
		if err == nil && c.reading && c.read.IsZero() {
			// A request is going out while a Read waits (net/http's connection reader waits
			// for the next answer while the connection is idle in the pool): the answer is
			// due within idle of the request, not of when that Read began.
			err = c.Conn.SetReadDeadline(idle)
		}
		c.mu.Unlock()
		if err != nil {
			return n, err
		}
		k, err := c.Conn.Write(p[n:end])
		n += k
		if err != nil {
			if d.Equal(idle) {
				err = c.explain(err, "took none of the bytes sent to it")
			}
			return n, err
		}
	}
	return n, nil
}

func (c *idleConn) Read(p []byte) (int, error) {
	ours := false
	if c.idle > 0 {
		c.mu.Lock()
		if ours = c.read.IsZero(); ours {
			if err := c.Conn.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
				c.mu.Unlock()
				return 0, err
			}
			c.reading = true
		}
		c.mu.Unlock()
	}
	n, err := c.Conn.Read(p)
	if ours {
		c.mu.Lock()
		c.reading = false
		c.mu.Unlock()
		if err != nil {
			err = c.explain(err, "sent nothing")
		}
	}
	return n, err
}

// explain returns err, an error of the connection under the deadline of idle, with what the
// server did not do and the timeout before it when err is that deadline's (an
// *IdleTimeoutError); else err as it is. A deadline of the connection's owner is the owner's to
// explain (clickhouse-go's handshake, whose dial timeout explain.go names).
func (c *idleConn) explain(err error, what string) error {
	var ne net.Error
	if c.idle <= 0 || !errors.As(err, &ne) || !ne.Timeout() {
		return err
	}
	return &IdleTimeoutError{What: what, Idle: c.idle, Err: err}
}

// IdleTimeoutError is a read or write of a connection to ClickHouse that made no progress within
// the read timeout (the read_timeout option of clickHouseUrl, 5 min by default). It is a
// net.Error whose Timeout is true, so Classify takes it for a transient failure.
type IdleTimeoutError struct {
	What string        // what the server did not do: "took none of the bytes sent to it", "sent nothing"
	Idle time.Duration // the timeout
	Err  error         // the connection's error ("i/o timeout")
}

func (e *IdleTimeoutError) Error() string {
	return fmt.Sprintf("the ClickHouse server %s for %s (the ?read_timeout= option of the %s): %v", e.What, e.Idle, FieldURL, e.Err)
}

func (e *IdleTimeoutError) Unwrap() error   { return e.Err }
func (e *IdleTimeoutError) Timeout() bool   { return true }
func (e *IdleTimeoutError) Temporary() bool { return true }

func (c *idleConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read, c.written = t, t
	return c.Conn.SetDeadline(t)
}

func (c *idleConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read = t
	return c.Conn.SetReadDeadline(t)
}

func (c *idleConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written = t
	return c.Conn.SetWriteDeadline(t)
}

// SyscallConn is the TCP connection's: clickhouse-go checks a pooled connection for a close by
// the server with a read of its socket that does not wait (connCheck), which it skips on a
// connection without it.
func (c *idleConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, syscall.EINVAL
}

// sooner returns the sooner of set (zero: none) and d.
func sooner(set, d time.Time) time.Time {
	if !set.IsZero() && set.Before(d) {
		return set
	}
	return d
}
