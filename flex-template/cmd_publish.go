package main

// publish: a file of JSON lines to a Pub/Sub topic, with attributes from the command line or a
// per-line envelope; optionally creating the topic and a subscription (for the emulator).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
)

const publishDescription = "Publishes each line of FILE (JSON lines; - is standard input; lines of only spaces, tabs and carriage returns skipped) as one message " +
	"to --topic, its bytes exactly as on the line; a FILE of no message is a usage error. With --create and no FILE it only creates the topic (and --subscription), " +
	"e.g. a dead-letter topic on the emulator. The client honours PUBSUB_EMULATOR_HOST. Progress (messages, messages per " +
	"second) goes to standard error, updated in place on a terminal, else a line every 10 s; the last line gives the count and " +
	"the rate.\n" +
	"With --envelope each line is instead {\"data\": D, \"attributes\": {\"k\": \"v\", ...}, \"orderingKey\": \"key\"} " +
	"(only data is required): when D is a JSON string, the message's bytes are the string's text (unescaped); any other JSON " +
	"value is published as its exact text. --attribute adds to every message, an envelope's attributes win.\n" +
	"Exit status: 0 when every message is published, 1 when a publish failed (the count says how many went out), 2 on a usage error."

// runPublish runs publish.
func runPublish(ctx context.Context, cio *cmdIO, args []string) int {
	fs := newCommandFlags(cio, "publish", "--topic=projects/P/topics/T [flags] FILE", publishDescription)
	topic := fs.String("topic", "", "Pub/Sub `topic` to publish to, projects/<project>/topics/<name>. Required.")
	create := fs.Bool("create", false, "create the topic first (and --subscription, when given); an existing one is kept. For the emulator.")
	subscription := fs.String("subscription", "", "with --create: a `subscription` to create on the topic, projects/<project>/subscriptions/<name>")
	envelope := fs.Bool("envelope", false, `read each line as {"data": ..., "attributes": {...}, "orderingKey": "..."}`)
	var attrs attributeFlag
	fs.Var(&attrs, "attribute", "an attribute `key=value` for every message; repeat the flag for several")
	files, err := parseCommandArgs(cio, fs, args)
	switch {
	case errors.Is(err, errHelp):
		return exitOK
	case err != nil:
		return exitUsage
	}
	var problems []error
	if _, err := psclient.ParseTopic(*topic); err != nil {
		problems = append(problems, fmt.Errorf("--topic %q: %w", *topic, err))
	}
	if *subscription != "" {
		if _, err := psclient.ParseSubscription(*subscription); err != nil {
			problems = append(problems, fmt.Errorf("--subscription %q: %w", *subscription, err))
		} else if !*create {
			problems = append(problems, fmt.Errorf("--subscription %q: is only for --create (the subscription to create on the topic)", *subscription))
		}
	}
	// --create without a FILE only creates: the dead-letter topic of a local run, and a
	// subscription to read it, need no message published.
	createOnly := *create && len(files) == 0
	if len(files) != 1 && !createOnly {
		problems = append(problems, fmt.Errorf("give one FILE of JSON lines (or - for standard input), not %d (with --create and no FILE, publish only creates the topic and --subscription)", len(files)))
	}
	if len(problems) > 0 {
		return usageError(cio, "publish", errors.Join(problems...))
	}
	if createOnly {
		if *envelope || len(attrs) > 0 {
			return usageError(cio, "publish", errors.New("--envelope and --attribute are for the messages of a FILE: give one, or leave them out to create only"))
		}
		w, err := openTopicWriter(ctx, *topic)
		if err != nil {
			return failure(cio, "publish", err)
		}
		defer w.close()
		if err := w.create(ctx, cio, *subscription); err != nil {
			return failure(cio, "publish", err)
		}
		w.warnUnsubscribed(ctx, cio, "what is published to it before a subscription is made")
		fmt.Fprintln(cio.Err, "no FILE: nothing published")
		return exitOK
	}
	lines, err := readInputs(cio.In, files, false, inputNotes(cio, "publish"))
	if err != nil {
		return usageError(cio, "publish", err)
	}
	msgs := make([]*pubsub.Message, len(lines))
	for i, l := range lines {
		m := &pubsub.Message{Data: l.Data, Attributes: map[string]string{}}
		if *envelope {
			if m, err = parseEnvelope(l.Data); err != nil {
				return usageError(cio, "publish", fmt.Errorf("%s: %w", l.Where, err))
			}
		}
		for k, v := range attrs {
			if _, ok := m.Attributes[k]; !ok {
				m.Attributes[k] = v
			}
		}
		if len(m.Data) == 0 && len(m.Attributes) == 0 {
			return usageError(cio, "publish", fmt.Errorf("%s: the message has neither data nor attributes, which Pub/Sub refuses (a message needs one or the other); nothing was published", l.Where))
		}
		if err := psclient.CheckMessage(m, *topic); err != nil {
			return usageError(cio, "publish", fmt.Errorf("%s: %w; nothing was published", l.Where, err))
		}
		msgs[i] = m
	}

	w, err := openTopicWriter(ctx, *topic)
	if err != nil {
		return failure(cio, "publish", err)
	}
	defer w.close()
	if *create {
		if err := w.create(ctx, cio, *subscription); err != nil {
			return failure(cio, "publish", err)
		}
	}
	w.warnUnsubscribed(ctx, cio, "these messages")
	p := newProgress(cio, "published", w.topic)
	n, err := w.publish(ctx, p, msgs)
	p.done(n, err)
	if err != nil {
		if status.Code(err) == codes.NotFound && !*create {
			err = fmt.Errorf("the topic %s does not exist: create it (--create does, for the emulator) or check its name: %w", *topic, err)
		}
		return failure(cio, "publish", fmt.Errorf("%w (%d of %d messages published)", err, n, len(msgs)))
	}
	return exitOK
}

