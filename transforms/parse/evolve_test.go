package parse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/evolve"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// evolveCase is one message of TestAddColumns and what becomes of it.
type evolveCase struct {
	data string
	want string // "row" or the dead letter's error
}

// runEvolve sends each payload through a parse DoFn of cfg, one message an element, and returns
// for each "row" or its dead letter's error, and the schema hashes of the rows.
func runEvolve(t *testing.T, cfg Config, payloads []string) (got []string, f *parseFn, rows []flow.Row) {
	t.Helper()
	return runEvolveAfter(t, cfg, nil, payloads)
}

// runEvolveAfter is runEvolve calling after, when not nil, between the DoFn's Setup (which reads
// the table) and the first message: for a table changed behind the worker's back.
func runEvolveAfter(t *testing.T, cfg Config, after func(), payloads []string) (got []string, f *parseFn, rows []flow.Row) {
	t.Helper()
	ctx := metrics.SetBundleID(metrics.SetPTransformID(context.Background(), "parse"), "bundle")
	f = &parseFn{Config: cfg}
	if err := f.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if after != nil {
		after()
	}
	for i, p := range payloads {
		outcome, rs := processOne(t, ctx, f, fmt.Sprint(i), p)
		got, rows = append(got, outcome), append(rows, rs...)
	}
	return got, f, rows
}

// processOne has f process the message id with payload p as a bundle of its own, and returns
// "row" and its rows, or its dead letter's error.
func processOne(t *testing.T, ctx context.Context, f *parseFn, id, p string) (outcome string, rows []flow.Row) {
	t.Helper()
	emitRows := func(_ beam.EventTime, rs flow.Rows) { rows = append(rows, rs.Rows...) }
	var dead *flow.DeadLetter
	err := f.ProcessElement(ctx, 0, flow.Messages{Messages: []flow.Message{{ID: id, Data: []byte(p)}}}, emitRows,
		func(d flow.DeadLetter) { dead = &d })
	if err != nil {
		t.Fatalf("message %s: %v", p, err)
	}
	f.FinishBundle(emitRows, nil)
	if dead != nil {
		return dead.ErrorMessage, rows
	}
	return "row", rows
}

// TestAddColumns: with AddNewColumns the parse stage adds a column for each new field, of the
// rule's type, converts the message against it, and dead-letters what the limits refuse (or,
// with unknownFieldsColumn, keeps it there); a type already chosen wins.
func TestAddColumns(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, m String MATERIALIZED 'x') ENGINE = MergeTree ORDER BY id`, "plain")
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, unknown String) ENGINE = MergeTree ORDER BY id`, "overflow")
	limits := evolve.Limits{Max: 3, Pattern: "^[a-z_]+$", Excluded: []string{"debug"}}
	cases := []evolveCase{
		{`{"id":1}`, "row"},
		{`{"id":2,"a":1,"b":"two"}`, "row"}, // two columns
		{`{"id":3,"a":"three"}`, `column "a" (Nullable(Int64)): "three" is not a number; Int64 takes an integer, a string holding one, true or false`},
		{`{"id":4,"nothing":null}`, "row"}, // no column
		{`{"id":5,"m":5}`, "row"},          // a MATERIALIZED column's name is not new
		{`{"id":6,"Foo":6}`, `addNewColumnsPattern: field "Foo" (value 6) does not match ^[a-z_]+$; the message is a dead letter`},
		{`{"id":7,"debug":[1]}`, `addNewColumnsExcluded: field "debug" (value [1]) is excluded: it never becomes a column; the message is a dead letter`},
		{`{"id":8,"c":8.5,"d":true}`, `addNewColumnsMax: field "d" (value true) is beyond the limit: this worker has added 2 columns to the table, the message would add 2 more, and it adds at most 3; the message is a dead letter`},
		{`{"id":9,"e":1,"e":2}`, `payload: field "e" appears twice; which value is meant is ambiguous`},
	}
	var payloads []string
	for _, c := range cases {
		payloads = append(payloads, c.data)
	}
	got, f, rows := runEvolve(t, Config{ClickHouse: srv.Config(), Table: "plain", AddNewColumns: true, Limits: limits}, payloads)
	var want []string
	for _, c := range cases {
		want = append(want, c.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	cols := srv.MustQuery(t, fmt.Sprintf("SELECT name, type FROM system.columns WHERE database = '%s' AND table = 'plain'", srv.Database))
	// c is not added: its message is a dead letter for d. (ClickHouse puts an added column
	// before the MATERIALIZED ones.)
	if want := "id\tUInt32\na\tNullable(Int64)\nb\tNullable(String)\nm\tString"; cols != want {
		t.Errorf("columns:\n%s\nwant\n%s", cols, want)
	}
	// The rows after the columns were added carry the schema with them.
	final := f.tracker.Converter().SchemaHash()
	for _, r := range rows[1:] {
		if r.Schema != final {
			t.Errorf("row of message %s has schema %x, want %x (the table with its new columns)", r.MessageID, r.Schema, final)
		}
	}
	// The converter of the new schema fills the new columns.
	conv := f.tracker.Converter()
	if _, err := conv.Convert(nil, []byte(`{"id":2,"a":1,"b":"two"}`)); err != nil || conv.Untaken() != 0 {
		t.Errorf("converting again: %v, %d fields no column takes", err, conv.Untaken())
	}

	// With unknownFieldsColumn, what the limits refuse stays there and the message is a row.
	got, _, _ = runEvolve(t, Config{ClickHouse: srv.Config(), Table: "overflow", AddNewColumns: true, Limits: limits,
		FromMessage: convert.Options{UnknownFields: "unknown"}},
		[]string{`{"id":1,"Foo":1,"a":1}`, `{"id":2,"debug":2}`, `{"id":3,"b":1,"c":2,"d":3}`})
	if diff := cmp.Diff([]string{"row", "row", "row"}, got); diff != "" {
		t.Errorf("with unknownFieldsColumn (-want +got):\n%s", diff)
	}
	cols = srv.MustQuery(t, fmt.Sprintf("SELECT name FROM system.columns WHERE database = '%s' AND table = 'overflow'", srv.Database))
	if want := "id\nunknown\na\nb\nc"; cols != want {
		t.Errorf("columns with unknownFieldsColumn:\n%s\nwant\n%s", cols, want)
	}
}

// runOnChangedTable runs payloads through a parse DoFn with addNewColumns (at most 5 columns)
// on a table events (id UInt32) that the statements alters change after the DoFn read it: a
// table changed behind the worker's back, by another worker or a person. It returns what
// runEvolve does, and the server.
func runOnChangedTable(t *testing.T, alters []string, payloads ...string) (got []string, rows []flow.Row, srv *chtest.Server) {
	t.Helper()
	srv = chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "events")
	cfg := Config{ClickHouse: srv.Config(), Table: "events", AddNewColumns: true, Limits: evolve.Limits{Max: 5}}
	got, _, rows = runEvolveAfter(t, cfg, func() {
		for _, q := range alters {
			srv.MustExec(t, q)
		}
	}, payloads)
	return got, rows, srv
}

