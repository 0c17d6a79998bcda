package route

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/flowtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// TestMain runs the pipelines of these tests on prism, with its bundle splits off.
func TestMain(m *testing.M) { os.Exit(flowtest.Main(m)) }

func init() {
	register.Function2x0(messageIDs)
	register.Function2x0(deadLetterIDs)
	register.DoFn2x0[flow.Messages, func(string)](&tableIDsFn{})
}

// tableIDsFn emits "<Table>: <id>" for each message.
type tableIDsFn struct{ Table string }

func (f *tableIDsFn) ProcessElement(ms flow.Messages, emit func(string)) {
	for _, m := range ms.Messages {
		emit(f.Table + ": " + m.ID)
	}
}

func messageIDs(ms flow.Messages, emit func(string)) {
	for _, m := range ms.Messages {
		emit(m.ID)
	}
}

func deadLetterIDs(d flow.DeadLetter, emit func(string)) { emit(d.MessageID + ": " + d.ErrorMessage) }

func noCheck(string) string { return "" }

func TestParseBy(t *testing.T) {
	for in, want := range map[string]By{"attribute:event_type": {Attribute: true, Name: "event_type"}, "field:type": {Name: "type"}, "field:a:b": {Name: "a:b"}} {
		got, err := ParseBy(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("ParseBy(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"type":       `"type" must be attribute:<name> (a Pub/Sub attribute of the message) or field:<name>`,
		"header:x":   `"header:x" must be attribute:<name>`,
		"attribute:": `"attribute:" names no attribute`,
		"field:":     `"field:" names no field`,
		// A trailing space (a parameters file, a YAML value) would make every message a dead letter.
		"attribute:event_type ": `"attribute:event_type " has spaces around the name "event_type ": the attribute's name is compared byte for byte`,
		"field: type":           `"field: type" has spaces around the name " type"`,
		"field: ":               `"field: " has spaces around the name " "`,
	} {
		if _, err := ParseBy(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseBy(%q) error %v; want it to contain %q", in, err, want)
		}
	}
}

func TestParseTables(t *testing.T) {
	got, err := ParseTables(" click = clicks,order=orders,refund=orders", noCheck)
	want := []Entry{{"click", "clicks"}, {"order", "orders"}, {"refund", "orders"}}
	if err != nil || !cmp.Equal(got, want) {
		t.Errorf("ParseTables = %v, %v; want %v", got, err, want)
	}
	dotted := func(table string) string {
		if strings.Contains(table, ".") {
			return "must be a bare table name"
		}
		return ""
	}
	for in, want := range map[string]string{
		"click":                   `the pair "click" has no '='`,
		"=clicks":                 `the pair "=clicks" has no value before '='`,
		"click=":                  `the pair "click=" has no table after '='`,
		"click=a,click=b":         `the value "click" is listed twice`,
		"a==clicks":               `the pair "a==clicks" has more than one '='`,
		"a=b=c":                   `the pair "a=b=c" has more than one '='`,
		"click=a,":                `the pair "" has no '='`,
		"click=db.clicks":         `the pair "click=db.clicks": the table "db.clicks" must be a bare table name`,
		"order=orders,click=a.b ": `the table "a.b" must be a bare table name`,
	} {
		if _, err := ParseTables(in, dotted); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTables(%q) error %v; want it to contain %q", in, err, want)
		}
	}
}

func TestNewTables(t *testing.T) {
	s := New(By{Name: "type"}, []Entry{{"click", "clicks"}, {"order", "orders"}, {"refund", "orders"}}, "events")
	if want := []string{"clicks", "orders", "events"}; !cmp.Equal(s.Tables, want) {
		t.Errorf("Tables = %v; want %v", s.Tables, want)
	}
	if got := New(s.By, s.Entries, "orders").Tables; !cmp.Equal(got, []string{"clicks", "orders"}) {
		t.Errorf("Tables with orders for unlisted values = %v", got)
	}
}

func TestOf(t *testing.T) {
	byField := New(By{Name: "type"}, []Entry{{"click", "clicks"}, {"7", "sevens"}}, "")
	byAttr := New(By{Attribute: true, Name: "event_type"}, []Entry{{"click", "clicks"}}, "events")
	for _, tc := range []struct {
		spec      Spec
		data      string
		attrs     map[string]string
		table     string
		errorText string
	}{
		{spec: byField, data: `{"type":"click","x":1}`, table: "clicks"},
		{spec: byField, data: `{"x":1, "type" : "cl\u0069ck"}`, table: "clicks"},
		{spec: byField, data: `{"type":7}`, table: "sevens"},
		{spec: byField, data: `{"type":7.0}`, errorText: `routeBy field:type: the value "7.0" of the field "type" is not listed in routeTables, and routeUnlisted is deadLetter`},
		{spec: byField, data: `{"type":"refund"}`, errorText: `routeBy field:type: the value "refund" of the field "type" is not listed in routeTables, and routeUnlisted is deadLetter`},
		{spec: byField, data: `{"kind":"click"}`, errorText: `routeBy field:type: the payload has no field "type" (or it is null), so it names no table`},
		{spec: byField, data: `{"type":null}`, errorText: `the payload has no field "type" (or it is null)`},
		{spec: byField, data: `{"type":true}`, errorText: `routeBy field:type: the routing value cannot be read: payload: field "type" is a boolean (true); only a string or a number names a table`},
		{spec: byField, data: `{"type":{"a":1}}`, errorText: `field "type" is an object`},
		{spec: byField, data: `{"type":"click","type":"click"}`, errorText: `field "type" appears twice`},
		{spec: byField, data: `[{"type":"click"}]`, errorText: `is not a JSON object`},
		{spec: byField, data: `{"type":"click"} {}`, errorText: `unexpected text after the JSON object at byte 17`},
		{spec: byField, data: `{"type":"click"`, errorText: `invalid JSON`},
		{spec: byField, data: "{\"type\":\"\xff\"}", errorText: `not valid UTF-8`},
		{spec: byField, data: ``, errorText: `empty, expected one JSON object`},
		{spec: byAttr, data: `not even JSON`, attrs: map[string]string{"event_type": "click"}, table: "clicks"},
		{spec: byAttr, data: `{}`, attrs: map[string]string{"event_type": "other"}, table: "events"},
		{spec: byAttr, data: `{}`, attrs: map[string]string{"event_type": ""}, table: "events"},
		{spec: byAttr, data: `{"event_type":"click"}`, errorText: `routeBy attribute:event_type: the message has no attribute "event_type", so it names no table`},
		// An unlisted value is cut as a converted value is: a 200 kB value would fill the dead
		// letter's error_message, and its stack_trace again, with the payload.
		{spec: byField, data: `{"type":"` + strings.Repeat("x", 200000) + `"}`,
			errorText: `routeBy field:type: the value "` + strings.Repeat("x", 100) + `…" (200000 bytes) of the field "type" is not listed in routeTables`},
	} {
		got, err := tc.spec.Of(flow.Message{Data: []byte(tc.data), Attributes: tc.attrs})
		if tc.errorText != "" {
			var re *Error
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.errorText) || len(err.Error()) > 1000 {
				t.Errorf("%s %q %v: Of = %q, %v; want an *Error containing %q", tc.spec.By, tc.data, tc.attrs, got, err, tc.errorText)
			}
			continue
		}
		if err != nil || got != tc.table {
			t.Errorf("%s %q %v: Of = %q, %v; want %q", tc.spec.By, tc.data, tc.attrs, got, err, tc.table)
		}
	}
}