// attributeFlag is the repeated --attribute=key=value.
type attributeFlag map[string]string

// String is "" for no attribute, so that --help gives the flag no default.
func (a attributeFlag) String() string {
	if len(a) == 0 {
		return ""
	}
	return fmt.Sprint(map[string]string(a))
}

func (a *attributeFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("%q is not key=value", s)
	}
	if err := checkAttributeKey(k); err != nil {
		return fmt.Errorf("%q: %w", s, err)
	}
	if *a == nil {
		*a = attributeFlag{}
	}
	if old, dup := (*a)[k]; dup {
		return fmt.Errorf("the attribute %q is given twice (%q and %q): give it once", k, old, v)
	}
	(*a)[k] = v
	return nil
}

// errEmptyAttributeKey is the rule of attribute keys, for --attribute and an envelope's
// attributes alike.
var errEmptyAttributeKey = errors.New("the attribute key is empty; Pub/Sub requires a non-empty attribute key")

// checkAttributeKey checks an attribute's key, from --attribute or an envelope.
func checkAttributeKey(k string) error {
	if k == "" {
		return errEmptyAttributeKey
	}
	return nil
}

// envelopeForm is the form of an --envelope line, for errors.
const envelopeForm = `{"data": ..., "attributes": {"k": "v"}, "orderingKey": "..."}`

// hasLoneSurrogate reports whether b holds a \u escape of a UTF-16 surrogate that is not half of
// a pair, which Go's JSON decoder would silently turn into U+FFFD. (Outside JSON strings a
// backslash is invalid anyway.)
func hasLoneSurrogate(b []byte) bool {
	escape := func(i int) (rune, bool) { // the \uXXXX at b[i:]
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		r, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 32)
		return rune(r), err == nil
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		r, ok := escape(i)
		if !ok {
			i++ // another escape, such as \\ or \"
			continue
		}
		i += 5
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if low, ok := escape(i + 1); ok && low >= 0xDC00 && low < 0xE000 {
				i += 6
				continue
			}
			return true
		case r >= 0xDC00 && r < 0xE000:
			return true
		}
	}
	return false
}

// parseEnvelope reads one line of --envelope: {"data": D, "attributes": {...}, "orderingKey": "..."},
// strictly, so that nothing of the line is dropped or changed unseen: the field names exactly as
// written here, each once; attributes a JSON object of strings, each key once; no text after the
// object; valid UTF-8, and no lone UTF-16 surrogate in an escape. A string D is published as its
// text, any other JSON value as its exact text.
func parseEnvelope(line []byte) (*pubsub.Message, error) {
	refuse := func(format string, args ...any) (*pubsub.Message, error) {
		return nil, fmt.Errorf("not an envelope "+envelopeForm+": "+format, args...)
	}
	if !utf8.Valid(line) {
		return refuse("the line is not valid UTF-8")
	}
	if hasLoneSurrogate(line) {
		return refuse("a \\u escape is half of a UTF-16 surrogate pair, which no text can hold")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return refuse("the line is not a JSON object")
	}
	var data json.RawMessage
	m := &pubsub.Message{Attributes: map[string]string{}}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return refuse("%v", err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return refuse("the field %q is given twice", key)
		}
		seen[key] = true
		switch key {
		case "data":
			if err := dec.Decode(&data); err != nil {
				return refuse(`"data": %v`, err)
			}
		case "orderingKey":
			if err := dec.Decode(&m.OrderingKey); err != nil {
				return refuse(`"orderingKey" must be a string: %v`, err)
			}
		case "attributes":
			if err := decodeAttributes(dec, m.Attributes); err != nil {
				return refuse(`"attributes": %v`, err)
			}
		default:
			return refuse("unknown field %q (the fields are data, attributes and orderingKey, as written here)", key)
		}
	}
	if _, err := dec.Token(); err != nil {
		return refuse("%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return refuse("text follows the envelope's object")
	}
	switch {
	case len(data) == 0:
		return nil, errors.New(`the envelope has no "data"`)
	case string(data) == "null":
		return nil, errors.New(`the envelope's "data" is null, which is no message: give the message's text as a JSON string, or its JSON value`)
	}
	m.Data = []byte(data)
	if data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf(`"data": %v`, err)
		}
		m.Data = []byte(s)
	}
	return m, nil
}

