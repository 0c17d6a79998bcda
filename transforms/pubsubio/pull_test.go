package pubsubio

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	pb "google.golang.org/genproto/googleapis/pubsub/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
)

// randomPullResponse is a PullResponse of up to 20 random messages, each with an ack id and a
// delivery attempt or not.
func randomPullResponse(r *rand.Rand) *pb.PullResponse {
	resp := &pb.PullResponse{}
	for range r.IntN(21) {
		rm := &pb.ReceivedMessage{}
		if r.IntN(5) > 0 {
			rm.AckId = "ack-" + strconv.FormatUint(r.Uint64(), 36)
		}
		if r.IntN(5) > 0 {
			rm.Message = randomMessage(r)
			if n := len(resp.ReceivedMessages); n > 0 && r.IntN(2) == 0 && rm.Message.Attributes != nil {
				// Often the attributes of the message before (marshalled with the same bytes
				// when there is one, which DecodePullResponse's maps then share).
				if before := resp.ReceivedMessages[n-1].GetMessage().GetAttributes(); len(before) == 1 {
					rm.Message.Attributes = maps.Clone(before)
				}
			}
		}
		if r.IntN(3) == 0 {
			rm.DeliveryAttempt = r.Int32N(100)
		}
		resp.ReceivedMessages = append(resp.ReceivedMessages, rm)
	}
	return resp
}

// DecodePullResponse gives what proto.Unmarshal gives, on random responses and on every prefix
// of some: the same response when both decode, an error from both when one fails.
func TestDecodePullResponseAsProtoUnmarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 200 {
		want := randomPullResponse(r)
		b, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var got pb.PullResponse
		if err := DecodePullResponse(b, &got); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if diff := cmp.Diff(want, &got, protocmp.Transform()); diff != "" {
			t.Fatalf("response %d (-proto.Marshal's input +DecodePullResponse):\n%s", i, diff)
		}
		if i%20 != 0 {
			continue
		}
		checkPrefixesAsProto(t, fmt.Sprintf("response %d", i), b, decodePullResponse)
	}
}

