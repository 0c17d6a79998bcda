package psclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"cloud.google.com/go/pubsub/v2"
	vkit "cloud.google.com/go/pubsub/v2/apiv1"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
)

// reconnectBackoff is the gRPC channel's backoff between attempts to reconnect: gRPC's default
// (backoff.DefaultConfig: 1 s, times 1.6, jitter 0.2) up to 5 s instead of 120 s. With the
// default, after an outage of 15 s the channel stayed in TRANSIENT_FAILURE until its next attempt,
// up to tens of seconds after the server was back, and every call meanwhile failed at once.
var reconnectBackoff = backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second}

// publishRetry is the retry of a Publish call: the codes of the library's default
// (apiv1.defaultTopicAdminCallOptions), with its first wait (100 ms) growing by 2 up to 5 s
// instead of by 4 up to 60 s, which left a Publish begun during an outage of 12 s waiting past
// its 60 s timeout (context deadline exceeded) though Pub/Sub was back after 12.
var publishRetry = gax.WithRetry(func() gax.Retryer {
	return gax.OnCodes([]codes.Code{codes.Aborted, codes.Canceled, codes.Internal, codes.ResourceExhausted, codes.Unknown,
		codes.Unavailable, codes.DeadlineExceeded}, gax.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Multiplier: 2})
})

// CredentialsHint is what an error says when the Pub/Sub client finds no credentials: the two
// ways a run gets them.
const CredentialsHint = "no credentials for Pub/Sub: a local run against the emulator needs PUBSUB_EMULATOR_HOST=host:port " +
	"(what the emulator prints, e.g. export PUBSUB_EMULATOR_HOST=127.0.0.1:8085), and a run against Google Cloud needs " +
	"Application Default Credentials (gcloud auth application-default login, or GOOGLE_APPLICATION_CREDENTIALS naming a service account's key file)"

// NewClient creates the Pub/Sub client of project, as pubsub.NewClient does (it honours
// PUBSUB_EMULATOR_HOST). When it finds no credentials (PUBSUB_EMULATOR_HOST unset and no
// Application Default Credentials), the error starts with CredentialsHint and quotes the
// client's own after it. A worker's stages use it: their calls retry an emulator that is
// briefly away.
//
// The client reconnects and retries a Publish sooner than the library's defaults
// (reconnectBackoff, publishRetry), so that a call begun during an outage of a few seconds
// succeeds soon after it ends, within the Publish's 60 s timeout.
func NewClient(ctx context.Context, project string) (*pubsub.Client, error) {
	c, err := pubsub.NewClientWithConfig(ctx, project, &pubsub.ClientConfig{
		TopicAdminCallOptions: &vkit.TopicAdminCallOptions{Publish: []gax.CallOption{publishRetry}},
	}, option.WithGRPCDialOption(grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnectBackoff, MinConnectTimeout: 20 * time.Second})))
	if err != nil && os.Getenv("PUBSUB_EMULATOR_HOST") == "" && strings.Contains(err.Error(), "could not find default credentials") {
		return nil, fmt.Errorf("%s (%w)", CredentialsHint, err)
	}
	return c, err
}

// NewCheckedClient is NewClient for the launch's checks and the commands, which run once: with
// PUBSUB_EMULATOR_HOST set, it first checks the value's form (host:port, no scheme, which the
// client would take for a host name) and that something listens there, so that a typo or an
// emulator not started is said at once rather than as a call's deadline 30 s later.
func NewCheckedClient(ctx context.Context, project string) (*pubsub.Client, error) {
	if host := os.Getenv("PUBSUB_EMULATOR_HOST"); host != "" {
		if err := checkEmulator(ctx, host); err != nil {
			return nil, err
		}
	}
	return NewClient(ctx, project)
}

// checkEmulator returns what is wrong with PUBSUB_EMULATOR_HOST=host: white space or a control
// character (a quoted value's space, a carriage return from a file saved on Windows), a scheme or
// a path, no port, nothing listening at host:port (connection refused within 2 s), or something
// there that is plainly not a gRPC server (speaksHTTP2).
func checkEmulator(ctx context.Context, host string) error {
	if strings.IndexFunc(host, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		// A space made the calls wait for their deadline (a minute for a publish), then say only
		// "context deadline exceeded".
		return fmt.Errorf("PUBSUB_EMULATOR_HOST=%q: holds white space or a control character: give the emulator's host:port alone (e.g. 127.0.0.1:8085)", host)
	}
	if strings.Contains(host, "/") {
		return fmt.Errorf("PUBSUB_EMULATOR_HOST=%s: give the emulator's host:port alone, without a scheme or path (e.g. 127.0.0.1:8085)", host)
	}
	if _, port, err := net.SplitHostPort(host); err != nil || port == "" {
		return fmt.Errorf("PUBSUB_EMULATOR_HOST=%s: give the emulator's host:port, with the port it prints (e.g. 127.0.0.1:8085)", host)
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", host)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("PUBSUB_EMULATOR_HOST=%s: nothing listens there: start the emulator (make emulator) or give the host:port it prints; "+
				"unset PUBSUB_EMULATOR_HOST to use Pub/Sub itself", host)
		}
		return nil // a slow network or a name that does not resolve yet: the calls say what they meet
	}
	defer conn.Close()
	return speaksHTTP2(conn, host)
}

// http2Preface is what an HTTP/2 client sends first: the connection preface and an empty SETTINGS
// frame. A gRPC server (the emulator) answers with a SETTINGS frame of its own.
var http2Preface = append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 0, 4, 0, 0, 0, 0, 0)

// speaksHTTP2 returns an error when what listens at host is plainly not a gRPC server: it answers
// the HTTP/2 preface with something other than a SETTINGS frame (an HTTP/1 server, ClickHouse's
// HTTP or native port). Without it, every call to such a port waits for its deadline (30 s, a
// minute for a publish) and then says only "context deadline exceeded". A server that says
// nothing within 2 s, or closes the connection without a word (an emulator stopping), passes:
// the calls say what they meet.
func speaksHTTP2(conn net.Conn, host string) error {
	if err := conn.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return nil
	}
	if _, err := conn.Write(http2Preface); err != nil {
		return nil
	}
	head := make([]byte, 9) // a frame's header: length (3 bytes), type, flags, stream id
	n, _ := io.ReadFull(conn, head)
	switch {
	case n >= 4 && head[3] == 0x4: // SETTINGS
		return nil
	case n == 0:
		return nil
	}
	what := fmt.Sprintf("answered %q", head[:n])
	if bytes.HasPrefix(head[:n], []byte("HTTP/")) {
		what = "answered as an HTTP/1 server"
	}
	return fmt.Errorf("PUBSUB_EMULATOR_HOST=%s: something listens there, but it is not a Pub/Sub emulator: it %s where a gRPC server "+
		"answers the HTTP/2 preface; give the host:port that make emulator prints (another service, ClickHouse's port for one, "+
		"has this port), or unset PUBSUB_EMULATOR_HOST to use Pub/Sub itself", host, what)
}
