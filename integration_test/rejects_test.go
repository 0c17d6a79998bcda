package integration_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/flowtest"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
)

// TestServerRejectsSomeRows: tables whose DEFAULT or MATERIALIZED expressions make the server
// reject some rows, with error codes the write stage does not list as data errors (153, 376, 49,
// 190, 32) as well as listed ones (395, 69). Each batch of 1,000 rows holds a few such rows:
// every good row lands, exactly the rejected rows are dead-lettered with the server's code in the
// error text and their attributes on the topic, every message is acknowledged, and the job ends
// by stopAfterIdle.
func TestServerRejectsSomeRows(t *testing.T) {
	cases := newParallelCases(t)
	const n = 1000
	bad := map[int]bool{3: true, 250: true, 251: true, 777: true, 999: true}
	for _, tc := range []struct {
		name string
		code int
		ddl  string
		msg  func(i int, bad bool) string
	}{
		{"division by zero in a DEFAULT", 153,
			`CREATE TABLE {table} (id UInt32, a Int32, b Int32, q Int32 DEFAULT intDiv(a, b)) ENGINE = MergeTree ORDER BY id`,
			func(i int, bad bool) string {
				return fmt.Sprintf(`{"id":%d,"a":7,"b":%d}`, i, map[bool]int{false: 2, true: 0}[bad])
			}},
		{"toUUID of a bad string in a DEFAULT", 376,
			`CREATE TABLE {table} (id UInt32, raw String, u UUID DEFAULT toUUID(raw)) ENGINE = MergeTree ORDER BY id`,
			func(i int, bad bool) string {
				raw := fmt.Sprintf("123e4567-e89b-12d3-a456-%012d", i)
				if bad {
					raw = "not-a-uuid"
				}
				return fmt.Sprintf(`{"id":%d,"raw":"%s"}`, i, raw)
			}},
		{"CAST to an Enum of an unknown value", 49,
			`CREATE TABLE {table} (id UInt32, raw String, e Enum8('a' = 1, 'b' = 2) DEFAULT CAST(raw, 'Enum8(\'a\' = 1, \'b\' = 2)')) ENGINE = MergeTree ORDER BY id`,
			func(i int, bad bool) string {
				return fmt.Sprintf(`{"id":%d,"raw":"%s"}`, i, map[bool]string{false: "a", true: "zz"}[bad])
			}},
		{"arrays of different sizes in a MATERIALIZED arrayMap", 190,
			`CREATE TABLE {table} (id UInt32, x Array(UInt8), y Array(UInt8), s Array(UInt16) MATERIALIZED arrayMap((p, q) -> p + q, x, y)) ENGINE = MergeTree ORDER BY id`,
			func(i int, bad bool) string {
				y := "[1,2]"
				if bad {
					y = "[1]"
				}
				return fmt.Sprintf(`{"id":%d,"x":[1,2],"y":%s}`, i, y)
			}},
		{"an empty string into toUInt32 in a DEFAULT", 32,
			`CREATE TABLE {table} (id UInt32, raw String, v UInt32 DEFAULT toUInt32(raw)) ENGINE = MergeTree ORDER BY id`,
			func(i int, bad bool) string {
				return fmt.Sprintf(`{"id":%d,"raw":"%s"}`, i, map[bool]string{false: "5", true: ""}[bad])
			}},
		{"throwIf in a MATERIALIZED column (a listed data code)", 395,
			`CREATE TABLE {table} (id UInt32, name String, chk UInt8 MATERIALIZED throwIf(name = 'boom')) ENGINE = MergeTree ORDER BY id`,
			func(i int, bad bool) string {
				return fmt.Sprintf(`{"id":%d,"name":"%s"}`, i, map[bool]string{false: "ok", true: "boom"}[bad])
			}},
		{"a coordinate out of bounds in greatCircleDistance (a listed data code)", 69,
			`CREATE TABLE {table} (id UInt32, lon Float64, d Float64 DEFAULT greatCircleDistance(lon, 0., 0., 0.)) ENGINE = MergeTree ORDER BY id`,
			func(i int, bad bool) string {
				return fmt.Sprintf(`{"id":%d,"lon":%d}`, i, map[bool]int{false: 10, true: 500}[bad])
			}},
	} {
		t.Run(fmt.Sprintf("code %d, %s", tc.code, tc.name), func(t *testing.T) {
			e := cases.newE2E(t, tc.ddl)
			e.opts.BatchRowCount = pipeline.GivenInt(n)
			e.opts.WindowSeconds = pipeline.GivenInt(5)
			var msgs []*pubsubpb.PubsubMessage
			for i := range n {
				msgs = append(msgs, &pubsubpb.PubsubMessage{
					Data:       []byte(tc.msg(i, bad[i])),
					Attributes: map[string]string{"n": strconv.Itoa(i), "source": "rejects-test"},
				})
			}
			ids := e.ps.Publish(t, e.topic, msgs...)
			res := e.run(t) // returns: the job ended by stopAfterIdle
			rows, dls := e.checkAccounted(t, n, "id")
			if rows != n-len(bad) || dls != len(bad) {
				t.Errorf("%d rows and %d dead letters, want %d and %d", rows, dls, n-len(bad), len(bad))
			}
			// Exactly the bad rows, each with the server's code.
			got := strings.Fields(e.srv.MustQuery(t, "SELECT id FROM events WHERE id IN ("+joinKeys(bad)+")"))
			if len(got) != 0 {
				t.Errorf("rows %v should have been rejected", got)
			}
			dead := e.srv.MustQuery(t, "SELECT raw_message, error_message FROM dead_letters ORDER BY raw_message")
			lines := strings.Split(strings.TrimSpace(dead), "\n")
			for _, line := range lines {
				raw, msg, _ := strings.Cut(line, "\t")
				var id int
				fmt.Sscanf(raw, `{"id":%d`, &id)
				if !bad[id] {
					t.Errorf("dead letter of a good row: %s", line)
				}
				if want := fmt.Sprintf("code: %d", tc.code); !strings.Contains(msg, want) || !strings.Contains(msg, "ClickHouse rejected the row") {
					t.Errorf("dead letter error %q lacks %q", msg, want)
				}
			}
			// The topic's dead letters carry the original attributes.
			topic := e.ps.PullAll(t, e.dlqCheck)
			if len(topic) != len(bad) {
				t.Errorf("%d dead letters on the topic, want %d", len(topic), len(bad))
			}
			for _, m := range topic {
				if m.Attributes["source"] != "rejects-test" || !bad[atoi(m.Attributes["n"])] || !strings.Contains(m.Attributes["errorMessage"], fmt.Sprintf("code: %d", tc.code)) {
					t.Errorf("topic dead letter %s has attributes %v, want the original ones and the error", m.Data, m.Attributes)
				}
			}
			c := counters(res)
			if c["rows-rejected-by-clickhouse"] != int64(len(bad)) || c["rows-inserted"] != int64(n-len(bad)) || c["insert-failures"] != 0 {
				t.Errorf("counters %v", c)
			}
			e.checkAllAcked(t, ids)
		})
	}
}

