// The Dataflow reader: pubsubio.Read, and the conversion of its messages to flow.Messages.

package source

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pb "google.golang.org/genproto/googleapis/pubsub/v1"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/pubsubio"
)

// ReadDataflow reads cfg.Subscription with pubsubio.Read (this module's, the SDK's read with a
// faster decoding of each message in the same graph), which only the Dataflow service executes
// (prism rejects it), and converts each *pb.PubsubMessage with FromPubsub. The
// service acknowledges at its own checkpoints: AckID is empty. It panics if the subscription is
// not a full subscription name.
func ReadDataflow(s beam.Scope, cfg Config) beam.PCollection {
	s = s.Scope("Read")
	name, err := psclient.ParseSubscription(cfg.Subscription)
	if err != nil {
		panic(fmt.Sprintf("source.ReadDataflow: subscription %q %v", cfg.Subscription, err))
	}
	return FromPubsub(s, pubsubio.Read(s, name.Project, name.ID))
}

// FromPubsub turns a PCollection<*pb.PubsubMessage> (pubsubio.Read's output) into a
// PCollection<flow.Messages> of one message each, whose element timestamps are the time the
// pipeline received each message, as Read's are.
//
// pubsubio.Read timestamps an element with its publish time and Dataflow's watermark follows
// the publish times of the backlog, so a subscription seek, a replay of dead letters or a
// backlog after an outage would make data that is behind the watermark: late data, which fixed
// windows with allowed lateness 0 drop after Dataflow has acknowledged it. Restamped at receipt,
// an element is never behind the watermark (which trails the oldest unacknowledged publish
// time); during a backlog, windows close once the watermark catches up instead. An element is
// never restamped before its own timestamp: on a worker whose clock is behind Pub/Sub's, the
// time of receipt can precede the publish time, and the watermark with it.
//
// A message without a message id (seen from older runners) gets one derived from its payload,
// attributes, publish time and ordering key (see DerivedID), counted in the metric messages-without-id and
// logged once per worker; a message without a publish time takes the element's timestamp,
// which pubsubio.Read sets to the publish time.
func FromPubsub(s beam.Scope, col beam.PCollection) beam.PCollection {
	return beam.ParDo(s, &fromPubsubFn{}, col)
}

var messagesWithoutID = beam.NewCounter(flow.Namespace, "messages-without-id")

// fromPubsubFn is FromPubsub's DoFn.
type fromPubsubFn struct {
	loggedNoID bool
}

func (fn *fromPubsubFn) ProcessElement(ctx context.Context, et beam.EventTime, m *pb.PubsubMessage, emit func(beam.EventTime, flow.Messages)) {
	out := flow.Message{ID: m.GetMessageId(), Data: m.GetData(), OrderingKey: m.GetOrderingKey()}
	if len(m.GetAttributes()) > 0 {
		out.Attributes = m.GetAttributes()
	}
	if m.GetPublishTime() != nil {
		out.PublishTimeMillis = m.GetPublishTime().AsTime().UnixMilli()
	} else {
		out.PublishTimeMillis = et.Milliseconds()
	}
	if out.ID == "" {
		out.ID = DerivedID(out)
		messagesWithoutID.Inc(ctx, 1)
		if !fn.loggedNoID {
			fn.loggedNoID = true
			slog.Warn("source: a message arrived without a message id; it and any other such message get an id derived from payload, attributes, publish time and ordering key (metric messages-without-id)",
				"derived id", out.ID)
		}
	}
	emit(max(mtime.Now(), et), flow.Messages{Messages: []flow.Message{out}})
}

// DerivedID returns the id given to a message that has none: "derived-" and the first 16 bytes,
// in hex, of the SHA-256 of its payload, its attributes (sorted by key) and its publish time,
// and of its ordering key when it has one, so that a redelivery of the same message gets the
// same id. Each part is length-prefixed, so that no two different messages share the hashed
// bytes; a message with an ordering key starts with 8 bytes of 0xFF (no part's length) and the
// key, so that a message without one keeps the id of the releases before the key counted.
func DerivedID(m flow.Message) string {
	h := sha256.New()
	var n [8]byte
	put := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	if m.OrderingKey != "" {
		binary.BigEndian.PutUint64(n[:], math.MaxUint64)
		h.Write(n[:])
		put([]byte(m.OrderingKey))
	}
	put(m.Data)
	keys := make([]string, 0, len(m.Attributes))
	for k := range m.Attributes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		put([]byte(k))
		put([]byte(m.Attributes[k]))
	}
	binary.BigEndian.PutUint64(n[:], uint64(m.PublishTimeMillis))
	h.Write(n[:])
	return "derived-" + hex.EncodeToString(h.Sum(nil)[:16])
}