// TestAddColumnsTypeChosenElsewhere: a column another worker added first, of another type than
// this message's value gives, is what the message converts into.
func TestAddColumnsTypeChosenElsewhere(t *testing.T) {
	// Another worker adds s as a String and n as an Int64 after this one read the schema.
	got, rows, _ := runOnChangedTable(t, []string{"ALTER TABLE events ADD COLUMN s Nullable(String)", "ALTER TABLE events ADD COLUMN n Nullable(Int64)"},
		`{"id":1,"s":5}`, `{"id":2,"n":"x"}`)
	if len(rows) != 1 || rows[0].MessageID != "0" || got[0] != "row" {
		t.Errorf("rows %v, want the message with s (5 into the String column)", rows)
	}
	if !strings.HasPrefix(got[1], `column "n" (Nullable(Int64)): "x"`) {
		t.Errorf("outcome %q, want the message with n a dead letter, by the usual rules", got[1])
	}
}

// TestAddColumnsRefusedByServer: an ADD COLUMN the server refuses (here ON CLUSTER of a cluster
// this single server does not have) makes the message a dead letter that quotes the statement
// and the server's error, and so is the next message with the field.
func TestAddColumnsRefusedByServer(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "events")
	got, _, _ := runEvolve(t, Config{ClickHouse: srv.Config(), Table: "events", AddNewColumns: true,
		Limits: evolve.Limits{Max: 5, OnCluster: "no_such_cluster"}}, []string{`{"id":1,"a":1}`, `{"id":2,"a":2}`})
	want := "addNewColumns: field \"a\" (value %d) cannot become a column: the server refused ALTER TABLE `" + srv.Database +
		"`.`events` ON CLUSTER `no_such_cluster` ADD COLUMN `a` Nullable(Int64): "
	for i, g := range got {
		if w := fmt.Sprintf(want, i+1); !strings.HasPrefix(g, w) || !strings.HasSuffix(g, "; the message is a dead letter") {
			t.Errorf("message %d: %s\nwant %s...; the message is a dead letter", i+1, g, w)
		}
	}
	if cols := srv.MustQuery(t, fmt.Sprintf("SELECT name FROM system.columns WHERE database = '%s' AND table = 'events'", srv.Database)); cols != "id" {
		t.Errorf("columns %q, want id alone", cols)
	}
}

