package integration_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
)

// routedTables are the tables of TestRouting: three kinds, and events for the kinds not listed.
var routedTables = []string{"clicks", "orders", "views", "events"}

// routedCounts returns the row count of each table of routedTables, and of dead_letters; a
// detached table is -1.
func (e *e2e) routedCounts(t *testing.T, detached string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range append(routedTables, "dead_letters") {
		if table == detached {
			out[table] = -1
			continue
		}
		n, err := strconv.Atoi(e.srv.MustQuery(t, "SELECT count() FROM "+table))
		if err != nil {
			t.Fatal(err)
		}
		out[table] = n
	}
	return out
}

// watchRouted waits until every table of want has at least its count, at most limit.
func (e *e2e) watchRouted(t *testing.T, want map[string]int, detached string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got := e.routedCounts(t, detached)
		done := true
		for table, n := range want {
			if got[table] < n {
				done = false
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the tables hold %v, want at least %v", limit, got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// routedMessage is message i of TestRouting: its kind cycles click, order, view, signup (listed
// in no pair: the table events); every 50th has no kind (a dead letter), every 40th order the
// amount 666, which orders' MATERIALIZED column refuses (a dead letter of the write stage).
// From withRef on, clicks carry a field ref, for the column added mid-run.
func routedMessage(i int, withRef bool) (data string, table string) {
	kinds := []string{"click", "order", "view", "signup"}
	kind := kinds[i%4]
	table = map[string]string{"click": "clicks", "order": "orders", "view": "views", "signup": "events"}[kind]
	switch {
	case i%50 == 49:
		return fmt.Sprintf(`{"id":%d,"amount":1}`, i), "dead_letters"
	case kind == "order" && i%40 == 1:
		return fmt.Sprintf(`{"id":%d,"kind":"order","amount":666}`, i), "dead_letters"
	case kind == "click" && withRef:
		return fmt.Sprintf(`{"id":%d,"kind":"click","page":"p%d","ref":"r%d"}`, i, i, i), table
	}
	return fmt.Sprintf(`{"id":%d,"kind":%q,"page":"p%d","amount":%d}`, i, kind, i, i), table
}

// TestRouting: one subscription, messages routed by the payload's field kind into three tables,
// a fourth (clickHouseTable) for the kind no pair lists, and the dead letter for messages
// without a kind. Mid-run one table is detached for 15 s (its rows land after ATTACH, the
// other tables' meanwhile), another gains a column (filled after the schema refresh), and a
// third refuses some rows at the server (only those are dead letters). Every message is exactly
// once in its table or the dead-letter table; the per-table counters agree.
func TestRouting(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, kind String) ENGINE = MergeTree ORDER BY id`)
	e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, kind String, page String) ENGINE = MergeTree ORDER BY id`, "clicks")
	e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, kind String, amount UInt32, chk UInt8 MATERIALIZED throwIf(amount = 666)) ENGINE = MergeTree ORDER BY id`, "orders")
	e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, kind String, page String) ENGINE = MergeTree ORDER BY id`, "views")
	e.opts.RouteBy = "field:kind"
	e.opts.RouteTables = "click=clicks, order=orders, view=views"
	e.opts.BatchRowCount = pipeline.GivenInt(50)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.SchemaRefreshSeconds = 1
	e.opts.MaxRetries = 40
	e.opts.RetryInitialBackoffMillis = 200
	e.opts.RetryMaxBackoffMillis = 2000
	e.opts.StopAfterIdle = pipeline.GivenInt(25) // longer than the detached table's 15 s

	want := map[string][]int{}
	publish := func(from, to int, withRef bool) map[string]int {
		var msgs []*pubsubpb.PubsubMessage
		for i := from; i < to; i++ {
			data, table := routedMessage(i, withRef)
			want[table] = append(want[table], i)
			msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(data)})
		}
		e.ps.Publish(t, e.topic, msgs...)
		counts := map[string]int{}
		for table, ids := range want {
			counts[table] = len(ids)
		}
		return counts
	}

	r := e.start(t)
	time.Sleep(time.Second)
	e.watchRouted(t, publish(0, 400, false), "", 60*time.Second)

	// views detached: the other tables go on.
	e.srv.MustExec(t, "DETACH TABLE views")
	detached := time.Now()
	phase2 := publish(400, 800, false)
	delete(phase2, "views")
	e.watchRouted(t, phase2, "views", 60*time.Second)
	if d := time.Since(detached); d > 14*time.Second {
		t.Errorf("the other tables' rows took %v, as long as views was detached: the outage held them up", d)
	}
	// clicks gains a column while views is still detached.
	e.srv.MustExec(t, "ALTER TABLE clicks ADD COLUMN ref Nullable(String)")
	time.Sleep(2500 * time.Millisecond) // longer than schemaRefreshSeconds
	phase3 := publish(800, 1200, true)
	delete(phase3, "views")
	e.watchRouted(t, phase3, "views", 60*time.Second)
	time.Sleep(15*time.Second - time.Since(detached))
	e.srv.MustExec(t, "ATTACH TABLE views")
	t.Logf("views detached for %v", time.Since(detached).Round(time.Millisecond))
	all := publish(1200, 1200, true)
	e.watchRouted(t, all, "", 90*time.Second)
	res := r.wait(t, 120*time.Second)
	c, dists := counters(res), distributions(res)
	t.Logf("counters: %v", c)

	// Every message exactly once, in its table.
	for _, table := range routedTables {
		var ids []string
		for _, i := range want[table] {
			ids = append(ids, strconv.Itoa(i))
		}
		got := e.srv.MustQuery(t, "SELECT arrayStringConcat(arrayMap(x -> toString(x), arraySort(groupArray(id))), ',') FROM "+table)
		if got != strings.Join(ids, ",") {
			t.Errorf("%s holds the ids %s\nwant %s", table, got, strings.Join(ids, ","))
		}
		if n := int64(len(want[table])); c["rows-inserted:"+table] != n {
			t.Errorf("counter rows-inserted:%s = %d, want %d", table, c["rows-inserted:"+table], n)
		}
		// The table's distributions: its INSERTs (at most batchRowCount rows each) and its
		// messages alone.
		if d := dists["insert-batch-rows:"+table]; d.Count != c["insert-batches:"+table] || d.Sum != c["rows-inserted:"+table] || d.Max > 50 || d.Count == 0 {
			t.Errorf("insert-batch-rows:%s = %+v; want %d INSERTs of %d rows in all, each of at most 50", table, d, c["insert-batches:"+table], c["rows-inserted:"+table])
		}
		if d := dists["insert-latency-ms:"+table]; d.Count != c["insert-batches:"+table] {
			t.Errorf("insert-latency-ms:%s counts %d INSERTs, want %d", table, d.Count, c["insert-batches:"+table])
		}
		if d := dists["message-payload-bytes:"+table]; d.Count != c["messages-received:"+table] || d.Count == 0 {
			t.Errorf("message-payload-bytes:%s counts %d messages, want messages-received:%[1]s = %d", table, d.Count, c["messages-received:"+table])
		}
	}
	if d, n := dists["insert-batch-rows"], c["insert-batches"]; d.Count != n {
		t.Errorf("insert-batch-rows counts %d INSERTs, want insert-batches = %d", d.Count, n)
	}
	var dlIDs []string
	for _, i := range want["dead_letters"] {
		dlIDs = append(dlIDs, strconv.Itoa(i))
	}
	if got := e.srv.MustQuery(t, "SELECT arrayStringConcat(arrayMap(x -> toString(x), arraySort(groupArray(visitParamExtractUInt(raw_message, 'id')))), ',') FROM dead_letters"); got != strings.Join(dlIDs, ",") {
		t.Errorf("dead_letters holds the ids %s\nwant %s", got, strings.Join(dlIDs, ","))
	}
	if got := e.srv.MustQuery(t, "SELECT count() FROM clicks WHERE id >= 800 AND ref = concat('r', toString(id))"); got != strconv.Itoa(100) {
		t.Errorf("%s clicks after the column was added have their ref, want 100", got)
	}
	explained := e.srv.MustQuery(t, "SELECT countIf(error_message LIKE 'routeBy field:kind: the payload has no field \"kind\"%' AND stack_trace LIKE 'stage: route%'), "+
		"countIf(error_message LIKE 'ClickHouse rejected the row%' AND stack_trace LIKE 'stage: write (the server rejected the row)\\ntable: orders\\n%') FROM dead_letters")
	unrouted, rejected := 0, 0
	for _, i := range want["dead_letters"] {
		if i%50 == 49 {
			unrouted++
		} else {
			rejected++
		}
	}
	if explained != fmt.Sprintf("%d\t%d", unrouted, rejected) {
		t.Errorf("dead letters explained (no kind, rejected by orders) = %q, want %d and %d", explained, unrouted, rejected)
	}
	for name, n := range map[string]int64{"messages-received": 1200, "dead-letters-unrouted": int64(unrouted),
		"rows-rejected-by-clickhouse:orders": int64(rejected), "rows-rejected-by-clickhouse:clicks": 0} {
		if c[name] != n {
			t.Errorf("counter %s = %d, want %d", name, c[name], n)
		}
	}
	if c["insert-retries"] == 0 {
		t.Errorf("no INSERT was retried while views was detached")
	}
	// batchRowCount holds for each table's INSERTs: no INSERT (a level-0 part) has more rows.
	for _, table := range routedTables {
		got := e.srv.MustQuery(t, fmt.Sprintf("SELECT count(), max(rows) FROM system.parts WHERE database = '%s' AND table = '%s' AND level = 0", e.srv.Database, table))
		var parts, most int
		fmt.Sscanf(got, "%d\t%d", &parts, &most)
		if parts == 0 || most > 50 {
			t.Errorf("%s: %d INSERTs, the largest of %d rows; want INSERTs of at most batchRowCount = 50 rows", table, parts, most)
		}
	}
}