// The payloads share the response's bytes (no copy), and the cases proto.Marshal does not write:
// unknown fields at both levels, a known field of another wire type (skipped), and a message
// given in two parts, which proto.Unmarshal merges.
func TestDecodePullResponseWireCases(t *testing.T) {
	part := func(m *pb.PubsubMessage) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var rm []byte
	rm = protowire.AppendTag(rm, 42, protowire.BytesType)
	rm = protowire.AppendString(rm, "unknown")
	rm = protowire.AppendTag(rm, fieldAckID, protowire.VarintType) // the ack id, as a varint
	rm = protowire.AppendVarint(rm, 9)
	rm = protowire.AppendTag(rm, fieldAckID, protowire.BytesType)
	rm = protowire.AppendString(rm, "ack-1")
	rm = protowire.AppendTag(rm, fieldMessage, protowire.BytesType)
	rm = protowire.AppendBytes(rm, part(&pb.PubsubMessage{Data: []byte(`{"a":1}`), Attributes: map[string]string{"k": "1"}}))
	rm = protowire.AppendTag(rm, fieldMessage, protowire.BytesType)
	rm = protowire.AppendBytes(rm, part(&pb.PubsubMessage{MessageId: "7", Attributes: map[string]string{"j": "2"}}))
	rm = protowire.AppendTag(rm, fieldDeliveryAttempt, protowire.VarintType)
	rm = protowire.AppendVarint(rm, 3)
	var b []byte
	b = protowire.AppendTag(b, 7, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	b = protowire.AppendTag(b, fieldReceivedMessages, protowire.BytesType)
	b = protowire.AppendBytes(b, rm)
	b = protowire.AppendTag(b, fieldReceivedMessages, protowire.BytesType)
	b = protowire.AppendBytes(b, nil) // an empty ReceivedMessage

	var got, viaProto pb.PullResponse
	if err := DecodePullResponse(b, &got); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(b, &viaProto); err != nil {
		t.Fatal(err)
	}
	want := &pb.PullResponse{ReceivedMessages: []*pb.ReceivedMessage{{
		AckId:           "ack-1",
		Message:         &pb.PubsubMessage{Data: []byte(`{"a":1}`), MessageId: "7", Attributes: map[string]string{"k": "1", "j": "2"}},
		DeliveryAttempt: 3,
	}, {}}}
	if diff := cmp.Diff(want, &got, protocmp.Transform()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&viaProto, &got, protocmp.Transform(), protocmp.IgnoreUnknown()); diff != "" {
		t.Errorf("(-proto.Unmarshal +DecodePullResponse):\n%s", diff)
	}
	data := got.ReceivedMessages[0].Message.Data
	for i := range b {
		if &b[i] == &data[0] {
			return
		}
	}
	t.Error("the payload was copied out of the response's bytes")
}

// Messages of one response with the same attribute fields share one map, and only they: a
// message whose attributes differ, or whose attribute fields lie apart, gets its own; a message
// given in two parts merges into a map of its own, leaving the map it shared as it was.
func TestDecodePullResponseSharedAttributes(t *testing.T) {
	message := func(m *pb.PubsubMessage) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	received := func(parts ...[]byte) []byte {
		var rm []byte
		for _, p := range parts {
			rm = protowire.AppendTag(rm, fieldMessage, protowire.BytesType)
			rm = protowire.AppendBytes(rm, p)
		}
		return rm
	}
	attribute := func(b []byte, k, v string) []byte {
		var e []byte
		e = protowire.AppendTag(e, fieldKey, protowire.BytesType)
		e = protowire.AppendString(e, k)
		e = protowire.AppendTag(e, fieldValue, protowire.BytesType)
		e = protowire.AppendString(e, v)
		b = protowire.AppendTag(b, fieldAttributes, protowire.BytesType)
		return protowire.AppendBytes(b, e)
	}
	// Attribute fields apart: one, the data, then another.
	var apart []byte
	apart = attribute(apart, "source", "demo")
	apart = protowire.AppendTag(apart, fieldData, protowire.BytesType)
	apart = protowire.AppendString(apart, "x")
	apart = attribute(apart, "k", "2")
	demo := map[string]string{"source": "demo"}
	parts := [][]byte{
		received(message(&pb.PubsubMessage{Data: []byte("1"), Attributes: demo})),
		received(message(&pb.PubsubMessage{Data: []byte("2"), Attributes: demo, MessageId: "m2"})),
		received(message(&pb.PubsubMessage{Data: []byte("3"), Attributes: map[string]string{"source": "other"}})),
		received(message(&pb.PubsubMessage{Data: []byte("4"), Attributes: map[string]string{"source": "other"}})),
		received(message(&pb.PubsubMessage{Data: []byte("5")})),
		received(apart),
		received(apart),
		received(message(&pb.PubsubMessage{Data: []byte("8"), Attributes: map[string]string{"source": "other"}}),
			message(&pb.PubsubMessage{Attributes: map[string]string{"part": "2"}})),
		received(message(&pb.PubsubMessage{Data: []byte("9"), Attributes: map[string]string{"source": "other"}})),
	}
	var b []byte
	for _, p := range parts {
		b = protowire.AppendTag(b, fieldReceivedMessages, protowire.BytesType)
		b = protowire.AppendBytes(b, p)
	}
	var got, viaProto pb.PullResponse
	if err := DecodePullResponse(b, &got); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(b, &viaProto); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&viaProto, &got, protocmp.Transform()); diff != "" {
		t.Fatalf("(-proto.Unmarshal +DecodePullResponse):\n%s", diff)
	}
	attrs := func(i int) map[string]string { return got.ReceivedMessages[i].GetMessage().GetAttributes() }
	same := func(i, j int) bool {
		return attrs(i) != nil && reflect.ValueOf(attrs(i)).UnsafePointer() == reflect.ValueOf(attrs(j)).UnsafePointer()
	}
	for _, c := range []struct {
		i, j int
		want bool
	}{{0, 1, true}, {1, 2, false}, {2, 3, true}, {5, 6, false}, {3, 7, false}, {7, 8, false}, {3, 8, true}} {
		if got := same(c.i, c.j); got != c.want {
			t.Errorf("messages %d and %d share a map: %v, want %v", c.i, c.j, got, c.want)
		}
	}
	if want := map[string]string{"source": "other"}; !maps.Equal(attrs(3), want) {
		t.Errorf("message 3's attributes are %v after message 7's second part merged, want %v", attrs(3), want)
	}
}

// BenchmarkDecodePullResponse decodes a Pull response of 1,000 demo messages, each with an
// attribute, an id and a publish time: proto.Unmarshal (what gRPC's codec does) against
// DecodePullResponse.
func BenchmarkDecodePullResponse(b *testing.B) {
	gen := events.NewGenerator(1, time.Now())
	resp := &pb.PullResponse{}
	for i := range 1000 {
		_, data := gen.Next()
		resp.ReceivedMessages = append(resp.ReceivedMessages, &pb.ReceivedMessage{
			AckId: "projects/demo/subscriptions/events:" + strconv.Itoa(1_000_000+i),
			Message: &pb.PubsubMessage{Data: data, Attributes: map[string]string{"source": "demo"},
				MessageId: strconv.Itoa(1_000_000_000 + i), PublishTime: timestamppb.Now()},
		})
	}
	raw, err := proto.Marshal(resp)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.Run("proto.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := proto.Unmarshal(raw, new(pb.PullResponse)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DecodePullResponse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := DecodePullResponse(raw, new(pb.PullResponse)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzDecodePullResponse: whatever proto.Unmarshal decodes, DecodePullResponse decodes to the
// same response (unknown fields apart).
func FuzzDecodePullResponse(f *testing.F) {
	r := rand.New(rand.NewPCG(7, 8))
	fuzzAsProto(f, 10, func() *pb.PullResponse { return randomPullResponse(r) }, decodePullResponse)
}

// decodePullResponse is DecodePullResponse into a new response, in the shape of Decode.
func decodePullResponse(b []byte) (*pb.PullResponse, error) {
	resp := new(pb.PullResponse)
	return resp, DecodePullResponse(b, resp)
}