// TestAddColumnsTableNoLongerConvertible: when the table, read again to add a new field's column,
// has a column of a type without converter since the worker read it (here an AggregateFunction,
// added by someone else), the message is a dead letter naming the field and that column, at
// once, not a bundle failing after the retries of an outage; the messages without new fields are
// rows of the table as the worker read it, and no column is added. With unknownFieldsColumn the
// message is a row that keeps the field there.
func TestAddColumnsTableNoLongerConvertible(t *testing.T) {
	agg := "ALTER TABLE events ADD COLUMN agg AggregateFunction(sum, UInt64)"
	start := time.Now()
	got, rows, srv := runOnChangedTable(t, []string{agg}, `{"id":1,"nf":1}`, `{"id":2}`, `{"id":3,"nf":3}`)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %v: the table was read again as if the server were unreachable", took)
	}
	want := `addNewColumns: field "nf" (value %d) cannot become a column now: the table, read again to add it, can no longer be converted to (table ` +
		srv.Database + `.events changed: column "agg": unsupported type AggregateFunction(sum, UInt64)`
	for i, g := range []string{got[0], got[2]} {
		if w := fmt.Sprintf(want, 2*i+1); !strings.HasPrefix(g, w) || !strings.HasSuffix(g, "; the message is a dead letter") {
			t.Errorf("message with nf: %s\nwant %s...; the message is a dead letter", g, w)
		}
	}
	if got[1] != "row" || len(rows) != 1 || rows[0].MessageID != "1" {
		t.Errorf("outcomes %q, rows %v: want the message without a new field a row", got, rows)
	}
	if cols := srv.MustQuery(t, fmt.Sprintf("SELECT name FROM system.columns WHERE database = '%s' AND table = 'events'", srv.Database)); cols != "id\nagg" {
		t.Errorf("columns %q, want id and agg", cols)
	}

	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, u String) ENGINE = MergeTree ORDER BY id`, "kept")
	cfg := Config{ClickHouse: srv.Config(), Table: "kept", AddNewColumns: true, Limits: evolve.Limits{Max: 5},
		FromMessage: convert.Options{UnknownFields: "u"}}
	got, _, _ = runEvolveAfter(t, cfg, func() { srv.MustExec(t, strings.Replace(agg, "events", "kept", 1)) }, []string{`{"id":1,"nf":1}`})
	if got[0] != "row" {
		t.Errorf("with unknownFieldsColumn: %s, want a row", got[0])
	}
}

// TestRefusedDDLIsCached: after the server refused a field's ADD COLUMN, the next message with
// the field is refused with that same error, without a second ALTER, for refusedFor.
func TestRefusedDDLIsCached(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "events")
	ctx := metrics.SetBundleID(metrics.SetPTransformID(context.Background(), "parse"), "bundle")
	f := &parseFn{Config: Config{ClickHouse: srv.Config(), Table: "events", AddNewColumns: true, Limits: evolve.Limits{Max: 5, OnCluster: "no_such_cluster"}}}
	if err := f.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	serverErr := func(data string) error {
		t.Helper()
		conv := f.tracker.Converter()
		if err := f.convert(conv, flow.Message{Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
		_, dead, err := f.addColumns(ctx, conv, flow.Message{Data: []byte(data)})
		if err != nil {
			t.Fatal(err)
		}
		var r *evolve.Refusal
		if !errors.As(dead, &r) || r.Err == nil {
			t.Fatalf("%s: %v, want a refusal with the server's error", data, dead)
		}
		return r.Err
	}
	first, second := serverErr(`{"id":1,"a":1}`), serverErr(`{"id":2,"a":2}`)
	if first != second {
		t.Errorf("the second message's refusal carries another error (%v), so the ALTER ran again; want the first's (%v)", second, first)
	}
	f.evolver.refused["a"] = refusedDDL{f.evolver.refused["a"].r, time.Now().Add(-refusedFor)}
	if third := serverErr(`{"id":3,"a":3}`); third == first {
		t.Errorf("after refusedFor the refusal is still the cached one")
	}
}

// TestRefusedDDLsExpire: the refusals kept for refusedFor go once older, though their fields
// never come again: a stream whose field names are its data, while the server refuses every ADD
// COLUMN, kept one per name for the life of the worker.
func TestRefusedDDLsExpire(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "events")
	ctx := metrics.SetBundleID(metrics.SetPTransformID(context.Background(), "parse"), "bundle")
	f := &parseFn{Config: Config{ClickHouse: srv.Config(), Table: "events", AddNewColumns: true, Limits: evolve.Limits{Max: 100, OnCluster: "no_such_cluster"}}}
	if err := f.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	send := func(data string) {
		t.Helper()
		conv := f.tracker.Converter()
		if err := f.convert(conv, flow.Message{Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
		if _, dead, err := f.addColumns(ctx, conv, flow.Message{Data: []byte(data)}); err != nil || dead == nil {
			t.Fatalf("%s: dead letter %v, error %v: want a dead letter", data, dead, err)
		}
	}
	message := func(prefix string) string {
		fields := make([]string, 80)
		for i := range fields {
			fields[i] = fmt.Sprintf(`"%s%d":1`, prefix, i)
		}
		return `{"id":1,` + strings.Join(fields, ",") + `}`
	}
	send(message("s"))
	if n := len(f.evolver.refused); n != 80 {
		t.Fatalf("%d refusals kept, want 80", n)
	}
	for name, d := range f.evolver.refused {
		f.evolver.refused[name] = refusedDDL{d.r, time.Now().Add(-refusedFor)}
	}
	send(message("t"))
	if n := len(f.evolver.refused); n != 80 {
		t.Errorf("%d refusals kept after 80 new fields, with the 80 before older than refusedFor: want 80", n)
	}
	for name := range f.evolver.refused {
		if strings.HasPrefix(name, "s") {
			t.Errorf("the refusal of %q, older than refusedFor, is still kept", name)
			break
		}
	}
}

// TestAddColumnsRefusesNamesThatBreakTheTable: a new field is not added where the column would
// break the table for every later message: under a flattened Nested group (n.b beside n.a
// Array(UInt8): the group's array of objects would no longer convert), under a column (s.x
// beside s String), a name longer than ClickHouse 18.16's files hold (it took the ADD COLUMN and
// then failed every INSERT with errno 36), the name of a MergeTree virtual column (18.16 reads
// the part's name instead). Each is a dead letter naming the field and the rule, the group's
// array of objects still converts, and a dotted field under no such group becomes a column.
func TestAddColumnsRefusesNamesThatBreakTheTable(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, "CREATE TABLE {table} (id UInt32, s String DEFAULT '', n Nested(a UInt8), `g.x` Nullable(UInt8)) ENGINE = MergeTree ORDER BY id", "events")
	long := strings.Repeat("д", 45)
	got, _, _ := runEvolve(t, Config{ClickHouse: srv.Config(), Table: "events", AddNewColumns: true, Limits: evolve.Limits{Max: 10}},
		[]string{`{"id":1,"n.b":5}`, `{"id":2,"s.x":1}`, `{"id":3,"` + long + `":1}`, `{"id":4,"_part":1}`,
			`{"id":5,"n":[{"a":2}]}`, `{"id":6,"g.y":1,"u.v":2}`, `{"id":7,"g":{"x":1,"y":2}}`,
			`{"id":8,"x":1,"x.y":2}`, `{"id":9,"x":{"y":3}}`, `{"id":10,"p.q":1}`})
	want := []string{
		`addNewColumns: field "n.b" (value 5) cannot be a column: it falls under "n", a column or a Nested group of the table, whose field a new column there would read differently; the message is a dead letter`,
		`addNewColumns: field "s.x" (value 1) cannot be a column: it falls under "s", a column or a Nested group of the table, whose field a new column there would read differently; the message is a dead letter`,
		`addNewColumns: field "` + long + `" (value 1) cannot be a column: the name is 270 bytes long as ClickHouse names the column's files (each byte other than A-Z, a-z, 0-9 and _ as %XX), more than 245: with a suffix such as .null.mrk2 that is more than a file name holds (255 bytes), and every INSERT into the table would then fail; the message is a dead letter`,
		`addNewColumns: field "_part" (value 1) cannot be a column: the name is that of a virtual column of MergeTree tables, which ClickHouse (18.16 among others) reads instead of a column of that name; the message is a dead letter`,
		"row", "row", "row",
		// x and x.y new in one message: x.y falls under x, which the message adds (before, both were added).
		`addNewColumns: field "x.y" (value 2) cannot be a column: it falls under "x", another new field of the message, which it would make a column, whose field a new column there would read differently; the message is a dead letter`,
		"row", // x alone: added (message 8, a dead letter, added nothing)
		"row", // under nothing: a new group
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	cols := srv.MustQuery(t, fmt.Sprintf("SELECT name, type FROM system.columns WHERE database = '%s' AND table = 'events'", srv.Database))
	if want := "id\tUInt32\ns\tString\nn.a\tArray(UInt8)\ng.x\tNullable(UInt8)\ng.y\tNullable(Int64)\nu.v\tNullable(Int64)\nx\tNullable(String)\np.q\tNullable(Int64)"; cols != want {
		t.Errorf("columns:\n%s\nwant\n%s", cols, want)
	}
}