// parseAttributes reads text, a JSON object of strings (a dead-letter table's attributes
// column), as strictly as an --envelope line's attributes (decodeAttributes): no key twice, no
// key Pub/Sub refuses, every value a string, valid UTF-8, no lone UTF-16 surrogate in an escape (which Go's
// decoder would turn into U+FFFD), nothing after the object; so that replay publishes exactly the
// attributes the row holds, or refuses it.
func parseAttributes(text string) (map[string]string, error) {
	if !utf8.ValidString(text) {
		// Go's decoder would turn each such byte into U+FFFD.
		return nil, errors.New("the text is not valid UTF-8, which Pub/Sub requires of attributes")
	}
	if hasLoneSurrogate([]byte(text)) {
		return nil, errors.New("a \\u escape is half of a UTF-16 surrogate pair, which no text can hold")
	}
	dec := json.NewDecoder(strings.NewReader(text))
	attrs := map[string]string{}
	if err := decodeAttributes(dec, attrs); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("text after the object")
	}
	return attrs, nil
}

// decodeAttributes reads a JSON object of strings from dec into attrs, refusing a key given twice.
func decodeAttributes(dec *json.Decoder, attrs map[string]string) error {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("must be an object of strings")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string)
		// Decoded as it is written: JSON's null would decode into "" without an error.
		var raw json.RawMessage
		var v string
		if err := dec.Decode(&raw); err != nil || len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &v) != nil {
			return fmt.Errorf("the value of %q must be a string", key)
		}
		if err := checkAttributeKey(key); err != nil {
			return fmt.Errorf("%q: %w", key+"="+v, err)
		}
		if _, dup := attrs[key]; dup {
			return fmt.Errorf("the attribute %q is given twice", key)
		}
		attrs[key] = v
	}
	_, err := dec.Token()
	return err
}

// topicWriter publishes to one topic.
type topicWriter struct {
	topic     string
	client    *pubsub.Client
	publisher *pubsub.Publisher
}

// openTopicWriter creates the client of topic's project (it honours PUBSUB_EMULATOR_HOST).
func openTopicWriter(ctx context.Context, topic string) (*topicWriter, error) {
	name, err := psclient.ParseTopic(topic)
	if err != nil {
		return nil, fmt.Errorf("--topic %q: %w", topic, err)
	}
	client, err := psclient.NewCheckedClient(ctx, name.Project)
	if err != nil {
		return nil, fmt.Errorf("--topic %s: creating the Pub/Sub client: %w", topic, err)
	}
	p := client.Publisher(topic)
	p.EnableMessageOrdering = true // for the envelopes' ordering keys; messages without one are not held back
	return &topicWriter{topic: topic, client: client, publisher: p}, nil
}

func (w *topicWriter) close() {
	w.publisher.Stop()
	w.client.Close()
}

// warnUnsubscribed says on standard error that the topic keeps nothing published to it (no
// subscription, no retention: psclient.TopicKeeps), so that what names will be lost.
func (w *topicWriter) warnUnsubscribed(ctx context.Context, cio *cmdIO, what string) {
	name, _ := psclient.ParseTopic(w.topic)
	if subscribed, retained, known := psclient.TopicKeeps(ctx, name); known && !subscribed && !retained {
		fmt.Fprintf(cio.Err, "pubsub-to-clickhouse publish: warning: %v\n", psclient.NoSubscriptionError(name, what))
	}
}