// TestRoute runs the stage on prism: each message comes out in its table's collection or as a
// dead letter, exactly once, and the dead letters are counted.
func TestRoute(t *testing.T) {
	spec := New(By{Name: "type"}, []Entry{{"click", "clicks"}, {"order", "orders"}}, "events")
	var elements []flow.Messages
	var want [3][]any
	var wantDead []any
	kinds := []string{"click", "order", "view", ""}
	for e := range 5 {
		var ms flow.Messages
		for i := range 4 {
			id := fmt.Sprintf("m%d%d", e, i)
			kind := kinds[(e+i)%len(kinds)]
			data := `{"type":"` + kind + `"}`
			switch kind {
			case "click":
				want[0] = append(want[0], id)
			case "order":
				want[1] = append(want[1], id)
			case "view":
				want[2] = append(want[2], id)
			case "":
				data = `{"kind":"none"}`
				wantDead = append(wantDead, id+`: routeBy field:type: the payload has no field "type" (or it is null), so it names no table`)
			}
			ms.Messages = append(ms.Messages, flow.Message{ID: id, Data: []byte(data)})
		}
		elements = append(elements, ms, flow.Messages{}) // and a heartbeat
	}
	p, s := beam.NewPipelineWithRoot()
	tables, dead := Route(s, spec, beam.CreateList(s, elements))
	if len(tables) != 3 {
		t.Fatalf("Route gave %d collections; want 3", len(tables))
	}
	for i, c := range tables {
		passert.EqualsList(s, beam.ParDo(s, messageIDs, c), want[i])
	}
	passert.EqualsList(s, beam.ParDo(s, deadLetterIDs, dead), wantDead)
	res, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	var unrouted int64
	for _, c := range res.Metrics().AllMetrics().Counters() {
		if c.Key.Name == "dead-letters-unrouted" {
			unrouted += c.Committed
		}
	}
	if unrouted != int64(len(wantDead)) {
		t.Errorf("dead-letters-unrouted = %d; want %d", unrouted, len(wantDead))
	}
}