// TestAddColumnsGroupRuleOnTheTableAsItIsNow: a column added since the bundle's schema was read
// (another worker, a person) puts a new field under it: the parse stage reads the table again
// before adding columns, and refuses x.y beside a new column x, and n.b beside a new n.a Array.
func TestAddColumnsGroupRuleOnTheTableAsItIsNow(t *testing.T) {
	dead, _, srv := runOnChangedTable(t, []string{"ALTER TABLE events ADD COLUMN x Nullable(Int64)", "ALTER TABLE events ADD COLUMN `n.a` Array(UInt8)"},
		`{"id":1,"x.y":2}`, `{"id":2,"n.b":5}`)
	want := []string{
		`addNewColumns: field "x.y" (value 2) cannot be a column: it falls under "x", a column or a Nested group of the table, whose field a new column there would read differently; the message is a dead letter`,
		`addNewColumns: field "n.b" (value 5) cannot be a column: it falls under "n", a column or a Nested group of the table, whose field a new column there would read differently; the message is a dead letter`,
	}
	if diff := cmp.Diff(want, dead); diff != "" {
		t.Errorf("dead letters (-want +got):\n%s", diff)
	}
	if cols := srv.MustQuery(t, fmt.Sprintf("SELECT name FROM system.columns WHERE database = '%s' AND table = 'events'", srv.Database)); cols != "id\nx\nn.a" {
		t.Errorf("columns %q, want id, x and n.a alone", cols)
	}
}

