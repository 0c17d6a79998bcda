package pubsubio

import (
	hexpkg "encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	sdkpubsubio "github.com/apache/beam/sdks/v2/go/pkg/beam/io/pubsubio"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/google/go-cmp/cmp"
	pb "google.golang.org/genproto/googleapis/pubsub/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
)

// randomMessage is a PubsubMessage with each field present or not, of random content.
func randomMessage(r *rand.Rand) *pb.PubsubMessage {
	text := func() string {
		const alphabet = "abcXYZ019 _-é€😀\"\\{}"
		runes := []rune(alphabet)
		out := make([]rune, r.IntN(12))
		for i := range out {
			out[i] = runes[r.IntN(len(runes))]
		}
		return string(out)
	}
	m := &pb.PubsubMessage{}
	if r.IntN(4) > 0 {
		m.Data = make([]byte, r.IntN(2000))
		for i := range m.Data {
			m.Data[i] = byte(r.IntN(256))
		}
	}
	if n := r.IntN(4); n > 0 {
		m.Attributes = map[string]string{}
		for range n {
			m.Attributes[text()] = text()
		}
	}
	if r.IntN(4) > 0 {
		m.MessageId = strconv.FormatUint(r.Uint64(), 10)
	}
	if r.IntN(4) > 0 {
		m.PublishTime = &timestamppb.Timestamp{Seconds: r.Int64N(1 << 40), Nanos: r.Int32N(1e9)}
	}
	if r.IntN(3) == 0 {
		m.OrderingKey = text()
	}
	return m
}

// Decode gives what proto.Unmarshal gives, on random messages and on every prefix of them: the
// same message when both decode, and an error from both when one of them fails (the strings here
// are valid UTF-8, where the two would differ).
func TestDecodeAsProtoUnmarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		want := randomMessage(r)
		b, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Fatalf("message %d (-proto.Marshal's input +Decode):\n%s", i, diff)
		}
		if i%10 != 0 {
			continue
		}
		checkPrefixesAsProto(t, fmt.Sprintf("message %d", i), b, Decode)
	}
}

// checkPrefixesAsProto decodes every strict prefix of b with decode and with proto.Unmarshal: an
// error from both or from neither, and the same message when both decode.
func checkPrefixesAsProto[M proto.Message](t *testing.T, what string, b []byte, decode func([]byte) (M, error)) {
	t.Helper()
	for n := range len(b) {
		got, err := decode(b[:n])
		viaProto := got.ProtoReflect().New().Interface()
		protoErr := proto.Unmarshal(b[:n], viaProto)
		switch {
		case (protoErr == nil) != (err == nil):
			t.Fatalf("%s, first %d of %d bytes: proto.Unmarshal %v, the decoder %v", what, n, len(b), protoErr, err)
		case err == nil:
			if diff := cmp.Diff(viaProto, got, protocmp.Transform()); diff != "" {
				t.Fatalf("%s, first %d of %d bytes (-proto.Unmarshal +the decoder):\n%s", what, n, len(b), diff)
			}
		}
	}
}

// checkDecodesAsProto: when proto.Unmarshal decodes b, decode decodes it to the same message,
// unknown fields apart (the fuzz tests).
func checkDecodesAsProto[M proto.Message](t *testing.T, b []byte, decode func([]byte) (M, error)) {
	t.Helper()
	var zero M
	want := zero.ProtoReflect().New().Interface()
	if proto.Unmarshal(b, want) != nil {
		return
	}
	got, err := decode(b)
	if err != nil {
		t.Fatalf("proto.Unmarshal decodes %x, the decoder: %v", b, err)
	}
	if diff := cmp.Diff(want, got, protocmp.Transform(), protocmp.IgnoreUnknown()); diff != "" {
		t.Fatalf("%x (-proto.Unmarshal +the decoder):\n%s", b, diff)
	}
}

