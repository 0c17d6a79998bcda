package main

// The input files of check and publish: JSON lines, or one message per file; and a sample
// pulled from a subscription without acknowledging it (peekSubscription).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
)

// inputMessage is one message read from an input file.
type inputMessage struct {
	Where string // "FILE:LINE" for a line, "FILE" for a whole file; "-" is standard input
	Data  []byte
}

// maxLineBytes is the longest line an input file may hold: Pub/Sub's largest message, 10 MB,
// and some room for an envelope's escapes.
const maxLineBytes = 32 << 20

// readInputs reads the messages of the named inputs, in order:
//
//   - "-" is standard input (in), read as JSON lines;
//   - a directory holds one message per file: each regular file directly in it, by name,
//     whole (files whose name starts with "." are skipped);
//   - any other file is read as JSON lines, or whole when perFile is true.
//
// JSON lines: each line is one message, its bytes exactly, without the line's "\n" or "\r\n";
// lines that hold only white space are skipped.
func readInputs(in io.Reader, names []string, perFile bool) ([]inputMessage, error) {
	var out []inputMessage
	for _, name := range names {
		if name == "-" {
			msgs, err := readLines("-", in)
			if err != nil {
				return nil, err
			}
			out = append(out, msgs...)
			continue
		}
		info, err := os.Stat(name)
		if err != nil {
			return nil, err
		}
		if info.IsDir() {
			msgs, err := readDir(name)
			if err != nil {
				return nil, err
			}
			out = append(out, msgs...)
			continue
		}
		if perFile {
			b, err := os.ReadFile(name)
			if err != nil {
				return nil, err
			}
			out = append(out, inputMessage{Where: name, Data: b})
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		msgs, err := readLines(name, f)
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, msgs...)
	}
	return out, nil
}

// readDir reads each regular file of dir as one message, by name.
func readDir(dir string) ([]inputMessage, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var out []inputMessage
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name()[0] == '.' {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, inputMessage{Where: path, Data: b})
	}
	return out, nil
}

// readLines reads r as JSON lines.
func readLines(name string, r io.Reader) ([]inputMessage, error) {
	var out []inputMessage
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	// A line ends at "\n" or "\r\n", and only the one "\r" before its "\n" goes with it:
	// bufio.ScanLines also drops a last line's "\r" without "\n".
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			return i + 1, bytes.TrimSuffix(data[:i], []byte("\r")), nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if jsonBlank(line) {
			continue
		}
		out = append(out, inputMessage{Where: fmt.Sprintf("%s:%d", name, n), Data: bytes.Clone(line)})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s: a line is longer than %d bytes (Pub/Sub takes messages of up to 10 MB)", name, maxLineBytes)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// jsonBlank reports whether line holds nothing but JSON's whitespace: space, tab and carriage
// return (RFC 8259, section 2, with line feed, which ends the line). A line of other space, such
// as a form feed, a vertical tab or U+00A0, is not blank: it is a message, which no column can
// take as JSON, rather than a line left out without a word.
func jsonBlank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// pullWithin pulls once from req's subscription, for at most timeout. A Pull that returns nothing
// within it (Pub/Sub holds a Pull open until messages come) is an empty response, no error; a
// Pull that fails is an error naming the subscription, the failure the client retried until the
// timeout (Unavailable: an unreachable Pub/Sub or emulator) included, which the client itself
// would hand back as the timeout alone.
func pullWithin(ctx context.Context, subs *pubsubapi.SubscriptionAdminClient, req *pubsubpb.PullRequest, timeout time.Duration) (*pubsubpb.PullResponse, error) {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	retry, retried := recordRetries()
	resp, err := subs.Pull(pctx, req, retry)
	timedOut := errors.Is(pctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	switch {
	case err == nil:
		return resp, nil
	case timedOut && retried() == nil:
		return &pubsubpb.PullResponse{}, nil // nothing to pull within timeout
	case timedOut:
		return nil, fmt.Errorf("pulling from %s: no answer within %v: %w", req.Subscription, timeout, retried())
	default:
		return nil, fmt.Errorf("pulling from %s: %w", req.Subscription, err)
	}
}

// recordRetries returns a call option that retries what the client retries by default
// (Unavailable, Unknown, Aborted, Internal; ResourceExhausted too), backing off from 100 ms to
// 2 s, and a func that returns the last failure it retried: a call that ends at its deadline
// while retrying returns the deadline alone, and the failure says why.
func recordRetries() (gax.CallOption, func() error) {
	var mu sync.Mutex
	var last error
	retry := gax.WithRetry(func() gax.Retryer {
		return &recordingRetryer{record: func(err error) { mu.Lock(); last = err; mu.Unlock() }, Retryer: gax.OnCodes(
			[]codes.Code{codes.Unavailable, codes.Unknown, codes.Aborted, codes.Internal, codes.ResourceExhausted},
			gax.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Multiplier: 1.3})}
	})
	return retry, func() error { mu.Lock(); defer mu.Unlock(); return last }
}

// recordingRetryer is a gax.Retryer that records each error it is asked to retry.
type recordingRetryer struct {
	gax.Retryer
	record func(error)
}

func (r *recordingRetryer) Retry(err error) (time.Duration, bool) {
	r.record(err)
	return r.Retryer.Retry(err)
}

// peekTimeout bounds one Pull of peekSubscription: a pull that brings nothing new within it ends
// the sample.
const peekTimeout = 5 * time.Second

// peekSubscription pulls up to max messages from subscription (projects/<p>/subscriptions/<s>)
// and acknowledges none: once read, every message pulled is released with a zero ack deadline,
// so that it is delivered again at once, to whoever reads the subscription. Each counts one
// delivery attempt more (a subscription's dead-letter policy counts them); while the sample is
// taken, a running job does not see them. A message delivered twice during the sample is kept
// once. Where is "<subscription>#<n>", n from 1, and the message id.
func peekSubscription(ctx context.Context, subscription string, max int) ([]inputMessage, error) {
	name, err := psclient.ParseSubscription(subscription)
	if err != nil {
		return nil, err
	}
	client, err := psclient.NewCheckedClient(ctx, name.Project)
	if err != nil {
		return nil, fmt.Errorf("%s: creating the Pub/Sub client: %w", subscription, err)
	}
	defer client.Close()
	subs := client.SubscriptionAdminClient
	var out []inputMessage
	var held []string
	seen := map[string]bool{}
	defer func() { releaseAcks(ctx, subs, subscription, held) }()
	for len(out) < max {
		resp, err := pullWithin(ctx, subs, &pubsubpb.PullRequest{Subscription: subscription, MaxMessages: int32(min(max-len(out), 1000))}, peekTimeout)
		if err != nil {
			return nil, err
		}
		fresh := 0
		for _, rm := range resp.GetReceivedMessages() {
			held = append(held, rm.GetAckId())
			m := rm.GetMessage()
			if seen[m.GetMessageId()] || len(out) >= max {
				continue
			}
			seen[m.GetMessageId()] = true
			fresh++
			out = append(out, inputMessage{Where: fmt.Sprintf("%s#%d (message %s)", subscription, len(out)+1, m.GetMessageId()), Data: m.GetData()})
		}
		if fresh == 0 {
			break
		}
	}
	return out, nil
}
