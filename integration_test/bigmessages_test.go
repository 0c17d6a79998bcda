package integration_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/deadletter"
)

// TestDeadLetterTooLargeForTheTopic: a message just under Pub/Sub's 10 MB limit that fails to
// parse. Its dead letter, with the error and time attributes added, is over the limit: the
// dead-letter table keeps it whole, the topic gets it cut to fit, with attributes saying so,
// and the pipeline goes on (the good message behind it lands) and ends.
func TestDeadLetterTooLargeForTheTopic(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, name String) ENGINE = MergeTree ORDER BY id`)
	e.opts.WindowSeconds = pipeline.GivenInt(2)
	e.opts.BatchRowCount = pipeline.GivenInt(100)
	// Valid JSON whose "id" is no UInt32: a dead letter naming the column.
	big := []byte(`{"id":"` + strings.Repeat("9", 9_999_000) + `"}`)
	ids := e.ps.Publish(t, e.topic,
		&pubsubpb.PubsubMessage{Data: big, Attributes: map[string]string{"source": strings.Repeat("s", 300)}},
		&pubsubpb.PubsubMessage{Data: []byte(`{"id":1,"name":"after"}`)})
	e.run(t)
	if got := strings.TrimSpace(e.srv.MustQuery(t, "SELECT id, name FROM events")); got != "1\tafter" {
		t.Errorf("rows %q, want the message behind the big one", got)
	}
	sum := sha256.Sum256(big)
	got := strings.TrimSpace(e.srv.MustQuery(t, "SELECT length(raw_message), lower(hex(SHA256(raw_message))) FROM dead_letters"))
	if want := fmt.Sprintf("%d\t%s", len(big), hex.EncodeToString(sum[:])); got != want {
		t.Errorf("dead-letter table holds %q, want the whole payload %q", got, want)
	}
	topic := e.ps.PullAll(t, e.dlqCheck)
	if len(topic) != 1 {
		t.Fatalf("%d dead letters on the topic, want 1", len(topic))
	}
	m := topic[0]
	if !bytes.HasPrefix(big, m.Data) || len(m.Data) >= len(big) || m.Attributes[deadletter.AttrPayloadTruncated] != "true" ||
		m.Attributes[deadletter.AttrPayloadBytes] != strconv.Itoa(len(big)) || m.Attributes[deadletter.AttrPayloadSHA256] != hex.EncodeToString(sum[:]) ||
		!strings.Contains(m.Attributes["errorMessage"], `column "id"`) || len(m.Attributes["source"]) != 300 {
		t.Errorf("topic dead letter: %d bytes, attributes %v", len(m.Data), shortAttrs(m.Attributes))
	}
	e.checkAllAcked(t, ids)
}

// TestPullResponsesOverFourMiB: 300 messages of 40 KB, more than gRPC's default 4 MiB in one
// Pull response; every one lands.
func TestPullResponsesOverFourMiB(t *testing.T) {
	const n = 300
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, pad String) ENGINE = MergeTree ORDER BY id`)
	e.opts.WindowSeconds = pipeline.GivenInt(2)
	e.opts.BatchRowCount = pipeline.GivenInt(1000)
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d,"pad":"%s"}`, i, strings.Repeat("p", 40_000)))})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	e.run(t)
	if rows, dls := e.checkAccounted(t, n, "id"); rows != n || dls != 0 {
		t.Errorf("%d rows, %d dead letters, want %d rows", rows, dls, n)
	}
	e.checkAllAcked(t, ids)
}

// TestBatchByteSize: 300 messages of 40 KB (12 MB) and a batchByteSize of 1 MiB: every row lands
// once, in INSERTs of at most 26 rows (1 MiB over the 40,000-odd bytes of each row), not in one
// INSERT of all 300. In the combined mode the batches end at the bound; in the fixed-window mode
// a window is one batch, and the write stage cuts its INSERTs at the bound.
func TestBatchByteSize(t *testing.T) {
	const n = 300
	for _, tc := range []struct {
		name string
		rows pipeline.OptionalInt
	}{
		{"combined mode", pipeline.GivenInt(1000)},
		{"fixed windows", pipeline.OptionalInt{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newE2E(t, `CREATE TABLE {table} (id UInt32, pad String) ENGINE = MergeTree ORDER BY id`)
			e.opts.WindowSeconds = pipeline.GivenInt(2)
			e.opts.BatchRowCount = tc.rows
			e.opts.BatchByteSize = 1 << 20
			var msgs []*pubsubpb.PubsubMessage
			for i := range n {
				msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d,"pad":"%s"}`, 1000+i, strings.Repeat("p", 40_000)))})
			}
			ids := e.ps.Publish(t, e.topic, msgs...)
			res := e.run(t)
			if rows, dls := e.checkAccounted(t, n, "id"); rows != n || dls != 0 {
				t.Errorf("%d rows, %d dead letters, want %d rows", rows, dls, n)
			}
			e.checkAllAcked(t, ids)
			found := false
			for _, d := range res.Metrics().AllMetrics().Distributions() {
				if d.Key.Name != "insert-batch-rows" {
					continue
				}
				found = true
				if d.Committed.Max > 26 || d.Committed.Count < n/26 {
					t.Errorf("%d INSERTs of up to %d rows, want at least %d of at most 26 (1 MiB of 40 KB rows)", d.Committed.Count, d.Committed.Max, n/26)
				}
			}
			if !found {
				t.Error("no insert-batch-rows metric")
			}
		})
	}
}

func shortAttrs(a map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		if len(v) > 80 {
			v = v[:80] + "..."
		}
		out[k] = v
	}
	return out
}
