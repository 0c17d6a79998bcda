package integration_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
)

// rfc3339Millis is how publish_time reads in a String column.
const rfc3339Millis = "2006-01-02T15:04:05.000Z"

// TestMetadataColumnsEndToEnd publishes messages with attributes and ordering keys, runs the
// pipeline on prism with metadataColumns and unknownFieldsColumn, and reads back every metadata
// column of each type ClickHouse 18.16 has (DateTime64 and Map are in
// TestMetadataColumnsEncoding): the message id, the publish time as DateTime, Int64, UInt64 and
// String, the ordering key into Nullable(String) and into a column with a DEFAULT, an attribute
// "42" into UInt32, a missing attribute as NULL and as the DEFAULT of a LowCardinality column,
// all attributes as a JSON object, and the payload's fields without a column byte for byte. A
// message without the attribute of a UInt32 column without DEFAULT, and one whose attribute is
// not a number, are dead letters with their original bytes.
func TestMetadataColumnsEndToEnd(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (a UInt8, msg_id String, pt DateTime, pt_ms Int64, pt_u UInt64, pt_s String,
		ok Nullable(String), ok_d String DEFAULT 'none', n UInt32, src Nullable(String), region LowCardinality(String) DEFAULT 'none',
		attrs String, unknown String) ENGINE = MergeTree ORDER BY a`)
	e.opts.MetadataColumns = "message_id=msg_id,publish_time=pt,publish_time=pt_ms,publish_time=pt_u,publish_time=pt_s," +
		"ordering_key=ok,ordering_key=ok_d,attribute.n=n,attribute.src=src,attribute.region=region,attributes=attrs"
	e.opts.UnknownFieldsColumn = "unknown"
	e.opts.WindowSeconds = pipeline1s
	msgs := []*pubsubpb.PubsubMessage{
		{Data: []byte(`{"a":1,"msg_id":"from the payload", "extra" : {"x" :  [1, 2.50]},"caf\u00e9":"\u00e9\"","num":1.0e+2}`),
			Attributes: map[string]string{"n": "42", "src": "web", "region": "eu"}, OrderingKey: "user-1"},
		{Data: []byte(`{"a":2}`), Attributes: map[string]string{"n": "7"}},
		{Data: []byte(`{"a":3}`), Attributes: map[string]string{"src": "app"}, OrderingKey: "user-3"},
		{Data: []byte(`{"a":4}`), Attributes: map[string]string{"n": "x"}},
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	e.run(t)

	published := map[string]time.Time{}
	for _, m := range e.ps.Server.Messages() {
		published[m.ID] = m.PublishTime
	}
	row := func(i int, rest string) string {
		ms := published[ids[i]].UnixMilli()
		return fmt.Sprintf("%d\t%s\t%d\t%d\t%d\t%s\t%s", i+1, ids[i], ms/1000, ms, ms, time.UnixMilli(ms).UTC().Format(rfc3339Millis), rest)
	}
	want := strings.Join([]string{
		row(0, `user-1	user-1	42	web	eu	{"n":"42","region":"eu","src":"web"}	{"msg_id":"from the payload","extra":{"x" :  [1, 2.50]},"caf\u00e9":"\u00e9\"","num":1.0e+2}`),
		row(1, `NULL	none	7	NULL	none	{"n":"7"}	{}`),
	}, "\n")
	got := e.srv.MustQuery(t, "SELECT a, msg_id, toUnixTimestamp(pt), pt_ms, pt_u, pt_s, ifNull(ok, 'NULL'), ok_d, n, ifNull(src, 'NULL'), region, attrs, unknown FROM events ORDER BY a FORMAT TabSeparatedRaw")
	if diff := cmp.Diff(strings.Split(want, "\n"), strings.Split(got, "\n")); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	dead := e.srv.MustQuery(t, "SELECT raw_message, error_message FROM dead_letters ORDER BY raw_message FORMAT TabSeparatedRaw")
	wantDead := `{"a":3}	column "n" (UInt32, from metadataColumns attribute.n=n): the message has no attribute "n", and the column has no DEFAULT and is not Nullable` + "\n" +
		`{"a":4}	column "n" (UInt32, from metadataColumns attribute.n=n): "x" is not a number; UInt32 takes an integer, a string holding one, true or false`
	if diff := cmp.Diff(strings.Split(wantDead, "\n"), strings.Split(dead, "\n")); diff != "" {
		t.Errorf("dead letters (-want +got):\n%s", diff)
	}
	e.checkAllAcked(t, ids)
}

// TestMetadataColumnInGroup runs the pipeline with metadata columns that are members of groups of
// dotted columns, on ClickHouse 18.16: u.id beside u.name, and n.src beside the flattened
// Nested n (n.a, n.b). Each message gives its group in another form (an object, fields of the
// columns' own names, an array of objects, an object of arrays); every one is a row with the
// attributes' values in u.id and n.src, the payload's values for them in unknownFieldsColumn
// under the columns' names, and no dead letter. The object forms were dead letters before
// ("id" names no column: the table has no column "u.id").
func TestMetadataColumnInGroup(t *testing.T) {
	e := newE2E(t, "CREATE TABLE {table} (k UInt8, `u.id` String, `u.name` String, n Nested(a UInt8, b String), `n.src` String, extra String) ENGINE = MergeTree ORDER BY k")
	e.opts.MetadataColumns = "attribute.uid=u.id,attribute.src=n.src"
	e.opts.UnknownFieldsColumn = "extra"
	e.opts.WindowSeconds = pipeline1s
	attrs := map[string]string{"uid": "from-attr", "src": "s"}
	var msgs []*pubsubpb.PubsubMessage
	for _, p := range []string{
		`{"k":1,"u":{"id":"p","name":"q"},"n":{"a":[1,2],"b":["x","y"],"src":"r"}}`,
		`{"k":2,"u.id":"p","u.name":"q","n.a":[1,2],"n.b":["x","y"],"n.src":"r"}`,
		`{"k":3,"u":{"name":"q","id":"p"},"n":[{"a":1,"b":"x","src":"r"},{"a":2,"b":"y"}]}`,
		`{"k":4,"u":{"name":"q"},"n":[{"a":1,"b":"x"},{"a":2,"b":"y"}]}`,
	} {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(p), Attributes: attrs})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	e.run(t)

	want := []string{
		"1	from-attr	q	[1,2]	['x','y']	s	" + `{"u.id":"p","n.src":"r"}`,
		"2	from-attr	q	[1,2]	['x','y']	s	" + `{"u.id":"p","n.src":"r"}`,
		"3	from-attr	q	[1,2]	['x','y']	s	" + `{"u.id":"p","n.src":"r"}`,
		"4	from-attr	q	[1,2]	['x','y']	s	{}",
	}
	got := e.srv.MustQuery(t, "SELECT k, `u.id`, `u.name`, `n.a`, `n.b`, `n.src`, extra FROM events ORDER BY k FORMAT TabSeparatedRaw")
	if diff := cmp.Diff(want, strings.Split(got, "\n")); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if dead := e.srv.MustQuery(t, "SELECT raw_message, error_message FROM dead_letters FORMAT TabSeparatedRaw"); dead != "" {
		t.Errorf("dead letters:\n%s", dead)
	}
	e.checkAllAcked(t, ids)
}

// pipeline1s is a window of one second, so that the run ends soon after the messages.
var pipeline1s = pipeline.GivenInt(1)

// TestUnknownFieldsBackfill runs the pipeline with unknownFieldsColumn on messages with fields
// the table does not have, then adds columns for two of them and fills them from the stored
// text with the SQL of docs/conversion.md, on ClickHouse 18.16: visitParamExtract* reads a
// top-level key of the JSON object (JSONExtract* is the newer form, from ClickHouse 19.x).
func TestUnknownFieldsBackfill(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, unknown_fields String) ENGINE = MergeTree ORDER BY id`)
	e.opts.UnknownFieldsColumn = "unknown_fields"
	e.opts.WindowSeconds = pipeline1s
	var msgs []*pubsubpb.PubsubMessage
	for i := 1; i <= 3; i++ {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: fmt.Appendf(nil, `{"id":%d,"country":"DE","score":%d,"tags":["a", "b"]}`, i, 10*i)})
	}
	msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(`{"id":4}`)})
	ids := e.ps.Publish(t, e.topic, msgs...)
	e.run(t)

	got := e.srv.MustQuery(t, "SELECT id, unknown_fields FROM events ORDER BY id FORMAT TabSeparatedRaw")
	want := "1\t{\"country\":\"DE\",\"score\":10,\"tags\":[\"a\", \"b\"]}\n2\t{\"country\":\"DE\",\"score\":20,\"tags\":[\"a\", \"b\"]}\n" +
		"3\t{\"country\":\"DE\",\"score\":30,\"tags\":[\"a\", \"b\"]}\n4\t{}"
	if got != want {
		t.Fatalf("rows:\n%s\nwant\n%s", got, want)
	}
	// The backfill of docs/conversion.md. A mutation runs in the background: wait for it.
	e.srv.MustExec(t, "ALTER TABLE events ADD COLUMN country String, ADD COLUMN score UInt32")
	e.srv.MustExec(t, "ALTER TABLE events UPDATE country = visitParamExtractString(unknown_fields, 'country'), "+
		"score = visitParamExtractUInt(unknown_fields, 'score') WHERE visitParamHas(unknown_fields, 'country')")
	for i := 0; e.srv.MustQuery(t, "SELECT count() FROM system.mutations WHERE database = currentDatabase() AND table = 'events' AND NOT is_done") != "0"; i++ {
		if i == 600 {
			t.Fatal("the mutation did not finish")
		}
		time.Sleep(100 * time.Millisecond)
	}
	got = e.srv.MustQuery(t, "SELECT id, country, score FROM events ORDER BY id")
	if want := "1\tDE\t10\n2\tDE\t20\n3\tDE\t30\n4\t\t0"; got != want {
		t.Errorf("after the backfill:\n%s\nwant\n%s", got, want)
	}
	e.checkAllAcked(t, ids)
}