// TestRoutingAfterUDF: the JavaScript UDF runs before routing, so it can set the field that
// routes; its output is what each table converts.
func TestRoutingAfterUDF(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, kind String) ENGINE = MergeTree ORDER BY id`, "odds")
	e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, kind String) ENGINE = MergeTree ORDER BY id`, "evens")
	e.opts.JavascriptTextTransformGcsPath = writeTestFile(t, "udf.js",
		`function f(p) { var o = JSON.parse(p); if (o.id > 90) return null; o.kind = o.id % 2 ? "odd" : "even"; return JSON.stringify(o); }`)
	e.opts.JavascriptTextTransformFunctionName = "f"
	e.opts.RouteBy, e.opts.RouteTables, e.opts.RouteUnlisted = "field:kind", "odd=odds,even=evens", "deadLetter"
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	var msgs []*pubsubpb.PubsubMessage
	for i := range 100 {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d}`, i))})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	c := counters(e.run(t))
	for table, want := range map[string]string{"odds": "45\t45", "evens": "46\t46"} {
		if got := e.srv.MustQuery(t, "SELECT count(), countIf(kind = if(id % 2 = 1, 'odd', 'even')) FROM "+table); got != want {
			t.Errorf("%s: rows and rows of their kind = %q, want %q", table, got, want)
		}
	}
	if c["udf-dropped"] != 9 || c["dead-letters-unrouted"] != 0 || c["messages-received"] != 91 {
		t.Errorf("counters %v: want 9 dropped by the UDF, 91 routed, none unrouted", c)
	}
	e.checkAllAcked(t, ids)
}

// TestRoutingByAttribute: routed by an attribute, with routeUnlisted=deadLetter: a value no pair
// lists and a message without the attribute are dead letters that name the attribute and the
// value, on the table and the topic; clickHouseTable gets nothing.
func TestRoutingByAttribute(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, attrs String) ENGINE = MergeTree ORDER BY id`, "clicks")
	e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, attrs String) ENGINE = MergeTree ORDER BY id`, "orders")
	e.opts.RouteBy = "attribute:event_type"
	e.opts.RouteTables = "click=clicks,order=orders"
	e.opts.RouteUnlisted = "deadLetter"
	e.opts.MetadataColumns = "attributes=attrs" // applies to each routed table
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	var msgs []*pubsubpb.PubsubMessage
	for i := range 40 {
		attrs := map[string]string{"event_type": []string{"click", "order", "refund", ""}[i%4]}
		if i%4 == 3 {
			attrs = map[string]string{"other": "x"}
		}
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d}`, i)), Attributes: attrs})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	c := counters(e.run(t))
	t.Logf("counters: %v", c)
	for _, table := range []string{"clicks", "orders"} {
		kind := strings.TrimSuffix(table, "s")
		if got, want := e.srv.MustQuery(t, fmt.Sprintf("SELECT count(), countIf(attrs = '{\"event_type\":\"%s\"}') FROM %s", kind, table)), "10\t10"; got != want {
			t.Errorf("%s: rows and rows with their attributes = %q, want %q", table, got, want)
		}
	}
	if got := e.srv.MustQuery(t, "SELECT count() FROM events"); got != "0" {
		t.Errorf("clickHouseTable events holds %s rows, want 0 (routeUnlisted=deadLetter)", got)
	}
	got := e.srv.MustQuery(t, "SELECT error_message, count() FROM dead_letters GROUP BY error_message ORDER BY error_message")
	want := `routeBy attribute:event_type: the message has no attribute "event_type", so it names no table` + "\t10\n" +
		`routeBy attribute:event_type: the value "refund" of the attribute "event_type" is not listed in routeTables, and routeUnlisted is deadLetter` + "\t10"
	if got != want {
		t.Errorf("dead letters:\n%s\nwant\n%s", got, want)
	}
	// The dead-letter table keeps each message's attributes and id, so that replay can route it again.
	if got := e.srv.MustQuery(t, `SELECT countIf(attributes = '{"event_type":"refund"}'), countIf(attributes = '{"other":"x"}'), countIf(message_id != '') FROM dead_letters`); got != "10\t10\t20" {
		t.Errorf("dead letters with their attributes (refund, other) and message ids = %q, want 10, 10 and 20", got)
	}
	refunds := 0
	for _, m := range e.ps.PullAll(t, e.dlqCheck) {
		if m.Attributes["event_type"] == "refund" && strings.Contains(m.Attributes["errorMessage"], `the value "refund"`) {
			refunds++
		}
	}
	if refunds != 10 {
		t.Errorf("%d refunds on the dead-letter topic with their attribute and error, want 10", refunds)
	}
	for name, n := range map[string]int64{"rows-inserted:clicks": 10, "rows-inserted:orders": 10, "dead-letters-unrouted": 20, "messages-received": 40} {
		if c[name] != n {
			t.Errorf("counter %s = %d, want %d", name, c[name], n)
		}
	}
	e.checkAllAcked(t, ids)
}