// The cases of the wire format that proto.Marshal does not write: unknown fields (skipped), a
// known field of another wire type (skipped as unknown, as proto.Unmarshal does), a field given
// twice (the last wins; a map key's last value), a publish time given in two parts (merged), a
// map entry without its value (""), and a string that is not UTF-8, which proto.Unmarshal
// refuses and Decode keeps.
func TestDecodeWireCases(t *testing.T) {
	var b []byte
	b = protowire.AppendTag(b, 99, protowire.BytesType)
	b = protowire.AppendString(b, "unknown")
	b = protowire.AppendTag(b, fieldMessageID, protowire.VarintType) // the id, as a varint
	b = protowire.AppendVarint(b, 7)
	b = protowire.AppendTag(b, fieldData, protowire.BytesType)
	b = protowire.AppendString(b, "first")
	b = protowire.AppendTag(b, fieldData, protowire.BytesType)
	b = protowire.AppendString(b, `{"a":1}`)
	entry := func(k, v string, withValue bool) []byte {
		var e []byte
		e = protowire.AppendTag(e, fieldKey, protowire.BytesType)
		e = protowire.AppendString(e, k)
		if withValue {
			e = protowire.AppendTag(e, fieldValue, protowire.BytesType)
			e = protowire.AppendString(e, v)
		}
		return e
	}
	for _, e := range [][]byte{entry("k", "1", true), entry("k", "2", true), entry("empty", "", false), entry("bad", "\xff\xfe", true)} {
		b = protowire.AppendTag(b, fieldAttributes, protowire.BytesType)
		b = protowire.AppendBytes(b, e)
	}
	var seconds, nanos []byte
	seconds = protowire.AppendTag(seconds, fieldSeconds, protowire.VarintType)
	seconds = protowire.AppendVarint(seconds, 1700000000)
	nanos = protowire.AppendTag(nanos, fieldNanos, protowire.VarintType)
	nanos = protowire.AppendVarint(nanos, 5)
	b = protowire.AppendTag(b, fieldPublishTime, protowire.BytesType)
	b = protowire.AppendBytes(b, seconds)
	b = protowire.AppendTag(b, fieldPublishTime, protowire.BytesType)
	b = protowire.AppendBytes(b, nanos)
	b = protowire.AppendTag(b, fieldOrderingKey, protowire.BytesType)
	b = protowire.AppendString(b, "key")

	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	want := &pb.PubsubMessage{
		Data:        []byte(`{"a":1}`),
		Attributes:  map[string]string{"k": "2", "empty": "", "bad": "\xff\xfe"},
		PublishTime: &timestamppb.Timestamp{Seconds: 1700000000, Nanos: 5},
		OrderingKey: "key",
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := proto.Unmarshal(b, new(pb.PubsubMessage)); err == nil {
		t.Error("proto.Unmarshal took an attribute that is not UTF-8: this test no longer shows where the two differ")
	}
	// Truncated fields, a bad tag, and field numbers above 2^29-1 (which protowire.ConsumeTag
	// takes and proto.Unmarshal refuses), at the top, in a publish time and in a map entry.
	for _, hex := range []string{"0a0561", "ff", "12020a05", "808080801001", "f8ffffff3f01", "2206808080801001", "12090a016b808080801001"} {
		bad, err := hexpkg.DecodeString(hex)
		if err != nil {
			t.Fatal(err)
		}
		if proto.Unmarshal(bad, new(pb.PubsubMessage)) == nil {
			t.Errorf("proto.Unmarshal takes %s: not a case of bad wire format", hex)
		}
		if m, err := Decode(bad); err == nil {
			t.Errorf("Decode(%s) = %v, want an error", hex, m)
		}
	}
}

// The graph of Read is the SDK's pubsubio.Read with attributes, whole: the pipeline protos of the
// two (transforms and their names, inputs and outputs, the external transform's payload,
// PCollections, coders to their components, windowing, environments) are equal once the function
// behind the decoding step is taken out of its ParDo payload, the one part that differs. A
// running job's update matches steps by name.
func TestGraphAsTheSDKs(t *testing.T) {
	model := func(read func(s beam.Scope) beam.PCollection) *pipepb.Pipeline {
		p, s := beam.NewPipelineWithRoot()
		read(s.Scope("Read"))
		edges, _, err := p.Build()
		if err != nil {
			t.Fatal(err)
		}
		m, err := graphx.Marshal(edges, &graphx.Options{Environment: &pipepb.Environment{Urn: "beam:env:docker:v1"}})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	sdk := model(func(s beam.Scope) beam.PCollection {
		return sdkpubsubio.Read(s, "my-project", sdkpubsubio.ReadOptions{Subscription: "events", WithAttributes: true})
	})
	ours := model(func(s beam.Scope) beam.PCollection { return Read(s, "my-project", "events") })

	names := map[string]bool{}
	for _, m := range []*pipepb.Pipeline{sdk, ours} {
		for _, tr := range m.GetComponents().GetTransforms() {
			if m == ours {
				names[tr.GetUniqueName()] = true
			}
			if tr.GetSpec().GetUrn() != "beam:transform:pardo:v1" {
				continue
			}
			var pardo pipepb.ParDoPayload
			if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pardo); err != nil {
				t.Fatal(err)
			}
			pardo.GetDoFn().Payload = nil
			b, err := proto.Marshal(&pardo)
			if err != nil {
				t.Fatal(err)
			}
			tr.Spec.Payload = b
		}
	}
	for _, name := range []string{"Read/pubsubio.Read/External", "Read/pubsubio.Read/pubsubio.unmarshalMessageFn"} {
		if !names[name] {
			t.Errorf("no step %q; the steps: %v", name, names)
		}
	}
	if diff := cmp.Diff(sdk, ours, protocmp.Transform()); diff != "" {
		t.Errorf("the graph differs from the SDK's beyond the decoding step's function (-the SDK's +ours):\n%s", diff)
	}
}

// BenchmarkUnmarshal decodes demo events of 1.1 KB as Dataflow's read hands them over: with
// proto.Unmarshal (the SDK's pubsubio) and with Decode.
func BenchmarkUnmarshal(b *testing.B) {
	gen := events.NewGenerator(1, time.Now())
	msgs := make([][]byte, 1000)
	for i := range msgs {
		_, data := gen.Next()
		var err error
		msgs[i], err = proto.Marshal(&pb.PubsubMessage{Data: data, Attributes: map[string]string{"source": "demo"},
			MessageId: strconv.Itoa(1_000_000_000 + i), PublishTime: timestamppb.Now()})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Run("proto.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := proto.Unmarshal(msgs[i%len(msgs)], new(pb.PubsubMessage)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Decode", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := Decode(msgs[i%len(msgs)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzDecode: whatever proto.Unmarshal decodes, Decode decodes to the same message (unknown
// fields apart, which Decode drops).
func FuzzDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	fuzzAsProto(f, 20, func() *pb.PubsubMessage { return randomMessage(r) }, Decode)
}

// fuzzAsProto fuzzes decode against proto.Unmarshal (checkDecodesAsProto), from a corpus of the
// encodings of n messages that seed makes.
func fuzzAsProto[M proto.Message](f *testing.F, n int, seed func() M, decode func([]byte) (M, error)) {
	for range n {
		b, err := proto.Marshal(seed())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecodesAsProto(t, b, decode) })
}
