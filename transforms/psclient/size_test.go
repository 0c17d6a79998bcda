package psclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
)

// TestMaxMessageBytes: the client's publisher takes a message of MaxMessageBytes as MessageSize
// counts it (data, attributes and ordering key), and refuses one a byte larger with
// pubsub.ErrOversizedMessage, for a topic name of any length.
func TestMaxMessageBytes(t *testing.T) {
	e := pubsubtest.Start(t)
	for _, id := range []string{"t", "a-topic-with-a-name-of-" + strings.Repeat("x", 200)} {
		topic := e.Topic(t, id)
		publisher := e.Client.Publisher(topic)
		publisher.EnableMessageOrdering = true
		limit := MaxMessageBytes(topic)
		// message returns a message of MessageSize n, with attributes and an ordering key.
		message := func(n int) *pubsub.Message {
			m := &pubsub.Message{Data: []byte("x"), Attributes: map[string]string{"replay_id": "2026-12-05T07:00:00Z", "pad": ""}, OrderingKey: "key"}
			m.Data = make([]byte, n-MessageSize(m)-3) // 3 bytes short, then the rest in an attribute
			m.Attributes["pad"] = strings.Repeat("p", n-MessageSize(m))
			if got := MessageSize(m); got != n {
				t.Fatalf("a message of %d bytes came to %d", n, got)
			}
			return m
		}
		if m := message(1000); MessageSize(m) <= len(m.Data)+len("replay_id2026-12-05T07:00:00Zpad")+len(m.Attributes["pad"])+len("key") {
			t.Errorf("MessageSize counts no framing")
		}
		ctx := context.Background()
		if _, err := publisher.Publish(ctx, message(limit)).Get(ctx); err != nil {
			t.Errorf("topic %s: a message of MaxMessageBytes (%d): %v", id, limit, err)
		}
		if _, err := publisher.Publish(ctx, message(limit+1)).Get(ctx); !errors.Is(err, pubsub.ErrOversizedMessage) {
			t.Errorf("topic %s: a message of MaxMessageBytes+1 (%d): %v, want %v", id, limit+1, err, pubsub.ErrOversizedMessage)
		}
		publisher.Stop()
	}
}

// TestCheckMessageAnyTopic: without a topic (check and infer know none), CheckMessage refuses a
// message that no publish request has room for, whatever the topic: one byte over the room of
// the shortest name ParseTopic takes, which a request to a name of no characters (not a name at
// all) would still have.
func TestCheckMessageAnyTopic(t *testing.T) {
	const shortest = "projects/1/topics/abc"
	if _, err := ParseTopic(shortest); err != nil {
		t.Fatalf("ParseTopic(%q): %v", shortest, err)
	}
	for _, shorter := range []string{"projects/1/topics/ab", "projects//topics/abc"} {
		if _, err := ParseTopic(shorter); err == nil {
			t.Errorf("ParseTopic(%q) took it: a name shorter than %q", shorter, shorter)
		}
	}
	limit := MaxMessageBytes(shortest)
	fits := &pubsub.Message{Data: make([]byte, limit-5)} // a tag and 4 bytes of length
	if size := MessageSize(fits); size != limit {
		t.Fatalf("a message of %d bytes came to %d", limit, size)
	}
	if err := CheckMessage(fits, ""); err != nil {
		t.Errorf("CheckMessage(%d bytes, any topic) = %v, want nil", limit, err)
	}
	over := &pubsub.Message{Data: make([]byte, limit-4)}
	want := fmt.Sprintf("the message is %d bytes as Pub/Sub encodes it (data, attributes and ordering key), above the %d bytes a publish request to any topic has room for", limit+1, limit)
	if err := CheckMessage(over, ""); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CheckMessage(%d bytes, any topic) = %v, want %q", limit+1, err, want)
	}
}

