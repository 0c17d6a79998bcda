package deadletter

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"google.golang.org/protobuf/proto"
)

func TestTopicMessage(t *testing.T) {
	failed := time.Date(2026, 1, 15, 10, 30, 0, 123e6, time.UTC).UnixMilli()
	small := TopicMessage(flow.DeadLetter{Payload: []byte(`{"id":1}`), ErrorMessage: "bad", FailedAtMillis: failed, Attributes: map[string]string{"k": "v"}})
	if string(small.Data) != `{"id":1}` || small.Attributes["k"] != "v" || small.Attributes["errorMessage"] != "bad" ||
		small.Attributes["failedAt"] != "2026-01-15T10:30:00.123Z" || small.Attributes[AttrPayloadTruncated] != "" {
		t.Errorf("small message: %q %v", small.Data, small.Attributes)
	}

	// An input message just under Pub/Sub's limit, whose attributes and error push the dead
	// letter over it.
	payload := bytes.Repeat([]byte("x"), 9_999_000)
	attrs := map[string]string{"source": strings.Repeat("s", 500)}
	m := TopicMessage(flow.DeadLetter{Payload: payload, ErrorMessage: strings.Repeat("e", 5000), FailedAtMillis: failed, Attributes: attrs})
	size := proto.Size(&pubsubpb.PubsubMessage{Data: m.Data, Attributes: m.Attributes})
	if size > MaxTopicMessageBytes {
		t.Errorf("dead letter of %d bytes, want at most %d", size, MaxTopicMessageBytes)
	}
	if MaxTopicMessageBytes-size > 16 {
		t.Errorf("dead letter of %d bytes: cut %d bytes more than needed", size, MaxTopicMessageBytes-size)
	}
	sum := sha256.Sum256(payload)
	if m.Attributes[AttrPayloadTruncated] != "true" || m.Attributes[AttrPayloadBytes] != strconv.Itoa(len(payload)) ||
		m.Attributes[AttrPayloadSHA256] != hex.EncodeToString(sum[:]) || m.Attributes["source"] != attrs["source"] {
		t.Errorf("attributes %v", m.Attributes)
	}
	if !bytes.HasPrefix(payload, m.Data) || len(m.Data) >= len(payload) {
		t.Errorf("payload of %d bytes is not a prefix of the original's %d", len(m.Data), len(payload))
	}
}

// TestTopicMessageNamesTable: a routed message's dead letter names its table in errorMessage,
// since the stack trace that names it in the table is not published; one without a table (the
// route stage's own, or without routeBy) is as it was.
func TestTopicMessageNamesTable(t *testing.T) {
	for _, tc := range []struct{ trace, want string }{
		{flow.WithTable("stage: parse\nerror: bad (*errors.errorString)", "clicks"), "table clicks: bad"},
		{flow.WithTable("stage: write", "db.orders"), "table db.orders: bad"},
		{"stage: parse\nerror: bad (*errors.errorString)", "bad"},
		{"stage: route", "bad"},
		{"", "bad"},
	} {
		m := TopicMessage(flow.DeadLetter{Payload: []byte(`{}`), ErrorMessage: "bad", StackTrace: tc.trace, FailedAtMillis: 1})
		if got := m.Attributes[AttrErrorMessage]; got != tc.want {
			t.Errorf("stack trace %q: errorMessage %q, want %q", tc.trace, got, tc.want)
		}
	}
}

// TestTopicMessageOwnNames: an original attribute named as one the stage adds is left out and
// counted in attributesOmitted, so a message cannot pass for one the stage cut, and replay (which
// leaves such a message) loses none of its attributes.
func TestTopicMessageOwnNames(t *testing.T) {
	m := TopicMessage(flow.DeadLetter{Payload: []byte(`{"id":1}`), ErrorMessage: "bad", FailedAtMillis: 1,
		Attributes: map[string]string{"k": "v", AttrPayloadTruncated: "true", AttrPayloadSHA256: "00", AttrErrorMessage: "mine"}})
	want := map[string]string{"k": "v", AttrErrorMessage: "bad", AttrFailedAt: "1970-01-01T00:00:00.001Z", AttrAttributesOmitted: "3"}
	if diff := cmp.Diff(want, m.Attributes); diff != "" || string(m.Data) != `{"id":1}` {
		t.Errorf("attributes (-want +got):\n%s\ndata %q", diff, m.Data)
	}
}