// TestServerRejectsRowsOfTheLastBatch: in the count mode the stream's rows make no full batch, so
// the batcher's end-of-window timer sends them when the source stops (the combined mode's time
// bound sends them before that), and the server rejects some of them. Their dead
// letters are written and their messages acknowledged, as any others: the timer holds the
// watermark until it fires, so what the write stage emits then is no late data to the dead
// letters' GroupByKey. Before, with the timer setting no output timestamp, every such dead letter
// was dropped as late, its message given back unacknowledged, and the run ended with status 0:
// at each run again, for as long as the stream stayed short of a batch.
func TestServerRejectsRowsOfTheLastBatch(t *testing.T) {
	const n = 90
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d shards", shards), func(t *testing.T) {
			e := newE2E(t, `CREATE TABLE {table} (id UInt32, amount Decimal(10, 2), chk UInt8 MATERIALIZED throwIf(amount > 50))
				ENGINE = MergeTree ORDER BY id`)
			e.opts.BatchRowCount = pipeline.GivenInt(1000)
			e.opts.NumShards = shards
			var msgs []*pubsubpb.PubsubMessage
			bad := 0
			for i := range n {
				amount := i % 60
				if amount > 50 {
					bad++
				}
				msgs = append(msgs, &pubsubpb.PubsubMessage{Data: fmt.Appendf(nil, `{"id":%d,"amount":"%d.00"}`, i, amount)})
			}
			ids := e.ps.Publish(t, e.topic, msgs...)
			res := e.run(t)
			rows, dls := e.checkAccounted(t, n, "id")
			if rows != n-bad || dls != bad {
				t.Errorf("%d rows and %d dead letters in the table, want %d and %d", rows, dls, n-bad, bad)
			}
			if got := len(e.ps.PullAll(t, e.dlqCheck)); got != bad {
				t.Errorf("%d dead letters on the topic, want %d", got, bad)
			}
			c := counters(res)
			if c["rows-rejected-by-clickhouse"] != int64(bad) || c["dead-letter-rows-clickhouse"] != int64(bad) || c["dead-letter-rows-pubsub"] != int64(bad) {
				t.Errorf("counters %v, want %d rejected and dead-lettered", c, bad)
			}
			e.checkAllAcked(t, ids)
		})
	}
}