// TestSchemaChangeReadElsewhere: a column altered while the job runs (n UInt8 made UInt16) is
// read again by the parse stage as soon as another stage of the worker has read the change
// (here a Tracker as the write stage's, which reads the table again when the server refuses an
// INSERT for its new structure), not only after schemaRefreshSeconds (an hour here): the value
// 300 that the column now takes is a row. Without that other read it is a dead letter of the
// table as the stage read it, until its periodic read.
func TestSchemaChangeReadElsewhere(t *testing.T) {
	srv := chtest.New(t)
	ctx := context.Background()
	run := func(table string, readElsewhere bool) string {
		srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, n UInt8) ENGINE = MergeTree ORDER BY id`, table)
		other := &convert.Tracker{Stage: "write", Database: srv.Database, Table: table}
		got, _, _ := runEvolveAfter(t, Config{ClickHouse: srv.Config(), Table: table, SchemaRefresh: time.Hour}, func() {
			if err := other.Refresh(ctx, srv.Conn(t)); err != nil {
				t.Fatal(err)
			}
			srv.MustExec(t, "ALTER TABLE "+table+" MODIFY COLUMN n UInt16")
			if readElsewhere {
				if err := other.Refresh(ctx, srv.Conn(t)); err != nil {
					t.Fatal(err)
				}
			}
		}, []string{`{"id":1,"n":300}`})
		return got[0]
	}
	if got := run("read_elsewhere", true); got != "row" {
		t.Errorf("after the write stage read the change: %s, want a row", got)
	}
	if got, want := run("not_read", false), `column "n" (UInt8): 300 is out of range for UInt8 (0 to 255)`; got != want {
		t.Errorf("before any stage read the change: %q, want %q", got, want)
	}
}

// TestAddColumnsAtOnceCountedOnce: two instances of the stage (two bundles, or two workers) that
// meet the same new fields at once, each reading the table before the other's ADD COLUMN, add
// each column once, and only the one that added it counts it against addNewColumnsMax; each
// message converts against its column. On ClickHouse 18.16 the second ADD is refused as existing;
// on the ClickHouse 26 engine (skipped where it is not installed) it was ADD COLUMN IF NOT
// EXISTS, which succeeds either way, so that both counted the column (and logged it as added):
// 20 of the limit taken for 10 columns.
func TestAddColumnsAtOnceCountedOnce(t *testing.T) {
	for _, modern := range []bool{false, true} {
		t.Run(map[bool]string{false: "18.16", true: "26.7"}[modern], func(t *testing.T) {
			var srv *chtest.Server
			if modern {
				srv = chtest.StartModern(t).Server
			} else {
				srv = chtest.New(t)
			}
			srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "events")
			cfg := Config{ClickHouse: srv.Config(), Table: "events", AddNewColumns: true, Limits: evolve.Limits{Max: 100}}
			// A bundle each: the two stages run at once, and Beam's metrics of one bundle are not
			// for concurrent use (Distribution.Update writes a map: "concurrent map writes").
			fs := []*parseFn{{Config: cfg}, {Config: cfg}}
			ctxs := make([]context.Context, len(fs))
			for i, f := range fs {
				ctxs[i] = metrics.SetBundleID(metrics.SetPTransformID(context.Background(), "parse"), fmt.Sprint("bundle-", i))
				if err := f.Setup(ctxs[i]); err != nil {
					t.Fatal(err)
				}
			}
			const fields = 10
			for k := range fields {
				var both sync.WaitGroup
				for i, f := range fs {
					both.Go(func() {
						p := fmt.Sprintf(`{"id":%d,"c%d":1}`, i, k)
						var rows []flow.Row
						emitRows := func(_ beam.EventTime, rs flow.Rows) { rows = append(rows, rs.Rows...) }
						err := f.ProcessElement(ctxs[i], 0, flow.Messages{Messages: []flow.Message{{ID: fmt.Sprint(k, i), Data: []byte(p)}}}, emitRows,
							func(d flow.DeadLetter) { t.Errorf("%s: a dead letter: %s", p, d.ErrorMessage) })
						if err != nil {
							t.Errorf("%s: %v", p, err)
						}
						f.FinishBundle(emitRows, nil)
						if conv := f.tracker.Converter(); len(rows) != 1 || rows[0].Schema != conv.SchemaHash() || !f.hasColumn(fmt.Sprint("c", k)) {
							t.Errorf("%s: rows %v, not of the schema with its column", p, rows)
						}
					})
				}
				both.Wait()
			}
			cols := srv.MustQuery(t, fmt.Sprintf("SELECT count() FROM system.columns WHERE database = '%s' AND table = 'events'", srv.Database))
			if got := taken(fs[0].evolver.key); cols != fmt.Sprint(fields+1) || got != fields {
				t.Errorf("%s columns, %d counted against addNewColumnsMax; want %d and %d", cols, got, fields+1, fields)
			}
		})
	}
}

// keptTable makes a table (id UInt32, unknown String), for fields kept in unknownFieldsColumn,
// named kept_<database> so that each run of a test has a name of its own (the stage logs some
// lines once per process and table name: a second run of the test in the same process, as
// -count=2 makes, saw none of them), and logs to the returned builder until the test ends.
func keptTable(t *testing.T) (*strings.Builder, *chtest.Server, string) {
	out := new(strings.Builder)
	def := slog.Default()
	t.Cleanup(func() { slog.SetDefault(def) })
	slog.SetDefault(slog.New(slog.NewTextHandler(out, nil)))
	srv := chtest.New(t)
	table := "kept_" + srv.Database
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, unknown String) ENGINE = MergeTree ORDER BY id`, table)
	return out, srv, table
}