// TestRoutingStartupFailures: at launch every routed table is checked as clickHouseTable is, and
// each failure names its routeTables pair; a routing without its other half is refused before
// anything starts.
func TestRoutingStartupFailures(t *testing.T) {
	bin, _ := launchBinary(t)
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, msg_id String) ENGINE = MergeTree ORDER BY id`)
	e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "clicks")
	e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, msg_id UInt8) ENGINE = MergeTree ORDER BY id`, "narrow")
	o := e.opts
	base := connectionFlags(o.InputSubscription, o.ClickHouseURL, o.ClickHouseDatabase)
	base["routeBy"] = "field:kind"
	checkStartupFailures(t, bin, base, []startupFailure{
		{"a routed table missing", map[string]string{"routeTables": "click=clicks,view=views,seen=views"},
			`routeTables "view=views", "seen=views": table ` + o.ClickHouseDatabase + ".views does not exist"},
		{"a metadata column one routed table lacks", map[string]string{"routeTables": "click=clicks", "metadataColumns": "message_id=msg_id"},
			`metadataColumns: pair "message_id=msg_id": the table clicks has no column "msg_id" (the table clicks, of routeTables "click=clicks")`},
		// The column's type says nothing of its table, which clickHouseTable's (String) is not.
		{"a metadata column one routed table cannot take", map[string]string{"routeTables": "n=narrow,m=narrow", "metadataColumns": "message_id=msg_id"},
			`metadataColumns: pair "message_id=msg_id": column "msg_id" (UInt8) cannot take the value: ` + messageIDNeeds +
				`; UInt8 holds at most 255 (the table narrow, of routeTables "n=narrow", "m=narrow")`},
		{"clickHouseTable missing, for unlisted values", map[string]string{"routeTables": "click=clicks", "clickHouseTable": "nope"},
			"clickHouseTable: table " + o.ClickHouseDatabase + ".nope does not exist"},
	})
	checkUsageFailures(t, bin, base, []startupFailure{
		// Unlisted values would be rows of the dead-letter table, which replay would publish.
		{"clickHouseTable the dead-letter table, for unlisted values", map[string]string{"routeTables": "click=clicks", "clickHouseTable": "dead_letters"},
			`clickHouseTable "dead_letters": is also clickHouseDeadLetterTable, which holds dead letters, not rows`},
		{"routeBy a name with a trailing space", map[string]string{"routeTables": "click=clicks", "routeBy": "field:kind "},
			`routeBy "field:kind ": "field:kind " has spaces around the name "kind "`},
	})
	delete(base, "routeBy")
	checkUsageFailures(t, bin, base, []startupFailure{
		{"routeTables without routeBy", map[string]string{"routeTables": "click=clicks"}, `routeTables "click=clicks": is set, but routeBy is not`},
	})
}

