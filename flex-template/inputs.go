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
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
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
//   - a directory holds one message per file: each regular file directly in it, or symbolic link
//     to one, by name, whole (files whose name starts with "." are skipped, without a word);
//     what else it holds (a subdirectory, a link to one, a broken link, a named pipe) is skipped
//     with a note naming it and why;
//   - any other file is read as JSON lines, or whole when perFile is true.
//
// JSON lines: each line is one message, its bytes exactly, without the line's "\n" or "\r\n";
// lines that hold only white space are skipped.
//
// Inputs that hold no message at all are an error naming them: a command would otherwise report
// success on nothing (an empty directory, an empty file).
func readInputs(in io.Reader, names []string, perFile bool, note func(string)) ([]inputMessage, error) {
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
			msgs, err := readDir(name, note)
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
	if len(out) == 0 {
		return nil, noMessage(names)
	}
	return out, nil
}

// noMessage is the error of inputs, names, that hold no message.
func noMessage(names []string) error {
	quoted := make([]string, len(names))
	for i, n := range names {
		if n == "-" {
			quoted[i] = "- (standard input)"
		} else {
			quoted[i] = strconv.Quote(n)
		}
	}
	return fmt.Errorf("no message in %s: a file of JSON lines holds one on each line that is not only white space, a directory "+
		"one in each regular file directly in it (or symbolic link to one; names starting with \".\" skipped); nothing was done", strings.Join(quoted, ", "))
}

// readDir reads each regular file of dir, or symbolic link to one, as one message, by name. note
// is told of each other entry skipped, but those whose names start with ".".
func readDir(dir string, note func(string)) ([]inputMessage, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var out []inputMessage
	for _, e := range entries {
		if e.Name()[0] == '.' {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if why := notMessageFile(path, e.Type()); why != "" {
			note(fmt.Sprintf("%s: skipped: %s", path, why))
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, inputMessage{Where: path, Data: b})
	}
	return out, nil
}

// notMessageFile says why the entry path of a directory, of type mode (os.DirEntry.Type), is no
// message file: "" for a regular file or a symbolic link that leads to one.
func notMessageFile(path string, mode fs.FileMode) string {
	const subdirs = "a directory holds one message per regular file directly in it, and its subdirectories are not read"
	if mode.IsRegular() {
		return ""
	}
	if mode&fs.ModeSymlink == 0 {
		if mode.IsDir() {
			return "a directory (" + subdirs + ")"
		}
		return "not a regular file (" + fileKind(mode) + ")"
	}
	target, _ := os.Readlink(path)
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("a broken symbolic link (to %q, which does not exist)", target)
	case err != nil:
		return fmt.Sprintf("a symbolic link (to %q) that cannot be followed: %v", target, err)
	case info.IsDir():
		return fmt.Sprintf("a symbolic link to a directory (%q; %s)", target, subdirs)
	case !info.Mode().IsRegular():
		return fmt.Sprintf("a symbolic link to %q, not a regular file (%s)", target, fileKind(info.Mode()))
	}
	return ""
}

// fileKind names the kind of a file that is neither regular nor a directory.
func fileKind(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeDevice != 0:
		return "a device"
	}
	return "of mode " + mode.Type().String()
}

// inputNotes returns the note func of readInputs for command name: each note a line on
// standard error.
func inputNotes(cio *cmdIO, name string) func(string) {
	return func(s string) { fmt.Fprintf(cio.Err, "pubsub-to-clickhouse %s: %s\n", name, flow.OneLine(s)) }
}