// TestKeptFieldsLoggedBounded: with unknownFieldsColumn, new fields beyond addNewColumnsMax are
// kept there and logged one by one for the first maxKeptLogged of the table only, then once that
// the others are not: a stream whose every message has a field of its own (a session id as a key)
// logged a line per message, each kept in memory for the life of the worker.
func TestKeptFieldsLoggedBounded(t *testing.T) {
	out, srv, table := keptTable(t)
	var payloads []string
	for i := range 3 * maxKeptLogged {
		payloads = append(payloads, fmt.Sprintf(`{"id":%d,"session_%s_%d":%d}`, i, srv.Database, i, i))
	}
	got, _, _ := runEvolve(t, Config{ClickHouse: srv.Config(), Table: table, AddNewColumns: true, Limits: evolve.Limits{Max: 1},
		FromMessage: convert.Options{UnknownFields: "unknown"}}, payloads)
	for i, g := range got {
		if g != "row" {
			t.Fatalf("%s: %s, want a row", payloads[i], g)
		}
	}
	one := strings.Count(out.String(), `msg="parse: a new field does not become a column; it is kept in unknownFieldsColumn"`)
	more := strings.Count(out.String(), `msg="parse: more new fields do not become columns; they are kept in unknownFieldsColumn without a line each"`)
	if one != maxKeptLogged || more != 1 {
		t.Errorf("%d lines of a field kept and %d of more, want %d and 1", one, more, maxKeptLogged)
	}
}

// TestRefusedLoggedBounded: ADD COLUMNs the server refuses (here ON CLUSTER a cluster it does not
// have, code 170) are logged one by one for the first maxKeptLogged of the table and error code,
// then once that the others are not: a stream whose every message has a field of its own, while
// the server refused every ADD COLUMN, logged a line for almost every message.
func TestRefusedLoggedBounded(t *testing.T) {
	out, srv, table := keptTable(t)
	var payloads []string
	for i := range 2 * maxKeptLogged {
		payloads = append(payloads, fmt.Sprintf(`{"id":%d,"session_%s_%d":%d}`, i, srv.Database, i, i))
	}
	got, _, _ := runEvolve(t, Config{ClickHouse: srv.Config(), Table: table, AddNewColumns: true, Limits: evolve.Limits{Max: 1000, OnCluster: "no_such_cluster"},
		FromMessage: convert.Options{UnknownFields: "unknown"}}, payloads)
	for i, g := range got {
		if g != "row" {
			t.Fatalf("%s: %s, want a row", payloads[i], g)
		}
	}
	one := strings.Count(out.String(), `msg="parse: the server refused to add a column"`)
	more := strings.Count(out.String(), `msg="parse: the server refuses more ADD COLUMNs with this error code;`)
	if one != maxKeptLogged || more != 1 {
		t.Errorf("%d lines of a refusal and %d of more, want %d and 1", one, more, maxKeptLogged)
	}
}