// TestCheckRouted: check shows the table each message goes to, and explains a message that
// names none.
func TestCheckRouted(t *testing.T) {
	ch := chtest.New(t)
	ch.CreateTable(t, "CREATE TABLE {table} (id UInt32, kind String) ENGINE = MergeTree ORDER BY id", "events")
	ch.CreateTable(t, "CREATE TABLE {table} (id UInt32, page String) ENGINE = MergeTree ORDER BY id", "clicks")
	file := writeTestFile(t, "r.jsonl", strings.Join([]string{
		`{"id":1,"kind":"click","page":"home"}`,
		`{"id":2,"kind":"signup"}`,
		`{"id":3}`,
		`{"id":"x","kind":"click","page":"p"}`,
	}, "\n")+"\n")
	out, errOut, code := runCommand(t, "", append(append([]string{"check", "--clickHouseTable=events", "--routeBy=field:kind",
		"--routeTables=click=clicks"}, chFlags(ch)...), file)...)
	for _, want := range []string{
		file + ":1: row of table clicks\n  id = 1\n  page = 'home'\n",
		file + ":2: row of table events\n  id = 2\n  kind = 'signup'\n",
		file + `:3: dead letter: routeBy field:kind: the payload has no field "kind" (or it is null), so it names no table`,
		file + `:4: dead letter: column "id" (UInt32)`,
		"4 messages: 2 would be rows, 2 dead letters",
		"routing: field:kind",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check printed\n%s\nwant it to contain\n%s\nstderr:\n%s", out, want, errOut)
		}
	}
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	// With --stackTrace, the stack trace of a routed message's dead letter names its table, as
	// the pipeline's does; the routing's own does not.
	out, errOut, _ = runCommand(t, "", append(append([]string{"check", "--stackTrace", "--clickHouseTable=events", "--routeBy=field:kind",
		"--routeTables=click=clicks"}, chFlags(ch)...), file)...)
	for _, want := range []string{"    stage: parse\n    table: clicks\n    column: id\n", "    stage: route\n    error: routeBy"} {
		if !strings.Contains(out, want) {
			t.Errorf("check --stackTrace printed\n%s\nwant it to contain\n%s\nstderr:\n%s", out, want, errOut)
		}
	}
}

// TestRoutingByAttributeDeadLetterTableWithoutAttributes: routing by an attribute into a
// dead-letter table without the attributes column (and no dead-letter topic) loses the attribute
// of every dead letter, so that replay cannot route it again: the launch says so, with the ALTER
// TABLE that adds the column.
func TestRoutingByAttributeDeadLetterTableWithoutAttributes(t *testing.T) {
	bin, _ := launchBinary(t)
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "clicks")
	e.srv.CreateTable(t, `CREATE TABLE {table} (raw_message String, error_message String, stack_trace String, failed_at DateTime) `+
		`ENGINE = MergeTree ORDER BY failed_at`, "plain_dead_letters")
	o := e.opts
	warning := `routeBy attribute:event_type: the dead-letter table has no column attributes, so its dead letters lose the attribute \"event_type\"`
	for _, tc := range []struct {
		deadLetters string
		warns       bool
	}{{"plain_dead_letters", true}, {"dead_letters", false}} {
		flags := connectionFlags(o.InputSubscription, o.ClickHouseURL, o.ClickHouseDatabase)
		flags["clickHouseDeadLetterTable"] = tc.deadLetters
		flags["routeBy"], flags["routeTables"] = "attribute:event_type", "click=clicks"
		flags["stopAfterIdle"] = strconv.Itoa(1)
		out, err := launchOnPrism(t, bin, flags)
		if err != nil {
			t.Fatalf("the launch with %s: %v\n%s", tc.deadLetters, err, out)
		}
		if got := strings.Contains(out, warning); got != tc.warns {
			t.Errorf("with the dead-letter table %s, the output says %q: %v, want %v:\n%s", tc.deadLetters, warning, got, tc.warns, out)
		}
	}
}