// TestTopicMessageAttributeLimit: a dead letter stays within Pub/Sub's 100 attributes a message.
// The original attributes last in key order are left out until the message fits, and
// attributesOmitted says how many; the payload is kept whole unless it must be cut too.
func TestTopicMessageAttributeLimit(t *testing.T) {
	failed := time.Date(2026, 1, 15, 10, 30, 0, 123e6, time.UTC).UnixMilli()
	attributes := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("k%03d", i)] = fmt.Sprint("v", i)
		}
		return m
	}
	for _, c := range []struct {
		originals, omitted int
		payload            []byte
	}{
		{originals: 98, omitted: 0, payload: []byte(`{"id":1}`)},
		{originals: 99, omitted: 2, payload: []byte(`{"id":1}`)},                    // 99 + 2 added + attributesOmitted
		{originals: 100, omitted: 3, payload: []byte(`{"id":1}`)},                   // 100 + 2 + 1
		{originals: 100, omitted: 6, payload: bytes.Repeat([]byte("x"), 9_999_000)}, // and the payload's 3
	} {
		orig := attributes(c.originals)
		m := TopicMessage(flow.DeadLetter{Payload: c.payload, ErrorMessage: "bad", FailedAtMillis: failed, Attributes: orig})
		if len(m.Attributes) > MaxTopicAttributes {
			t.Errorf("%d attributes: the dead letter has %d, over %d", c.originals, len(m.Attributes), MaxTopicAttributes)
		}
		wantOmitted := ""
		if c.omitted > 0 {
			wantOmitted = strconv.Itoa(c.omitted)
		}
		if got := m.Attributes[AttrAttributesOmitted]; got != wantOmitted {
			t.Errorf("%d attributes: attributesOmitted %q, want %q", c.originals, got, wantOmitted)
		}
		if m.Attributes["errorMessage"] != "bad" || m.Attributes["failedAt"] == "" {
			t.Errorf("%d attributes: errorMessage %q, failedAt %q", c.originals, m.Attributes["errorMessage"], m.Attributes["failedAt"])
		}
		for i := range c.originals {
			k := fmt.Sprintf("k%03d", i)
			got, ok := m.Attributes[k]
			if kept := i < c.originals-c.omitted; kept != ok || ok && got != orig[k] {
				t.Errorf("%d attributes: %s = %q (present %v), want present %v", c.originals, k, got, ok, kept)
			}
		}
		big := len(c.payload) > 1000
		if size := proto.Size(&pubsubpb.PubsubMessage{Data: m.Data, Attributes: m.Attributes}); size > MaxTopicMessageBytes {
			t.Errorf("%d attributes: dead letter of %d bytes, over %d", c.originals, size, MaxTopicMessageBytes)
		}
		if truncated := m.Attributes[AttrPayloadTruncated] == "true"; truncated != big || !big && !bytes.Equal(m.Data, c.payload) {
			t.Errorf("%d attributes: payloadTruncated %v and %d of %d payload bytes", c.originals, truncated, len(m.Data), len(c.payload))
		}
	}
}

