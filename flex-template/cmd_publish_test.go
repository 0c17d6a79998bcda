package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestParseEnvelope: an envelope line is published exactly as written, or refused with a
// sentence; nothing of it is dropped or changed unseen.
func TestParseEnvelope(t *testing.T) {
	for _, tc := range []struct {
		line, data, key string
		attrs           map[string]string
	}{
		{`{"data": {"id":1,  "x": 1.50}}`, `{"id":1,  "x": 1.50}`, "", map[string]string{}},
		{`{"data": "text \"q\" \ud83d\ude00", "attributes": {"a": "1"}, "orderingKey": "k"}`, "text \"q\" 😀", "k", map[string]string{"a": "1"}},
		{`{"attributes": {}, "data": [1, 2]}  `, `[1, 2]`, "", map[string]string{}},
		{`{"data": "a\\ud800"}`, `a\ud800`, "", map[string]string{}}, // an escaped backslash, not an escape
	} {
		m, err := parseEnvelope([]byte(tc.line))
		if err != nil {
			t.Errorf("%s: %v", tc.line, err)
			continue
		}
		if string(m.Data) != tc.data || m.OrderingKey != tc.key || !cmp.Equal(m.Attributes, tc.attrs) {
			t.Errorf("%s: data %q key %q attributes %v; want %q %q %v", tc.line, m.Data, m.OrderingKey, m.Attributes, tc.data, tc.key, tc.attrs)
		}
	}
	for _, tc := range []struct{ line, want string }{
		{`{"data": {"id":202}, "Data": 1}`, `unknown field "Data"`},
		{`{"data": {"id":203}, "data": {"id":204}}`, `the field "data" is given twice`},
		{`{"data": {"id":207}} trailing`, "text follows the envelope's object"},
		{`{"data": {"id":208}}{"data": 1}`, "text follows the envelope's object"},
		{`{"data": "\ud800"}`, "half of a UTF-16 surrogate pair"},
		{`{"data": "\udc00x"}`, "half of a UTF-16 surrogate pair"},
		{"{\"data\": \"\xff\"}", "not valid UTF-8"},
		{`{"data": 1, "attributes": {"k": "1", "k": "2"}}`, `the attribute "k" is given twice`},
		{`{"data": 1, "attributes": {"k": 2}}`, `the value of "k" must be a string`},
		{`{"data": 1, "attributes": {"k": null}}`, `the value of "k" must be a string`},
		{`{"data": 1, "orderingKey": 5}`, `"orderingKey" must be a string`},
		{`{"attributes": {}}`, `has no "data"`},
		{`{"data": null, "attributes": {"k": "v"}}`, `the envelope's "data" is null, which is no message`},
		{`[1]`, "not a JSON object"},
	} {
		_, err := parseEnvelope([]byte(tc.line))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.line, err, tc.want)
		}
	}
	var a attributeFlag
	if err := a.Set("k=1"); err != nil {
		t.Fatal(err)
	}
	if err := a.Set("k=2"); err == nil || !strings.Contains(err.Error(), `"k" is given twice`) {
		t.Errorf("--attribute=k=1 --attribute=k=2: %v, want a refusal", err)
	}
}

// TestEmptyAttributeKey: an empty attribute key, which Pub/Sub refuses, is refused by one rule
// with one sentence, from --attribute and from an envelope alike; a key "=" is not empty.
func TestEmptyAttributeKey(t *testing.T) {
	const rule = `"=v": the attribute key is empty; Pub/Sub requires a non-empty attribute key`
	var a attributeFlag
	if err := a.Set("=v"); err == nil || err.Error() != rule {
		t.Errorf("--attribute==v: error %v, want %q", err, rule)
	}
	if err := a.Set("v"); err == nil || err.Error() != `"v" is not key=value` {
		t.Errorf("--attribute=v: error %v", err)
	}
	for _, line := range []string{`{"data": 1, "attributes": {"": "v"}}`, `{"attributes": {"a": "1", "": "v"}, "data": {"id": 1}}`} {
		_, err := parseEnvelope([]byte(line))
		if want := `not an envelope ` + envelopeForm + `: "attributes": ` + rule; err == nil || err.Error() != want {
			t.Errorf("%s: error %v,\nwant %s", line, err, want)
		}
	}
	m, err := parseEnvelope([]byte(`{"data": 1, "attributes": {"=": "v", " ": "w"}}`))
	if err != nil || !cmp.Equal(m.Attributes, map[string]string{"=": "v", " ": "w"}) {
		t.Errorf("keys \"=\" and \" \": %v, %v", m, err)
	}
}