// TestRoutingFixedWindowOutage: in the fixed-window mode (windowSeconds alone), one routed table
// detached holds up only its own rows: the other table's rows, and the dead letters of the other
// table and of the routing, are written while it is down (they went through
// the rows' event-time windows, whose panes waited for the detached table's write stage, until
// 2026-12-05), and its own row lands after ATTACH.
func TestRoutingFixedWindowOutage(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "ta")
	e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, v UInt8) ENGINE = MergeTree ORDER BY id`, "tb")
	e.opts.RouteBy = "attribute:r"
	e.opts.RouteTables = "a=ta,b=tb"
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.MaxRetries = 60
	e.opts.RetryInitialBackoffMillis = 200
	e.opts.RetryMaxBackoffMillis = 1000
	e.opts.StopAfterIdle = pipeline.GivenInt(20)
	r := e.start(t)
	time.Sleep(2 * time.Second) // the launch checks every table
	e.srv.MustExec(t, "DETACH TABLE ta")
	msg := func(data string, attrs map[string]string) *pubsubpb.PubsubMessage {
		return &pubsubpb.PubsubMessage{Data: []byte(data), Attributes: attrs}
	}
	ids := e.ps.Publish(t, e.topic, msg(`{"id":1}`, map[string]string{"r": "a"}), msg(`{"id":5,"v":1}`, map[string]string{"r": "b"}),
		msg(`{"id":6,"v":500}`, map[string]string{"r": "b"}), msg(`{"id":7}`, map[string]string{"r": "b"}), msg(`{"id":8,"v":1}`, nil))
	detached := time.Now()
	deadline := detached.Add(12 * time.Second)
	want := "5\t3" // tb's row; the dead letters of 500, of the missing v, of the missing attribute
	got := ""
	for time.Now().Before(deadline) {
		got = e.srv.MustQuery(t, "SELECT (SELECT arrayStringConcat(arrayMap(x -> toString(x), groupArray(id)), ',') FROM tb), (SELECT count() FROM dead_letters)")
		if got == want {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got != want {
		t.Fatalf("with ta detached for %v, tb's rows and the dead letters are %q, want %q: ta's outage holds them up", time.Since(detached).Round(time.Millisecond), got, want)
	}
	t.Logf("tb's row and the 3 dead letters landed %v after ta was detached", time.Since(detached).Round(time.Millisecond))
	// A routed message's dead letter names its table in the stack trace (error_message does not).
	if got := e.srv.MustQuery(t, "SELECT countIf(stack_trace LIKE 'stage: parse\\ntable: tb\\ncolumn: v\\n%') FROM dead_letters"); got != "2" {
		t.Errorf("%s dead letters of tb name the table in their stack trace, want 2:\n%s", got, e.srv.MustQuery(t, "SELECT stack_trace FROM dead_letters"))
	}
	e.srv.MustExec(t, "ATTACH TABLE ta")
	r.wait(t, 120*time.Second)
	if got := e.srv.MustQuery(t, "SELECT groupArray(id) FROM ta"); got != "[1]" {
		t.Errorf("ta holds %s after ATTACH, want [1]", got)
	}
	e.checkAllAcked(t, ids)
}

// TestRoutingFixedWindowLongOutage: the fixed-window mode with one routed table detached while
// messages for both arrive over more windows than prism runs bundles at once (8). The other
// table's rows all land while it is down, and the detached table's after ATTACH. Each window of
// the detached table took a bundle of its own, retrying its INSERT, until the 8 were taken and
// nothing else ran (the write stage is now stateful on the local runner: one bundle a shard).
func TestRoutingFixedWindowLongOutage(t *testing.T) {
	const windows = 11 // more than prism's 8 bundles
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "ta")
	e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`, "tb")
	e.opts.RouteBy = "attribute:r"
	e.opts.RouteTables = "a=ta,b=tb"
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.MaxRetries = 200
	e.opts.RetryInitialBackoffMillis = 200
	e.opts.RetryMaxBackoffMillis = 1000
	e.opts.StopAfterIdle = pipeline.GivenInt(30) // longer than the SELECT
	r := e.start(t)
	time.Sleep(2 * time.Second) // the launch checks every table
	e.srv.MustExec(t, "DETACH TABLE ta")
	var ids []string
	for w := range windows {
		var msgs []*pubsubpb.PubsubMessage
		for i := range 4 {
			n, table := w*4+i, "a"
			if i%2 == 1 {
				table = "b"
			}
			msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d}`, n)), Attributes: map[string]string{"r": table}})
		}
		ids = append(ids, e.ps.Publish(t, e.topic, msgs...)...)
		time.Sleep(1100 * time.Millisecond)
	}
	want := fmt.Sprint(windows * 2)
	got := ""
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if got = e.srv.MustQuery(t, "SELECT count() FROM tb"); got == want {
			break
		}
	}
	if got != want {
		t.Fatalf("with ta detached over %d windows, tb holds %s rows, want %s: ta's windows hold the other table up", windows, got, want)
	}
	e.srv.MustExec(t, "ATTACH TABLE ta")
	r.wait(t, 180*time.Second)
	if got := e.srv.MustQuery(t, "SELECT count(), uniqExact(id) FROM ta"); got != want+"\t"+want {
		t.Errorf("ta holds %s rows (count, distinct ids) after ATTACH, want %s of each", got, want)
	}
	e.checkAllAcked(t, ids)
}

// TestRoutingCountModeRoomForEveryTable: the count mode with three routed tables, and more
// messages than the local source's smallest cap (10,000), spread so that no table reaches
// batchRowCount. Every message is read before the source stops, and each table's rows land at
// the end, every message acknowledged. With a cap of one table's room (twice batchRowCount per
// shard) the source held 10,000 messages, no batch could fill, and the run never ended.
func TestRoutingCountModeRoomForEveryTable(t *testing.T) {
	const n, rows = 10_500, 4000
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, kind String) ENGINE = MergeTree ORDER BY id`)
	for _, table := range []string{"clicks", "orders"} {
		e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, kind String) ENGINE = MergeTree ORDER BY id`, table)
	}
	e.opts.RouteBy = "field:kind"
	e.opts.RouteTables = "click=clicks,order=orders"
	e.opts.BatchRowCount = pipeline.GivenInt(rows)
	e.opts.NumShards = 1
	kinds := []string{"click", "order", "signup"}
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: fmt.Appendf(nil, `{"id":%d,"kind":%q}`, i, kinds[i%3])})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	r := e.start(t)
	c := counters(r.wait(t, 2*time.Minute))
	for _, table := range []string{"clicks", "orders", "events"} {
		if got := e.srv.MustQuery(t, "SELECT count(), uniqExact(id) FROM "+table); got != fmt.Sprintf("%d\t%d", n/3, n/3) {
			t.Errorf("%s holds %s rows (count, distinct ids), want %d", table, got, n/3)
		}
	}
	if c["rows-inserted"] != n {
		t.Errorf("counter rows-inserted = %d, want %d", c["rows-inserted"], n)
	}
	e.checkAllAcked(t, ids)
}

// TestRoutingTableDetachedAfterSchemaChange: a routed table gains a column and is detached before
// its write stage has read the change. The rows of the messages that come meanwhile were
// converted against the new columns, so the write stage reads the table again for them; that
// read is retried as an INSERT into a detached table is (maxRetries), where it failed the bundle
// at once, which ended the run, every table's, two seconds after the DETACH. The other table's
// rows land meanwhile, and the detached table's, with the new column's values, after ATTACH.
func TestRoutingTableDetachedAfterSchemaChange(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	for _, table := range []string{"ra", "rb"} {
		e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, kind String) ENGINE = MergeTree ORDER BY id`, table)
	}
	e.opts.RouteBy = "field:kind"
	e.opts.RouteTables = "a=ra,b=rb"
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.SchemaRefreshSeconds = 1
	e.opts.MaxRetries = 40
	e.opts.RetryInitialBackoffMillis = 200
	e.opts.RetryMaxBackoffMillis = 2000
	e.opts.StopAfterIdle = pipeline.GivenInt(15)
	var r *running
	waitFor := func(table string, n int, limit time.Duration) { t.Helper(); e.waitForRows(t, r, table, n, limit) }
	var msgs []string
	for i := range 10 {
		msgs = append(msgs, fmt.Sprintf(`{"id":%d,"kind":%q}`, i, []string{"a", "b"}[i%2]))
	}
	e.publishJSON(t, msgs...)
	r = e.start(t)
	waitFor("ra", 5, 60*time.Second)
	waitFor("rb", 5, 60*time.Second)

	e.srv.MustExec(t, "ALTER TABLE rb ADD COLUMN x String")
	time.Sleep(2500 * time.Millisecond) // longer than schemaRefreshSeconds: rb's parse stage reads it
	e.srv.MustExec(t, "DETACH TABLE rb")
	detached := time.Now()
	msgs = nil
	for i := 10; i < 20; i++ {
		if i%2 == 0 {
			msgs = append(msgs, fmt.Sprintf(`{"id":%d,"kind":"a"}`, i))
		} else {
			msgs = append(msgs, fmt.Sprintf(`{"id":%d,"kind":"b","x":"x%d"}`, i, i))
		}
	}
	e.publishJSON(t, msgs...)
	waitFor("ra", 10, 15*time.Second)
	time.Sleep(8*time.Second - time.Since(detached))
	e.srv.MustExec(t, "ATTACH TABLE rb")
	waitFor("rb", 10, 60*time.Second)
	c := counters(r.wait(t, 90*time.Second))
	t.Logf("counters: %v", c)
	if got := e.srv.MustQuery(t, "SELECT count(), uniqExact(id), countIf(x = concat('x', toString(id))) FROM rb"); got != "10\t10\t5" {
		t.Errorf("rb: rows, distinct ids, rows with their x = %q, want 10, 10 and 5", got)
	}
	if got := e.srv.MustQuery(t, "SELECT count(), uniqExact(id) FROM ra"); got != "10\t10" {
		t.Errorf("ra: rows and distinct ids = %q, want 10 and 10", got)
	}
	if got := e.srv.MustQuery(t, "SELECT count() FROM dead_letters"); got != "0" {
		t.Errorf("%s dead letters, want none: %s", got, e.srv.MustQuery(t, "SELECT error_message FROM dead_letters"))
	}
}

