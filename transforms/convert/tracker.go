package convert

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// Tracker follows one table's schema for a stage: its columns, read from system.columns
// (schema.Fetch), and the Converter built from them. The parse stage refreshes it every
// schemaRefreshSeconds, and at once when another stage of the process has read a change
// (ChangedElsewhere), the write stage when rows were converted against another schema or the
// server says the table changed; both go through Refresh, so a change is read, built and
// logged the same way. A Tracker is not safe for concurrent use (one per DoFn instance).
type Tracker struct {
	Stage    string // the stage's name, for the log: "parse", "write"
	Database string
	Table    string
	Options  Options // the columns filled from the message (NewWith), kept at every refresh

	table *schema.Table
	conv  *Converter
	read  time.Time
	// leftOut names the columns of the last schema that are not written for their names
	// (schema.Column.NotWritten, not EPHEMERAL), which a warning has named.
	leftOut []string
	// seen is the count of changes of the table (changesOf) when this Tracker last read it or
	// was told of one (ChangedElsewhere).
	seen  int64
	count *atomic.Int64 // changesOf's, once looked up
}

// changes counts, per table ("database.table"), the schema changes that the Trackers of this
// process have read: a change one stage reads (the write stage, whose INSERT the server refused
// for the table's new structure, or the parse stage, which added a column) the others learn at
// once (ChangedElsewhere), instead of at their next periodic read.
var changes sync.Map // string -> *atomic.Int64

// changesOf returns the count of the changes read of t's table.
func (t *Tracker) changesOf() *atomic.Int64 {
	if t.count == nil {
		c, _ := changes.LoadOrStore(t.Database+"."+t.Table, new(atomic.Int64))
		t.count = c.(*atomic.Int64)
	}
	return t.count
}

// ChangedElsewhere reports whether another Tracker of this process has read a change of the
// table's schema since this one last read it; it reports each such change once, so that the
// stage reads the table again once, whether that read succeeds or not.
func (t *Tracker) ChangedElsewhere() bool {
	n := t.changesOf().Load()
	if n == t.seen {
		return false
	}
	t.seen = n
	return true
}

// Refresh reads the table's schema through conn and builds its converter. A column type
// without a converter is an error naming the column (after a first successful Refresh, "table
// db.t changed: ..."); on any error the Tracker keeps what it had. A schema that differs from
// the previous one is logged once, with the new columns.
func (t *Tracker) Refresh(ctx context.Context, conn driver.Conn) error {
	tab, err := schema.Fetch(ctx, conn, t.Database, t.Table)
	if err != nil {
		return err
	}
	return t.Set(tab)
}

// Set takes tab as the table's schema and builds its converter, as Refresh does after reading it
// (tests and benchmarks set a schema without a server).
func (t *Tracker) Set(tab *schema.Table) error {
	conv, err := NewWith(tab, t.Options)
	if err != nil {
		if t.conv != nil {
			return &ChangedError{Err: fmt.Errorf("table %s.%s changed: %w", t.Database, t.Table, err)}
		}
		return fmt.Errorf("table %s.%s: %w", t.Database, t.Table, err)
	}
	count := t.changesOf()
	if t.conv != nil && conv.SchemaHash() != t.conv.SchemaHash() {
		slog.Info(t.Stage+": the table's schema changed", "table", t.Table, "columns", strings.Join(conv.Columns(), ", "))
		count.Add(1)
	}
	t.seen = count.Load()
	var leftOut []string
	for _, c := range tab.Columns {
		if c.NotWritten != "" && c.DefaultKind != "EPHEMERAL" {
			leftOut = append(leftOut, c.Name)
			if !slices.Contains(t.leftOut, c.Name) {
				// Only a column added while the job runs gets here: the launch refuses a table
				// that has one (schema.Table.NameFault).
				slog.Warn(t.Stage+": a column is not written: the server fills it with its default, and a field of its name is left out of the row",
					"table", t.Table, "column", c.Name, "why", c.NotWritten, "fix", "rename the column")
			}
		}
	}
	t.leftOut = leftOut
	t.table, t.conv, t.read = tab, conv, time.Now()
	return nil
}

// ChangedError is the error of Refresh (and Set) when the table, read again, has changed so that
// no converter can be built for it (a column of a type without converter added, a column of
// Options dropped): reading it again fails the same way until the table changes again. The
// Tracker keeps the schema it had.
type ChangedError struct{ Err error }

func (e *ChangedError) Error() string { return e.Err.Error() }
func (e *ChangedError) Unwrap() error { return e.Err }

// Converter returns the converter of the last schema read; nil before the first Refresh.
func (t *Tracker) Converter() *Converter { return t.conv }

// Schema returns the last schema read; nil before the first Refresh.
func (t *Tracker) Schema() *schema.Table { return t.table }

// Age returns how long ago the schema was read (a very long time before the first Refresh).
func (t *Tracker) Age() time.Duration {
	if t.read.IsZero() {
		return time.Duration(1<<63 - 1)
	}
	return time.Since(t.read)
}