// TestDeadLetterInsertsHoldMaxInsertBlockSize: maxInsertBlockSize bounds the dead-letter table's
// INSERTs as it bounds the rows' (parameters.md: no INSERT holds more rows), in the fixed-window
// mode, where a window's dead letters are one batch. Before, a window's 23 dead letters went in
// one INSERT of 23 rows.
func TestDeadLetterInsertsHoldMaxInsertBlockSize(t *testing.T) {
	const n, bad, most = 40, 23, 5
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	e.opts.WindowSeconds = pipeline.GivenInt(2)
	e.opts.MaxInsertBlockSize = most
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		data := fmt.Sprintf(`{"id":%d}`, i)
		if i < bad {
			data = fmt.Sprintf(`{"id":"x%d"}`, i)
		}
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(data)})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	e.run(t)
	if rows, dls := e.checkAccounted(t, n, "id"); rows != n-bad || dls != bad {
		t.Errorf("%d rows and %d dead letters, want %d and %d", rows, dls, n-bad, bad)
	}
	for _, table := range []string{"events", "dead_letters"} {
		got := e.srv.MustQuery(t, fmt.Sprintf("SELECT count(), max(rows) FROM system.parts WHERE database = '%s' AND table = '%s' AND level = 0", e.srv.Database, table))
		var parts, largest int
		fmt.Sscanf(got, "%d\t%d", &parts, &largest)
		if parts == 0 || largest > most {
			t.Errorf("%s: %d INSERTs, the largest of %d rows; want INSERTs of at most maxInsertBlockSize = %d rows", table, parts, largest, most)
		}
	}
	e.checkAllAcked(t, ids)
}

// TestServerRejectsEveryRow: a DEFAULT that fails for every row whatever its values
// (splitByChar with a separator of two bytes, code 36): each row is dead-lettered with the
// server's error, and the job goes on and ends; nothing is retried forever.
func TestServerRejectsEveryRow(t *testing.T) {
	const n = 200
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, raw String, parts Array(String) DEFAULT splitByChar('ab', raw)) ENGINE = MergeTree ORDER BY id`)
	e.opts.BatchRowCount = pipeline.GivenInt(n)
	e.opts.WindowSeconds = pipeline.GivenInt(5)
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d,"raw":"x,y"}`, i))})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	e.run(t)
	rows, dls := e.checkAccounted(t, n, "id")
	if rows != 0 || dls != n {
		t.Errorf("%d rows and %d dead letters, want 0 and %d", rows, dls, n)
	}
	if got := e.srv.MustQuery(t, "SELECT count() FROM dead_letters WHERE position(error_message, 'code: 36') > 0"); strings.TrimSpace(got) != strconv.Itoa(n) {
		t.Errorf("%s dead letters name code 36, want %d", got, n)
	}
	e.checkAllAcked(t, ids)
}