// TestRouteManyTables: a routing to more tables than one beam.Partition takes (its function's
// arguments, reflect.FuncOf's 128) gives each table its own messages, the last group short; the
// launch of a routing to 125 tables or more panicked with "reflect.FuncOf: too many arguments".
func TestRouteManyTables(t *testing.T) {
	const n = 300 // three groups of partitions, the last short
	var entries []Entry
	var ms flow.Messages
	var want []any
	for i := range n {
		entries = append(entries, Entry{fmt.Sprintf("v%d", i), fmt.Sprintf("t%d", i)})
		for j := range i%3 + 1 {
			id := fmt.Sprintf("m%d.%d", i, j)
			ms.Messages = append(ms.Messages, flow.Message{ID: id, Data: fmt.Appendf(nil, `{"type":"v%d"}`, i)})
			want = append(want, fmt.Sprintf("t%d: %s", i, id))
		}
	}
	spec := New(By{Name: "type"}, entries, "")
	p, s := beam.NewPipelineWithRoot()
	tables, dead := Route(s, spec, beam.Create(s, ms))
	if len(tables) != n {
		t.Fatalf("Route gave %d collections; want %d", len(tables), n)
	}
	var ids []beam.PCollection
	for i, c := range tables {
		ids = append(ids, beam.ParDo(s, &tableIDsFn{Table: spec.Tables[i]}, c))
	}
	passert.EqualsList(s, beam.Flatten(s, ids...), want)
	passert.Empty(s, dead)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
}

// TestRouteHeartbeats: a heartbeat of the source reaches every table; messages keep their
// element's timestamp.
func TestRouteHeartbeats(t *testing.T) {
	f := &routeFn{Spec: New(By{Attribute: true, Name: "k"}, []Entry{{"a", "ta"}, {"b", "tb"}}, "")}
	f.Setup()
	var got []string
	emit := func(et beam.EventTime, i int, ms flow.Messages) {
		ids := []string{}
		for _, m := range ms.Messages {
			ids = append(ids, m.ID)
		}
		got = append(got, fmt.Sprintf("t=%d table=%d %v", et, i, ids))
	}
	var dead []string
	emitDead := func(d flow.DeadLetter) { dead = append(dead, d.MessageID) }
	f.ProcessElement(context.Background(), 5, flow.Messages{}, emit, emitDead)
	f.ProcessElement(context.Background(), 9, flow.Messages{Messages: []flow.Message{
		{ID: "1", Attributes: map[string]string{"k": "b"}}, {ID: "2", Attributes: map[string]string{"k": "a"}},
		{ID: "3"}, {ID: "4", Attributes: map[string]string{"k": "b"}}}}, emit, emitDead)
	want := []string{"t=5 table=0 []", "t=5 table=1 []", "t=9 table=0 [2]", "t=9 table=1 [1 4]"}
	if !cmp.Equal(got, want) || !cmp.Equal(dead, []string{"3"}) {
		t.Errorf("emitted %q, dead letters %v; want %q, [3]", got, dead, want)
	}
}

// TestNewDeadLetterOfUDFOutput: a message the JavaScript UDF transformed says so when the routing
// read a field of the output, and shows that output at the end of its stack trace; not when it
// read an attribute, which is the message's own.
func TestNewDeadLetterOfUDFOutput(t *testing.T) {
	m := flow.Message{Data: []byte(`{"kind":1}`), Original: []byte(`{"k":1}`), Transformed: true}
	field := NewDeadLetter(m, &Error{By: By{Name: "kind"}, Missing: true})
	if want := "routing the output of the javascript UDF: routeBy field:kind: "; !strings.HasPrefix(field.ErrorMessage, want) {
		t.Errorf("routed by a field of the output: %q, want it to start %q", field.ErrorMessage, want)
	}
	attr := NewDeadLetter(m, &Error{By: By{Attribute: true, Name: "t"}, Missing: true})
	if want := `routeBy attribute:t: the message has no attribute "t", so it names no table`; attr.ErrorMessage != want {
		t.Errorf("routed by an attribute: %q, want %q", attr.ErrorMessage, want)
	}
	if !strings.HasSuffix(field.StackTrace, "\nudf output: {\"kind\":1}") || strings.Contains(attr.StackTrace, "udf output") {
		t.Errorf("stack traces %q, %q; want the output read at the end of the first alone", field.StackTrace, attr.StackTrace)
	}
	if string(attr.Payload) != `{"k":1}` || string(field.Payload) != `{"k":1}` {
		t.Errorf("payloads %q, %q; want the message as published", attr.Payload, field.Payload)
	}
}