// TestPublishStopsAtTheFirstFailure: once a Publish fails (here at once; a topic that does not
// answer fails after the client's 60 s), publish tries no more of the messages beyond those
// under way, and its error says how many failed and how many were not tried.
func TestPublishStopsAtTheFirstFailure(t *testing.T) {
	var mu sync.Mutex
	tried := 0
	srv := pstest.NewServer(pstest.ServerReactorOption{FuncName: "Publish", Reactor: reactorFunc(func(req any) (bool, any, error) {
		mu.Lock()
		defer mu.Unlock()
		tried += len(req.(*pubsubpb.PublishRequest).Messages)
		return true, nil, status.Error(codes.PermissionDenied, "injected")
	})})
	defer srv.Close()
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	ctx := context.Background()
	w, err := openTopicWriter(ctx, "projects/test-project/topics/events")
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	const total = 5000
	msgs := make([]*pubsub.Message, total)
	for i := range msgs {
		msgs[i] = &pubsub.Message{Data: fmt.Appendf(nil, "m%d", i)}
	}
	var stderr bytes.Buffer
	n, err := w.publish(ctx, newProgress(newCmdIO(nil, io.Discard, &stderr), "published", w.topic), msgs)
	mu.Lock()
	defer mu.Unlock()
	if n != 0 || err == nil || !strings.Contains(err.Error(), "were not tried") {
		t.Fatalf("publish = %d, %v; want 0 and an error that says how many were not tried", n, err)
	}
	if tried >= total {
		t.Errorf("Pub/Sub was asked to publish %d of the %d messages after the first failure, want fewer", tried, total)
	}
	t.Logf("%d tried: %v", tried, err)
}

// reactorFunc is a pstest.Reactor of a func.
type reactorFunc func(req any) (bool, any, error)

func (f reactorFunc) React(req any) (bool, any, error) { return f(req) }

// TestPublishCreateOnly: publish --create without a FILE creates the topic and the subscription
// (a dead-letter topic for a local run, which needs no message) and publishes nothing; what is
// published to the topic afterwards reaches the subscription. Without --create, no FILE is still a
// usage error.
func TestPublishCreateOnly(t *testing.T) {
	srv := pstest.NewServer()
	defer srv.Close()
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	const topic, sub = "projects/test-project/topics/dead-letters", "projects/test-project/subscriptions/dead-letters-sub"
	out, errOut, code := runCmd(runPublish, "", "--topic="+topic, "--create", "--subscription="+sub)
	if code != exitOK || out != "" || errOut != "created topic "+topic+"\ncreated subscription "+sub+" on "+topic+"\nno FILE: nothing published\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("%d messages published, want none", n)
	}
	// The topic and the subscription are there: a message published to the one is pulled from the other.
	if _, errOut, code := runCmd(runPublish, `{"id":1}`+"\n", "--topic="+topic, "-"); code != exitOK {
		t.Fatalf("publish to the created topic: exit %d:\n%s", code, errOut)
	}
	ctx := context.Background()
	client, err := pubsub.NewClient(ctx, "test-project")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	res, err := client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: sub, MaxMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.GetReceivedMessages(); len(got) != 1 || string(got[0].GetMessage().GetData()) != `{"id":1}` {
		t.Errorf("pulled %v from %s, want the one message {\"id\":1}", got, sub)
	}
	// Again: both are kept.
	if _, errOut, code := runCmd(runPublish, "", "--topic="+topic, "--create", "--subscription="+sub); code != exitOK ||
		!strings.Contains(errOut, "topic "+topic+" exists\nsubscription "+sub+" exists\n") {
		t.Errorf("second --create: exit %d:\n%s", code, errOut)
	}
	for _, args := range [][]string{{"--topic=" + topic}, {"--topic=" + topic, "--create", "--attribute=k=v"}} {
		if _, errOut, code := runCmd(runPublish, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2:\n%s", args, code, errOut)
		}
	}
}

// On a terminal the progress line is rewritten in place; a warning or an error written after it
// starts a line of its own (progress.clear), and a run that failed ends without a summary of a
// success (progress.done), whose error says the count.
func TestProgressOnTerminal(t *testing.T) {
	var errOut bytes.Buffer
	cio := newCmdIO(nil, io.Discard, &errOut)
	cio.tty = true
	p := newProgress(cio, "published", "projects/p/topics/t")
	p.every = 0
	p.update(5)
	p.clear()
	fmt.Fprintln(cio.Err, "a warning")
	p.clear() // nothing shown: nothing written
	p.update(7)
	p.done(7, fmt.Errorf("failed"))
	got := strings.NewReplacer("\r", `\r`, "\x1b[K", `\e[K`).Replace(errOut.String())
	lines := strings.SplitAfter(got, "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `\rpublished 5 messages to projects/p/topics/t, `) ||
		!strings.HasSuffix(lines[0], `\e[K\r\e[Ka warning`+"\n") ||
		!strings.HasPrefix(lines[1], `\rpublished 7 messages`) || !strings.HasSuffix(lines[1], `\e[K\r\e[K`) {
		t.Errorf("terminal output %q: want the progress line, cleared before the warning, then again, cleared at the end without a summary", got)
	}
	errOut.Reset()
	p.update(9)
	p.done(9, nil)
	if got := errOut.String(); !strings.Contains(got, "\r\x1b[Kpublished 9 messages to projects/p/topics/t in ") {
		t.Errorf("a run that ended well: %q, want the progress line cleared and the summary", got)
	}
}
