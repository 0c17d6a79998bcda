package convert

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
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
	seen   int64
	shared *tableChanges // changesOf's, once looked up
}

// tableChanges is what the Trackers of this process know of one table's schema: the columns of
// the last schema read (a hash of their names, types and DEFAULT kinds, whatever each stage's
// Options), and how many times a read found other columns than the read before it. A change one
// stage reads (the write stage, whose INSERT the server refused for the table's new structure, or
// the parse stage, which added a column) the others learn at once (ChangedElsewhere), instead of
// at their next periodic read; the reads it makes find the columns already known, so a change
// makes each Tracker read the table once, not once for each other Tracker.
type tableChanges struct {
	count atomic.Int64 // read without mu by ChangedElsewhere
	mu    sync.Mutex
	hash  uint64 // of the columns last read; 0 before the first read
}

// changes holds the tableChanges of each table ("database.table") of this process.
var changes sync.Map // string -> *tableChanges

// changesOf returns what this process knows of t's table's changes.
func (t *Tracker) changesOf() *tableChanges {
	if t.shared == nil {
		c, _ := changes.LoadOrStore(t.Database+"."+t.Table, new(tableChanges))
		t.shared = c.(*tableChanges)
	}
	return t.shared
}

// read records that tab was read and returns the count of changes then, which this Tracker has
// seen: a read that finds other columns than the last read of the table (in this Tracker or
// another) counts as a change, news to every other Tracker of the table, and so to this one any
// later read elsewhere that finds other columns than tab's. A read that predates a change read
// elsewhere counts as one too, back to the old columns: the others read the table again, and the
// first to find the new columns counts a change that sends this Tracker to read it again.
func (c *tableChanges) read(tab *schema.Table) int64 {
	h := fnv.New64a()
	for _, col := range tab.Columns {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", col.Name, col.TypeName, col.DefaultKind)
	}
	sum := h.Sum64() | 1 // never 0, the hash of no read
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hash != 0 && c.hash != sum {
		c.count.Add(1)
	}
	c.hash = sum
	return c.count.Load()
}

// ChangedElsewhere reports whether another Tracker of this process has read a change of the
// table's schema since this one last read it; it reports each such change once, so that the
// stage reads the table again once, whether that read succeeds or not.
func (t *Tracker) ChangedElsewhere() bool {
	n := t.changesOf().count.Load()
	if n == t.seen {
		return false
	}
	t.seen = n
	return true
}

// Refresh reads the table's schema through conn and builds its converter. A column type
// without a converter is an error naming the column (after a first successful Refresh, "table
// db.t changed: ..."); on any error the Tracker keeps what it had. A schema that differs from
// the previous one is logged once, with the columns added, gone and changed.
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
	if t.conv != nil && conv.SchemaHash() != t.conv.SchemaHash() {
		added, gone, changed := columnChanges(t.table, tab)
		slog.Info(t.Stage+": the table's schema changed", "table", t.Table, "columns", len(tab.Columns),
			"added", logNames(added), "gone", logNames(gone), "changed", logNames(changed))
	}
	t.seen = t.changesOf().read(tab)
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

// columnChanges returns the names of the columns that after has and before has not (added), that
// before has and after has not (gone), and that both have with another type or default
// (changed), each in its table's order.
func columnChanges(before, after *schema.Table) (added, gone, changed []string) {
	was := make(map[string]schema.Column, len(before.Columns))
	for _, c := range before.Columns {
		was[c.Name] = c
	}
	is := make(map[string]bool, len(after.Columns))
	for _, c := range after.Columns {
		is[c.Name] = true
		switch b, ok := was[c.Name]; {
		case !ok:
			added = append(added, c.Name)
		case b.TypeName != c.TypeName || b.DefaultKind != c.DefaultKind || b.DefaultExpression != c.DefaultExpression:
			changed = append(changed, c.Name)
		}
	}
	for _, c := range before.Columns {
		if !is[c.Name] {
			gone = append(gone, c.Name)
		}
	}
	return added, gone, changed
}

// maxLoggedNames is the most bytes of column names a log line of a schema change holds per list:
// a table of thousands of columns (addNewColumns adds up to 10000 per worker) would otherwise log
// every name at every change, a line of hundreds of KB each time, more than a Cloud Logging entry
// holds (256 KB).
const maxLoggedNames = 1 << 10

// logNames returns names joined with ", ", cut to maxLoggedNames bytes.
func logNames(names []string) string { return text.Cut(strings.Join(names, ", "), maxLoggedNames) }

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
