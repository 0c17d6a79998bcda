package convert

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

func trackerTable(t *testing.T, types ...string) *schema.Table {
	t.Helper()
	tab := &schema.Table{}
	for i, typ := range types {
		ct, err := chtype.Parse(typ)
		if err != nil {
			t.Fatal(err)
		}
		tab.Columns = append(tab.Columns, schema.Column{Name: string(rune('a' + i)), TypeName: typ, Type: ct})
	}
	return tab
}

func TestTracker(t *testing.T) {
	tr := &Tracker{Stage: "test", Database: "db", Table: "t"}
	if tr.Converter() != nil || tr.Schema() != nil || tr.Age() < 1e18 {
		t.Fatal("a new Tracker holds a schema")
	}
	if err := tr.Set(trackerTable(t, "UInt8", "String")); err != nil {
		t.Fatal(err)
	}
	first := tr.Converter()
	if first == nil || len(tr.Schema().Columns) != 2 || tr.Age() > 1e9 {
		t.Fatalf("after Set: %v, %v, %v", first, tr.Schema(), tr.Age())
	}
	// A column without a converter: an error naming the change, and the old schema kept.
	err := tr.Set(trackerTable(t, "UInt8", "AggregateFunction(uniq, UInt64)"))
	if err == nil || !strings.HasPrefix(err.Error(), "table db.t changed: ") {
		t.Errorf("unsupported column: %v", err)
	}
	if tr.Converter() != first {
		t.Error("a failed Set replaced the converter")
	}
	if err := tr.Set(trackerTable(t, "UInt8", "String", "Int32")); err != nil || tr.Converter().SchemaHash() == first.SchemaHash() {
		t.Errorf("a new column: %v, same hash %v", err, tr.Converter().SchemaHash() == first.SchemaHash())
	}
}

// TestTrackerKeepsColumnsFromTheMessage: a schema refresh builds the new converter with the same
// metadata and unknown-fields columns, and a refresh that drops one keeps the current converter.
func TestTrackerKeepsColumnsFromTheMessage(t *testing.T) {
	tr := &Tracker{Stage: "test", Database: "db", Table: "t", Options: Options{Metadata: []MetadataColumn{{Key: "message_id", Column: "b"}}, UnknownFields: "c"}}
	if err := tr.Set(trackerTable(t, "UInt8", "String", "String")); err != nil {
		t.Fatal(err)
	}
	if err := tr.Set(trackerTable(t, "UInt8", "String", "String", "UInt8")); err != nil { // column d added
		t.Fatal(err)
	}
	row, err := tr.Converter().ConvertMessage(nil, []byte(`{"a":1,"b":"payload","d":2,"e":3}`), &Meta{ID: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	// a = 1; b = "m1"; c = {"b":"payload","e":3}; d = 2.
	want := "\x00\x01" + "\x00\x02m1" + "\x00\x15" + `{"b":"payload","e":3}` + "\x00\x02"
	if string(row) != want {
		t.Errorf("row %q, want %q", row, want)
	}
	dropped := trackerTable(t, "UInt8")
	dropped.Name = "t"
	err = tr.Set(dropped)
	if want := `table db.t changed: metadataColumns: pair "message_id=b": the table t has no column "b"`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if got := tr.Converter().Columns(); len(got) != 4 {
		t.Errorf("after a failed refresh the converter has columns %v, want the four of the last schema", got)
	}
}

// TestChangedElsewhere: a change of the table that one Tracker reads is reported once to each
// other Tracker of the table (not to those of another table); their own reads of it, finding the
// columns already known, are news to no one; and a read from before a change read elsewhere is
// a change back, after which the Tracker that made it is sent to read the table again.
func TestChangedElsewhere(t *testing.T) {
	parse := &Tracker{Stage: "parse", Database: "db", Table: "elsewhere"}
	parse2 := &Tracker{Stage: "parse", Database: "db", Table: "elsewhere"}
	write := &Tracker{Stage: "write", Database: "db", Table: "elsewhere"}
	other := &Tracker{Stage: "parse", Database: "db", Table: "another"}
	old, widened := trackerTable(t, "UInt8"), trackerTable(t, "UInt16")
	all := []*Tracker{parse, parse2, write, other}
	news := func() (got []string) {
		for _, tr := range all {
			if tr.ChangedElsewhere() {
				got = append(got, tr.Stage+"."+tr.Table)
			}
		}
		return got
	}
	set := func(tab *schema.Table, trs ...*Tracker) {
		for _, tr := range trs {
			if err := tr.Set(tab); err != nil {
				t.Fatal(err)
			}
		}
	}
	set(old, all...)
	if got := news(); len(got) > 0 {
		t.Errorf("first reads reported as changes to %v", got)
	}
	set(widened, write)
	if got, want := news(), []string{"parse.elsewhere", "parse.elsewhere"}; !slices.Equal(got, want) {
		t.Errorf("the write stage's read of a change reported to %v, want %v", got, want)
	}
	if got := news(); len(got) > 0 {
		t.Errorf("a change reported twice, to %v", got)
	}
	set(widened, parse, parse2) // what the parse stages then do: read the table again
	if got := news(); len(got) > 0 {
		t.Errorf("the parse stages' reads of the known change reported to %v", got)
	}

	// The parse stage's read began before the write stage read the next change (the column back
	// to UInt8, say), and ends after it, with the columns from before that change: a change back,
	// news to the others; and when one of them reads the table again, news to the parse stage.
	set(old, write)
	set(widened, parse)
	if got, want := news(), []string{"parse.elsewhere", "write.elsewhere"}; !slices.Equal(got, want) {
		t.Errorf("a read from before a change reported to %v, want %v", got, want)
	}
	set(old, parse2)
	if got, want := news(), []string{"parse.elsewhere", "write.elsewhere"}; !slices.Equal(got, want) {
		t.Errorf("the read again of the change reported to %v, want %v", got, want)
	}
}

// TestTrackerLogsTheChange: a schema change is logged with the columns added, gone and changed,
// not with every column of the table: a table of 3,000 columns of 100-byte names, read again
// after each of its changes, used to log 300 KB at each, more than a Cloud Logging entry holds.
func TestTrackerLogsTheChange(t *testing.T) {
	var out strings.Builder
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&out, nil)))
	wide := func(n int, types ...string) *schema.Table {
		tab := trackerTable(t, types...)
		nullable := trackerTable(t, "Nullable(Int64)").Columns[0]
		for i := range n {
			nullable.Name = fmt.Sprintf("%s%04d", strings.Repeat("n", 96), i)
			tab.Columns = append(tab.Columns, nullable)
		}
		return tab
	}
	tr := &Tracker{Stage: "parse", Database: "db", Table: "logged"}
	before, after := wide(3000, "UInt8", "String"), wide(3001, "UInt8", "UInt8")
	after.Columns = slices.Delete(after.Columns, 0, 1) // a gone, b changed
	for _, tab := range []*schema.Table{before, after} {
		if err := tr.Set(tab); err != nil {
			t.Fatal(err)
		}
	}
	got := out.String()
	want := fmt.Sprintf(`level=INFO msg="parse: the table's schema changed" table=logged columns=3002 added=%s3000 gone=a changed=b`+"\n", strings.Repeat("n", 96))
	if !strings.HasSuffix(got, want) || len(got) > 4<<10 {
		t.Errorf("logged %d bytes:\n%s\nwant a line ending\n%s", len(got), text.Cut(got, 1000), want)
	}
}
