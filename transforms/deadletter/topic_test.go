package deadletter

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
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
