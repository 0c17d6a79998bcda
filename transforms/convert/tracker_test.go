package convert

import (
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
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