// TestKeptFieldLongNameLogCut: a field kept in unknownFieldsColumn is logged with its name cut to
// 100 bytes: a message with a field name of 300,000 bytes made a line of 300 KB, more than Cloud
// Logging takes in an entry (256 KB).
func TestKeptFieldLongNameLogCut(t *testing.T) {
	out, srv, table := keptTable(t)
	name := srv.Database + strings.Repeat("a", 300_000)
	got, _, rows := runEvolve(t, Config{ClickHouse: srv.Config(), Table: table, AddNewColumns: true,
		FromMessage: convert.Options{UnknownFields: "unknown"}}, []string{`{"id":1,"` + name + `":2}`})
	if len(got) != 1 || got[0] != "row" || len(rows) != 1 {
		t.Fatalf("%v, %d rows; want a row", got, len(rows))
	}
	var line string
	for l := range strings.Lines(out.String()) {
		if strings.Contains(l, `msg="parse: a new field does not become a column; it is kept in unknownFieldsColumn"`) {
			line = l
		}
	}
	if len(line) > 1024 || !strings.Contains(line, "field="+name[:100]) {
		t.Errorf("the line of the field kept is %d bytes (%.300q...), want at most 1 KiB naming the field's first 100 bytes", len(line), line)
	}
}

// TestRoutedBoundNamesTheFieldsLeft: in a routed pipeline, when routedWait runs out while the
// columns are being added (here the ADD COLUMN waits for a query that reads the table, as
// ClickHouse 18.16 makes it), the dead letter names the fields that are not columns, each once:
// not a field whose column is there already (a person added it after the worker read the table),
// and no field without a name (until 2026-12-07 the error ended with `field "" (value )`, a
// field of the list the stage had cut in place).
func TestRoutedBoundNamesTheFieldsLeft(t *testing.T) {
	defer func(w time.Duration) { routedWait = w }(routedWait)
	routedWait = time.Second
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "events")
	srv.MustExec(t, "INSERT INTO events VALUES (1), (2), (3), (4)")
	read := make(chan error, 1)
	cfg := Config{ClickHouse: srv.Config(), Table: "events", Routed: true, AddNewColumns: true, Limits: evolve.Limits{Max: 5}}
	got, _, _ := runEvolveAfter(t, cfg, func() {
		srv.MustExec(t, "ALTER TABLE events ADD COLUMN a Nullable(Int64)")
		// A query that reads the table for 4 s, which an ALTER of the table waits for.
		go func() {
			_, err := srv.Query("SELECT sleepEachRow(1) FROM events", "max_block_size=1")
			read <- err
		}()
		time.Sleep(300 * time.Millisecond)
	}, []string{`{"id":5,"a":1,"b":2}`})
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	if got[0] == "row" {
		t.Skip("the server did not make the ADD COLUMN wait for the query that reads the table")
	}
	want := `addNewColumns: field "b" (value 2) cannot become a column now: the table ` + srv.Database + `.events could not be read or altered to add it (`
	if !strings.HasPrefix(got[0], want) || strings.Count(got[0], "addNewColumns: field") != 1 || !strings.HasSuffix(got[0], "; the message is a dead letter") {
		t.Errorf("dead letter:\n%s\nwant\n%s...; the message is a dead letter\n(the field b alone)", got[0], want)
	}
}