func joinKeys(m map[int]bool) string {
	var s []string
	for k := range m {
		s = append(s, strconv.Itoa(k))
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestServerRefusesTheTable: the server refuses every INSERT into the table whatever the rows (a
// read-only connection, readonly=2: "Cannot insert into table in readonly mode", code 164; a Merge
// table, code 48, is now refused at the start). No split can fix that: the write stage retries,
// then fails loudly, naming the cause; it dead-letters nothing and acknowledges nothing, so the
// messages stay in the subscription until the table is fixed.
func TestServerRefusesTheTable(t *testing.T) {
	const n = 50
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	e.opts.ClickHouseURL = readOnly(t, e.opts.ClickHouseURL)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.BatchRowCount = pipeline.GivenInt(1000)
	e.opts.MaxRetries = 2
	e.opts.StopAfterIdle = pipeline.GivenInt(15) // a second run waits out the first's ack deadline (10 s)
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d}`, i))})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	// The failed bundle's error is also in the log: prism (Beam 2.77.0) sometimes ends the job
	// with an error of its own ("nothing in progress and no refreshes ...") in a race with the
	// failed bundle's, which it then only logs ("Bundle Failed."). On a loaded machine it can end
	// the job that way before the bundle has failed at all; then nothing was acknowledged, and
	// the job runs once more on the same messages.
	var logged bytes.Buffer
	var err error
	for attempt := 1; attempt <= 2; attempt++ {
		logged.Reset()
		p, s := beam.NewPipelineWithRoot()
		pipeline.Build(s, pipeline.MustCheck(e.opts), pipeline.LocalSource)
		prev := slog.Default()
		slog.SetDefault(slog.New(slog.NewTextHandler(io.MultiWriter(os.Stderr, &logged), nil)))
		_, err = flowtest.RunWithMetrics(p)
		slog.SetDefault(prev)
		if err == nil || strings.Contains(err.Error()+logged.String(), "ClickHouse refuses every INSERT") {
			break
		}
		t.Logf("attempt %d: prism ended the job before the bundle failed (%.120s...)", attempt, err)
	}
	if err == nil {
		t.Fatal("the pipeline ended without an error, want the INSERT refused")
	}
	told := err.Error()
	if !strings.Contains(told, "ClickHouse refuses every INSERT") {
		t.Logf("the job's error is not the failed bundle's (%.120s...); looking in the log", told)
		told = logged.String()
	}
	for _, want := range []string{"ClickHouse refuses every INSERT into " + e.srv.Database + ".events", "code 164 READONLY",
		"Cannot insert into table in readonly mode", "nothing was dead-lettered"} {
		if !strings.Contains(told, want) {
			t.Errorf("neither the error nor the log says %q: %q", want, told)
		}
	}
	if !strings.Contains(logged.String(), "ClickHouse refuses every INSERT into "+e.srv.Database+".events") {
		t.Errorf("the log does not say why the bundle failed")
	}
	if got := strings.TrimSpace(e.srv.MustQuery(t, "SELECT count() FROM dead_letters")); got != "0" {
		t.Errorf("%s dead letters, want none", got)
	}
	acked := 0
	for _, m := range e.ps.Server.Messages() {
		if m.Acks > 0 {
			acked++
		}
	}
	if acked != 0 {
		t.Errorf("%d of %d messages acknowledged, want none", acked, len(ids))
	}
}

// TestRowTooLargeForServerMemory: one row whose MATERIALIZED expression needs more memory than
// the server allows (code 241, with max_memory_usage set through clickHouseUrl's query). Memory
// errors split the batch; the row, alone and still failing after its retries, is about itself:
// it is dead-lettered, and the rows around it land.
func TestRowTooLargeForServerMemory(t *testing.T) {
	const n = 100
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, n UInt64, a Array(UInt8) MATERIALIZED arrayResize([toUInt8(1)], n)) ENGINE = MergeTree ORDER BY id`)
	e.opts.ClickHouseURL = e.srv.URL + "?max_memory_usage=50000000"
	e.opts.BatchRowCount = pipeline.GivenInt(n)
	e.opts.WindowSeconds = pipeline.GivenInt(3)
	e.opts.MaxRetries = 2
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		size := 3
		if i == 42 {
			size = 200_000_000 // 200 MB for one row, over the 50 MB limit
		}
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d,"n":%d}`, i, size))})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	e.run(t)
	rows, dls := e.checkAccounted(t, n, "id")
	if rows != n-1 || dls != 1 {
		t.Errorf("%d rows and %d dead letters, want %d and 1", rows, dls, n-1)
	}
	got := e.srv.MustQuery(t, "SELECT raw_message, error_message FROM dead_letters")
	if !strings.Contains(got, `{"id":42,`) || !strings.Contains(got, "code: 241") {
		t.Errorf("dead letter %q, want message 42 with code 241", got)
	}
	e.checkAllAcked(t, ids)
}
