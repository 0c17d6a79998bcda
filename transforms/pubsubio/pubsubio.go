// Package pubsubio is the read of the Beam Go SDK's pubsubio (v2.77.0) with attributes, as
// Dataflow runs it, in the same graph: the same external transform (beam:transform:pubsub_read:v1,
// which the Dataflow service executes), payload, scope and step names, and the same
// PCollection<*pb.PubsubMessage>; only the decoding of each message is this package's own.
//
// The SDK decodes each message with proto.Unmarshal: about 1.9 µs, 12 allocations and 1.8 KB for a
// demo event of 1.1 KB (BenchmarkUnmarshal), a copy of the payload among them, which on a
// Dataflow worker is paid once for every message. Decoding the five fields of a PubsubMessage
// straight from the wire format (google.golang.org/protobuf/encoding/protowire), with the payload
// left in the element's own buffer (which the SDK allocates for each element it decodes), takes
// about a third of that (0.48 µs, 7 allocations, 536 bytes). A running job's update matches the steps of the new graph to the old by
// name, and these are the names the SDK's Read gives (TestGraphAsTheSDKs).
//
// The same decoding serves the local reader's Pull responses (DecodePullResponse, pull.go).
package pubsubio

import (
	"bytes"
	"fmt"
	"maps"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/protox"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/pubsubx"
	pb "google.golang.org/genproto/googleapis/pubsub/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// readURN is the external transform of Pub/Sub reads, which the Dataflow service executes.
const readURN = "beam:transform:pubsub_read:v1"

func init() {
	register.Function2x1(unmarshalMessageFn)
	register.Emitter1[*pb.PubsubMessage]()
}

// Read reads subscription (its id) of project with attributes, as the SDK's
// pubsubio.Read(s, project, pubsubio.ReadOptions{Subscription: subscription, WithAttributes: true})
// does, and returns a PCollection<*pb.PubsubMessage>. Only the Dataflow service executes it.
func Read(s beam.Scope, project, subscription string) beam.PCollection {
	s = s.Scope("pubsubio.Read")
	payload := &pipepb.PubSubReadPayload{
		Subscription:   pubsubx.MakeQualifiedSubscriptionName(project, subscription),
		WithAttributes: true,
	}
	out := beam.External(s, readURN, protox.MustEncode(payload), nil, []beam.FullType{typex.New(reflectx.ByteSlice)}, false)
	return Unmarshal(s, out[0])
}

// Unmarshal decodes a PCollection<[]byte> of serialized PubsubMessages, as the service's read
// gives them, into a PCollection<*pb.PubsubMessage> (Decode). A message that does not decode
// fails its bundle, as in the SDK.
func Unmarshal(s beam.Scope, raw beam.PCollection) beam.PCollection {
	return beam.ParDo(s, unmarshalMessageFn, raw)
}

// unmarshalMessageFn is named as the SDK's, in a directory named as the SDK's package (the step's
// name is the base of the function's import path and its name), which makes its step's name the
// same.
func unmarshalMessageFn(raw []byte, emit func(*pb.PubsubMessage)) error {
	m, err := Decode(raw)
	if err != nil {
		return err
	}
	emit(m)
	return nil
}

// The field numbers of google.pubsub.v1.PubsubMessage, of its attributes' map entries and of
// google.protobuf.Timestamp.
const (
	fieldData        = 1
	fieldAttributes  = 2
	fieldMessageID   = 3
	fieldPublishTime = 4
	fieldOrderingKey = 5

	fieldKey   = 1
	fieldValue = 2

	fieldSeconds = 1
	fieldNanos   = 2
)

// Decode decodes a serialized google.pubsub.v1.PubsubMessage as proto.Unmarshal does, except
// that Data shares b, unknown fields are dropped, and strings are taken as they are, where
// proto.Unmarshal refuses the message when one is not valid UTF-8 (the string fields' rule in
// proto3): a message the service delivered is not stuck because of an attribute. (Such a message
// could not be encoded again with the proto coder of *pb.PubsubMessage, which proto.Marshal
// refuses too; the decoding step is fused with FromPubsub after it, so it never is.) A field of a
// known number but another wire type is skipped as unknown, as proto.Unmarshal does; a
// repeated field keeps the last value, and a map key given twice its last value. It returns an
// error when b is not the wire format (a truncated field, a bad tag).
func Decode(b []byte) (*pb.PubsubMessage, error) {
	m := new(pb.PubsubMessage)
	if err := decodeInto(b, m, nil); err != nil {
		return nil, fmt.Errorf("pubsubio: decoding a PubsubMessage: %w", err)
	}
	return m, nil
}

// decodeInto is Decode merging into m, as proto.Unmarshal merges a message field given twice.
// With last (the messages of one Pull response, DecodePullResponse), a message whose attribute
// fields lie together, and are byte for byte the last such message's, gets that message's map
// (sharedAttributes).
func decodeInto(b []byte, m *pb.PubsubMessage, last *sharedAttributes) error {
	if m.Attributes != nil {
		// A message given in two parts: the attributes merge into the first part's, in a map of
		// its own (the first part's may be shared).
		m.Attributes, last = maps.Clone(m.Attributes), nil
	}
	all := b
	// all[start:end] are the attribute fields read so far while they lie together; with last,
	// they go into the map when the message ends, or when another attribute field follows apart.
	start, end, together := -1, -1, last != nil
	for len(b) > 0 {
		at := len(all) - len(b)
		num, typ, v, _, rest, err := nextField(b)
		if err != nil {
			return err
		}
		b = rest
		if typ != protowire.BytesType {
			continue
		}
		switch num {
		case fieldData:
			m.Data = v[:len(v):len(v)]
		case fieldAttributes:
			if together && start < 0 {
				start = at
			}
			if together && (end < 0 || end == at) {
				end = len(all) - len(b)
				continue
			}
			if together { // apart from the run before it: this message shares no map
				together = false
				if err := putAttributes(all[start:end], m); err != nil {
					return err
				}
			}
			if err := putAttributes(all[at:len(all)-len(b)], m); err != nil {
				return err
			}
		case fieldMessageID:
			m.MessageId = string(v)
		case fieldPublishTime:
			if m.PublishTime == nil {
				m.PublishTime = new(timestamppb.Timestamp)
			}
			if err := timestamp(v, m.PublishTime); err != nil {
				return err
			}
		case fieldOrderingKey:
			m.OrderingKey = string(v)
		}
	}
	if !together || start < 0 {
		return nil
	}
	run := all[start:end]
	if last.m != nil && bytes.Equal(run, last.raw) {
		m.Attributes = last.m
		return nil
	}
	if err := putAttributes(run, m); err != nil {
		return err
	}
	last.raw, last.m = run, m.Attributes
	return nil
}

// sharedAttributes are the attributes of the last message of a Pull response decoded with its
// attribute fields together: their encoding (the fields, tags included) and their map. Messages
// of one publisher often carry the same attributes; the next message whose fields are the same
// bytes shares the map, which is built once, and which the stages after the source range over
// while it is still in the CPU's caches (docs/operations.md, "Cost per message"). The maps are
// read only from there on, as the rows' are (flow.Row).
type sharedAttributes struct {
	raw []byte
	m   map[string]string
}

// putAttributes puts the attribute fields of b, a run of PubsubMessage fields that are all
// attributes, into m's map, in order (a key given twice keeps its last value).
func putAttributes(b []byte, m *pb.PubsubMessage) error {
	for len(b) > 0 {
		_, _, v, _, rest, err := nextField(b)
		if err != nil {
			return err
		}
		b = rest
		k, val, err := mapEntry(v)
		if err != nil {
			return err
		}
		if m.Attributes == nil {
			m.Attributes = make(map[string]string, 1)
		}
		m.Attributes[k] = val
	}
	return nil
}

// mapEntry decodes an entry of a map<string, string>; a missing key or value is "".
func mapEntry(b []byte) (key, value string, err error) {
	for len(b) > 0 {
		num, typ, v, _, rest, err := nextField(b)
		if err != nil {
			return "", "", err
		}
		b = rest
		switch {
		case typ != protowire.BytesType:
		case num == fieldKey:
			key = string(v)
		case num == fieldValue:
			value = string(v)
		}
	}
	return key, value, nil
}

// timestamp decodes a google.protobuf.Timestamp into t, merging as proto.Unmarshal does.
func timestamp(b []byte, t *timestamppb.Timestamp) error {
	for len(b) > 0 {
		num, typ, _, x, rest, err := nextField(b)
		if err != nil {
			return err
		}
		b = rest
		switch {
		case typ != protowire.VarintType:
		case num == fieldSeconds:
			t.Seconds = int64(x)
		case num == fieldNanos:
			t.Nanos = int32(x)
		}
	}
	return nil
}

// nextField reads the field at the start of b: its number and wire type, its value (v for a
// length-delimited field, x for a varint; a field of another wire type is skipped, as
// proto.Unmarshal skips an unknown field), and the bytes after it. A field of a known number but
// another wire type than its own is then skipped by the caller, as proto.Unmarshal does.
func nextField(b []byte) (num protowire.Number, typ protowire.Type, v []byte, x uint64, rest []byte, err error) {
	num, typ, n := consumeTag(b)
	if n < 0 {
		return 0, 0, nil, 0, nil, decodeError(n)
	}
	b = b[n:]
	switch typ {
	case protowire.BytesType:
		v, n = protowire.ConsumeBytes(b)
	case protowire.VarintType:
		x, n = protowire.ConsumeVarint(b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, b)
	}
	if n < 0 {
		return 0, 0, nil, 0, nil, decodeError(n)
	}
	return num, typ, v, x, b[n:], nil
}

// consumeTag is protowire.ConsumeTag refusing, as proto.Unmarshal does, a field number above
// protowire.MaxValidNumber (2^29-1), which ConsumeTag takes up to 2^31-1.
func consumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	num, typ, n := protowire.ConsumeTag(b)
	if n >= 0 && num > protowire.MaxValidNumber {
		return 0, 0, -2 // protowire.ParseError(-2): "invalid field number"
	}
	return num, typ, n
}

func decodeError(n int) error {
	return protowire.ParseError(n)
}