// TestTopicMessageLimitsTogether: payloads at the size limit with many attributes. Leaving
// attributes out must not push the message over the size (attributesOmitted is an attribute too),
// attributesOmitted counts what is missing, and attributes left out first make room for the whole
// payload where they can (omitted "" checks only the count).
func TestTopicMessageLimitsTogether(t *testing.T) {
	const failed = 1768473000123
	size := func(data []byte, attrs map[string]string) int {
		return proto.Size(&pubsubpb.PubsubMessage{Data: data, Attributes: attrs})
	}
	// atLimit is the payload that makes the dead letter of attrs, before any limit is applied,
	// exactly over bytes over MaxTopicMessageBytes.
	atLimit := func(attrs map[string]string, over int) []byte {
		all := maps.Clone(attrs)
		all["errorMessage"], all["failedAt"] = "bad", time.UnixMilli(failed).UTC().Format(FailedAtLayout)
		for n := MaxTopicMessageBytes - size(nil, all) - 8; ; n++ {
			if p := make([]byte, n); size(p, all) == MaxTopicMessageBytes+over {
				return p
			}
		}
	}
	tiny := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("%02x", i)] = ""
		}
		return m
	}
	large := map[string]string{}
	for i := range 100 {
		large[fmt.Sprintf("%0256d", i)] = strings.Repeat("v", 1024)
	}
	for _, c := range []struct {
		name    string
		attrs   map[string]string
		over    int
		omitted string
		whole   bool
	}{
		{"99 tiny attributes, payload at the limit", tiny(99), 0, "", true},
		{"100 tiny attributes, payload at the limit", tiny(100), 0, "", true},
		{"100 large attributes, 1 byte over", large, 1, "3", true},
	} {
		payload := atLimit(c.attrs, c.over)
		m := TopicMessage(flow.DeadLetter{Payload: payload, ErrorMessage: "bad", FailedAtMillis: failed, Attributes: c.attrs})
		if n := len(m.Attributes); n > MaxTopicAttributes {
			t.Errorf("%s: %d attributes", c.name, n)
		}
		if s := size(m.Data, m.Attributes); s > MaxTopicMessageBytes {
			t.Errorf("%s: %d bytes, %d over", c.name, s, s-MaxTopicMessageBytes)
		}
		truncated := m.Attributes[AttrPayloadTruncated] == "true"
		if truncated != (len(m.Data) < len(payload)) || c.whole && truncated {
			t.Errorf("%s: payloadTruncated %v with %d of %d bytes", c.name, truncated, len(m.Data), len(payload))
		}
		absent := 0
		for k := range c.attrs {
			if _, ok := m.Attributes[k]; !ok {
				absent++
			}
		}
		got := m.Attributes[AttrAttributesOmitted]
		if got != strconv.Itoa(absent) || absent > 6 || c.omitted != "" && got != c.omitted {
			t.Errorf("%s: attributesOmitted %q with %d left out, want %q (at most 6)", c.name, got, absent, c.omitted)
		}
	}
}

// TestTopicMessageOrderingKey: the dead-letter topic's message carries the ordering key, and the
// size limit counts it.
func TestTopicMessageOrderingKey(t *testing.T) {
	failed := time.Date(2026, 1, 15, 10, 30, 0, 123e6, time.UTC).UnixMilli()
	for _, c := range []struct {
		key     string
		payload []byte
		cut     bool
	}{
		{"user-7", []byte(`{"id":1}`), false},
		{"", []byte(`{"id":1}`), false},
		{strings.Repeat("k", 1024), bytes.Repeat([]byte("x"), 9_999_000), true},
		// Within the limit without the key (the next case), over it with the key.
		{strings.Repeat("k", 1024), bytes.Repeat([]byte("x"), MaxTopicMessageBytes-1000), true},
		{"", bytes.Repeat([]byte("x"), MaxTopicMessageBytes-1000), false},
	} {
		m := TopicMessage(flow.DeadLetter{Payload: c.payload, ErrorMessage: "bad", FailedAtMillis: failed, OrderingKey: c.key})
		if m.OrderingKey != c.key {
			t.Errorf("ordering key %q, want %q", m.OrderingKey, c.key)
		}
		size := proto.Size(&pubsubpb.PubsubMessage{Data: m.Data, Attributes: m.Attributes, OrderingKey: m.OrderingKey})
		if size > MaxTopicMessageBytes {
			t.Errorf("key of %d bytes: a dead letter of %d bytes, want at most %d", len(c.key), size, MaxTopicMessageBytes)
		}
		if got := m.Attributes[AttrPayloadTruncated] == "true"; got != c.cut {
			t.Errorf("key of %d bytes, payload of %d: cut %v, want %v", len(c.key), len(c.payload), got, c.cut)
		}
		if c.cut && MaxTopicMessageBytes-size > 16 {
			t.Errorf("key of %d bytes: cut %d bytes more than needed", len(c.key), MaxTopicMessageBytes-size)
		}
	}
}