// TestCheckMessage: CheckMessage names what Pub/Sub refuses of a message: its size, more than 100
// attributes, a key, value or ordering key over its limit or not UTF-8; and passes the largest
// message of each limit.
func TestCheckMessage(t *testing.T) {
	const topic = "projects/p/topics/t"
	attrs := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("k%03d", i)] = "v"
		}
		return m
	}
	for _, c := range []struct {
		m    pubsub.Message
		want string // "" when fit
	}{
		{m: pubsub.Message{Data: []byte("{}"), Attributes: attrs(100), OrderingKey: strings.Repeat("o", 1024)}},
		{m: pubsub.Message{Attributes: map[string]string{strings.Repeat("k", 256): strings.Repeat("v", 1024)}}},
		{m: pubsub.Message{Data: make([]byte, MaxMessageBytes(topic))}, want: "above the"},
		{m: pubsub.Message{Attributes: attrs(101)}, want: "the message has 101 attributes, over Pub/Sub's 100 a message"},
		{m: pubsub.Message{Attributes: map[string]string{strings.Repeat("k", 257): ""}}, want: "is 257 bytes, over Pub/Sub's 256"},
		{m: pubsub.Message{Attributes: map[string]string{"a": strings.Repeat("v", 1025)}}, want: `the value of the attribute "a" is 1025 bytes, over Pub/Sub's 1024`},
		{m: pubsub.Message{Attributes: map[string]string{"a\xff": "v"}}, want: `the attribute key "a\xff" is not valid UTF-8`},
		{m: pubsub.Message{Attributes: map[string]string{"b": "v\xff", "a": "\xfe"}}, want: `the value of the attribute "a" is not valid UTF-8`},
		{m: pubsub.Message{Data: []byte("x"), OrderingKey: "k\xff"}, want: `the ordering key "k\xff" is not valid UTF-8`},
		{m: pubsub.Message{Data: []byte("x"), OrderingKey: strings.Repeat("o", 1025)}, want: "the ordering key is 1025 bytes, over Pub/Sub's 1024"},
	} {
		err := CheckMessage(&c.m, topic)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckMessage(%d bytes, %d attributes, ordering key of %d) = %v, want %q", len(c.m.Data), len(c.m.Attributes), len(c.m.OrderingKey), err, c.want)
		}
	}
	// The client itself refuses text that is not UTF-8 (the emulator keeps none of the other
	// limits, so they are Pub/Sub's documented ones).
	e := pubsubtest.Start(t)
	publisher := e.Client.Publisher(e.Topic(t, "utf8"))
	publisher.EnableMessageOrdering = true
	defer publisher.Stop()
	ctx := context.Background()
	if _, err := publisher.Publish(ctx, &pubsub.Message{Data: []byte("x"), OrderingKey: "k\xff"}).Get(ctx); err == nil {
		t.Error("the client published an ordering key that is not UTF-8")
	}
}

// TestCheckEmulator: a PUBSUB_EMULATOR_HOST with white space around the emulator's address, with a
// scheme, without a port, where nothing listens, or where another service answers (an HTTP/1
// server such as ClickHouse's port 8123, an SSH server) is said at once; the emulator passes, and so does a server that says nothing or
// closes the connection without a word (the calls then say what they meet).
func TestCheckEmulator(t *testing.T) {
	e := pubsubtest.Start(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	garbage := listen(t, func(c net.Conn) { c.Write([]byte("SSH-2.0-x\r\n")); c.Close() })
	closing := listen(t, func(c net.Conn) { c.Close() })
	silent := listen(t, func(c net.Conn) { time.Sleep(3 * time.Second); c.Close() })
	for host, want := range map[string]string{
		"http://127.0.0.1:8085":      "without a scheme or path",
		"127.0.0.1":                  "give the emulator's host:port, with the port it prints",
		" " + e.Addr:                 "holds white space or a control character",
		e.Addr + "\r":                "holds white space or a control character",
		dead:                         "nothing listens there: start the emulator",
		web.Listener.Addr().String(): "something listens there, but it is not a Pub/Sub emulator: it answered as an HTTP/1 server",
		garbage:                      `something listens there, but it is not a Pub/Sub emulator: it answered "SSH-2.0-x"`,
		closing:                      "",
		silent:                       "",
		e.Addr:                       "",
	} {
		err := checkEmulator(context.Background(), host)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("checkEmulator(%q) = %v, want %q", host, err, want)
		}
	}
}

// listen serves each connection to a new loopback listener with serve, and returns its address.
func listen(t *testing.T, serve func(net.Conn)) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return l.Addr().String()
}