// TestRoutedTableLosesUnknownFieldsColumn: a routed table whose column of unknownFieldsColumn is
// dropped while the job runs can no longer be converted to; its write stage, whose INSERT then
// fails, reads the table again with the INSERT's retries, as for a table detached, while the
// other table's rows land, and inserts its rows once the column is back. Until 2026-12-07 the
// stage failed its bundle at the first read, and the local run ended within milliseconds, the
// other table's INSERTs under way cancelled.
func TestRoutedTableLosesUnknownFieldsColumn(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	for _, table := range []string{"ra", "rb"} {
		e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, kind String, unk String) ENGINE = MergeTree ORDER BY id`, table)
	}
	e.opts.RouteBy = "field:kind"
	e.opts.RouteTables = "a=ra,b=rb"
	e.opts.RouteUnlisted = "deadLetter"
	e.opts.UnknownFieldsColumn = "unk"
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.MaxRetries = 40
	e.opts.RetryInitialBackoffMillis = 200
	e.opts.RetryMaxBackoffMillis = 1000
	var msgs []string
	for i := range 20 {
		msgs = append(msgs, fmt.Sprintf(`{"id":%d,"kind":%q,"z":%d}`, i, []string{"a", "b"}[i%2], i))
	}
	e.publishJSON(t, msgs[:10]...)
	r := e.start(t)
	e.waitForRows(t, r, "ra", 5, 60*time.Second)
	e.waitForRows(t, r, "rb", 5, 60*time.Second)

	e.srv.MustExec(t, "ALTER TABLE rb DROP COLUMN unk")
	e.publishJSON(t, msgs[10:]...)
	e.waitForRows(t, r, "ra", 10, 15*time.Second)
	e.srv.MustExec(t, "ALTER TABLE rb ADD COLUMN unk String")
	e.waitForRows(t, r, "rb", 10, 30*time.Second)
	r.wait(t, 60*time.Second)
	// rb's rows of before the DROP lost their unk with the column.
	for table, want := range map[string]string{"ra": "10\t10\t10", "rb": "10\t10\t5\t5"} {
		q := "SELECT count(), uniqExact(id), countIf(unk = concat('{\"z\":', toString(id), '}'))"
		if table == "rb" {
			q += ", countIf(id >= 10 AND unk != '')"
		}
		if got := e.srv.MustQuery(t, q+" FROM "+table); got != want {
			t.Errorf("%s: rows, distinct ids, rows keeping z in unk (and those published after the DROP) = %q, want %q: %s",
				table, got, want, e.srv.MustQuery(t, "SELECT id, unk FROM "+table+" ORDER BY id"))
		}
	}
	if got := e.srv.MustQuery(t, "SELECT count() FROM dead_letters"); got != "0" {
		t.Errorf("%s dead letters, want none: %s", got, e.srv.MustQuery(t, "SELECT error_message FROM dead_letters"))
	}
}

// TestRoutingSlowSchemaReadHoldsUpOnlyItsTable: on ClickHouse 18.16 an ALTER TABLE waits for
// the queries that read the table, and a read of the table's columns in system.columns waits
// behind it. A routed table's parse stage reads its columns every schemaRefreshSeconds, in the
// stage of the routing that every table's messages go through: until 2026-12-07 that read, made
// while a long SELECT of one table held up an ADD COLUMN of it, held up the rows of the other
// table for as long as the SELECT ran. Now the read runs in the background: the other table's
// rows land while the SELECT runs, and the table's new column is filled once the ALTER is done.
func TestRoutingSlowSchemaReadHoldsUpOnlyItsTable(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	for _, table := range []string{"ra", "rb"} {
		e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, kind String) ENGINE = MergeTree ORDER BY id`, table)
	}
	e.srv.MustExec(t, "INSERT INTO rb SELECT number + 1000, 'old' FROM system.numbers LIMIT 12")
	e.opts.RouteBy = "field:kind"
	e.opts.RouteTables = "a=ra,b=rb"
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.SchemaRefreshSeconds = 1
	e.opts.StopAfterIdle = pipeline.GivenInt(15) // longer than the SELECT
	var r *running
	waitFor := func(table string, n int, limit time.Duration) { t.Helper(); e.waitForRows(t, r, table, n, limit) }
	e.publishJSON(t, `{"id":1,"kind":"a"}`, `{"id":2,"kind":"b"}`)
	r = e.start(t)
	waitFor("ra", 1, 60*time.Second)
	waitFor("rb", 13, 60*time.Second)

	// A SELECT of rb for 12 s (a second per row), and an ADD COLUMN of rb that waits for it.
	selected, altered := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := e.srv.Query("SELECT sleepEachRow(1) FROM rb FORMAT Null", "max_block_size=1")
		selected <- err
	}()
	time.Sleep(500 * time.Millisecond)
	go func() { altered <- e.srv.Exec("ALTER TABLE rb ADD COLUMN q String") }()
	time.Sleep(2500 * time.Millisecond) // longer than schemaRefreshSeconds: rb's parse stage reads its columns
	e.publishJSON(t, `{"id":3,"kind":"a"}`, `{"id":4,"kind":"a"}`, `{"id":5,"kind":"a"}`)
	waitFor("ra", 4, 60*time.Second)
	select {
	case err := <-selected:
		t.Errorf("ra's rows landed only once the SELECT of rb had ended: rb's read of its columns held them up")
		selected <- err
	default:
	}
	if err := <-selected; err != nil {
		t.Fatal(err)
	}
	if err := <-altered; err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // rb's parse stage reads the new column
	e.publishJSON(t, `{"id":6,"kind":"b","q":"q6"}`, `{"id":7,"kind":"b","q":"q7"}`)
	waitFor("rb", 15, 60*time.Second)
	c := counters(r.wait(t, 60*time.Second))
	t.Logf("counters: %v", c)
	if got := e.srv.MustQuery(t, "SELECT arrayStringConcat(groupArray(concat(toString(id), ':', q)), ' ') FROM (SELECT id, q FROM rb WHERE id < 1000 ORDER BY id)"); got != "2: 6:q6 7:q7" {
		t.Errorf("rb holds %q, want 2: 6:q6 7:q7", got)
	}
	if got := e.srv.MustQuery(t, "SELECT count() FROM dead_letters"); got != "0" {
		t.Errorf("%s dead letters, want none: %s", got, e.srv.MustQuery(t, "SELECT error_message FROM dead_letters"))
	}
}

