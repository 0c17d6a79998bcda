package flow_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/shared"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

func TestRowsRoundTrip(t *testing.T) {
	for _, in := range []flow.Rows{
		{},
		{Rows: []flow.Row{{}}},
		{Rows: []flow.Row{
			{Payload: []byte(`{"a":1}`), Schema: 0xfedcba9876543210, MessageID: "m1", AckID: "ack-1", Attributes: map[string]string{"b": "2", "a": "1", "": ""}},
			{Payload: []byte{}, MessageID: "m2"},
			{Payload: []byte(strings.Repeat("x", 300)), MessageID: "ü"},
			{Payload: []byte(`{"b":1}`), MessageID: "m4", Transformed: true, Original: []byte(`{"a":1}`)},
			{Payload: []byte(`{}`), MessageID: "m5", Transformed: true, Original: []byte{}},
			{Payload: []byte(`{}`), MessageID: "m6", PublishTimeMillis: 1_700_000_000_123, OrderingKey: "user-7"},
			{Payload: []byte(`{}`), MessageID: "m7", PublishTimeMillis: -1},
			{Payload: []byte(`{}`), MessageID: "m8", OrderingKey: "k", Transformed: true, Original: []byte("o")},
		}},
	} {
		for _, c := range []flow.Compression{flow.MinLZ, flow.S2, flow.Zstd} {
			in.Compression = c
			got, err := flow.DecodeRows(flow.EncodeRows(in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(in, got, emptyIsNil, ignoreCompression); diff != "" {
				t.Errorf("%v: (-in +decoded):\n%s", c, diff)
			}
		}
	}
}

// ignoreCompression: decoding does not give the element's Compression back.
var ignoreCompression = cmpopts.IgnoreFields(flow.Rows{}, "Compression")

// TestCompressionFormats: a group worth compressing is written in the format its Compression
// names (the format byte 3 for MinLZ, 1 for S2, 2 for zstd), one that compression does not shrink
// is written plain (0), a group larger than a MinLZ block (8 MiB) is written with S2, and a
// pipeline decodes every format whatever its own Compression: the groups an updated job finds in
// its state were written by the job before.
func TestCompressionFormats(t *testing.T) {
	demo, _ := demoRows(200, true)
	random := make([]byte, 500)
	rand.NewChaCha8([32]byte{2}).Read(random)
	incompressible := flow.Rows{Rows: []flow.Row{{Payload: random, MessageID: "m"}}}
	// Just over MinLZ's largest block (minlz.MaxBlockSize, 8 MiB) with its framing, and
	// compressible.
	large := flow.Rows{Rows: []flow.Row{{Payload: bytes.Repeat([]byte(`{"a":"bcdefg"},`), 8<<20/15), MessageID: "big"}}}
	for _, tc := range []struct {
		rows   flow.Rows
		c      flow.Compression
		format byte
	}{
		{demo, flow.MinLZ, 3},
		{demo, flow.S2, 1},
		{demo, flow.Zstd, 2},
		{incompressible, flow.MinLZ, 0},
		{incompressible, flow.S2, 0},
		{incompressible, flow.Zstd, 0},
		{large, flow.MinLZ, 1},
	} {
		tc.rows.Compression = tc.c
		b := flow.EncodeRows(tc.rows)
		if b[0] != tc.format {
			t.Errorf("%d rows, %v: format %d, want %d", len(tc.rows.Rows), tc.c, b[0], tc.format)
		}
		got, err := flow.DecodeRows(b)
		if err != nil {
			t.Fatalf("%d rows, %v: %v", len(tc.rows.Rows), tc.c, err)
		}
		if !cmp.Equal(got.Rows, tc.rows.Rows, emptyIsNil, byteSlices) {
			t.Errorf("%d rows, %v: the decoded rows differ", len(tc.rows.Rows), tc.c)
		}
		p := flow.Pack(tc.rows)
		if p.Data[0] != tc.format {
			t.Errorf("Pack of %d rows, %v: format %d, want %d", len(tc.rows.Rows), tc.c, p.Data[0], tc.format)
		}
		for _, pooled := range []bool{false, true} {
			q, err := flow.DecodePacked(bytes.Clone(flow.EncodePacked(p)))
			if err != nil {
				t.Fatal(err)
			}
			var rs flow.Rows
			release := func() {}
			if pooled {
				rs, release, err = q.UnpackPooled()
			} else {
				rs, err = q.Unpack()
			}
			if err != nil || !cmp.Equal(rs.Rows, tc.rows.Rows, emptyIsNil, byteSlices) {
				t.Errorf("Pack of %d rows, %v, unpacked (pooled %v): %v, or the rows differ", len(tc.rows.Rows), tc.c, pooled, err)
			}
			release()
		}
	}
}

// byteSlices compares byte slices whole (cmp compares them byte by byte otherwise: a minute for a
// payload of megabytes); two empty ones are emptyIsNil's.
var byteSlices = cmp.FilterValues(func(a, b []byte) bool { return len(a) > 0 || len(b) > 0 }, cmp.Comparer(bytes.Equal))

func TestParseCompression(t *testing.T) {
	for in, want := range map[string]flow.Compression{"": flow.MinLZ, "minlz": flow.MinLZ, "s2": flow.S2, "zstd": flow.Zstd} {
		if got, err := flow.ParseCompression(in); err != nil || got != want {
			t.Errorf("ParseCompression(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"S2", "MinLZ", "zstd ", "lz4", "none", "snappy"} {
		if _, err := flow.ParseCompression(in); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", in)) || !strings.Contains(err.Error(), "minlz, s2 or zstd") {
			t.Errorf("ParseCompression(%q): %v, want an error naming the value and the values taken", in, err)
		}
	}
	if got := strings.Join(flow.CompressionNames(), ","); got != "minlz,s2,zstd" {
		t.Errorf("CompressionNames = %s", got)
	}
	for _, c := range []flow.Compression{flow.MinLZ, flow.S2, flow.Zstd} {
		if back, err := flow.ParseCompression(c.String()); err != nil || back != c {
			t.Errorf("%v does not parse back: %v, %v", c, back, err)
		}
	}
}

// Rows of one element with the same attributes share a map; rows whose attributes differ, come
// between them, or are a prefix of the others' (a key more) get maps of their own, with their
// own values.
func TestRowsShareEqualAttributes(t *testing.T) {
	a := func() map[string]string { return map[string]string{"source": "demo", "v": "1"} }
	in := flow.Rows{Rows: []flow.Row{
		{MessageID: "1", Attributes: a()},
		{MessageID: "2", Attributes: a()},
		{MessageID: "3", Attributes: map[string]string{"source": "demo", "v": "1", "w": "2"}},
		{MessageID: "4"},
		{MessageID: "5", Attributes: map[string]string{"source": "demo", "v": "2"}},
		{MessageID: "6", Attributes: a()},
		{MessageID: "7", Attributes: a()},
	}}
	got, err := flow.DecodeRows(flow.EncodeRows(in))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, got, emptyIsNil); diff != "" {
		t.Fatalf("(-in +decoded):\n%s", diff)
	}
	same := func(i, j int) bool {
		return fmt.Sprintf("%p", got.Rows[i].Attributes) == fmt.Sprintf("%p", got.Rows[j].Attributes)
	}
	if !same(0, 1) || !same(5, 6) {
		t.Error("rows with the same attributes next to each other got maps of their own")
	}
	if same(1, 2) || same(2, 4) || same(4, 5) {
		t.Error("rows with other attributes share a map")
	}
}

// Rows and messages that share one map of attributes encode as they do with maps of their own:
// the encoder takes a shared map's encoding again, and only a shared map's, whatever comes
// between (another map, none, an empty one, a map of the same contents).
func TestEncodeSharedAttributes(t *testing.T) {
	a := map[string]string{"source": "demo", "v": "1"}
	b := map[string]string{"source": "demo", "v": "2"}
	shared := []map[string]string{a, a, a, b, a, nil, a, {}, a, maps.Clone(a), b, b}
	var rows, own flow.Rows
	var messages, ownMessages flow.Messages
	for i, m := range shared {
		id := strconv.Itoa(i)
		rows.Rows = append(rows.Rows, flow.Row{MessageID: id, Payload: []byte("{}"), Attributes: m})
		own.Rows = append(own.Rows, flow.Row{MessageID: id, Payload: []byte("{}"), Attributes: maps.Clone(m)})
		messages.Messages = append(messages.Messages, flow.Message{ID: id, Attributes: m})
		ownMessages.Messages = append(ownMessages.Messages, flow.Message{ID: id, Attributes: maps.Clone(m)})
	}
	if got, want := flow.EncodeRows(rows), flow.EncodeRows(own); !bytes.Equal(got, want) {
		t.Errorf("rows sharing maps encode as\n%q\nwith maps of their own as\n%q", got, want)
	}
	if got, want := flow.EncodedRowsSize(rows), flow.EncodedRowsSize(own); got != want {
		t.Errorf("EncodedRowsSize: %d sharing maps, %d with maps of their own", got, want)
	}
	if got, want := flow.EncodeMessages(messages), flow.EncodeMessages(ownMessages); !bytes.Equal(got, want) {
		t.Errorf("messages sharing maps encode as\n%q\nwith maps of their own as\n%q", got, want)
	}
	back, err := flow.DecodeRows(flow.EncodeRows(rows))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(own, back, emptyIsNil); diff != "" {
		t.Errorf("(-in +decoded):\n%s", diff)
	}
}

func TestMessagesRoundTrip(t *testing.T) {
	in := flow.Messages{Messages: []flow.Message{
		{ID: "1", Data: []byte("{}"), Attributes: map[string]string{"k": "v"}, PublishTimeMillis: 1_700_000_000_123, AckID: "a", OrderingKey: "user-7"},
		{ID: "2", PublishTimeMillis: -5},
		{ID: "3", Data: []byte("{}"), Transformed: true, Original: []byte("orig")},
	}}
	got, err := flow.DecodeMessages(flow.EncodeMessages(in))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, got, emptyIsNil); diff != "" {
		t.Errorf("(-in +decoded):\n%s", diff)
	}
	if got, err := flow.DecodeMessages(flow.EncodeMessages(flow.Messages{})); err != nil || len(got.Messages) != 0 {
		t.Errorf("heartbeat decodes as %v, %v", got, err)
	}
}

// TestDecodeRejectsCorruptBytes: every strict prefix, and trailing bytes, are errors, not panics.
func TestDecodeRejectsCorruptBytes(t *testing.T) {
	for _, r := range []flow.Row{
		{Payload: []byte("abc"), MessageID: "m", Attributes: map[string]string{"k": "v"}},
		{Payload: []byte("abc"), MessageID: "m", PublishTimeMillis: 1_700_000_000_123, OrderingKey: "key"},
	} {
		b := flow.EncodeRows(flow.Rows{Rows: []flow.Row{r}})
		for n := 0; n < len(b); n++ {
			if _, err := flow.DecodeRows(b[:n]); err == nil {
				t.Errorf("DecodeRows of the first %d of %d bytes: no error", n, len(b))
			}
		}
		if _, err := flow.DecodeRows(append(b, 0)); err == nil {
			t.Error("DecodeRows with a trailing byte: no error")
		}
	}
	// A compressed group cut short, or with a byte more, is an error too, in each format; so is
	// a zstd frame whose header claims more than any group holds.
	demo, _ := demoRows(20, false)
	for _, c := range []flow.Compression{flow.MinLZ, flow.S2, flow.Zstd} {
		demo.Compression = c
		b := flow.EncodeRows(demo)
		for n := 0; n < len(b); n++ {
			if _, err := flow.DecodeRows(b[:n]); err == nil {
				t.Errorf("%v: DecodeRows of the first %d of %d bytes: no error", c, n, len(b))
			}
		}
		if _, err := flow.DecodeRows(append(b, 0)); err == nil {
			t.Errorf("%v: DecodeRows with a trailing byte: no error", c)
		}
	}
	// A zstd group of 2^40 bytes, as its length says, and one whose frame holds a byte less than
	// its length says.
	huge := append([]byte{2}, binary.AppendUvarint(nil, 1<<40)...)
	if _, err := flow.DecodeRows(append(huge, flow.EncodeRows(demo)[1:]...)); err == nil {
		t.Error("a zstd group whose length says 2^40 bytes: no error")
	}
	if got := (flow.Packed{Rows: 1, Data: huge}).RowBytes(); got != -1 {
		t.Errorf("RowBytes of a zstd group whose length says 2^40 bytes = %d, want -1", got)
	}
	short := flow.EncodeRows(demo)
	n, k := binary.Uvarint(short[1:])
	short = append(append([]byte{2}, binary.AppendUvarint(nil, n+1)...), short[1+k:]...)
	if _, err := flow.DecodeRows(short); err == nil || !strings.Contains(err.Error(), "length says") {
		t.Errorf("a zstd group a byte shorter than its length says: %v, want an error saying so", err)
	}
	// A frame that holds more than the length says, or whose own header claims more (2^28
	// bytes, within the decoder's largest window), fails in either decode, and allocates no more
	// than the length.
	long := flow.EncodeRows(demo)
	long = append(append([]byte{2}, binary.AppendUvarint(nil, n-1)...), long[1+k:]...)
	claims := append([]byte{2}, binary.AppendUvarint(nil, 100)...)
	// The magic number, a descriptor of a single segment with a 4-byte content size, 2^28, then
	// a raw block of 100 bytes (the last) that the header's size does not match.
	claims = append(claims, 0x28, 0xb5, 0x2f, 0xfd, 0xa0, 0, 0, 0, 0x10, 0x21, 0x03, 0)
	claims = append(claims, make([]byte, 100)...)
	// A skippable frame (RFC 8878, section 3.1.2: magic 0x184D2A50, 4 bytes of size, the bytes)
	// where the group's frame should be is refused before the library reads it (which would
	// print a line to stderr).
	skippable := append(append([]byte{2}, binary.AppendUvarint(nil, 4)...), 0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4)
	if _, err := flow.DecodeRows(skippable); err == nil || !strings.Contains(err.Error(), "magic number") {
		t.Errorf("a skippable frame for a group: %v, want an error naming zstd's magic number", err)
	}
	for name, b := range map[string][]byte{"a byte longer than its length": long, "claiming 2^28 bytes": claims} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := flow.DecodeRows(b)
		p, _ := flow.DecodePacked(append([]byte{byte(len(demo.Rows))}, b...))
		_, release, errPooled := p.UnpackPooled()
		release()
		runtime.ReadMemStats(&after)
		if err == nil || errPooled == nil {
			t.Errorf("a zstd frame %s: %v, pooled %v; want errors", name, err, errPooled)
		}
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
			t.Errorf("a zstd frame %s: %d bytes allocated to find out", name, grown)
		}
	}
	m := flow.EncodeMessages(flow.Messages{Messages: []flow.Message{{ID: "m", Data: []byte("{}"), PublishTimeMillis: 7, OrderingKey: "key"}}})
	for n := 0; n < len(m); n++ {
		if _, err := flow.DecodeMessages(m[:n]); err == nil {
			t.Errorf("DecodeMessages of the first %d of %d bytes: no error", n, len(m))
		}
	}
}