// pubsubRefuses returns why Pub/Sub would refuse to publish m (over 10 MB, too many attributes,
// an attribute or ordering key over its limit: what publish refuses), nil when it takes it. Such
// a message never reaches the pipeline: check says so of it, and infer leaves it out of its
// sample.
func pubsubRefuses(m flow.Message) error {
	return psclient.CheckMessage(&pubsub.Message{Data: m.Data, Attributes: m.Attributes, OrderingKey: m.OrderingKey}, "")
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
	n := 1 // the line's number; after the loop, the number of the line that ended it
	for ; sc.Scan(); n++ {
		line := sc.Bytes()
		if jsonBlank(line) {
			continue
		}
		out = append(out, inputMessage{Where: fmt.Sprintf("%s:%d", name, n), Data: bytes.Clone(line)})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: the line is longer than %d bytes (Pub/Sub takes messages of up to 10 MB)", name, n, maxLineBytes)
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
	case status.Code(err) == codes.NotFound:
		return nil, psclient.NotFound(req.Subscription, err)
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
// taken, a running job does not see them, and their ack deadline is extended (as replay's are),
// or else, past the subscription's deadline, they would come back and a pull of only those would
// end the sample early. A message delivered twice during the sample is kept once. Where is
// "<subscription>#<n>", n from 1, and the message id.
//
// heldBack is "" unless messages of the sample have ordering keys and the subscription has
// message ordering (or does not say, pubsub.subscriptions.get denied): then Pub/Sub delivers no
// later message of a key while an earlier one is unacknowledged
// (https://cloud.google.com/pubsub/docs/ordering), so that the sample holds only the first
// messages of each key, and heldBack says so in a sentence that names the keys.
func peekSubscription(ctx context.Context, subscription string, max int) (_ []inputMessage, heldBack string, _ error) {
	name, err := psclient.ParseSubscription(subscription)
	if err != nil {
		return nil, "", err
	}
	client, err := psclient.NewCheckedClient(ctx, name.Project)
	if err != nil {
		return nil, "", fmt.Errorf("%s: creating the Pub/Sub client: %w", subscription, err)
	}
	defer client.Close()
	subs := client.SubscriptionAdminClient
	// The subscription's ack deadline and message ordering, if the role may read them
	// (pubsub.subscriptions.get).
	gctx, cancel := context.WithTimeout(ctx, peekTimeout)
	sub, subErr := subs.GetSubscription(gctx, &pubsubpb.GetSubscriptionRequest{Subscription: subscription})
	cancel()
	var out []inputMessage
	var keys orderingKeys
	seen := map[string]bool{}
	acker, err := psclient.NewAcker(ctx, subscription, replayAckSettings(sub.GetAckDeadlineSeconds()))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", subscription, err)
	}
	defer func() { // every message pulled is handed back (ModifyAckDeadline 0)
		acker.Release(context.WithoutCancel(ctx))
		acker.Close()
	}()
	for len(out) < max {
		resp, err := pullWithin(ctx, subs, &pubsubpb.PullRequest{Subscription: subscription, MaxMessages: int32(min(max-len(out), 1000))}, peekTimeout)
		if err != nil {
			return nil, "", err
		}
		fresh := 0
		for _, rm := range resp.GetReceivedMessages() {
			acker.Track(rm.GetAckId())
			m := rm.GetMessage()
			if seen[m.GetMessageId()] || len(out) >= max {
				continue
			}
			seen[m.GetMessageId()] = true
			fresh++
			keys.add(m.GetOrderingKey())
			out = append(out, inputMessage{Where: fmt.Sprintf("%s#%d (message %s)", subscription, len(out)+1, m.GetMessageId()), Data: m.GetData()})
		}
		if fresh == 0 {
			break
		}
	}
	return out, orderedHeldBack(keys, subErr == nil, sub.GetEnableMessageOrdering(), "the sample holds only the first messages of each key, "+
		"and a field that only later messages of a key have is not in it"), nil
}

// orderedHeldBack is the sentence of a command that holds the messages it pulled (infer's sample,
// replay's dry run) and so may not have been delivered the later messages of their ordering keys
// (keys): "" when there is none, or when the subscription is known (known) to have no message
// ordering (ordered). what says what that means for the command.
func orderedHeldBack(keys orderingKeys, known, ordered bool, what string) string {
	if len(keys) == 0 || (known && !ordered) {
		return ""
	}
	subscription := "the subscription has message ordering"
	if !known {
		subscription = "if the subscription has message ordering (Pub/Sub would not say: pubsub.subscriptions.get denied)"
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	return fmt.Sprintf("messages read have %s (%s): %s, and Pub/Sub delivers no later message of a key while an earlier one is unacknowledged, "+
		"so %s", count(len(keys), "ordering key"), sorted, subscription, what)
}