// create creates the topic and, when subscription is not empty, a subscription on it; one that
// exists already is kept.
func (w *topicWriter) create(ctx context.Context, cio *cmdIO, subscription string) error {
	_, err := w.client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: w.topic})
	switch status.Code(err) {
	case codes.OK:
		fmt.Fprintf(cio.Err, "created topic %s\n", w.topic)
	case codes.AlreadyExists:
		fmt.Fprintf(cio.Err, "topic %s exists\n", w.topic)
	default:
		return fmt.Errorf("creating topic %s: %w", w.topic, err)
	}
	if subscription == "" {
		return nil
	}
	_, err = w.client.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: subscription, Topic: w.topic, AckDeadlineSeconds: 60})
	switch status.Code(err) {
	case codes.OK:
		fmt.Fprintf(cio.Err, "created subscription %s on %s\n", subscription, w.topic)
	case codes.AlreadyExists:
		// One on another topic would not see what is published here: nothing would reach a
		// pipeline reading it. (Reading it needs pubsub.subscriptions.get; without that, say so.)
		s, err := w.client.SubscriptionAdminClient.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: subscription})
		switch {
		case err != nil:
			fmt.Fprintf(cio.Err, "subscription %s exists (its topic could not be read: %v)\n", subscription, err)
		case s.GetTopic() != w.topic:
			return fmt.Errorf("--subscription %s exists on topic %s, not on %s: it would not receive the messages; give a subscription of %s, or a new name", subscription, s.GetTopic(), w.topic, w.topic)
		default:
			fmt.Fprintf(cio.Err, "subscription %s exists\n", subscription)
		}
	default:
		return fmt.Errorf("creating subscription %s: %w", subscription, err)
	}
	return nil
}

// publish publishes msgs and waits for each; it reports progress to p (counting from p's count
// so far) and returns how many were published, and the first error. After the first failure (the
// client retries a Publish for up to 60 s) it publishes no more of msgs, and waits only for those
// under way: a topic that does not answer costs a minute, not a minute per thousand messages. A
// message counted as failed may have reached Pub/Sub too (an answer lost), as the error says.
// Once ctx is cancelled (an interrupt) it publishes no more either, and still waits for the
// outcome of those under way, which the client goes on publishing: the count is of the
// messages that reached the topic, not of those answered before the interrupt.
func (w *topicWriter) publish(ctx context.Context, p *progress, msgs []*pubsub.Message) (int, error) {
	results := make(chan *pubsub.PublishResult, 1000)
	stop := make(chan struct{})
	go func() {
		defer close(results)
		for _, m := range msgs {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			results <- w.publisher.Publish(ctx, m)
		}
	}()
	n, failed := 0, 0
	var firstErr error
	for r := range results {
		if _, err := r.Get(context.WithoutCancel(ctx)); err != nil {
			if failed++; firstErr == nil {
				firstErr = err
				close(stop)
			}
			continue
		}
		n++
		p.update(p.base + n)
	}
	p.base += n
	if firstErr == nil && n < len(msgs) { // cancelled before every message was tried
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return n, fmt.Errorf("publishing to %s: %w (%d under way failed, and the %d after them were not tried; a failed one may have reached Pub/Sub all the same, its answer lost)",
			w.topic, firstErr, failed, len(msgs)-n-failed)
	}
	return n, nil
}

// progress reports a count on standard error: on a terminal one line updated in place at most
// every 200 ms, else a line every 10 s.
type progress struct {
	cio        *cmdIO
	verb, dest string
	start      time.Time
	last       time.Time
	every      time.Duration
	base       int  // the messages of earlier calls of topicWriter.publish
	shown      bool // a progress line is on the terminal, not ended by a newline
}

func newProgress(cio *cmdIO, verb, dest string) *progress {
	p := &progress{cio: cio, verb: verb, dest: dest, start: time.Now(), every: 10 * time.Second}
	p.last = p.start
	if cio.tty {
		p.every = 200 * time.Millisecond
	}
	return p
}

func (p *progress) update(n int) {
	now := time.Now()
	if now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	line := fmt.Sprintf("%s %d messages to %s, %.0f msgs/s", p.verb, n, p.dest, psclient.Rate(int64(n), now.Sub(p.start)))
	if p.cio.tty {
		fmt.Fprintf(p.cio.Err, "\r%s\x1b[K", line)
		p.shown = true
	} else {
		fmt.Fprintln(p.cio.Err, line)
	}
}

// clear clears the progress line on a terminal, if one is shown, so that what is written next
// (a warning, an error) starts a line of its own; the next update writes the line again.
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.cio.Err, "\r\x1b[K")
		p.shown = false
	}
}

// done writes the final count and rate when the publishing ended without err; after a failure
// it only clears the progress line, since the error says how many messages were published (a
// line "published 0 messages" above the error read as a success).
func (p *progress) done(n int, err error) {
	took := time.Since(p.start)
	if p.cio.tty {
		fmt.Fprint(p.cio.Err, "\r\x1b[K")
		p.shown = false
	}
	if err != nil {
		return
	}
	fmt.Fprintf(p.cio.Err, "%s %s to %s in %s (%.0f msgs/s)\n", p.verb, count(n, "message"), p.dest, took.Round(time.Millisecond), psclient.Rate(int64(n), took))
}
