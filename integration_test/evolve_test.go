package integration_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

// columnsOf returns the columns of the table events as "name type" lines, in table order.
func (e *e2e) columnsOf(t *testing.T) string {
	t.Helper()
	return e.srv.MustQuery(t, fmt.Sprintf("SELECT name, type FROM system.columns WHERE database = '%s' AND table = 'events'", e.srv.Database))
}

// publishJSON publishes each payload as one message.
func (e *e2e) publishJSON(t *testing.T, payloads ...string) {
	t.Helper()
	msgs := make([]*pubsubpb.PubsubMessage, len(payloads))
	for i, p := range payloads {
		msgs[i] = &pubsubpb.PubsubMessage{Data: []byte(p)}
	}
	e.ps.Publish(t, e.topic, msgs...)
}

// TestNewFieldsBecomeColumns: with addNewColumns, a stream whose messages gain fields while the
// job runs (a whole number, a fraction, a boolean, a string, an object, an array, a null) gets a
// column for each, of the type the rule gives (on 18.16 a boolean is Nullable(UInt8), and null
// adds none), every message is once a row or a dead letter, each row has the values of its
// fields, and a field whose type changes later (a string for the Nullable(Int64) column) makes
// its messages dead letters by the usual rules of conversion.
func TestNewFieldsBecomeColumns(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	e.opts.AddNewColumns = true
	e.opts.BatchRowCount = pipeline.GivenInt(50)
	e.opts.WindowSeconds = pipeline.GivenInt(1)

	var first, later []string
	for i := range 100 {
		first = append(first, fmt.Sprintf(`{"id":%d}`, i))
	}
	for i := 100; i < 400; i++ {
		var extra string
		switch i % 8 {
		case 0:
			extra = fmt.Sprintf(`"n":%d`, i)
		case 1:
			extra = `"f":1.5`
		case 2:
			extra = `"b":true`
		case 3:
			extra = `"s":"x"`
		case 4:
			extra = `"o":{"a": 1}`
		case 5:
			extra = `"arr":[1,2]`
		case 6:
			extra = `"nothing":null`
		case 7:
			extra = fmt.Sprintf(`"n":%d,"s":"y","f":2.5`, i)
		}
		later = append(later, fmt.Sprintf(`{"id":%d,%s}`, i, extra))
	}
	var changed []string // n, a Nullable(Int64) column by then, given a string
	for i := 400; i < 420; i++ {
		changed = append(changed, fmt.Sprintf(`{"id":%d,"n":"text %d"}`, i, i))
	}

	e.publishJSON(t, first...)
	r := e.start(t)
	e.watch(t, 100, 60*time.Second)
	e.publishJSON(t, later...)
	e.watch(t, 400, 60*time.Second)
	e.publishJSON(t, changed...)
	c := counters(r.wait(t, 2*time.Minute))
	t.Logf("counters: %v", c)

	rows, dead := e.checkAccounted(t, 420, "id")
	if rows != 400 || dead != 20 {
		t.Errorf("%d rows and %d dead letters, want 400 and 20", rows, dead)
	}
	want := "id\tUInt32\nn\tNullable(Int64)\nf\tNullable(Float64)\nb\tNullable(UInt8)\ns\tNullable(String)\no\tNullable(String)\narr\tNullable(String)"
	if got := e.columnsOf(t); got != want {
		// The order of the columns is the order in which the fields were first converted.
		gotSet, wantSet := strings.Split(got, "\n"), strings.Split(want, "\n")
		if len(gotSet) != len(wantSet) || !sameSet(gotSet, wantSet) {
			t.Errorf("columns:\n%s\nwant (in any order after id):\n%s", got, want)
		}
	}
	for q, want := range map[string]string{
		"SELECT count() FROM events WHERE n = id":                               "75", // i%8 == 0 and 7, 100 ≤ i < 400
		"SELECT count() FROM events WHERE f = 1.5":                              "37",
		"SELECT count() FROM events WHERE f = 2.5":                              "38",
		"SELECT count() FROM events WHERE b = 1":                                "37",
		"SELECT count() FROM events WHERE s = 'x'":                              "37",
		"SELECT count() FROM events WHERE s = 'y'":                              "38",
		`SELECT count() FROM events WHERE o = '{"a":1}'`:                        "38", // compacted, as String keeps an object
		"SELECT count() FROM events WHERE arr = '[1,2]'":                        "38",
		"SELECT count() FROM events WHERE id < 100 AND isNull(n) AND isNull(s)": "100",
	} {
		if got := e.srv.MustQuery(t, q); got != want {
			t.Errorf("%s = %s, want %s", q, got, want)
		}
	}
	got := e.srv.MustQuery(t, "SELECT count() FROM dead_letters WHERE error_message LIKE 'column \"n\" (Nullable(Int64)): \"text %'")
	if got != "20" {
		t.Errorf("%s dead letters name the column n and the string, want 20: %s", got, e.srv.MustQuery(t, "SELECT error_message FROM dead_letters LIMIT 3"))
	}
	if c["columns-added"] != 6 {
		t.Errorf("columns-added = %d, want 6", c["columns-added"])
	}
	// b, o and arr each come in messages of their own, n, f and s also together (i%8 == 7): at
	// least 4 messages wait, at most the 300 with new fields.
	if c["messages-waited-for-column"] < 4 || c["messages-waited-for-column"] > 300 {
		t.Errorf("messages-waited-for-column = %d, want 4 to 300", c["messages-waited-for-column"])
	}
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

// TestNewColumnsLimits: addNewColumnsMax, addNewColumnsPattern and addNewColumnsExcluded refuse
// fields, and the field's message is a dead letter whose error names the parameter, the field,
// its value and the rule, or, with unknownFieldsColumn, the field is kept there and the message
// is a row. A field whose name no column may have is refused alike.
func TestNewColumnsLimits(t *testing.T) {
	cases := newParallelCases(t)
	for _, overflow := range []bool{false, true} {
		t.Run(fmt.Sprint("unknownFieldsColumn=", overflow), func(t *testing.T) {
			ddl := `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`
			if overflow {
				ddl = `CREATE TABLE {table} (id UInt32, unknown String) ENGINE = MergeTree ORDER BY id`
			}
			e := cases.newE2E(t, ddl)
			e.opts.AddNewColumns = true
			e.opts.AddNewColumnsMax = 2
			e.opts.AddNewColumnsPattern = "^[a-z_]+$"
			e.opts.AddNewColumnsExcluded = "debug,trace"
			e.opts.BatchRowCount = pipeline.GivenInt(10)
			e.opts.WindowSeconds = pipeline.GivenInt(1)
			if overflow {
				e.opts.UnknownFieldsColumn = "unknown"
			}
			e.publishJSON(t, `{"id":1,"a":1}`, `{"id":2,"b":"two"}`)
			r := e.start(t)
			e.watch(t, 2, 60*time.Second)
			e.publishJSON(t,
				`{"id":3,"c":3}`,        // beyond addNewColumnsMax
				`{"id":4,"Foo":4}`,      // not of the pattern
				`{"id":5,"debug":true}`, // excluded
				`{"id":6,"a(b)":6}`,     // no column may have the name
				`{"id":7,"a":7,"b":"seven"}`,
				`{"id":8,"x SETTINGS max_threads=1":8}`, // clickhouse-go would take the name for a SETTINGS clause
			)
			c := counters(r.wait(t, 2*time.Minute))
			t.Logf("counters: %v", c)
			// a and b in either order: the emulator may deliver messages 1 and 2 in either.
			if got, want := e.columnsOf(t), map[bool]string{false: "id\tUInt32\na\tNullable(Int64)\nb\tNullable(String)",
				true: "id\tUInt32\nunknown\tString\na\tNullable(Int64)\nb\tNullable(String)"}[overflow]; !sameSet(strings.Split(got, "\n"), strings.Split(want, "\n")) {
				t.Errorf("columns:\n%s\nwant, in any order\n%s", got, want)
			}
			if c["columns-added"] != 2 {
				t.Errorf("columns-added = %d, want 2", c["columns-added"])
			}
			// Each message with a field no column took is a dead letter or, with
			// unknownFieldsColumn, keeps its fields there: no row left one out.
			if c["rows-with-dropped-fields"] != 0 {
				t.Errorf("rows-with-dropped-fields = %d, want 0", c["rows-with-dropped-fields"])
			}
			if overflow {
				e.checkAccounted(t, 8, "id")
				got := e.srv.MustQuery(t, "SELECT id, unknown FROM events ORDER BY id")
				want := "1\t{}\n2\t{}\n3\t{\"c\":3}\n4\t{\"Foo\":4}\n5\t{\"debug\":true}\n6\t{\"a(b)\":6}\n7\t{}\n8\t{\"x SETTINGS max_threads=1\":8}"
				if got != want {
					t.Errorf("rows:\n%s\nwant\n%s", got, want)
				}
				return
			}
			rows, dead := e.checkAccounted(t, 8, "id")
			if rows != 3 || dead != 5 {
				t.Errorf("%d rows and %d dead letters, want 3 and 5", rows, dead)
			}
			got := e.srv.MustQuery(t, "SELECT error_message FROM dead_letters ORDER BY raw_message")
			want := strings.Join([]string{
				`addNewColumnsMax: field "c" (value 3) is beyond the limit: this worker has added 2 columns to the table, the message would add 1 more, and it adds at most 2; the message is a dead letter`,
				`addNewColumnsPattern: field "Foo" (value 4) does not match ^[a-z_]+$; the message is a dead letter`,
				`addNewColumnsExcluded: field "debug" (value true) is excluded: it never becomes a column; the message is a dead letter`,
				`addNewColumns: field "a(b)" (value 6) cannot be a column: the name contains a parenthesis, which clickhouse-go cannot name in an INSERT; the message is a dead letter`,
				`addNewColumns: field "x SETTINGS max_threads=1" (value 8) cannot be a column: the name holds "SETTINGS max_threads=" after whitespace, a semicolon or a closing parenthesis, ` +
					`which clickhouse-go takes for the SETTINGS clause of the INSERT (it does not skip quoted names), so that the server would refuse every INSERT; the message is a dead letter`,
			}, "\n")
			if got != want {
				t.Errorf("dead letters:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestNewColumnsBeyondMaxQuerySize: columns added until the INSERT that names them all is longer
// than ClickHouse's default max_query_size (256 KiB: here 1,060 columns of 240-byte names, then 20
// more added by the pipeline) still take their rows: the INSERT raises max_query_size for itself.
// It used to fail with code 62, "Max query size exceeded", whatever its rows, so that once the
// pipeline had added the columns every message was a dead letter, those without a new field too.
func TestNewColumnsBeyondMaxQuerySize(t *testing.T) {
	const existing, added = 1060, 20
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	name := func(i int) string { return fmt.Sprintf("%s%04d", strings.Repeat("w", 236), i) }
	var alter []string
	for i := range existing {
		alter = append(alter, fmt.Sprintf("ADD COLUMN `%s` Nullable(Int64)", name(i)))
	}
	// One statement in the request's body: the URL and the default max_query_size hold less.
	if _, err := e.srv.Post("", []byte("ALTER TABLE events "+strings.Join(alter, ", ")), "max_query_size=1000000"); err != nil {
		t.Fatal(err)
	}
	e.opts.AddNewColumns = true
	e.opts.BatchRowCount = pipeline.GivenInt(100)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	var msgs []string
	for i := range added {
		msgs = append(msgs, fmt.Sprintf(`{"id":%d,"%s":%d}`, i, name(i), i), // a column the table has
			fmt.Sprintf(`{"id":%d,"%s":%d}`, existing+i, name(existing+i), existing+i)) // a new one
	}
	msgs = append(msgs, `{"id":5000}`)
	e.publishJSON(t, msgs...)
	c := counters(e.run(t))
	t.Logf("counters: %v", c)

	rows, dead := e.checkAccounted(t, len(msgs), "id")
	if rows != len(msgs) || dead != 0 {
		t.Errorf("%d rows and %d dead letters, want %d and 0; dead letters: %s", rows, dead, len(msgs),
			text.Cut(e.srv.MustQuery(t, "SELECT error_message FROM dead_letters LIMIT 1"), 300))
	}
	if c["columns-added"] != added {
		t.Errorf("columns-added = %d, want %d", c["columns-added"], added)
	}
	for i := range added {
		for _, id := range []int{i, existing + i} {
			q := fmt.Sprintf("SELECT `%s` FROM events WHERE id = %d", name(id), id)
			if got := e.srv.MustQuery(t, q); got != strconv.Itoa(id) {
				t.Errorf("column %d of row %d = %q, want %d", id, id, got, id)
			}
		}
	}
	if got := e.srv.MustQuery(t, "SELECT count() FROM events WHERE id = 5000"); got != "1" {
		t.Errorf("the row without a field beside id: %s rows, want 1", got)
	}
}

// TestColumnClickHouseGoCannotNameAddedWhileRunning: a column whose name clickhouse-go cannot
// put in an INSERT (chclient.InsertNameFault), added by hand while the job runs, is left to its
// DEFAULT by every stage that reads the schema again, and nothing stops: messages that then give
// new fields still add their columns (the schema read after the ALTER used to fail, and the parse
// stage's bundle with it, for as long as the job ran), the rest land, and the field of the
// column's name is counted as left out.
func TestColumnClickHouseGoCannotNameAddedWhileRunning(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, name String) ENGINE = MergeTree ORDER BY id`)
	e.opts.AddNewColumns = true
	e.opts.BatchRowCount = pipeline.GivenInt(50)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.SchemaRefreshSeconds = 1
	e.opts.StopAfterIdle = pipeline.GivenInt(8) // longer than the pause after the ALTER
	r := e.start(t)
	var first, second []string
	for i := range 100 {
		first = append(first, fmt.Sprintf(`{"id":%d,"name":"n%d"}`, i, i))
		second = append(second, fmt.Sprintf(`{"id":%d,"name":"n%d","city":"c%d","note SETTINGS max_threads=1":"v%d"}`, 100+i, 100+i, 100+i, 100+i))
	}
	e.publishJSON(t, first...)
	e.watch(t, 100, 60*time.Second)
	e.srv.MustExec(t, "ALTER TABLE events ADD COLUMN `note SETTINGS max_threads=1` String DEFAULT 'dflt'")
	time.Sleep(2500 * time.Millisecond) // longer than schemaRefreshSeconds
	e.publishJSON(t, second...)
	e.watch(t, 200, 60*time.Second)
	c := counters(r.wait(t, 60*time.Second))
	t.Logf("counters: %v", c)
	if rows, dead := e.checkAccounted(t, 200, "id"); rows != 200 || dead != 0 {
		t.Errorf("%d rows and %d dead letters, want 200 and 0", rows, dead)
	}
	got := e.srv.MustQuery(t, "SELECT count(), countIf(city = concat('c', toString(id))), countIf(`note SETTINGS max_threads=1` = 'dflt') FROM events WHERE id >= 100")
	if got != "100\t100\t100" {
		t.Errorf("rows of the second wave, with their city, with the column's DEFAULT = %q, want 100, 100, 100", got)
	}
	if c["rows-with-dropped-fields"] != 100 {
		t.Errorf("rows-with-dropped-fields = %d, want 100 (the field of the column not written)", c["rows-with-dropped-fields"])
	}
}

// TestTwoPipelinesAddTheSameColumns: two pipelines in this process on one subscription (two
// workers, each pulling part of the messages) meet the same new fields, which come in waves while
// both run: each field is one column, of the rule's type, each pipeline converts messages against
// columns the other added, and no message is lost or duplicated. Whether two ALTERs of one column
// ever meet in the same instant is up to the scheduling; the check of the columns holds either way.
func TestTwoPipelinesAddTheSameColumns(t *testing.T) {
	const n = 2000
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	e.opts.AddNewColumns = true
	e.opts.BatchRowCount = pipeline.GivenInt(100)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	// Idle for longer than the wait before the first wave: with 5 s of each, a pipeline that
	// started first could stop idle before any message came (one CI run saw 0 and 2000).
	e.opts.StopAfterIdle = pipeline.GivenInt(10)
	waves, has := columnWaves(n)
	r1, r2 := e.start(t), e.start(t)
	time.Sleep(4 * time.Second) // both pulling
	for _, w := range waves {
		e.publishJSON(t, w...)
		time.Sleep(300 * time.Millisecond)
	}
	c1, c2 := counters(r1.wait(t, 3*time.Minute)), counters(r2.wait(t, 3*time.Minute))
	t.Logf("counters: %v and %v", c1, c2)
	e.checkSameColumns(t, n, has, c1, c2)
}

// TestTwoProcessesAddTheSameColumns is TestTwoPipelinesAddTheSameColumns with two processes of
// the binary, each on prism, as two workers are: nothing of the one (the columns counted
// against addNewColumnsMax, its connections, its view of the schema) is the other's.
func TestTwoProcessesAddTheSameColumns(t *testing.T) {
	const n = 2000
	bin, _ := launchBinary(t)
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	o := e.opts
	args := []string{"--runner=prism", "--inputSubscription=" + o.InputSubscription, "--clickHouseUrl=" + o.ClickHouseURL,
		"--clickHouseDatabase=" + o.ClickHouseDatabase, "--clickHouseTable=events", "--clickHouseUsername=default", "--clickHousePassword=",
		"--clickHouseDeadLetterTable=dead_letters", "--addNewColumns=true", "--batchRowCount=100", "--windowSeconds=1",
		"--stopAfterIdle=10", "--progressSeconds=0"}
	waves, has := columnWaves(n)
	outs, errs := make([]string, 2), make([]error, 2)
	var done sync.WaitGroup
	for i := range 2 {
		done.Go(func() { outs[i], errs[i] = runLaunch(t, bin, nil, args) })
	}
	time.Sleep(8 * time.Second) // both started and pulling
	for _, w := range waves {
		e.publishJSON(t, w...)
		time.Sleep(300 * time.Millisecond)
	}
	done.Wait()
	var cs []map[string]int64
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("process %d: %v\n%s", i+1, errs[i], outs[i])
		}
		cs = append(cs, metricsOf(t, outs[i]))
	}
	t.Logf("counters: %v and %v", cs[0], cs[1])
	e.checkSameColumns(t, n, has, cs[0], cs[1])
}

// metricsOf reads the counters of the binary's last line "metrics: name=value ...".
func metricsOf(t *testing.T, out string) map[string]int64 {
	t.Helper()
	i := strings.LastIndex(out, "metrics: ")
	if i < 0 {
		t.Fatalf("the binary printed no metrics line:\n%s", out)
	}
	line, _, _ := strings.Cut(out[i+len("metrics: "):], "\n")
	c := map[string]int64{}
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				c[k] = n
			}
		}
	}
	return c
}

// columnWaves returns n messages in 16 waves, each with the field id and, from wave to wave, more
// of the fields f0 … f7 (each in about a third of the messages that may have it; f7 from the
// last waves), and how many messages have each field.
func columnWaves(n int) (waves [][]string, has map[string]int) {
	rnd := rand.New(rand.NewPCG(29, 2))
	has = map[string]int{}
	for i := range n {
		wave := i / (n / 16)
		if i%(n/16) == 0 {
			waves = append(waves, nil)
		}
		fields := []string{fmt.Sprintf(`"id":%d`, i)}
		for f := range min(8, wave/2+1) {
			if rnd.IntN(3) == 0 {
				name := fmt.Sprintf("f%d", f)
				fields = append(fields, fmt.Sprintf(`"%s":%d`, name, i))
				has[name]++
			}
		}
		waves[wave] = append(waves[wave], "{"+strings.Join(fields, ",")+"}")
	}
	return waves, has
}

// checkSameColumns checks what two workers adding the same columns at once must end with: both
// read messages, every message is one row and none a dead letter, the table has id and f0 … f7,
// each one Nullable(Int64) column holding its messages' values, and the ADDs that succeeded are
// 8 in all (18.16 refuses a second ADD of a column, which is not counted).
func (e *e2e) checkSameColumns(t *testing.T, n int, has map[string]int, c1, c2 map[string]int64) {
	t.Helper()
	if c1["messages-received"] == 0 || c2["messages-received"] == 0 {
		t.Errorf("one worker received every message (%d and %d): the test did not run two workers", c1["messages-received"], c2["messages-received"])
	}
	rows, dead := e.checkAccounted(t, n, "id")
	if rows != n || dead != 0 {
		t.Errorf("%d rows and %d dead letters, want %d and 0", rows, dead, n)
	}
	cols := strings.Split(e.columnsOf(t), "\n")
	if len(cols) != 9 {
		t.Errorf("%d columns, want id and f0…f7: %v", len(cols), cols)
	}
	for f := range 8 {
		name := fmt.Sprintf("f%d", f)
		if !sameSet([]string{name + "\tNullable(Int64)"}, filter(cols, name+"\t")) {
			t.Errorf("column %s: %v, want one Nullable(Int64)", name, filter(cols, name+"\t"))
		}
		if got, want := e.srv.MustQuery(t, fmt.Sprintf("SELECT count() FROM events WHERE %s = id", name)), fmt.Sprint(has[name]); got != want {
			t.Errorf("%s = id in %s rows, want %s", name, got, want)
		}
	}
	if added := c1["columns-added"] + c2["columns-added"]; added != 8 {
		t.Errorf("columns-added %d in all, want 8 (18.16 refuses a second ADD of a column, which is not counted)", added)
	}
}

// filter returns the lines of lines that start with prefix.
func filter(lines []string, prefix string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// TestAddNewColumnsNeedsALTER: a launch with addNewColumns as a user who may not ALTER (the
// packaged configuration's user readonly, of the profile readonly: readonly=1, all ClickHouse
// 18.16 has to refuse DDL) stops before the job starts, with a sentence naming addNewColumns, the
// user and the setting; so does a user whose allow_ddl is 0.
func TestAddNewColumnsNeedsALTER(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	e.opts.ClickHouseUsername = "readonly"
	bin, _ := launchBinary(t)
	out, err := runLaunch(t, bin, nil, e.binaryArgs("", "--addNewColumns=true"))
	if err == nil {
		t.Fatalf("the launch as a read-only user with addNewColumns succeeded:\n%s", out)
	}
	want := `addNewColumns: the ClickHouse user "readonly" has the setting readonly=1, which refuses ALTER TABLE … ADD COLUMN`
	if !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}

	// A user who may insert but not run DDL: allow_ddl=0, here sent as a setting of the URL.
	e.opts.ClickHouseUsername = "default"
	out, err = runLaunch(t, bin, nil, e.binaryArgs(e.srv.URL+"?allow_ddl=0", "--addNewColumns=true"))
	want = `addNewColumns: the ClickHouse user "default" has the setting allow_ddl=0, which refuses ALTER TABLE … ADD COLUMN`
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("the launch with allow_ddl=0: %v; output lacks %q:\n%s", err, want, out)
	}
}

// TestAddNewColumnsRefusesTablesThatPassRowsOn: a launch with addNewColumns into a Distributed or
// a Buffer table stops before the job starts, naming the engine: an ADD COLUMN changes that table
// alone, not the tables it writes to. The launch used to pass: into a Distributed table the first
// message with a new field failed every INSERT naming it, with code 16 from the shard's table, and
// the job with them; into a Buffer table the new field's values vanished at the flush.
func TestAddNewColumnsRefusesTablesThatPassRowsOn(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "local")
	bin, _ := launchBinary(t)
	for engine, ddl := range map[string]string{
		"Distributed": fmt.Sprintf(`CREATE TABLE {table} (id UInt32) ENGINE = Distributed(test_shard_localhost, %s, local)`, srv.Database),
		"Buffer":      fmt.Sprintf(`CREATE TABLE {table} (id UInt32) ENGINE = Buffer(%s, local, 1, 1, 2, 1, 100, 1, 1000)`, srv.Database),
	} {
		srv.MustExec(t, "DROP TABLE IF EXISTS events")
		srv.MustExec(t, "DROP TABLE IF EXISTS dead_letters")
		e := newE2EOn(t, srv, ddl)
		out, err := runLaunch(t, bin, nil, e.binaryArgs("", "--addNewColumns=true"))
		want := fmt.Sprintf("addNewColumns: `%s`.`events` has the engine %s, which passes its rows on to other tables: an ADD COLUMN changes `%s`.`events` alone",
			srv.Database, engine, srv.Database)
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("the launch into a %s table: %v; output lacks %q:\n%s", engine, err, want, out)
		}
		if cols := e.columnsOf(t); cols != "id\tUInt32" {
			t.Errorf("%s: columns %q, want id alone", engine, cols)
		}
	}
}

// TestCheckShowsNewColumns: check with addNewColumns lists the ALTER TABLE of each column the
// file's new fields would become, by the pipeline's rule (the first value's type; a later value
// that wants another is pointed out) and limits, and adds none.
func TestCheckShowsNewColumns(t *testing.T) {
	ch := chtest.New(t)
	ch.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "events")
	file := writeTestFile(t, "in.jsonl", `{"id":1,"a":1,"b":true}`+"\n"+`{"id":2,"a":2.5,"o":{"k": [1]}}`+"\n"+`{"id":3,"n":null}`+"\n"+
		`{"id":4,"Foo":"x","z":1}`+"\n")
	out, errOut, code := runCommand(t, "", append([]string{"check", "--clickHouseTable=events", "--addNewColumns", "--addNewColumnsPattern=^[a-z]+$", file},
		chFlags(ch)...)...)
	if code != 1 { // message 4 is a dead letter
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	table := "`" + ch.Database + "`.`events`"
	for _, want := range []string{
		`note: no column takes the fields "a", "b" yet: addNewColumns would add a column for each`,
		"addNewColumns: the messages would add 3 columns to events (check adds none):",
		"  ALTER TABLE " + table + " ADD COLUMN `a` Nullable(Int64)  -- from " + file + ":1; later values want Nullable(Float64): those the first type does not take are dead letters",
		"  ALTER TABLE " + table + " ADD COLUMN `b` Nullable(UInt8)  -- from " + file + ":1\n",
		"  ALTER TABLE " + table + " ADD COLUMN `o` Nullable(String)  -- from " + file + ":2\n",
		`  refused: addNewColumnsPattern: field "Foo" (value "x") does not match ^[a-z]+$; its messages would be dead letters`,
		// As the parse stage: a message with a refused field is a dead letter, and adds no column
		// for its other fields (z).
		file + `:4: dead letter: addNewColumnsPattern: field "Foo" (value "x") does not match ^[a-z]+$; the message is a dead letter` + "\n",
		"4 messages: 3 would be rows, 1 dead letter",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "`n`") || strings.Contains(out, "`z`") {
		t.Errorf("a field seen only with null, or a field of a dead letter, is listed:\n%s", out)
	}
	if cols := ch.MustQuery(t, fmt.Sprintf("SELECT name FROM system.columns WHERE database = '%s' AND table = 'events'", ch.Database)); cols != "id" {
		t.Errorf("check added columns: %q", cols)
	}

	// A column an earlier message would add counts as the table's, as in the pipeline, which adds
	// x with message 1 and then refuses x.y, under it.
	file = writeTestFile(t, "under.jsonl", `{"id":1,"x":1}`+"\n"+`{"id":2,"x.y":2}`+"\n")
	out, errOut, code = runCommand(t, "", append([]string{"check", "--clickHouseTable=events", "--addNewColumns", file}, chFlags(ch)...)...)
	if want := file + `:2: dead letter: addNewColumns: field "x.y" (value 2) cannot be a column: it falls under "x", a column that earlier messages would add, whose field`; code != 1 || !strings.Contains(out, want) {
		t.Errorf("exit %d, want 1, and the output lacks %q:\n%s%s", code, want, out, errOut)
	}
}

// TestNewColumnsRouted: with routeBy, each table's parse stage adds its own columns: a field
// that comes to one table becomes a column of that table alone, the same field in two tables
// one column in each, and the counters of each table count its own.
func TestNewColumnsRouted(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	for _, table := range []string{"clicks", "orders"} {
		e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, kind String) ENGINE = MergeTree ORDER BY id`, table)
	}
	e.opts.RouteBy = "field:kind"
	e.opts.RouteTables = "click=clicks,order=orders"
	e.opts.AddNewColumns = true
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	var payloads []string
	for i := range 60 {
		switch i % 3 {
		case 0:
			payloads = append(payloads, fmt.Sprintf(`{"id":%d,"kind":"click","x":%d,"both":"c"}`, i, i))
		case 1:
			payloads = append(payloads, fmt.Sprintf(`{"id":%d,"kind":"order","amount":%d.5,"both":"o"}`, i, i))
		case 2:
			payloads = append(payloads, fmt.Sprintf(`{"id":%d,"kind":"view","y":true}`, i)) // unlisted: events
		}
	}
	e.publishJSON(t, payloads...)
	c := counters(e.run(t))
	t.Logf("counters: %v", c)
	for table, want := range map[string]string{
		"clicks": "id\tUInt32\nkind\tString\nx\tNullable(Int64)\nboth\tNullable(String)",
		"orders": "id\tUInt32\nkind\tString\namount\tNullable(Float64)\nboth\tNullable(String)",
		"events": "id\tUInt32\nkind\tNullable(String)\ny\tNullable(UInt8)",
	} {
		got := e.srv.MustQuery(t, fmt.Sprintf("SELECT name, type FROM system.columns WHERE database = '%s' AND table = '%s'", e.srv.Database, table))
		if got != want {
			t.Errorf("columns of %s:\n%s\nwant\n%s", table, got, want)
		}
		if got := e.srv.MustQuery(t, "SELECT count() FROM "+table); got != "20" {
			t.Errorf("%s holds %s rows, want 20", table, got)
		}
	}
	for name, want := range map[string]int64{"columns-added": 6, "columns-added:clicks": 2, "columns-added:orders": 2, "columns-added:events": 2} {
		if c[name] != want {
			t.Errorf("counter %s = %d, want %d", name, c[name], want)
		}
	}
	if got := e.srv.MustQuery(t, "SELECT count() FROM clicks WHERE x = id AND both = 'c'"); got != "20" {
		t.Errorf("clicks with their x and both: %s, want 20", got)
	}
}

// TestNewFieldWhileServerUnreachable: a new field first seen while ClickHouse is unreachable
// for a few seconds waits for the server, as an INSERT does, instead of failing the job: every
// message is a row, and the new field's column holds its values.
func TestNewFieldWhileServerUnreachable(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	proxy := e.srv.Proxy(t)
	e.opts.ClickHouseURL = proxy.URL()
	e.opts.AddNewColumns = true
	e.opts.BatchRowCount = pipeline.GivenInt(50)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	var first, later []string
	for i := range 50 {
		first = append(first, fmt.Sprintf(`{"id":%d}`, i))
		later = append(later, fmt.Sprintf(`{"id":%d,"nf":%d}`, 50+i, 50+i))
	}
	e.publishJSON(t, first...)
	r := e.start(t)
	e.watch(t, 50, 60*time.Second)
	proxy.Down()
	e.publishJSON(t, later...)
	time.AfterFunc(4*time.Second, proxy.Up)
	e.watch(t, 100, 90*time.Second)
	c := counters(r.wait(t, 60*time.Second))
	t.Logf("counters: %v", c)
	if rows, dead := e.checkAccounted(t, 100, "id"); rows != 100 || dead != 0 {
		t.Errorf("%d rows and %d dead letters, want 100 and none", rows, dead)
	}
	if got := e.srv.MustQuery(t, "SELECT count() FROM events WHERE nf = id"); got != "50" {
		t.Errorf("rows whose nf is their id: %s, want 50", got)
	}
}

// TestNewColumnsRoutedTableDetached: with routeTables, a table detached while messages with new
// fields come for it holds up neither the other table's messages (whose new fields become
// columns meanwhile) nor the run: its messages with new fields are dead letters that say why and
// keep their bytes, and its others land after ATTACH.
func TestNewColumnsRoutedTableDetached(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	for _, table := range []string{"ra", "rb"} {
		e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, kind String) ENGINE = MergeTree ORDER BY id`, table)
	}
	e.opts.RouteBy = "field:kind"
	e.opts.RouteTables = "a=ra,b=rb"
	e.opts.AddNewColumns = true
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.MaxRetries = 40
	e.opts.RetryInitialBackoffMillis = 200
	e.opts.RetryMaxBackoffMillis = 2000
	count := func(table string) int {
		n, _ := strconv.Atoi(e.srv.MustQuery(t, "SELECT count() FROM "+table))
		return n
	}
	var warm []string
	for i := range 10 {
		warm = append(warm, fmt.Sprintf(`{"id":%d,"kind":%q}`, i, []string{"a", "b"}[i%2]))
	}
	e.publishJSON(t, warm...)
	r := e.start(t)
	for deadline := time.Now().Add(60 * time.Second); count("ra") < 5 || count("rb") < 5; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ra holds %d rows and rb %d, want 5 each", count("ra"), count("rb"))
		}
	}

	e.srv.MustExec(t, "DETACH TABLE rb")
	detached := time.Now()
	var later []string
	for i := 10; i < 25; i++ {
		switch i % 3 {
		case 0:
			later = append(later, fmt.Sprintf(`{"id":%d,"kind":"a","na":%d}`, i, i))
		case 1:
			later = append(later, fmt.Sprintf(`{"id":%d,"kind":"b","nb":%d}`, i, i))
		case 2:
			later = append(later, fmt.Sprintf(`{"id":%d,"kind":"b"}`, i))
		}
	}
	e.publishJSON(t, later...)
	for count("ra") < 10 || count("dead_letters") < 5 {
		if time.Since(detached) > 15*time.Second {
			t.Fatalf("%v after rb was detached, ra holds %d rows (want 10) and dead_letters %d (want 5): rb's outage holds them up",
				time.Since(detached).Round(time.Millisecond), count("ra"), count("dead_letters"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	e.srv.MustExec(t, "ATTACH TABLE rb")
	for deadline := time.Now().Add(60 * time.Second); count("rb") < 10; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("rb holds %d rows after ATTACH, want 10", count("rb"))
		}
	}
	c := counters(r.wait(t, 60*time.Second))
	t.Logf("counters: %v", c)
	if got := e.srv.MustQuery(t, "SELECT count(), countIf(na = id) FROM ra"); got != "10\t5" {
		t.Errorf("ra: rows and rows whose na is their id = %q, want 10 and 5", got)
	}
	if got := e.srv.MustQuery(t, "SELECT count(), uniqExact(id) FROM rb"); got != "10\t10" {
		t.Errorf("rb: rows and distinct ids = %q, want 10 and 10", got)
	}
	got := e.srv.MustQuery(t, `SELECT arrayStringConcat(arraySort(groupArray(raw_message)), ' ') FROM dead_letters `+
		`WHERE error_message LIKE 'addNewColumns: field "nb" (value %) cannot become a column now: the table %.rb could not be read or altered%replay the dead letter once the table is back%'`)
	if want := `{"id":10,"kind":"b","nb":10} {"id":13,"kind":"b","nb":13} {"id":16,"kind":"b","nb":16} {"id":19,"kind":"b","nb":19} {"id":22,"kind":"b","nb":22}`; got != want {
		t.Errorf("dead letters explained:\n%s\nwant\n%s\nall: %s", got, want, e.srv.MustQuery(t, "SELECT error_message FROM dead_letters"))
	}
}

// TestNewFieldsBecomeColumnsOnModern: the built binary with addNewColumns against the ClickHouse
// 26 engine: the launch's check of the grant (CHECK GRANT there) passes for its user, each new
// field becomes a column by ADD COLUMN, a boolean a Nullable(Bool), and every
// message is a row with its values.
func TestNewFieldsBecomeColumnsOnModern(t *testing.T) {
	srv := chtest.StartModern(t)
	e := newE2EOn(t, srv.Server, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	e.opts.BatchRowCount = pipeline.GivenInt(100)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	var payloads []string
	for i := range 30 {
		payloads = append(payloads, []string{
			fmt.Sprintf(`{"id":%d,"n":%d}`, i, i), fmt.Sprintf(`{"id":%d,"b":true}`, i), fmt.Sprintf(`{"id":%d,"o":{"k":[1, 2]}}`, i),
		}[i%3])
	}
	e.publishJSON(t, payloads...)
	out := e.runBinary(t, "", "--addNewColumns=true")
	if got, want := e.columnsOf(t), "id\tUInt32\nn\tNullable(Int64)\nb\tNullable(Bool)\no\tNullable(String)"; !sameSet(strings.Split(got, "\n"), strings.Split(want, "\n")) {
		t.Errorf("columns:\n%s\nwant (in any order after id)\n%s\n%s", got, want, out)
	}
	for q, want := range map[string]string{
		"SELECT count() FROM events":                         "30",
		"SELECT count() FROM events WHERE n = id":            "10",
		"SELECT count() FROM events WHERE b":                 "10",
		`SELECT count() FROM events WHERE o = '{"k":[1,2]}'`: "10",
		"SELECT count() FROM dead_letters":                   "0",
	} {
		if got := srv.MustQuery(t, q); got != want {
			t.Errorf("%s = %s, want %s", q, got, want)
		}
	}
	if !strings.Contains(out, "addNewColumns: new fields become columns") {
		t.Errorf("the launch does not say that addNewColumns passed its check:\n%s", out)
	}
}

// TestEphemeralColumnsOnModern: an EPHEMERAL column is written, as ClickHouse's own JSONEachRow
// writes it: a DEFAULT that reads it gets the field's value (s = upper(e)), and a message without
// the field gets the column's own default. One of a type without a converter (Dynamic) is not
// written, its field is ignored, and the launch warns of it, naming the column.
func TestEphemeralColumnsOnModern(t *testing.T) {
	srv := chtest.StartModern(t)
	e := newE2EOn(t, srv.Server, `CREATE TABLE {table} (id UInt32 DEFAULT 9, e String EPHEMERAL, e2 UInt8 EPHEMERAL 7, s String DEFAULT upper(e), `+
		`n UInt16 DEFAULT e2 * 2, dyn Dynamic EPHEMERAL, d String DEFAULT toString(dyn), mid String EPHEMERAL, m String DEFAULT mid) ENGINE = MergeTree ORDER BY id`)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.publishJSON(t, `{"id":1,"e":"abc","e2":4,"dyn":5}`, `{"id":2}`, `{"id":3,"e2":300}`, `{}`)
	// metadataColumns into an EPHEMERAL column: the DEFAULT that reads it keeps the message id.
	out := e.runBinary(t, "", "--metadataColumns=message_id=mid")
	if got, want := srv.MustQuery(t, "SELECT id, s, n, d, m != '' FROM events ORDER BY id"), "1\tABC\t8\t\t1\n2\t\t14\t\t1\n9\t\t14\t\t1"; got != want {
		t.Errorf("rows:\n%s\nwant\n%s", got, want)
	}
	if got := srv.MustQuery(t, "SELECT error_message FROM dead_letters"); got != `column "e2" (UInt8): 300 is out of range for UInt8 (0 to 255)` {
		t.Errorf("dead letters: %q, want the EPHEMERAL column's own error", got)
	}
	for _, want := range []string{`level=WARN msg="column \"dyn\" is EPHEMERAL and not written: its type has no converter: `,
		`; so a field \"dyn\" of the payload is ignored, and the DEFAULT expressions that read the column get its own default (defaultValueOfTypeName('Dynamic'))"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the launch does not warn %s:\n%s", want, out)
		}
	}
	if want := `level=WARN msg="metadataColumns: column \"mid\" is EPHEMERAL, stored nowhere: what metadataColumns puts there is kept only by the DEFAULT expressions that read the column"`; !strings.Contains(out, want) {
		t.Errorf("the launch does not warn %s:\n%s", want, out)
	}
	if strings.Contains(out, `column \"e\" is EPHEMERAL`) {
		t.Errorf("the launch warns of a written EPHEMERAL column:\n%s", out)
	}
}

// TestEphemeralOnlyOnModern: a message that gives no column a value, into a table whose only
// written column is EPHEMERAL, is a row of defaults: the INSERT names the EPHEMERAL column with
// its own default (write.Block's insertDefaults), as it names a DEFAULT column elsewhere.
func TestEphemeralOnlyOnModern(t *testing.T) {
	srv := chtest.StartModern(t)
	conn := srv.Conn(t)
	srv.MustExec(t, "CREATE TABLE only_eph (raw String EPHEMERAL 'none', s String MATERIALIZED upper(raw)) ENGINE = MergeTree ORDER BY tuple()")
	insertThroughWriteStage(t, conn, srv.Database, "only_eph", `{}`, `{"raw":"ab"}`)
	if got := srv.MustQuery(t, "SELECT s FROM only_eph ORDER BY s"); got != "AB\nNONE" {
		t.Errorf("rows %q, want AB and NONE (the EPHEMERAL column's own default)", got)
	}
}