// TestRoutingTableAwayAtStart: a routed table that cannot be read when the parse stage starts
// (detached here; dropped and not yet created again, or locked, alike) holds up no other table.
// The parse stages of every table run in the routing's stage, and until 2026-12-07 a Setup that
// could not read one table retried for up to 85 s and then failed the stage, every table's
// messages with it, on each worker that started meanwhile. Now the stage passes that table's
// messages on unchecked, and the write stage converts them once it can read the table: the
// other table's rows land while it is away, its own after ATTACH, and a value it cannot take is
// a dead letter of the write stage that says why it was not checked before.
func TestRoutingTableAwayAtStart(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	for _, table := range []string{"ra", "rb"} {
		e.srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, kind String, n UInt8) ENGINE = MergeTree ORDER BY id`, table)
	}
	e.opts.RouteBy = "field:kind"
	e.opts.RouteTables = "a=ra,b=rb"
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.StopAfterIdle = pipeline.GivenInt(10)
	e.srv.MustExec(t, "DETACH TABLE rb")
	var msgs []string
	for i := range 10 {
		msgs = append(msgs, fmt.Sprintf(`{"id":%d,"kind":%q,"n":%d}`, i, []string{"a", "b"}[i%2], i))
	}
	msgs = append(msgs, `{"id":11,"kind":"b","n":300}`)
	e.publishJSON(t, msgs...)
	r := e.start(t)
	for deadline := time.Now().Add(30 * time.Second); e.rowsIn(t, "ra") < 5; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s with rb detached, ra holds %d rows, want 5: rb held them up", e.rowsIn(t, "ra"))
		}
	}
	e.srv.MustExec(t, "ATTACH TABLE rb")
	c := counters(r.wait(t, 120*time.Second))
	t.Logf("counters: %v", c)
	if got := e.srv.MustQuery(t, "SELECT arrayStringConcat(groupArray(concat(toString(id), ':', toString(n))), ' ') FROM (SELECT id, n FROM rb ORDER BY id)"); got != "1:1 3:3 5:5 7:7 9:9" {
		t.Errorf("rb holds %q, want 1:1 3:3 5:5 7:7 9:9", got)
	}
	if got := e.srv.MustQuery(t, "SELECT count() FROM ra"); got != "5" {
		t.Errorf("ra holds %s rows, want 5", got)
	}
	got := e.srv.MustQuery(t, "SELECT error_message, stack_trace FROM dead_letters")
	if n := e.srv.MustQuery(t, "SELECT count() FROM dead_letters"); n != "1" || !strings.Contains(got, "300") ||
		!strings.Contains(got, "the parse stage could not read the table, so this is the first conversion") || !strings.Contains(got, "rb") {
		t.Errorf("%s dead letters, want the one of n 300, from the write stage's first conversion, naming rb: %s", n, got)
	}
	if c["rows-unchecked:rb"] != 6 || c["rows-unchecked:ra"] != 0 {
		t.Errorf("counters rows-unchecked:rb = %d, rows-unchecked:ra = %d, want 6 and 0", c["rows-unchecked:rb"], c["rows-unchecked:ra"])
	}
}

// rowsIn returns how many rows table holds.
func (e *e2e) rowsIn(t *testing.T, table string) int {
	n, _ := strconv.Atoi(e.srv.MustQuery(t, "SELECT count() FROM "+table))
	return n
}

// waitForRows waits until table holds n rows, failing t when limit passes first or the run r
// ends first.
func (e *e2e) waitForRows(t *testing.T, r *running, table string, n int, limit time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(limit); e.rowsIn(t, table) < n; time.Sleep(200 * time.Millisecond) {
		select {
		case <-r.done:
			t.Fatalf("the run ended with %s holding %d rows, want %d: %v", table, e.rowsIn(t, table), n, r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v %s holds %d rows, want %d", limit, table, e.rowsIn(t, table), n)
		}
	}
}