// TestMetadataColumnsEncoding covers the metadata columns of types ClickHouse 18.16 lacks
// (DateTime64, Map) as TestTypesEncoding does: converted, appended to clickhouse-go's column,
// encoded in the Native format and decoded by clickhouse-go.
func TestMetadataColumnsEncoding(t *testing.T) {
	m := &convert.Meta{ID: "1", PublishTimeMillis: 1704067200123, OrderingKey: "k", Attributes: map[string]string{"b": "2", "a": `x"y`}}
	for _, tc := range []struct {
		typ, key, payload string
		unknown           bool
		want              any
	}{
		{"DateTime64(3)", "publish_time", `{}`, false, time.UnixMilli(1704067200123).UTC()},
		{"DateTime64(6, 'UTC')", "publish_time", `{}`, false, time.UnixMilli(1704067200123).UTC()},
		{"DateTime64(0)", "publish_time", `{}`, false, time.Unix(1704067200, 0).UTC()},
		{"Nullable(DateTime64(3))", "publish_time", `{}`, false, ptr(time.UnixMilli(1704067200123).UTC())},
		{"Map(String, String)", "attributes", `{}`, false, map[string]string{"a": `x"y`, "b": "2"}},
		{"Map(LowCardinality(String), String)", "attributes", `{}`, false, map[string]string{"a": `x"y`, "b": "2"}},
		{"Map(String, String)", "", `{"x": {"b" : 1},"n":1.0e+2,"s":"\u00e9"}`, true, map[string]string{"x": `{"b":1}`, "n": "1.0e+2", "s": "é"}},
		{"Map(String, String)", "", `{}`, true, map[string]string{}},
	} {
		t.Run(tc.typ+" "+tc.key+tc.payload, func(t *testing.T) {
			ct, err := chtype.Parse(tc.typ)
			if err != nil {
				t.Fatal(err)
			}
			o := convert.Options{Metadata: []convert.MetadataColumn{{Key: tc.key, Column: "x"}}}
			if tc.unknown {
				o = convert.Options{UnknownFields: "x"}
			}
			got := roundTripColumn(t, tc.typ, encodeValues(t, tc.typ, toValues(t, ct, tc.payload, o, m)))
			if diff := cmp.Diff(tc.want, got, encodingComparers); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestMetadataStartupFailures: a pair of metadataColumns or an unknownFieldsColumn that does not
// fit the table stops the launch, before any message is read, with one sentence naming the
// parameter, the pair and the rule; a malformed value stops it before ClickHouse is asked.
func TestMetadataStartupFailures(t *testing.T) {
	bin, _ := launchBinary(t)
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, ts DateTime, tags Array(String), m UInt64 MATERIALIZED id,
		d Decimal(10, 0), fs FixedString(8), i64 Int64) ENGINE = MergeTree ORDER BY id`)
	o := e.opts
	base := connectionFlags(o.InputSubscription, o.ClickHouseURL, o.ClickHouseDatabase)
	checkStartupFailures(t, bin, base, []startupFailure{
		{"no such column", map[string]string{"metadataColumns": "message_id=msg_id"},
			`pubsub-to-clickhouse: metadataColumns: pair "message_id=msg_id": the table events has no column "msg_id"`},
		{"a MATERIALIZED column", map[string]string{"metadataColumns": "publish_time=m"},
			`pubsub-to-clickhouse: metadataColumns: pair "publish_time=m": column "m" is MATERIALIZED, which an INSERT never writes; name a column without MATERIALIZED or ALIAS`},
		{"a type that cannot take the value", map[string]string{"metadataColumns": "publish_time=ts,attribute.tag=tags"},
			`pubsub-to-clickhouse: metadataColumns: pair "attribute.tag=tags": column "tags" (Array(String)) cannot take the value: attribute.tag is a JSON string, which Array(String) never takes; name a column of a type that takes a string (String, a number, a date, UUID, ...)`},
		{"publish_time into UInt32", map[string]string{"metadataColumns": "publish_time=id"},
			`pubsub-to-clickhouse: metadataColumns: pair "publish_time=id": column "id" (UInt32) cannot take the value: publish_time goes into DateTime, DateTime64 (milliseconds kept where the precision holds them), Int64 or UInt64 (Unix milliseconds) or String (RFC 3339 with milliseconds)`},
		// Pub/Sub's message ids are decimal numbers of up to 19 digits: each of these holds fewer.
		{"message_id into Decimal(10, 0)", map[string]string{"metadataColumns": "message_id=d"},
			`pubsub-to-clickhouse: metadataColumns: pair "message_id=d": column "d" (Decimal(10, 0)) cannot take the value: ` + messageIDNeeds + `; Decimal(10, 0) holds at most 10 digits before the point`},
		{"message_id into FixedString(8)", map[string]string{"metadataColumns": "message_id=fs"},
			`pubsub-to-clickhouse: metadataColumns: pair "message_id=fs": column "fs" (FixedString(8)) cannot take the value: ` + messageIDNeeds + `; FixedString(8) holds at most 8 bytes`},
		{"message_id into Int64", map[string]string{"metadataColumns": "message_id=i64"},
			`pubsub-to-clickhouse: metadataColumns: pair "message_id=i64": column "i64" (Int64) cannot take the value: ` + messageIDNeeds + `; Int64 holds at most 9223372036854775807`},
		{"unknown fields into a DateTime", map[string]string{"unknownFieldsColumn": "ts"},
			`pubsub-to-clickhouse: unknownFieldsColumn "ts": column "ts" (DateTime) cannot take the fields: give a String column (a JSON object of the fields' exact text) or a Map(String, String)`},
	})
	checkUsageFailures(t, bin, base, []startupFailure{
		{"an unknown key", map[string]string{"metadataColumns": "messageId=id"},
			`metadataColumns "messageId=id": pair "messageId=id" has the unknown key "messageId"; KEY is one of message_id, publish_time, ordering_key, attributes and attribute.NAME`},
		{"a column named twice", map[string]string{"metadataColumns": "message_id=id,ordering_key=id"},
			`metadataColumns "message_id=id,ordering_key=id": pair "ordering_key=id" names the column "id", which "message_id=id" already fills; a column takes one value`},
		{"a malformed pair", map[string]string{"metadataColumns": "message_id"},
			`metadataColumns "message_id": pair "message_id" has no "="; give KEY=column, for example message_id=msg_id`},
		{"unknown fields into a metadata column", map[string]string{"metadataColumns": "message_id=id", "unknownFieldsColumn": "id"},
			`unknownFieldsColumn "id": is also named in metadataColumns (message_id=id); a column takes one value`},
	})
}

// messageIDNeeds is the rule of a message_id column too narrow for Pub/Sub's message ids.
const messageIDNeeds = `message_id is a decimal number of up to 19 digits (Pub/Sub's message ids, up to "9999999999999999999"), ` +
	`which needs String, FixedString(N) with N >= 19, UInt64, Int128, UInt128, Int256, UInt256 or Decimal(P, S) with P - S >= 19`

// TestMetadataColumnsWarning: a launch with metadataColumns says that the payload's field of each
// such column is not read; one with unknownFieldsColumn says what that column takes, and not
// that it takes a value of the message's.
func TestMetadataColumnsWarning(t *testing.T) {
	bin, _ := launchBinary(t)
	for _, tc := range []struct {
		name, param, value string
		want, notWant      string
	}{
		{"metadataColumns", "metadataColumns", "message_id=msg_id",
			`level=WARN msg="metadataColumns message_id=msg_id: column \"msg_id\" takes its value from the message, not from the payload: a field \"msg_id\" of the payload is ignored"`, ""},
		{"unknownFieldsColumn", "unknownFieldsColumn", "msg_id",
			`level=INFO msg="unknownFieldsColumn: column \"msg_id\" takes the payload's fields that give the row no value, as one JSON object of their text (or one Map entry each); a field \"msg_id\" of the payload is one of them"`,
			`takes its value from the message`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newE2E(t, `CREATE TABLE {table} (id UInt32, msg_id String) ENGINE = MergeTree ORDER BY id`)
			o := e.opts
			flags := connectionFlags(o.InputSubscription, o.ClickHouseURL, o.ClickHouseDatabase)
			flags[tc.param] = tc.value
			flags["stopAfterIdle"] = strconv.Itoa(1)
			out, err := launchOnPrism(t, bin, flags)
			if err != nil {
				t.Fatalf("the launch: %v\n%s", err, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("the output does not say %q:\n%s", tc.want, out)
			}
			if tc.notWant != "" && strings.Contains(out, tc.notWant) {
				t.Errorf("the output says %q:\n%s", tc.notWant, out)
			}
		})
	}
}

// TestNoOrderingKeyEndToEnd runs the pipeline on prism, on ClickHouse 18.16, on messages
// published with and without an ordering key (Pub/Sub's ordering key is then ""), with
// ordering_key in columns of each kind: without a key a String column stores ”, a FixedString
// zeros, a Nullable column NULL and a column with a DEFAULT its DEFAULT; a column that takes no
// "" (UInt32, without DEFAULT) makes the message a dead letter that says so, and takes a key
// that is a number.
func TestNoOrderingKeyEndToEnd(t *testing.T) {
	t.Run("columns that take no key", func(t *testing.T) {
		e := newE2E(t, `CREATE TABLE {table} (a UInt8, s String, fs FixedString(3), n Nullable(String), d String DEFAULT 'none')
			ENGINE = MergeTree ORDER BY a`)
		e.opts.MetadataColumns = "ordering_key=s,ordering_key=fs,ordering_key=n,ordering_key=d"
		e.opts.WindowSeconds = pipeline1s
		ids := e.ps.Publish(t, e.topic,
			&pubsubpb.PubsubMessage{Data: []byte(`{"a":1}`)},
			&pubsubpb.PubsubMessage{Data: []byte(`{"a":2}`), OrderingKey: "k2"})
		e.run(t)
		got := e.srv.MustQuery(t, "SELECT a, concat('[', s, ']'), hex(fs), ifNull(n, 'NULL'), d FROM events ORDER BY a FORMAT TabSeparatedRaw")
		want := []string{"1\t[]\t000000\tNULL\tnone", "2\t[k2]\t6B3200\tk2\tk2"}
		if diff := cmp.Diff(want, strings.Split(got, "\n")); diff != "" {
			t.Errorf("rows (-want +got):\n%s", diff)
		}
		if dead := e.srv.MustQuery(t, "SELECT raw_message, error_message FROM dead_letters FORMAT TabSeparatedRaw"); dead != "" {
			t.Errorf("dead letters:\n%s", dead)
		}
		e.checkAllAcked(t, ids)
	})
	t.Run("a column that takes no empty key", func(t *testing.T) {
		e := newE2E(t, `CREATE TABLE {table} (a UInt8, u UInt32) ENGINE = MergeTree ORDER BY a`)
		e.opts.MetadataColumns = "ordering_key=u"
		e.opts.WindowSeconds = pipeline1s
		ids := e.ps.Publish(t, e.topic,
			&pubsubpb.PubsubMessage{Data: []byte(`{"a":1}`)},
			&pubsubpb.PubsubMessage{Data: []byte(`{"a":2}`), OrderingKey: "42"})
		e.run(t)
		if got := e.srv.MustQuery(t, "SELECT a, u FROM events ORDER BY a FORMAT TabSeparatedRaw"); got != "2\t42" {
			t.Errorf("rows %q, want the message with the key 42 alone", got)
		}
		dead := e.srv.MustQuery(t, "SELECT raw_message, error_message FROM dead_letters FORMAT TabSeparatedRaw")
		want := `{"a":1}	column "u" (UInt32, from metadataColumns ordering_key=u): "" is not a number; UInt32 takes an integer, a string holding one, true or false: ` +
			`the message has no ordering key, which Pub/Sub gives as ""; a String column stores '', a Nullable column NULL and a column with a DEFAULT its DEFAULT, but this column takes none of them`
		if dead != want {
			t.Errorf("dead letters:\n%s\nwant\n%s", dead, want)
		}
		e.checkAllAcked(t, ids)
	})
}

// TestReplayedMessageMetadata dead-letters a message with attributes and an ordering key, fixes
// the table, replays the dead letter from the dead-letter table and runs the pipeline again, on
// ClickHouse 18.16: the replayed message's row has its ordering key and original attributes,
// plus replay's replayed_from and replay_id in the attributes column, but the message id and
// publish time of the replay's publish, not the original's (docs/conversion.md, "Message
// metadata in columns"); the original id stays in the dead letter's message_id.
func TestReplayedMessageMetadata(t *testing.T) {
	e := newE2E(t, "CREATE TABLE {table} (k UInt32, n UInt8, msg_id String, pt Int64, ok String, attrs String) ENGINE = MergeTree ORDER BY k")
	e.opts.MetadataColumns = "message_id=msg_id,publish_time=pt,ordering_key=ok,attributes=attrs"
	e.opts.WindowSeconds = pipeline1s
	ids := e.ps.Publish(t, e.topic, &pubsubpb.PubsubMessage{Data: []byte(`{"k":1,"n":300}`), Attributes: map[string]string{"src": "web"}, OrderingKey: "user-1"})
	e.run(t)
	if got := e.srv.MustQuery(t, "SELECT message_id, attributes, ordering_key FROM dead_letters"); got != ids[0]+"\t"+`{"src":"web"}`+"\tuser-1" {
		t.Fatalf("the dead letter: %q", got)
	}
	published := e.ps.Server.Messages()[0].PublishTime
	e.srv.MustExec(t, "ALTER TABLE events MODIFY COLUMN n UInt16")
	from := "clickhouse://" + e.srv.Database + ".dead_letters"
	if out, errOut, code := runCommand(t, "", append([]string{"replay", "--topic=" + e.topic, "--fromTable=dead_letters", "--replayId=r1", "--delete"}, chFlags(e.srv)...)...); code != 0 {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errOut)
	}
	e.run(t)
	var replayedID string
	var replayedAt time.Time
	for _, m := range e.ps.Server.Messages() {
		if m.Attributes["replay_id"] == "r1" {
			replayedID, replayedAt = m.ID, m.PublishTime
		}
	}
	if replayedID == "" || replayedID == ids[0] || !replayedAt.After(published) {
		t.Fatalf("the replayed message: id %q, published %v; the original: %q, %v", replayedID, replayedAt, ids[0], published)
	}
	want := fmt.Sprintf("1\t300\t%s\t%d\tuser-1\t{\"replay_id\":\"r1\",\"replayed_from\":%s,\"src\":\"web\"}", replayedID, replayedAt.UnixMilli(), strconv.Quote(from))
	if got := e.srv.MustQuery(t, "SELECT k, n, msg_id, pt, ok, attrs FROM events FORMAT TabSeparatedRaw"); got != want {
		t.Errorf("the replayed row:\n%s\nwant\n%s", got, want)
	}
}