// TestDroppedColumnAddedAgainWithoutRefresh: with addNewColumns and schemaRefreshSeconds 0, a
// column the stage added and a person dropped since is added again once the write stage has read
// the table without it (here a Tracker as the write stage's): the next message with the field is
// a row, as the write stage's dead letter of the message before promises ("replaying it adds the
// column again"). Until 2026-12-07 the stage, never reading the table again, took the column to be
// there, and every message with the field was such a dead letter until the job restarted.
func TestDroppedColumnAddedAgainWithoutRefresh(t *testing.T) {
	srv := chtest.New(t)
	ctx := context.Background()
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "events")
	cfg := Config{ClickHouse: srv.Config(), Table: "events", AddNewColumns: true, Limits: evolve.Limits{Max: 5}}
	got, f, _ := runEvolve(t, cfg, []string{`{"id":1,"n":1}`})
	if got[0] != "row" {
		t.Fatalf("first message: %s, want a row that adds n", got[0])
	}
	srv.MustExec(t, "ALTER TABLE events DROP COLUMN n")
	other := &convert.Tracker{Stage: "write", Database: srv.Database, Table: "events"}
	if err := other.Refresh(ctx, srv.Conn(t)); err != nil {
		t.Fatal(err)
	}
	var dead *flow.DeadLetter
	var rows []flow.Row
	mctx := metrics.SetBundleID(metrics.SetPTransformID(ctx, "parse"), "bundle")
	emitRows := func(_ beam.EventTime, rs flow.Rows) { rows = append(rows, rs.Rows...) }
	err := f.ProcessElement(mctx, 0, flow.Messages{Messages: []flow.Message{{ID: "2", Data: []byte(`{"id":2,"n":2}`)}}}, emitRows,
		func(d flow.DeadLetter) { dead = &d })
	if err != nil {
		t.Fatal(err)
	}
	f.FinishBundle(emitRows, nil)
	if dead != nil || len(rows) != 1 {
		t.Fatalf("second message: dead letter %v, rows %d; want a row", dead, len(rows))
	}
	if cols := srv.MustQuery(t, fmt.Sprintf("SELECT name FROM system.columns WHERE database = '%s' AND table = 'events'", srv.Database)); cols != "id\nn" {
		t.Errorf("columns %q, want n added again", cols)
	}
}

// TestAddColumnAnswerLostCounted: the answer to an ADD COLUMN is lost (the connection reset
// once the server has run it, as when the server stops or the network cuts at that moment); the
// retry is refused as existing. The column is still the one this worker added: it counts
// against addNewColumnsMax (at most 1 here), so that the next new field is beyond the limit.
// Until 2026-12-07 the refusal counted as another worker's column, and a worker added one more
// column than the limit for each answer lost.
func TestAddColumnAnswerLostCounted(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "events")
	p := srv.Proxy(t)
	cfg := Config{ClickHouse: srv.Config(), Table: "events", AddNewColumns: true, Limits: evolve.Limits{Max: 1}}
	cfg.ClickHouse.URL = p.URL()
	p.LoseAnswer([]byte("ADD COLUMN `a`"))
	got, f, _ := runEvolve(t, cfg, []string{`{"id":1,"a":1}`, `{"id":2,"b":2}`})
	want := []string{"row", `addNewColumnsMax: field "b" (value 2) is beyond the limit: this worker has added 1 columns to the table, ` +
		`the message would add 1 more, and it adds at most 1; the message is a dead letter`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if cols := srv.MustQuery(t, fmt.Sprintf("SELECT name FROM system.columns WHERE database = '%s' AND table = 'events'", srv.Database)); cols != "id\na" {
		t.Errorf("columns %q, want id and a", cols)
	}
	if n := taken(f.evolver.key); n != 1 {
		t.Errorf("%d columns counted against addNewColumnsMax, want 1", n)
	}
}

// TestRoutedTableBackAskedAgain: in a routed pipeline, a table that could not be altered to add a
// column (detached) is not asked again for unreachableFor (30 s), its messages with new fields
// dead letters at once; once a read of its schema begun after that failure succeeds
// (schemaRefreshSeconds), the table is back and is asked again. Until 2026-12-07 a message with a
// new field was still a dead letter ("it was not asked") for the rest of the 30 s.
func TestRoutedTableBackAskedAgain(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "events")
	ctx := metrics.SetBundleID(metrics.SetPTransformID(context.Background(), "parse"), "bundle")
	f := &parseFn{Config: Config{ClickHouse: srv.Config(), Table: "events", Routed: true, AddNewColumns: true,
		Limits: evolve.Limits{Max: 5}, SchemaRefresh: 100 * time.Millisecond}}
	if err := f.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Teardown()
	srv.MustExec(t, "DETACH TABLE events")
	if got, _ := processOne(t, ctx, f, "1", `{"id":1,"a":1}`); !strings.Contains(got, `cannot become a column now`) {
		t.Fatalf("the first new field, the table detached: %q, want a dead letter saying it cannot become a column now", got)
	}
	srv.MustExec(t, "ATTACH TABLE events")
	// A message starts a read of the schema in the background, and a later one takes it.
	deadline := time.Now().Add(10 * time.Second)
	for f.background == nil && time.Now().Before(deadline) {
		time.Sleep(150 * time.Millisecond)
		processOne(t, ctx, f, "2", `{"id":2}`)
	}
	for f.background != nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		f.takeBackground()
	}
	if got, _ := processOne(t, ctx, f, "3", `{"id":3,"a":3}`); got != "row" {
		t.Errorf("a new field once the table is back and read again: %q, want a row", got)
	}
	if cols := srv.MustQuery(t, fmt.Sprintf("SELECT name FROM system.columns WHERE database = '%s' AND table = 'events'", srv.Database)); cols != "id\na" {
		t.Errorf("columns %q, want id and a", cols)
	}
}