// emptyIsNil: the coder does not tell an empty slice from nil.
var emptyIsNil = cmpopts.EquateEmpty()

// demoRows is a batch of n rows of the demo's events as the parse stage emits them; ackID says
// whether they carry an ack id as long as the emulator's (the message id; none on Dataflow).
func demoRows(n int, ackID bool) (flow.Rows, int) {
	gen := events.NewGenerator(1, time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	return rowsOf(n, ackID, func() []byte { _, data := gen.Next(); return data })
}

// wikiRows is demoRows of the first n lines of the shared corpus wikipedia_edits.jsonl.
func wikiRows(b *testing.B, n int) (flow.Rows, int) {
	f, err := os.ReadFile(filepath.Join(shared.Dir(b), "data", "wikipedia_edits.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(f), []byte("\n"))
	i := 0
	return rowsOf(n, false, func() []byte { i++; return lines[(i-1)%len(lines)] })
}

// rowsOf is a batch of n rows of the payloads next gives.
func rowsOf(n int, ackID bool, next func() []byte) (flow.Rows, int) {
	rows := flow.Rows{Rows: make([]flow.Row, n)}
	payload := 0
	for i := range rows.Rows {
		data := next()
		id := fmt.Sprint(17_000_000_000_000 + i) // a Pub/Sub message id: about 16 digits
		rows.Rows[i] = flow.Row{Payload: data, Schema: 0x9e3779b97f4a7c15, MessageID: id}
		if ackID {
			rows.Rows[i].AckID = id
		}
		payload += len(data)
	}
	return rows, payload
}

// BenchmarkEncodeRows measures the element that goes through the batch stage's GroupByKey and
// state (on Dataflow, what Streaming Engine bills): a group of rows packed (flow.Pack, then its
// coder), in encoded bytes per payload byte, as the metric bytes/payload-byte, on the demo events
// and on the Wikipedia edits, for elements of 1,000, 100 and 10 rows (the parse stage gathers the
// rows of a bundle into one element) and of one row (a stream of one message per bundle, where
// no element of many rows forms), with each Compression (shuffleCompression): minlz/..., s2/...,
// zstd/....
func BenchmarkEncodeRows(b *testing.B) {
	for _, tc := range []struct {
		name  string
		rows  int
		ackID bool
		wiki  bool
	}{
		{"dataflow/demo/1000-rows", 1000, false, false},
		{"dataflow/demo/100-rows", 100, false, false},
		{"dataflow/demo/10-rows", 10, false, false},
		{"dataflow/demo/1-row", 1, false, false},
		{"dataflow/wikipedia/1000-rows", 1000, false, true},
		{"dataflow/wikipedia/100-rows", 100, false, true},
		{"dataflow/wikipedia/10-rows", 10, false, true},
		{"dataflow/wikipedia/1-row", 1, false, true},
		{"local/demo/1000-rows", 1000, true, false},
	} {
		for _, c := range []flow.Compression{flow.MinLZ, flow.S2, flow.Zstd} {
			b.Run(c.String()+"/"+tc.name, func(b *testing.B) {
				rows, payload := demoRows(tc.rows, tc.ackID)
				if tc.wiki {
					rows, payload = wikiRows(b, tc.rows)
				}
				rows.Compression = c
				var encoded int
				b.SetBytes(int64(payload))
				b.ReportAllocs()
				for b.Loop() {
					encoded = len(flow.EncodePacked(flow.Pack(rows)))
				}
				b.ReportMetric(float64(encoded)/float64(payload), "bytes/payload-byte")
				b.ReportMetric(float64(encoded-payload)/float64(tc.rows), "overhead-bytes/row")
			})
		}
	}
}

// BenchmarkDecodeRows measures the decoding of an element of 1,000 demo rows.
func BenchmarkDecodeRows(b *testing.B) {
	rows, payload := demoRows(1000, false)
	enc := flow.EncodeRows(rows)
	b.SetBytes(int64(payload))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := flow.DecodeRows(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPacked: a packed group decodes to its rows, through its own coder; the zero Packed is an
// empty group; a count that disagrees with the rows is an error.
func TestPacked(t *testing.T) {
	rs := flow.Rows{Rows: []flow.Row{{Payload: []byte(`{"a":1}`), MessageID: "m1", AckID: "a1", Schema: 7}, {Payload: []byte(`{"a":2}`), MessageID: "m2"}}}
	p, err := flow.DecodePacked(flow.EncodePacked(flow.Pack(rs)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Unpack()
	if err != nil {
		t.Fatal(err)
	}
	if p.Rows != 2 || !cmp.Equal(got, rs, cmpopts.EquateEmpty()) {
		t.Errorf("Unpack = %d rows %+v, want %+v", p.Rows, got, rs)
	}
	if got, err := (flow.Packed{}).Unpack(); err != nil || len(got.Rows) != 0 {
		t.Errorf("the zero Packed: %+v, %v", got, err)
	}
	if zero, err := flow.DecodePacked(flow.EncodePacked(flow.Packed{})); err != nil || zero.Rows != 0 {
		t.Errorf("the zero Packed through its coder: %+v, %v", zero, err)
	}
	p.Rows = 3
	if _, err := p.Unpack(); err == nil || !strings.Contains(err.Error(), "3") {
		t.Errorf("a count of 3 for 2 rows: %v, want an error", err)
	}
	if _, err := flow.DecodePacked(nil); err == nil {
		t.Error("flow.DecodePacked(nil): no error")
	}
}

// TestUnpackPooled: a group decoded into a pooled buffer is the group Unpack decodes, also when
// the pool hands back a buffer a larger or a smaller group used before; a group too large for
// the buffer in the pool gets a larger one; corrupt data and a wrong count are errors, with a
// release to call all the same.
func TestUnpackPooled(t *testing.T) {
	large, _ := demoRows(300, true)
	small, _ := demoRows(3, false)
	plain := flow.Rows{Rows: []flow.Row{{Payload: []byte(`{}`), MessageID: "m"}}} // under the size worth compressing
	for i, rs := range []flow.Rows{small, large, small, plain, large, {}} {
		p := flow.Pack(rs)
		got, release, err := p.UnpackPooled()
		if err != nil {
			t.Fatalf("group %d: %v", i, err)
		}
		if !cmp.Equal(got, rs, cmpopts.EquateEmpty()) {
			t.Errorf("group %d: UnpackPooled differs from the rows packed", i)
		}
		release()
	}
	// Two groups held at once do not share a buffer.
	a, releaseA, errA := flow.Pack(large).UnpackPooled()
	b, releaseB, errB := flow.Pack(small).UnpackPooled()
	if errA != nil || errB != nil || !cmp.Equal(a, large) || !cmp.Equal(b, small, cmpopts.EquateEmpty()) {
		t.Errorf("two groups held at once: %v, %v, or their rows differ", errA, errB)
	}
	releaseA()
	releaseB()

	p := flow.Pack(large)
	p.Rows = 299
	if _, release, err := p.UnpackPooled(); err == nil || release == nil {
		t.Errorf("a count of 299 for 300 rows: %v, want an error and a release", err)
	} else {
		release()
	}
	for format, name := range map[byte]string{1: "S2", 3: "MinLZ"} {
		corrupt := flow.Packed{Rows: 3, Data: append([]byte{format}, bytes.Repeat([]byte{0xff}, 20)...)}
		if _, release, err := corrupt.UnpackPooled(); err == nil || release == nil {
			t.Errorf("corrupt %s data: %v, want an error and a release", name, err)
		} else {
			release()
		}
	}
	// An S2 block after MinLZ's format byte: minlz.Decode would take it, the coder does not.
	s2Group := flow.EncodeRows(flow.Rows{Rows: large.Rows, Compression: flow.S2})
	if _, err := flow.DecodeRows(append([]byte{3}, s2Group[1:]...)); err == nil {
		t.Error("an S2 block under MinLZ's format byte decoded, want an error")
	}
	// Nor is an S2 header under it a length: one claiming 512 MiB gives no size (RowBytes -1,
	// which the batcher takes as a group it cannot count) and no buffer of that size.
	claim := flow.Packed{Rows: 1, Data: append(binary.AppendUvarint([]byte{3}, 512<<20), 0)}
	if got := claim.RowBytes(); got != -1 {
		t.Errorf("RowBytes of an S2 header claiming 512 MiB under MinLZ's format byte = %d, want -1", got)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, release, err := claim.UnpackPooled(); err == nil {
		t.Error("an S2 header under MinLZ's format byte unpacked, want an error")
	} else {
		release()
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("unpacking a 7-byte group allocated %d MiB", grew>>20)
	}
}

// BenchmarkUnpack: a group of 1,000 demo rows decoded into a new buffer (Unpack) and into a
// pooled one (UnpackPooled), as the batch stage decodes the groups it buffered, compressed with
// each Compression.
func BenchmarkUnpack(b *testing.B) {
	rows, payload := demoRows(1000, false)
	for _, c := range []flow.Compression{flow.MinLZ, flow.S2, flow.Zstd} {
		rows.Compression = c
		p := flow.Pack(rows)
		b.Run(c.String()+"/new", func(b *testing.B) {
			b.SetBytes(int64(payload))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Unpack(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.String()+"/pooled", func(b *testing.B) {
			b.SetBytes(int64(payload))
			b.ReportAllocs()
			for b.Loop() {
				_, release, err := p.UnpackPooled()
				if err != nil {
					b.Fatal(err)
				}
				release()
			}
		})
	}
}

// TestDecodePackedEncodesAsItCame: a decoded group encodes to the bytes it came in, shared.
func TestDecodePackedEncodesAsItCame(t *testing.T) {
	rows, _ := demoRows(20, true)
	b := flow.EncodePacked(flow.Pack(rows))
	in := bytes.Clone(b)
	p, err := flow.DecodePacked(in)
	if err != nil {
		t.Fatal(err)
	}
	if out := flow.EncodePacked(p); !bytes.Equal(out, b) || &out[0] != &in[0] {
		t.Errorf("EncodePacked of a decoded group: equal %v, shared %v; want the bytes it came in", bytes.Equal(out, b), len(out) > 0 && &out[0] == &in[0])
	}
}

// TestRowBytes: RowBytes is each row's exact share of the uncompressed encoding, and
// Packed.RowBytes their sum read from the encoding without decoding it, compressed or not.
func TestRowBytes(t *testing.T) {
	// Payloads, originals and long ids of random bytes, none repeated: EncodeRows keeps the rows
	// plain, so the encoding's length can be checked.
	random := make([]byte, 2000)
	rand.NewChaCha8([32]byte{1}).Read(random)
	next := func(n int) []byte { b := random[:n]; random = random[n:]; return b }
	shapes := []flow.Row{
		{Payload: next(300), Schema: 0xfedcba9876543210, MessageID: "m1", AckID: "ack-1", Attributes: map[string]string{"b": "2", "a": "1", "": ""}},
		{Payload: []byte{}, MessageID: "m2"},
		{Payload: next(200), MessageID: "ü", AckID: string(next(130))},
		{Payload: next(9), MessageID: "m4", Transformed: true, Original: next(150)},
		{Payload: next(1), MessageID: "m5", Transformed: true, Original: []byte{}},
		{Payload: next(2), MessageID: "m6", PublishTimeMillis: 1_700_000_000_123, OrderingKey: "user-7"},
		{Payload: next(3), MessageID: "m7", PublishTimeMillis: -1},
		{Payload: next(4), MessageID: "m8", OrderingKey: string(next(200)), Transformed: true, Original: []byte("o")},
	}
	sum := 0
	for i := range shapes {
		sum += flow.RowBytes(&shapes[i])
	}
	plain := flow.EncodeRows(flow.Rows{Rows: shapes})
	if plain[0] != 0 {
		t.Fatalf("the rows of random payloads were compressed (format %d); the test needs them plain", plain[0])
	}
	if want := len(plain) - 2; sum != want { // the format byte, the count of 8 rows
		t.Errorf("RowBytes summed = %d, want %d (the encoding's length without its format byte and count)", sum, want)
	}
	if got := flow.Pack(flow.Rows{Rows: shapes}).RowBytes(); got != sum {
		t.Errorf("Packed.RowBytes of the plain rows = %d, want %d", got, sum)
	}

	demo, _ := demoRows(200, true)
	sum = 0
	for i := range demo.Rows {
		sum += flow.RowBytes(&demo.Rows[i])
	}
	for c, format := range map[flow.Compression]byte{flow.MinLZ: 3, flow.S2: 1, flow.Zstd: 2} {
		demo.Compression = c
		p := flow.Pack(demo)
		if p.Data[0] != format {
			t.Fatalf("200 demo rows were not compressed with %v (format %d)", c, p.Data[0])
		}
		if got := p.RowBytes(); got != sum {
			t.Errorf("Packed.RowBytes of 200 demo rows compressed with %v = %d, want %d", c, got, sum)
		}
	}
	if got := (flow.Packed{}).RowBytes(); got != 0 {
		t.Errorf("the zero Packed: RowBytes = %d, want 0", got)
	}
	for _, bad := range []flow.Packed{{Rows: 1}, {Rows: 1, Data: []byte{9, 1}}, {Rows: 1, Data: []byte{1, 0xff}}, {Rows: 1, Data: []byte{2, 0xff}}, {Rows: 1, Data: []byte{3, 0xff}}} {
		if got := bad.RowBytes(); got != -1 {
			t.Errorf("RowBytes of %v = %d, want -1", bad.Data, got)
		}
	}
}
