package convert_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// testMeta is the metadata of the message of these tests: published at 2024-01-01 00:00:00.123
// UTC.
var testMeta = &convert.Meta{
	ID:                "1234567890",
	PublishTimeMillis: 1704067200123,
	OrderingKey:       "user-7",
	Attributes:        map[string]string{"n": "42", "src": `we"b`, "a": "x"},
}

// convertWith converts payload with o's columns filled from m and decodes the row.
func convertWith(t *testing.T, tb *schema.Table, o convert.Options, payload string, m *convert.Meta) ([]any, error) {
	t.Helper()
	c, err := convert.NewWith(tb, o)
	if err != nil {
		t.Fatal(err)
	}
	row, err := c.ConvertMessage(nil, []byte(payload), m)
	if err != nil {
		return nil, err
	}
	return decodeRow(t, tb, row), nil
}

func pairs(t *testing.T, spec string) []convert.MetadataColumn {
	t.Helper()
	p, err := convert.ParseMetadataColumns(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMetadataColumnsEveryType(t *testing.T) {
	tb := table(t, "id String", "a UInt8", "pt_dt DateTime", "pt_dt64 DateTime64(3)", "pt_dt64_6 DateTime64(6)", "pt_i64 Int64", "pt_u64 UInt64",
		"pt_s String", "pt_n Nullable(DateTime64(3))", "ok LowCardinality(Nullable(String))", "n UInt32", "src LowCardinality(String)",
		"attrs Map(String, String)", "attrs_s String", "gone_null Nullable(String)", "gone_default UInt32 DEFAULT 7", "ok_fs FixedString(8)")
	o := convert.Options{Metadata: pairs(t, "message_id=id,publish_time=pt_dt,publish_time=pt_dt64,publish_time=pt_dt64_6,publish_time=pt_i64,"+
		"publish_time=pt_u64,publish_time=pt_s,publish_time=pt_n,ordering_key=ok,attribute.n=n,attribute.src=src,attributes=attrs,attributes=attrs_s,"+
		"attribute.gone=gone_null,attribute.gone=gone_default,ordering_key=ok_fs")}
	want := []any{"1234567890", uint8(5), utc("2024-01-01 00:00:00"), time.UnixMilli(1704067200123).UTC(), time.UnixMilli(1704067200123).UTC(),
		int64(1704067200123), uint64(1704067200123), "2024-01-01T00:00:00.123Z", ptr(time.UnixMilli(1704067200123).UTC()), ptr("user-7"),
		uint32(42), `we"b`, &convert.Map{Keys: []any{"a", "n", "src"}, Values: []any{"x", "42", `we"b`}}, `{"a":"x","n":"42","src":"we\"b"}`,
		(*string)(nil), useDefault{}, "user-7\x00\x00"}
	// The payload's fields of the metadata columns' names are not read, wherever they are.
	for _, payload := range []string{
		`{"a":5}`,
		`{"id":"from the payload","a":5,"n":"x","pt_dt":"junk","attrs":3,"gone_null":"y","gone_default":1}`,
		`{"gone_default":1,"a":5,"id":9}`,
	} {
		got, err := convertWith(t, tb, o, payload, testMeta)
		if err != nil {
			t.Fatalf("%s: %v", payload, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", payload, diff)
		}
	}
}

// TestNoOrderingKey converts a message without an ordering key (Pub/Sub's ordering key is then
// "") into ordering_key columns of each kind: a String column stores "", a FixedString zeros, a
// LowCardinality(String) "", a Nullable column NULL, a column with a DEFAULT (Nullable or not) its
// DEFAULT; a message with a key stores the key in each.
func TestNoOrderingKey(t *testing.T) {
	tb := table(t, "a UInt8", "s String", "fs FixedString(4)", "lc LowCardinality(String)", "n Nullable(String)",
		"d String DEFAULT 'none'", "nd Nullable(String) DEFAULT 'none'", "u UUID DEFAULT generateUUIDv4()")
	o := convert.Options{Metadata: pairs(t, "ordering_key=s,ordering_key=fs,ordering_key=lc,ordering_key=n,ordering_key=d,ordering_key=nd,ordering_key=u")}
	for _, tc := range []struct {
		key  string
		want []any
	}{
		{"", []any{uint8(1), "", "\x00\x00\x00\x00", "", (*string)(nil), useDefault{}, useDefault{}, useDefault{}}},
		{"k1", []any{uint8(1), "k1", "k1\x00\x00", "k1", ptr("k1"), "k1", ptr("k1"), nil}},
	} {
		o := o
		want := tc.want
		if tc.key != "" { // a key that is no UUID: the UUID column takes only an empty key
			o.Metadata = o.Metadata[:len(o.Metadata)-1]
			want = want[:len(want)-1]
			want = append(want, useDefault{})
		}
		got, err := convertWith(t, tb, o, `{"a":1}`, &convert.Meta{ID: "1", OrderingKey: tc.key})
		if err != nil {
			t.Fatalf("ordering key %q: %v", tc.key, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ordering key %q (-want +got):\n%s", tc.key, diff)
		}
	}
}

// TestMetadataColumnsEveryPlace puts one metadata column before, between and after the payload's
// columns, with and without a group in the table (which turns off encoding while scanning), and
// compares each row with the row of the same table and a payload that gives the value as a field.
func TestMetadataColumnsEveryPlace(t *testing.T) {
	payloads := []string{`{"a":1,"b":"x","c":2.5}`, `{"c":2.5,"a":1,"b":"x"}`, `{"a":1}`, `{}`, `{"b":"x","z":[1,{"q":null}],"c":1}`,
		`{"a":1,"m":"payload","b":"x"}`}
	for _, cols := range [][]string{
		{"m DateTime64(3)", "a UInt8 DEFAULT 0", "b String DEFAULT ''", "c Float64 DEFAULT 0"},
		{"a UInt8 DEFAULT 0", "m DateTime64(3)", "b String DEFAULT ''", "c Float64 DEFAULT 0"},
		{"a UInt8 DEFAULT 0", "b String DEFAULT ''", "m DateTime64(3)", "c Float64 DEFAULT 0"},
		{"a UInt8 DEFAULT 0", "b String DEFAULT ''", "c Float64 DEFAULT 0", "m DateTime64(3)"},
	} {
		for _, grouped := range []bool{false, true} {
			tb := table(t, cols...)
			if grouped {
				tb = withGroup(t, tb)
			}
			withMeta, err := convert.NewWith(tb, convert.Options{Metadata: pairs(t, "publish_time=m")})
			if err != nil {
				t.Fatal(err)
			}
			plain, err := convert.New(tb)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range payloads {
				got, err := withMeta.ConvertMessage(nil, []byte(p), testMeta)
				if err != nil {
					t.Fatalf("%v %s: %v", cols, p, err)
				}
				// The same value as a field, in place of the payload's own "m".
				given := strings.Replace(strings.Replace(p, `"m":"payload",`, "", 1), "{", `{"m":"2024-01-01T00:00:00.123Z",`, 1)
				given = strings.Replace(given, ",}", "}", 1)
				want, err := plain.Convert(nil, []byte(given))
				if err != nil {
					t.Fatalf("%s: %v", given, err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%v (group %v) %s: row %x, want %x (the row of %s)", cols, grouped, p, got, want, given)
				}
			}
		}
	}
}

func TestMetadataColumnsErrors(t *testing.T) {
	tb := table(t, "a UInt8", "n UInt32", "k String")
	for _, tc := range []struct {
		spec, payload string
		meta          *convert.Meta
		want          string
	}{
		{"attribute.n=n", `{"a":1}`, &convert.Meta{Attributes: map[string]string{"n": "4x"}},
			`column "n" (UInt32, from metadataColumns attribute.n=n): "4x" is not a number; UInt32 takes an integer, a string holding one, true or false; column "k" (String): the field is missing`},
		{"attribute.n=n", `{"a":1,"n":3}`, &convert.Meta{},
			`column "n" (UInt32, from metadataColumns attribute.n=n): the message has no attribute "n", and the column has no DEFAULT and is not Nullable`},
		{"ordering_key=n", `{"a":1,"k":"x"}`, &convert.Meta{},
			`column "n" (UInt32, from metadataColumns ordering_key=n): "" is not a number; UInt32 takes an integer, a string holding one, true or false: ` +
				`the message has no ordering key, which Pub/Sub gives as ""; a String column stores '', a Nullable column NULL and a column with a DEFAULT its DEFAULT, but this column takes none of them`},
		{"attribute.n=n", `{"a":300,"k":""}`, &convert.Meta{Attributes: map[string]string{"n": "1"}},
			`column "a" (UInt8): 300 is out of range for UInt8 (0 to 255)`},
		{"attribute.n=n,message_id=k", `{"a":1}`, nil, // Convert without metadata: every value absent
			`column "n" (UInt32, from metadataColumns attribute.n=n): the message has no attribute "n", and the column has no DEFAULT and is not Nullable; column "k" (String, from metadataColumns message_id=k): the message has no such value, and the column has no DEFAULT and is not Nullable`},
	} {
		_, err := convertWith(t, tb, convert.Options{Metadata: pairs(t, tc.spec)}, tc.payload, tc.meta)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s %s: error %v, want %q", tc.spec, tc.payload, err, tc.want)
		}
	}
}

func TestParseMetadataColumns(t *testing.T) {
	got, err := convert.ParseMetadataColumns("message_id=msg_id,publish_time=published_at,attribute.source=src,attribute.a=b=c")
	if err != nil {
		t.Fatal(err)
	}
	want := []convert.MetadataColumn{{"message_id", "msg_id"}, {"publish_time", "published_at"}, {"attribute.source", "src"}, {"attribute.a", "b=c"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got[2].Attribute() != "source" || got[0].Attribute() != "" {
		t.Errorf("Attribute() = %q, %q; want source and empty", got[2].Attribute(), got[0].Attribute())
	}
	for spec, want := range map[string]string{
		"message_id=a,,publish_time=b":  `pair "" is empty (two commas in a row, or a comma at an end); give comma-separated KEY=column pairs`,
		"message_id=a,":                 `pair "" is empty (two commas in a row, or a comma at an end); give comma-separated KEY=column pairs`,
		"message_id":                    `pair "message_id" has no "="; give KEY=column, for example message_id=msg_id`,
		"=a":                            `pair "=a" needs a KEY before "=" and a column after it, for example message_id=msg_id`,
		"message_id=":                   `pair "message_id=" needs a KEY before "=" and a column after it, for example message_id=msg_id`,
		"message_id= a":                 `pair "message_id= a" has spaces around its key or column; write the pairs without spaces`,
		"attribute.=a":                  `pair "attribute.=a" names no attribute; write attribute.NAME, for example attribute.source`,
		"messageId=a":                   `pair "messageId=a" has the unknown key "messageId"; KEY is one of message_id, publish_time, ordering_key, attributes and attribute.NAME`,
		"message_id=a,publish_time=a":   `pair "publish_time=a" names the column "a", which "message_id=a" already fills; a column takes one value`,
		"attribute.x=c,attribute.y=c":   `pair "attribute.y=c" names the column "c", which "attribute.x=c" already fills; a column takes one value`,
		"attributes=a,attributes=b,x=y": `pair "x=y" has the unknown key "x"; KEY is one of message_id, publish_time, ordering_key, attributes and attribute.NAME`,
	} {
		if _, err := convert.ParseMetadataColumns(spec); err == nil || err.Error() != want {
			t.Errorf("%q: error %v, want %q", spec, err, want)
		}
	}
}

// TestOptionsRefusedAtStartUp: a pair or column that does not fit the table stops NewWith with a
// sentence naming the parameter, the pair and the rule.
func TestOptionsRefusedAtStartUp(t *testing.T) {
	tb := table(t, "a UInt8", "arr Array(String)", "m UInt64 MATERIALIZED a", "u Map(String, UInt8)", "s String", "j Int32", "ln LowCardinality(Nullable(String))")
	for _, tc := range []struct {
		o    convert.Options
		want string
	}{
		{convert.Options{Metadata: []convert.MetadataColumn{{"message_id", "nope"}}},
			`metadataColumns: pair "message_id=nope": the table t has no column "nope"`},
		{convert.Options{Metadata: []convert.MetadataColumn{{"message_id", "m"}}},
			`metadataColumns: pair "message_id=m": column "m" is MATERIALIZED, which an INSERT never writes; name a column without MATERIALIZED or ALIAS`},
		{convert.Options{Metadata: []convert.MetadataColumn{{"publish_time", "j"}}},
			`metadataColumns: pair "publish_time=j": column "j" (Int32) cannot take the value: publish_time goes into DateTime, DateTime64 (milliseconds kept where the precision holds them), Int64 or UInt64 (Unix milliseconds) or String (RFC 3339 with milliseconds)`},
		{convert.Options{Metadata: []convert.MetadataColumn{{"message_id", "a"}}},
			`metadataColumns: pair "message_id=a": column "a" (UInt8) cannot take the value: message_id is a decimal number of up to 19 digits (Pub/Sub's message ids, up to "9999999999999999999"), which needs String, FixedString(N) with N >= 19, UInt64, Int128, UInt128, Int256, UInt256 or Decimal(P, S) with P - S >= 19; UInt8 holds at most 255`},
		{convert.Options{Metadata: []convert.MetadataColumn{{"attributes", "u"}}},
			`metadataColumns: pair "attributes=u": column "u" (Map(String, UInt8)) cannot take the value: attributes go into Map(String, String) or String (a JSON object)`},
		{convert.Options{Metadata: []convert.MetadataColumn{{"attribute.x", "arr"}}},
			`metadataColumns: pair "attribute.x=arr": column "arr" (Array(String)) cannot take the value: attribute.x is a JSON string, which Array(String) never takes; name a column of a type that takes a string (String, a number, a date, UUID, ...)`},
		{convert.Options{Metadata: []convert.MetadataColumn{{"message_id", "s"}, {"ordering_key", "s"}}},
			`metadataColumns: pair "ordering_key=s": column "s" is named twice; a column takes one value`},
		{convert.Options{Metadata: []convert.MetadataColumn{{"attributes", "s"}}, UnknownFields: "s"},
			`unknownFieldsColumn "s": column "s" is also filled by attributes=s; a column takes one value`},
		{convert.Options{UnknownFields: "a"},
			`unknownFieldsColumn "a": column "a" (UInt8) cannot take the fields: give a String column (a JSON object of the fields' exact text) or a Map(String, String)`},
		{convert.Options{UnknownFields: "zz"}, `unknownFieldsColumn "zz": the table t has no column "zz"`},
	} {
		_, err := convert.NewWith(tb, tc.o)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
	for _, o := range []convert.Options{{UnknownFields: "ln"}, {UnknownFields: "s"}, {Metadata: pairs(t, "attributes=ln,message_id=s,ordering_key=j")}} {
		if _, err := convert.NewWith(tb, o); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

func TestUnknownFieldsColumn(t *testing.T) {
	const odd = `{"a":1, "x" : {"b" :  [1, 2]} ,"caf\u00e9":"\u00e9\n", "n":1.0e+2,"a2":true,"m":"computed","n.q":[ ],"g":{"h":[3]},"e":""}`
	for _, tc := range []struct {
		name    string
		columns []string
		o       convert.Options
		payload string
		want    []any
		wantErr string
	}{
		{"exact text in a String", []string{"a UInt8", "u String", "m UInt8 MATERIALIZED a", "g.h Array(UInt8)"}, convert.Options{UnknownFields: "u"}, odd,
			[]any{uint8(1), `{"x":{"b" :  [1, 2]},"caf\u00e9":"\u00e9\n","n":1.0e+2,"a2":true,"m":"computed","n.q":[ ],"e":""}`, []uint8{3}}, ""},
		{"a Map(String, String)", []string{"a UInt8", "u Map(String, String)", "g.h Array(UInt8)"}, convert.Options{UnknownFields: "u"}, odd,
			[]any{uint8(1), &convert.Map{Keys: []any{"x", "café", "n", "a2", "m", "n.q", "e"}, Values: []any{`{"b":[1,2]}`, "é\n", "1.0e+2", "true", "computed", "[]", ""}}, []uint8{3}}, ""},
		{"none: {}", []string{"a UInt8", "u Nullable(String)"}, convert.Options{UnknownFields: "u"}, `{"a":1}`, []any{uint8(1), ptr("{}")}, ""},
		{"none: empty map", []string{"u Map(String, String)", "a UInt8"}, convert.Options{UnknownFields: "u"}, `{"a":1}`, []any{&convert.Map{Keys: []any{}, Values: []any{}}, uint8(1)}, ""},
		// A null field is its text, null, in a Map of String values, as a String column keeps it,
		// and NULL in a Map of Nullable(String) values; not a dead letter (found in review).
		{"null into a Map", []string{"a UInt8", "u Map(String, String)"}, convert.Options{UnknownFields: "u"}, `{"a":1,"c":null,"d":"null"}`,
			[]any{uint8(1), &convert.Map{Keys: []any{"c", "d"}, Values: []any{"null", "null"}}}, ""},
		{"null into a Map of Nullable values", []string{"a UInt8", "u Map(String, Nullable(String))"}, convert.Options{UnknownFields: "u"}, `{"a":1,"c":null}`,
			[]any{uint8(1), &convert.Map{Keys: []any{"c"}, Values: []any{(*string)(nil)}}}, ""},
		{"null into a String", []string{"a UInt8", "u String"}, convert.Options{UnknownFields: "u"}, `{"a":1,"c":null}`,
			[]any{uint8(1), `{"c":null}`}, ""},
		{"an empty payload", []string{"u LowCardinality(String)", "a UInt8 DEFAULT 3"}, convert.Options{UnknownFields: "u"}, ` { } `, []any{"{}", useDefault{}}, ""},
		{"the column's own name and a metadata column's are unknown", []string{"u String", "a UInt8", "id String"},
			convert.Options{UnknownFields: "u", Metadata: pairs(t, "message_id=id")}, `{"u":"mine","a":1,"id":"payload's"}`,
			[]any{`{"u":"mine","id":"payload's"}`, uint8(1), "1234567890"}, ""},
		{"a repeated unknown field, String", []string{"a UInt8", "u String"}, convert.Options{UnknownFields: "u"}, `{"x":1,"a":1,"x":2}`,
			[]any{uint8(1), `{"x":1,"x":2}`}, ""},
		{"a repeated unknown field, Map", []string{"a UInt8", "u Map(String, String)"}, convert.Options{UnknownFields: "u"}, `{"x":1,"a":1,"x":2}`, nil,
			`column "u" (Map(String, String), from unknownFieldsColumn): element ["x"] (the key): "x" is the same String key as an earlier key of the object; which value is meant is ambiguous`},
		{"an escape without UTF-8 into a Map", []string{"a UInt8", "u Map(String, String)"}, convert.Options{UnknownFields: "u"}, `{"x":"\ud800","a":1}`, nil,
			`column "u" (Map(String, String), from unknownFieldsColumn): element ["x"]: "\ud800"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := convertWith(t, table(t, tc.columns...), tc.o, tc.payload, testMeta)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestMessageIDTypes: message_id goes into exactly the types that hold every Pub/Sub message id
// (a decimal number of up to 19 digits, rendered as a JSON string). Each accepted type converts
// the largest, "9999999999999999999", and the smallest, "1", and reads them back unchanged; each
// refused type is refused when the Converter is built, with the rule, and does not hold
// "9999999999999999999" as a payload's field either (an error, or a value that reads back
// otherwise), so the refusal refuses nothing that would have worked.
func TestMessageIDTypes(t *testing.T) {
	ids := []string{"9999999999999999999", "1", "1234567890123456789"}
	for _, typ := range []string{"String", "Nullable(String)", "LowCardinality(String)", "LowCardinality(Nullable(String))",
		"FixedString(19)", "FixedString(32)", "Nullable(FixedString(19))", "UInt64", "Nullable(UInt64)", "SimpleAggregateFunction(any, UInt64)",
		"Int128", "UInt128", "Int256", "UInt256", "Nullable(Int128)",
		"Decimal(19, 0)", "Decimal(20, 1)", "Decimal(38, 19)", "Decimal(76, 57)", "Decimal128(19)", "Decimal256(57)", "Decimal256(0)",
		"Nullable(Decimal(19, 0))"} {
		t.Run(typ, func(t *testing.T) {
			tb := table(t, "a UInt8 DEFAULT 0", "id "+typ)
			c, err := convert.NewWith(tb, convert.Options{Metadata: pairs(t, "message_id=id")})
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			for _, id := range ids {
				row, err := c.ConvertMessage(nil, []byte(`{}`), &convert.Meta{ID: id})
				if err != nil {
					t.Fatalf("message id %s: %v", id, err)
				}
				if got := readBack(decodeRow(t, tb, row)[1]); got != id {
					t.Errorf("message id %s reads back as %q", id, got)
				}
			}
		})
	}
	for _, tc := range []struct{ typ, why string }{
		{"Int64", "; Int64 holds at most 9223372036854775807"},
		{"Nullable(Int64)", "; Int64 holds at most 9223372036854775807"},
		{"UInt32", "; UInt32 holds at most 4294967295"},
		{"Int8", "; Int8 holds at most 127"},
		{"FixedString(8)", "; FixedString(8) holds at most 8 bytes"},
		{"LowCardinality(FixedString(18))", "; FixedString(18) holds at most 18 bytes"},
		{"Decimal(10, 0)", "; Decimal(10, 0) holds at most 10 digits before the point"},
		{"Decimal(18, 0)", "; Decimal(18, 0) holds at most 18 digits before the point"},
		{"Decimal(38, 20)", "; Decimal(38, 20) holds at most 18 digits before the point"},
		{"Decimal64(0)", "; Decimal64(0) holds at most 18 digits before the point"},
		{"Decimal128(20)", "; Decimal128(20) holds at most 18 digits before the point"},
		{"Float64", ""},
		{"DateTime", ""},
		{"UUID", ""},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			tb := table(t, "a UInt8 DEFAULT 0", "id "+tc.typ)
			_, err := convert.NewWith(tb, convert.Options{Metadata: pairs(t, "message_id=id")})
			want := `metadataColumns: pair "message_id=id": column "id" (` + tc.typ + `) cannot take the value: ` +
				`message_id is a decimal number of up to 19 digits (Pub/Sub's message ids, up to "9999999999999999999"), ` +
				`which needs String, FixedString(N) with N >= 19, UInt64, Int128, UInt128, Int256, UInt256 or Decimal(P, S) with P - S >= 19` + tc.why
			var oe *convert.OptionError
			if err == nil || err.Error() != want || !errors.As(err, &oe) {
				t.Errorf("error %v,\nwant %s", err, want)
			}
			// The same value as a field of the payload does not fit.
			if got, err := convertRow(t, tb, `{"id":"9999999999999999999"}`); err == nil && readBack(got[1]) == "9999999999999999999" {
				t.Errorf("%s holds 9999999999999999999 as a field: the refusal is too strict", tc.typ)
			}
		})
	}
}

// readBack renders a decoded value as text: a number in decimal, a FixedString without its
// padding, a Nullable's value.
func readBack(v any) string {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.Type().Elem().Kind() != reflect.Struct {
		v = rv.Elem().Interface()
	}
	if s, ok := v.(string); ok {
		return strings.TrimRight(s, "\x00")
	}
	return fmt.Sprint(v)
}

// TestInjectedColumnsInGroups: a column filled from the message (metadataColumns,
// unknownFieldsColumn) that is one of a group of dotted columns (u.id of u.id, u.name; a
// flattened Nested n.a, n.b with n.src beside it) leaves the group whole: every form of the
// payload gives the same row, the message's value wins, and the payload's value for that column
// is not read, or goes to unknownFieldsColumn under the column's name, as a field of that name
// would. The object forms were dead letters before ("id" names no column: the table has no
// column "u.id").
func TestInjectedColumnsInGroups(t *testing.T) {
	meta := &convert.Meta{ID: "7", OrderingKey: "k1", Attributes: map[string]string{"uid": "m", "src": "s"}}
	for _, tc := range []struct {
		name     string
		columns  []string
		spec     string // metadataColumns
		unknown  string // unknownFieldsColumn
		payloads []string
		want     []any
	}{
		{"dotted columns", []string{"a UInt8", "u.id String", "u.name String"}, "attribute.uid=u.id", "",
			[]string{`{"a":1,"u":{"id":"p","name":"q"}}`, `{"a":1,"u.id":"p","u.name":"q"}`, `{"a":1,"u":{"name":"q"}}`, `{"a":1,"u.name":"q"}`, `{"u":{"name":"q","id":{"x":[1]}},"a":1}`},
			[]any{uint8(1), "m", "q"}},
		{"dotted columns, the payload's value kept as an unknown field", []string{"a UInt8", "u.id String", "u.name String", "extra String"}, "attribute.uid=u.id", "extra",
			[]string{`{"x":1,"u":{"id":"p","name":"q"},"a":1,"z":[2]}`, `{"x":1,"u.id":"p","u.name":"q","a":1,"z":[2]}`, `{"x":1,"u":{"name":"q","id":"p"},"a":1,"z":[2]}`},
			[]any{uint8(1), "m", "q", `{"x":1,"u.id":"p","z":[2]}`}},
		{"into a Map of unknown fields", []string{"u.id String", "u.name String", "extra Map(String, String)"}, "attribute.uid=u.id", "extra",
			[]string{`{"u":{"id":"p","name":"q"},"x":{"y" : 1}}`, `{"u.id":"p","u.name":"q","x":{"y" : 1}}`},
			[]any{"m", "q", &convert.Map{Keys: []any{"u.id", "x"}, Values: []any{"p", `{"y":1}`}}}},
		{"the message's value wins for every key", []string{"u.id UInt64", "u.ok String", "u.name String"}, "message_id=u.id,ordering_key=u.ok", "",
			[]string{`{"u":{"ok":"no","name":"q","id":"x"}}`, `{"u.ok":"no","u.name":"q","u.id":"x"}`},
			[]any{uint64(7), "k1", "q"}},
		{"null for the group", []string{"u.id String", "u.name Nullable(String)"}, "attribute.uid=u.id", "",
			[]string{`{"u":null}`, `{"u.name":null}`, `{}`},
			[]any{"m", (*string)(nil)}},
		{"deeper groups", []string{"x.y.z String", "x.y.w String"}, "attribute.uid=x.y.z", "",
			[]string{`{"x":{"y":{"z":"p","w":"q"}}}`, `{"x":{"y.z":"p","y.w":"q"}}`, `{"x.y":{"z":"p","w":"q"}}`, `{"x.y.z":"p","x.y.w":"q"}`, `{"x":{"y":{"w":"q"}}}`},
			[]any{"m", "q"}},
		{"deeper groups, unknown fields", []string{"x.y.z String", "x.y.w String", "extra String"}, "attribute.uid=x.y.z", "extra",
			[]string{`{"x":{"y":{"z":"p","w":"q"}}}`, `{"x":{"y.z":"p","y.w":"q"}}`, `{"x.y":{"z":"p","w":"q"}}`, `{"x.y.z":"p","x.y.w":"q"}`},
			[]any{"m", "q", `{"x.y.z":"p"}`}},
		{"a flattened Nested with a metadata column beside it", []string{"n.a Array(UInt8)", "n.b Array(String)", "n.src String", "extra String"}, "attribute.src=n.src", "extra",
			[]string{`{"n":[{"a":1,"b":"x","src":"p"}]}`, `{"n":{"a":[1],"b":["x"],"src":"p"}}`, `{"n.a":[1],"n.b":["x"],"n.src":"p"}`},
			[]any{[]uint8{1}, []string{"x"}, "s", `{"n.src":"p"}`}},
		{"a flattened Nested, no unknown fields", []string{"n.a Array(UInt8)", "n.b Array(String)", "n.src String"}, "attribute.src=n.src", "",
			[]string{`{"n":[{"a":1,"b":"x","src":"p"},{"a":2,"b":"y"}]}`, `{"n":{"a":[1,2],"b":["x","y"],"src":"p"}}`, `{"n.a":[1,2],"n.b":["x","y"],"n.src":"p"}`, `{"n":[{"a":1,"b":"x"},{"a":2,"b":"y"}]}`},
			[]any{[]uint8{1, 2}, []string{"x", "y"}, "s"}},
		{"unknownFieldsColumn under the group", []string{"u.name String", "u.extra String"}, "", "u.extra",
			[]string{`{"u":{"name":"q","extra":"z"}}`, `{"u.name":"q","u.extra":"z"}`},
			[]any{"q", `{"u.extra":"z"}`}},
		// A key of a column never written is kept as its top-level field is, under the column's
		// name; it was dropped before, while the field "n.m" was kept.
		{"a MATERIALIZED column under the group, unknown fields", []string{"k UInt8", "n.a Array(UInt8)", "n.m Array(UInt8) MATERIALIZED n.a", "extra String"}, "", "extra",
			[]string{`{"k":1,"n":{"a":[1],"m":[2]},"z":3}`, `{"k":1,"n.a":[1],"n.m":[2],"z":3}`, `{"k":1,"n":{"m":[2],"a":[1]},"z":3}`},
			[]any{uint8(1), []uint8{1}, `{"n.m":[2],"z":3}`}},
		{"a MATERIALIZED column under the group, an array of objects", []string{"k UInt8", "n.a Array(UInt8)", "n.m Array(UInt8) MATERIALIZED n.a", "extra String"}, "", "extra",
			[]string{`{"k":1,"n":[{"a":1,"m":2}],"z":3}`, `{"k":1,"n.a":[1],"n.m":2,"z":3}`},
			[]any{uint8(1), []uint8{1}, `{"n.m":2,"z":3}`}},
		{"an ALIAS column under a deeper group", []string{"x.y.z String", "x.y.w String ALIAS x.y.z", "extra String"}, "", "extra",
			[]string{`{"x":{"y":{"z":"p","w":"q"}}}`, `{"x":{"y.z":"p","y.w":"q"}}`, `{"x.y":{"z":"p","w":"q"}}`, `{"x.y.z":"p","x.y.w":"q"}`},
			[]any{"p", `{"x.y.w":"q"}`}},
		{"a metadata column whose name is a group's", []string{"u String", "u.id String", "extra String"}, "ordering_key=u", "extra",
			[]string{`{"u":{"id":"zz"},"u.id":"x"}`},
			[]any{"k1", "x", `{"u":{"id":"zz"}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := table(t, tc.columns...)
			var m []convert.MetadataColumn
			if tc.spec != "" {
				m = pairs(t, tc.spec)
			}
			c, err := convert.NewWith(tb, convert.Options{Metadata: m, UnknownFields: tc.unknown})
			if err != nil {
				t.Fatal(err)
			}
			var first []byte
			for _, p := range tc.payloads {
				row, err := c.ConvertMessage(nil, []byte(p), meta)
				if err != nil {
					t.Errorf("%s: %v", p, err)
					continue
				}
				if diff := cmp.Diff(tc.want, decodeRow(t, tb, row)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", p, diff)
				}
				if first == nil {
					first = row
				} else if !bytes.Equal(row, first) {
					t.Errorf("%s: row %x, but %s gives %x", p, row, tc.payloads[0], first)
				}
			}
		})
	}
}

// TestInjectedColumnsInGroupsErrors: the errors of a group with a column filled from the message
// name what is wrong, never a column missing that the table has, and the metadata column keeps
// its own error.
func TestInjectedColumnsInGroupsErrors(t *testing.T) {
	for _, tc := range []struct {
		columns []string
		spec    string
		payload string
		meta    *convert.Meta
		want    string
	}{
		{[]string{"u.id String", "u.name String"}, "attribute.uid=u.id", `{"u":{"id":"p","bogus":1}}`, &convert.Meta{Attributes: map[string]string{"uid": "m"}},
			`column "u" (u.id String, u.name String): "bogus" names no column: the table has no column "u.bogus", and nothing given under "u" is dropped`},
		{[]string{"u.id String", "u.name String"}, "attribute.uid=u.id", `{"u":{"id":"p","name":2,"bogus":1}}`, &convert.Meta{},
			`column "u" (u.id String, u.name String): "bogus" names no column: the table has no column "u.bogus", and nothing given under "u" is dropped; ` +
				`column "u.id" (String, from metadataColumns attribute.uid=u.id): the message has no attribute "uid", and the column has no DEFAULT and is not Nullable`},
		{[]string{"u.id String", "u.name String"}, "attribute.uid=u.id", `{"u":"p"}`, &convert.Meta{Attributes: map[string]string{"uid": "m"}},
			`column "u" (u.id String, u.name String): "p" is a string; "u" takes an object of its columns ({"name":…})`},
		{[]string{"u.id String", "u.name String"}, "attribute.uid=u.id", `{"u":[{"name":"q"}]}`, &convert.Meta{Attributes: map[string]string{"uid": "m"}},
			`column "u" (u.id String, u.name String): [{"name":"q"}] is an array; "u" takes an object of its columns ({"name":…}): an array of objects needs every column under "u." to be an Array, and column "u.name" (String) is not`},
		{[]string{"n.a Array(UInt8)", "n.src String"}, "attribute.src=n.src", `{"n":[{"a":1},{"b":2}]}`, &convert.Meta{Attributes: map[string]string{"src": "s"}},
			`column "n" (n.a Array(UInt8), n.src String): element [1]: "b" names no column: the table has no column "n.b", and nothing given under "n" is dropped`},
	} {
		tb := table(t, tc.columns...)
		_, err := convertWith(t, tb, convert.Options{Metadata: pairs(t, tc.spec)}, tc.payload, tc.meta)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v,\nwant %s", tc.payload, err, tc.want)
		}
	}
}
