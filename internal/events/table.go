package events

import (
	"fmt"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// Table is DDL's schema as the pipeline reads it from a server (database db, table events, the
// server in UTC), for benchmarks that need no server.
func Table() *schema.Table {
	cols := []struct{ name, typ, def string }{
		{"event_id", "String", ""}, {"event_type", "String", ""}, {"user_id", "UInt64", ""},
		{"session_id", "String", ""}, {"seq", "Int64", ""}, {"ts", "DateTime('UTC')", ""},
		{"received_at", "DateTime('UTC')", ""}, {"event_date", "Date", ""}, {"page", "String", ""},
		{"device", "String", ""}, {"geo", "String", ""}, {"tags", "Array(String)", ""},
		{"scores", "Array(Float64)", ""}, {"duration_ms", "UInt32", ""}, {"revenue", "Nullable(Float64)", ""},
		{"is_logged_in", "UInt8", ""}, {"items", "String", ""}, {"experiment", "Nullable(String)", ""},
		{"app_version", "String", ""}, {"source", "String", "DEFAULT"},
	}
	t := &schema.Table{Database: "db", Name: "events", ServerTimeZone: "Etc/UTC"}
	for _, c := range cols {
		ct, err := chtype.Parse(c.typ)
		if err != nil {
			panic(fmt.Sprintf("events.Table: column %s: %v", c.name, err))
		}
		t.Columns = append(t.Columns, schema.Column{Name: c.name, TypeName: c.typ, Type: ct, DefaultKind: c.def})
	}
	return t
}
