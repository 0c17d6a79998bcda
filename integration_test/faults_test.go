package integration_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
)

// checkAccounted checks the promise: every published message is a row or a dead letter, and no
// row is there twice.
func (e *e2e) checkAccounted(t *testing.T, published int, key string) (rows, deadLetters int) {
	t.Helper()
	got := e.srv.MustQuery(t, fmt.Sprintf("SELECT count(), uniqExact(%s) FROM events", key))
	var n, distinct int
	fmt.Sscanf(got, "%d\t%d", &n, &distinct)
	var dl int
	fmt.Sscanf(e.srv.MustQuery(t, "SELECT count() FROM dead_letters"), "%d", &dl)
	if n != distinct {
		t.Errorf("%d rows but %d distinct: %d duplicates", n, distinct, n-distinct)
	}
	if distinct+dl != published {
		t.Errorf("%d messages published, %d distinct rows + %d dead letters = %d", published, distinct, dl, distinct+dl)
	}
	return n, dl
}

// TestOneBadRowInBatch: a value the converter lets pass but the server rejects (a MATERIALIZED
// column that calls throwIf) sits in a batch of 10,000 rows. The batch is split until that row is
// alone, the 9,999 others are inserted in a handful of INSERTs, and only that row goes to the dead
// letter, with the server's error.
func TestOneBadRowInBatch(t *testing.T) {
	const n = 10_000
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, name String, chk UInt8 MATERIALIZED throwIf(name = 'boom')) ENGINE = MergeTree ORDER BY id`)
	e.opts.BatchRowCount = pipeline.GivenInt(n)
	e.opts.WindowSeconds = pipeline.GivenInt(10)
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		name := fmt.Sprint("n", i)
		if i == 4321 {
			name = "boom"
		}
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d,"name":"%s"}`, i, name))})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	res := e.run(t)
	rows, dls := e.checkAccounted(t, n, "id")
	if rows != n-1 || dls != 1 {
		t.Errorf("%d rows and %d dead letters, want %d and 1", rows, dls, n-1)
	}
	got := e.srv.MustQuery(t, "SELECT raw_message, error_message, stack_trace FROM dead_letters")
	for _, want := range []string{`{"id":4321,"name":"boom"}`, "ClickHouse rejected the row", "code: 395", "throwIf", "stage: write"} {
		if !strings.Contains(got, want) {
			t.Errorf("dead letter %q does not contain %q", got, want)
		}
	}
	c := counters(res)
	t.Logf("counters: %v", c)
	if c["insert-batches"] > 40 || c["rows-rejected-by-clickhouse"] != 1 || c["rows-inserted"] != n-1 {
		t.Errorf("counters %v: want 9,999 rows inserted in at most 40 INSERTs and 1 row rejected", c)
	}
	e.checkAllAcked(t, ids)
}

// TestNarrowedColumnWhileRunning: a column narrowed (UInt16 to UInt8) after the parse stage
// converted a row and before its batch is written. The write stage converts the rows again with
// the new schema; the row whose value no longer fits goes to the dead letter with its original
// bytes and a stack trace that names the stage and the column, and the other row is inserted.
func TestNarrowedColumnWhileRunning(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, n UInt16) ENGINE = MergeTree ORDER BY id`)
	ids := e.narrowWhileRunning(t, `{"id":1,"n":300}`, `{"id":2,"n":5}`)
	if got := e.srv.MustQuery(t, "SELECT id, n FROM events ORDER BY id"); got != "2\t5" {
		t.Errorf("rows %q, want only id 2", got)
	}
	got := e.srv.MustQuery(t, "SELECT raw_message, stack_trace FROM dead_letters")
	for _, want := range []string{`{"id":1,"n":300}`, "stage: write (converting again after the table changed)\ncolumn: n\n", "out of range"} {
		if !strings.Contains(strings.ReplaceAll(got, `\n`, "\n"), want) {
			t.Errorf("dead letter %q does not contain %q", got, want)
		}
	}
	e.checkAllAcked(t, ids)
}

// narrowWhileRunning runs e's pipeline in fixed windows of 10 s, aligned to the epoch, with
// schemaRefreshSeconds=0 (the parse stage keeps the schema it read at start-up), publishes
// payloads just after a window starts, narrows the table's column n to UInt8 2 s later, while
// their rows, converted by the parse stage, wait for the window to close (about 8 s after the
// ALTER), waits for the run to end and returns the messages' ids. (Published at any time, they
// could fall at the end of a window that closes before the ALTER; the server's MODIFY COLUMN
// then casts a stored 300 to UInt8, 44, as ClickHouse does with the rows it holds.)
func (e *e2e) narrowWhileRunning(t *testing.T, payloads ...string) []string {
	t.Helper()
	e.opts.WindowSeconds = pipeline.GivenInt(10)
	e.opts.StopAfterIdle = pipeline.GivenInt(15) // longer than the wait for a window's start
	e.opts.SchemaRefreshSeconds = 0
	r := e.start(t)
	time.Sleep(time.Second)
	time.Sleep(time.Until(time.Now().Truncate(10 * time.Second).Add(10*time.Second + 200*time.Millisecond)))
	var msgs []*pubsubpb.PubsubMessage
	for _, p := range payloads {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(p)})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	time.Sleep(2 * time.Second) // converted by the parse stage, not yet written
	e.srv.MustExec(t, "ALTER TABLE events MODIFY COLUMN n UInt8")
	r.wait(t, 60*time.Second)
	return ids
}

// TestColumnTypeChangedAfterTheWriteStageReadIt: a column's type changed after both stages read
// the schema (a first row was inserted) and with no refresh of their own (schemaRefreshSeconds=0),
// so the rows that follow carry the old schema's hash and the write stage has no reason to read
// the table again before its INSERT. The INSERT finds that the server's column is not the type
// the rows were converted for and refuses to send them (the driver would have read their bytes
// as values of the new type: a UInt16 300 as the UInt8 44 and 1, a Decimal(9, 2) 1.5 as
// 0.0150); the write stage reads the schema and converts again. A value that fits the new type
// is inserted as it was published; one that does not is a dead letter. The type is compared as
// a whole: an Enum that lost a value is another type too. Columns whose values reach the driver
// as Go values (an Array of Nullable) are checked the same way.
func TestColumnTypeChangedAfterTheWriteStageReadIt(t *testing.T) {
	cases := newParallelCases(t)
	for _, tc := range []struct {
		name, ddl, alter string
		first            string   // inserted before the ALTER
		then             []string // published after it
		rows             string   // SELECT * FROM events ORDER BY id
		deadLetters      string   // SELECT raw_message FROM dead_letters
	}{
		{"narrowed", `CREATE TABLE {table} (id UInt32, n UInt16) ENGINE = MergeTree ORDER BY id`, "MODIFY COLUMN n UInt8",
			`{"id":0,"n":7}`, []string{`{"id":1,"n":300}`, `{"id":2,"n":5}`}, "0\t7\n2\t5", `{"id":1,"n":300}`},
		{"same width", `CREATE TABLE {table} (id UInt32, n UInt32) ENGINE = MergeTree ORDER BY id`, "MODIFY COLUMN n Int32",
			`{"id":0,"n":7}`, []string{`{"id":1,"n":4294967295}`, `{"id":2,"n":5}`}, "0\t7\n2\t5", `{"id":1,"n":4294967295}`},
		{"decimal scale", `CREATE TABLE {table} (id UInt32, d Decimal(9, 2)) ENGINE = MergeTree ORDER BY id`, "MODIFY COLUMN d Decimal(9, 4)",
			`{"id":0,"d":"1.25"}`, []string{`{"id":1,"d":"1.5"}`, `{"id":2,"d":"-2.25"}`}, "0\t1.2500\n1\t1.5000\n2\t-2.2500", ""},
		// An Enum that lost a value: before the Native format, the Go values' path inserted the
		// old code, which the table could no longer read ("Unexpected value 2").
		{"enum value dropped", `CREATE TABLE {table} (id UInt32, e Enum8('a' = 1, 'b' = 2)) ENGINE = MergeTree ORDER BY id`, "MODIFY COLUMN e Enum8('a' = 1)",
			`{"id":0,"e":"a"}`, []string{`{"id":1,"e":"b"}`, `{"id":2,"e":"a"}`}, "0\ta\n2\ta", `{"id":1,"e":"b"}`},
		// A column whose values reach clickhouse-go as Go values, not in the Native format: its
		// Array(UInt8) column took the [null, 1] converted for Array(Nullable(UInt8)) as [0, 1].
		{"nullable elements dropped", `CREATE TABLE {table} (id UInt32, a Array(Nullable(UInt8))) ENGINE = MergeTree ORDER BY id`, "MODIFY COLUMN a Array(UInt8)",
			`{"id":0,"a":[1]}`, []string{`{"id":1,"a":[null,1]}`, `{"id":2,"a":[2]}`}, "0\t[1]\n2\t[2]", `{"id":1,"a":[null,1]}`},
		// A column made MATERIALIZED: 18.16 refuses an INSERT that names it with code 44
		// (ILLEGAL_COLUMN), which dead-lettered every row as the row's fault; the server computes
		// the column now, and the field's value is ignored (SELECT * leaves the column out).
		{"made materialized", `CREATE TABLE {table} (id UInt32, m String DEFAULT 'x') ENGINE = MergeTree ORDER BY id`, "MODIFY COLUMN m String MATERIALIZED 'mat'",
			`{"id":0,"m":"v0"}`, []string{`{"id":1,"m":"v1"}`, `{"id":2}`}, "0\n1\n2", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := cases.newE2E(t, tc.ddl)
			e.opts.WindowSeconds = pipeline.GivenInt(1)
			e.opts.StopAfterIdle = pipeline.GivenInt(8)
			e.opts.SchemaRefreshSeconds = 0
			r := e.start(t)
			time.Sleep(time.Second)
			ids := e.ps.Publish(t, e.topic, &pubsubpb.PubsubMessage{Data: []byte(tc.first)})
			e.watch(t, 1, 30*time.Second)
			e.srv.MustExec(t, "ALTER TABLE events "+tc.alter)
			var msgs []*pubsubpb.PubsubMessage
			for _, m := range tc.then {
				msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(m)})
			}
			ids = append(ids, e.ps.Publish(t, e.topic, msgs...)...)
			r.wait(t, 60*time.Second)
			if got := e.srv.MustQuery(t, "SELECT * FROM events ORDER BY id"); got != tc.rows {
				t.Errorf("rows %q, want %q", got, tc.rows)
			}
			if got := e.srv.MustQuery(t, "SELECT raw_message FROM dead_letters"); got != tc.deadLetters {
				t.Errorf("dead letters %q, want %q", got, tc.deadLetters)
			}
			e.checkAllAcked(t, ids)
		})
	}
}

// TestSchemaChangesWhileRunning: columns added and dropped while the job runs. A column added
// is filled after the next schema refresh without a restart; a dropped column makes an INSERT
// fail, the write stage reads the schema again and converts the rows again; nothing is lost and
// nothing goes to the dead letter.
func TestSchemaChangesWhileRunning(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, name String, extra String DEFAULT 'x') ENGINE = MergeTree ORDER BY id`)
	e.opts.BatchRowCount = pipeline.GivenInt(100)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.SchemaRefreshSeconds = 1
	e.opts.StopAfterIdle = pipeline.GivenInt(8) // longer than the pauses between the phases
	r := e.start(t)
	publish := func(from, to int, withCity bool) {
		var msgs []*pubsubpb.PubsubMessage
		for i := from; i < to; i++ {
			city := ""
			if withCity {
				city = fmt.Sprintf(`,"city":"c%d"`, i)
			}
			msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d,"name":"n%d","extra":"e%d"%s}`, i, i, i, city))})
		}
		e.ps.Publish(t, e.topic, msgs...)
	}
	time.Sleep(time.Second)
	publish(0, 500, false)
	e.watch(t, 500, 30*time.Second)

	e.srv.MustExec(t, "ALTER TABLE events ADD COLUMN city Nullable(String)")
	time.Sleep(2500 * time.Millisecond) // longer than schemaRefreshSeconds
	publish(500, 1000, true)
	e.watch(t, 1000, 30*time.Second)

	e.srv.MustExec(t, "ALTER TABLE events DROP COLUMN extra")
	publish(1000, 1500, true)
	e.watch(t, 1500, 30*time.Second)
	c := counters(r.wait(t, 60*time.Second))
	t.Logf("counters: %v", c)

	e.checkAccounted(t, 1500, "id")
	if got := e.srv.MustQuery(t, "SELECT countIf(city IS NOT NULL), countIf(id >= 500 AND city = concat('c', toString(id))) FROM events"); got != "1000\t1000" {
		t.Errorf("rows with city, and with the right city = %q, want 1000 and 1000 (the added column filled without a restart)", got)
	}
}

// TestConnectionsCut: connections to ClickHouse are reset in the middle of INSERTs. The
// INSERTs are retried, every row lands once.
func TestConnectionsCut(t *testing.T) {
	const n = 3000
	e := newE2E(t, events.DDL)
	proxy := e.srv.Proxy(t)
	e.opts.ClickHouseURL = proxy.URL()
	e.opts.BatchRowCount = pipeline.GivenInt(200)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.MaxRetries = 20
	e.opts.RetryInitialBackoffMillis = 50
	e.opts.RetryMaxBackoffMillis = 500
	r := e.start(t)
	time.Sleep(time.Second)
	proxy.CutUploads(8, 30_000)
	gen := events.NewGenerator(7, time.Now())
	for range n / 500 {
		e.publishEvents(t, gen, 500)
		time.Sleep(200 * time.Millisecond)
	}
	e.watch(t, n, 60*time.Second)
	c := counters(r.wait(t, 60*time.Second))
	t.Logf("counters: %v; cuts not made: %d", c, proxy.Cuts())
	e.checkAccounted(t, n, "event_id")
	if c["insert-retries"] == 0 {
		t.Errorf("no INSERT was retried: the proxy cut nothing (cuts left %d)", proxy.Cuts())
	}
}

// TestColumnDroppedWithoutRefresh: with the periodic refresh off, a dropped column is noticed by
// the INSERT that names it: the write stage reads the schema again and converts the rows again.
func TestColumnDroppedWithoutRefresh(t *testing.T) {
	columnDroppedWithoutRefresh(t, chtest.New(t))
}

// TestModernColumnDroppedWithoutRefresh is TestColumnDroppedWithoutRefresh over the http:// path
// into the ClickHouse 26 engine, where clickhouse-go's HTTP transport, not the server, finds the
// dropped column (chclient.Insert: an *AppendError).
func TestModernColumnDroppedWithoutRefresh(t *testing.T) {
	columnDroppedWithoutRefresh(t, chtest.StartModern(t).Server)
}

func columnDroppedWithoutRefresh(t *testing.T, srv *chtest.Server) {
	e := newE2EOn(t, srv, `CREATE TABLE {table} (id UInt32, name String, extra String DEFAULT 'x') ENGINE = MergeTree ORDER BY id`)
	e.opts.BatchRowCount = pipeline.GivenInt(100)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.SchemaRefreshSeconds = 0
	e.opts.StopAfterIdle = pipeline.GivenInt(8) // longer than the pauses between the phases
	r := e.start(t)
	publish := func(from, to int) {
		var msgs []*pubsubpb.PubsubMessage
		for i := from; i < to; i++ {
			msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d,"name":"n%d","extra":"e%d"}`, i, i, i))})
		}
		e.ps.Publish(t, e.topic, msgs...)
	}
	time.Sleep(time.Second)
	publish(0, 300)
	e.watch(t, 300, 30*time.Second)
	e.srv.MustExec(t, "ALTER TABLE events DROP COLUMN extra")
	publish(300, 600)
	e.watch(t, 600, 30*time.Second)
	c := counters(r.wait(t, 60*time.Second))
	t.Logf("counters: %v", c)
	e.checkAccounted(t, 600, "id")
	if c["rows-parse-failed"] != 0 || c["rows-rejected-by-clickhouse"] != 0 {
		t.Errorf("counters %v: no message may go to the dead letter", c)
	}
}

// TestServerStoppedAndRestarted: the ClickHouse server (one of this test's own) is stopped for 20
// seconds mid-stream and started again. INSERTs are retried with backoff and every row lands once.
func TestServerStoppedAndRestarted(t *testing.T) {
	own := chtest.StartOwn(t)
	e := newE2EOn(t, own.Server, events.DDL)
	e.opts.BatchRowCount = pipeline.GivenInt(200)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.MaxRetries = 30
	e.opts.RetryInitialBackoffMillis = 200
	e.opts.RetryMaxBackoffMillis = 3000
	e.opts.StopAfterIdle = pipeline.GivenInt(30) // longer than the outage and the server's shutdown
	r := e.start(t)
	gen := events.NewGenerator(8, time.Now())
	time.Sleep(time.Second)
	e.publishEvents(t, gen, 1000)
	e.watch(t, 1000, 30*time.Second)

	own.Stop(t)
	stopped := time.Now()
	e.publishEvents(t, gen, 1000)
	time.Sleep(20*time.Second - time.Since(stopped))
	own.Start(t)
	t.Logf("server down for %v", time.Since(stopped).Round(time.Millisecond))
	e.watch(t, 2000, 90*time.Second)
	c := counters(r.wait(t, 90*time.Second))
	t.Logf("counters: %v", c)
	e.checkAccounted(t, 2000, "event_id")
	if c["insert-retries"] == 0 || c["insert-failures"] != 0 {
		t.Errorf("counters %v: want retries and no failure", c)
	}
}

// TestKilledAndRestarted: the pipeline process is killed (SIGKILL) mid-stream on the local runner
// and started again. Every message lands; the only duplicates allowed are rows whose INSERT
// committed just before the kill and whose acknowledgement was lost, and the test prints how many.
func TestKilledAndRestarted(t *testing.T) {
	const n = 6000
	e := newE2EApart(t, events.DDL)
	bin, _ := launchBinary(t)
	o := e.opts
	args := []string{
		"--runner=prism", "--inputSubscription=" + o.InputSubscription, "--clickHouseUrl=" + o.ClickHouseURL,
		"--clickHouseDatabase=" + o.ClickHouseDatabase, "--clickHouseTable=events", "--clickHouseUsername=default",
		"--clickHousePassword=", "--clickHouseDeadLetterTable=dead_letters", "--deadLetterTopic=" + o.DeadLetterTopic,
		"--batchRowCount=200", "--windowSeconds=1", "--retryInitialBackoffMillis=100", "--retryMaxBackoffMillis=1000",
	}
	start := func(extra ...string) *exec.Cmd {
		cmd := exec.Command(bin, append(args, extra...)...)
		cmd.Env = append(os.Environ(), "PUBSUB_EMULATOR_HOST="+e.ps.Addr)
		log, err := os.Create(filepath.Join(t.TempDir(), "pipeline.log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			b, _ := os.ReadFile(log.Name())
			checkOutput(t, "the binary's log", b)
		})
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	first := start()
	gen := events.NewGenerator(9, time.Now())
	var ids []string
	publish := func(k int) {
		var msgs []*pubsubpb.PubsubMessage
		for range k {
			_, data := gen.Next()
			msgs = append(msgs, &pubsubpb.PubsubMessage{Data: data})
		}
		ids = append(ids, e.ps.Publish(t, e.topic, msgs...)...)
	}
	for range 6 {
		publish(n / 12)
		time.Sleep(300 * time.Millisecond)
	}
	e.watch(t, 1000, 60*time.Second)
	if err := first.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	first.Wait()
	// An INSERT the killed process had sent in full is still committed by the server after the
	// process died: give such INSERTs a moment before taking what the first process wrote.
	time.Sleep(3 * time.Second)
	rowsAtKill := e.srv.MustQuery(t, "SELECT count() FROM events")
	atKill := map[string]bool{}
	for _, id := range strings.Split(e.srv.MustQuery(t, "SELECT event_id FROM events"), "\n") {
		atKill[id] = true
	}
	publish(n / 2)
	// What the killed process pulled but did not acknowledge is redelivered once its ack deadline
	// passes: at most the 60 s the process extended it to.
	time.Sleep(65 * time.Second)

	second := start("--stopAfterIdle=5")
	done := make(chan error, 1)
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the restarted pipeline failed: %v", err)
		}
	case <-time.After(3 * time.Minute):
		second.Process.Kill()
		t.Fatal("the restarted pipeline did not end by stopAfterIdle")
	}
	rows, dls := e.checkAccountedAllowingDuplicates(t, n, "event_id")
	t.Logf("rows at the kill: %s; after the restart: %d rows, %d dead letters, %d duplicates (INSERTs committed just before the kill whose ack was lost)", rowsAtKill, rows.total, dls, rows.total-rows.distinct)
	// A duplicate is allowed only for a row the killed process wrote (its INSERT committed, its
	// ack was lost), and only once.
	if dups := e.srv.MustQuery(t, "SELECT event_id, count() FROM events GROUP BY event_id HAVING count() > 1"); dups != "" {
		for _, l := range strings.Split(dups, "\n") {
			id, n, _ := strings.Cut(l, "\t")
			if !atKill[id] || n != "2" {
				t.Errorf("event %s is in the table %s times; in the table at the kill: %v", id, n, atKill[id])
			}
		}
	}
	e.checkAllAcked(t, ids)
}

// startLocalRun starts the binary on e's subscription and table events, through clickHouseURL,
// with extra flags, its output in the returned buffer, and stops it at the end of the test; a run
// that ended must have left nothing in its TMPDIR (checkNothingLeft).
func startLocalRun(t *testing.T, e *e2e, clickHouseURL string, extra ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	return startLocalRunThrough(t, e, clickHouseURL, e.ps.Addr, extra...)
}

// startLocalRunThrough is startLocalRun reaching e's emulator at pubsubAddr (a proxy in front of
// it).
func startLocalRunThrough(t *testing.T, e *e2e, clickHouseURL, pubsubAddr string, extra ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	bin, _ := launchBinary(t)
	o := e.opts
	args := append([]string{"--runner=prism", "--inputSubscription=" + o.InputSubscription, "--clickHouseUrl=" + clickHouseURL,
		"--clickHouseDatabase=" + o.ClickHouseDatabase, "--clickHouseTable=events", "--clickHouseUsername=default",
		"--clickHousePassword=", "--clickHouseDeadLetterTable=dead_letters"}, extra...)
	cmd := exec.Command(bin, args...)
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "PUBSUB_EMULATOR_HOST="+pubsubAddr, "TMPDIR="+tmp)
	log := new(lockedBuffer)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
			return
		}
		checkNothingLeft(t, tmp) // however the run ended: drained, or stopped by a second signal
	})
	return cmd, log
}

// lockedBuffer is a bytes.Buffer that a running command writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *lockedBuffer) Bytes() []byte { return []byte(b.String()) }

// waitUntil polls cond every 100 ms for up to limit; past it the test fails with what and the
// run's log.
func waitUntil(t *testing.T, limit time.Duration, what string, log fmt.Stringer, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v\n%s", what, limit, log.String())
		}
	}
}

// TestInterruptDrains: a local run interrupted (SIGINT, as Ctrl-C sends) while rows stream in,
// with INSERTs committing and a partial batch held (a batch of 700, or 600 s; the source pulls 1,000 at a time), drains: it pulls
// no more, inserts the rows it holds, acknowledges every message it read and exits with status
// 130. No message is stored twice and none waits for its ack deadline: a next run that stops 3 s
// after the last message stores exactly the rest. (The run gave the messages it had not
// acknowledged back at once, among them those whose INSERT had committed and whose
// acknowledgement had not gone out, which the next run stored again, and exited while
// acknowledgements were under way, whose messages came back only 60 s later.)
func TestInterruptDrains(t *testing.T) {
	const n = 20000
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, pad String) ENGINE = MergeTree ORDER BY id`)
	pad := strings.Repeat("p", 100)
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d,"pad":"%s"}`, i, pad))})
	}
	e.ps.Publish(t, e.topic, msgs...)
	cmd, log := startLocalRun(t, e, e.opts.ClickHouseURL, "--batchRowCount=700", "--windowSeconds=600")
	waitUntil(t, 60*time.Second, "rows landing", log, func() bool { return e.srv.MustQuery(t, "SELECT count() FROM events") != "0" })
	interruptAndWait(t, cmd, 60*time.Second, log)
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(log.String(), "draining") {
		t.Errorf("the interrupted run exited %d, want 130 after draining\n%s", code, log.String())
	}
	if strings.Contains(log.String(), "gave back") || strings.Contains(log.String(), "given back") {
		t.Errorf("the drained run gave messages back\n%s", log.String())
	}
	checkOutput(t, "the binary's log", log.Bytes())
	first := e.srv.MustQuery(t, "SELECT count(), uniqExact(id) FROM events")
	if rows, distinct, _ := strings.Cut(first, "\t"); rows != distinct || rows == fmt.Sprint(n) {
		t.Errorf("after the interrupt: %s rows, distinct ids, want as many, fewer than %d (the interrupt came while they streamed in)", first, n)
	}
	t.Logf("stored by the interrupted run (rows, distinct ids): %s", first)

	cmd, log = startLocalRun(t, e, e.opts.ClickHouseURL, "--batchRowCount=500", "--windowSeconds=1", "--stopAfterIdle=3")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the next run: %v\n%s", err, log.String())
	}
	if got := e.srv.MustQuery(t, "SELECT count(), uniqExact(id) FROM events"); got != fmt.Sprintf("%d\t%d", n, n) {
		t.Errorf("after the next run: %s rows, distinct ids, want %d of each (none twice, none waiting for its ack deadline)", got, n)
	}
}

// TestSecondInterruptGivesBack: a drain waits for its INSERTs, here never (the server is down
// and the INSERT retries). A second interrupt stops the run at once: it gives the messages it
// pulled back to Pub/Sub and exits with status 130; they are delivered again at once, not after
// the 60 s ack deadline the run kept extending.
func TestSecondInterruptGivesBack(t *testing.T) {
	const n = 100
	e := newE2E(t, events.DDL)
	proxy := e.srv.Proxy(t)
	cmd, log := startLocalRun(t, e, proxy.URL(), "--batchRowCount=100000", "--windowSeconds=600")
	gen := events.NewGenerator(3, time.Now())
	var msgs []*pubsubpb.PubsubMessage
	for range n {
		_, data := gen.Next()
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: data})
	}
	e.ps.Publish(t, e.topic, msgs...)
	// Every message pulled by the run, and held: its rows wait for a batch of 100,000 or 600 s.
	waitUntil(t, 60*time.Second, fmt.Sprintf("the run pulling all %d messages", n), log, func() bool {
		pulled := 0
		for _, m := range e.ps.Server.Messages() {
			if m.Deliveries > 0 {
				pulled++
			}
		}
		return pulled == n
	})
	time.Sleep(time.Second)
	proxy.Down()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "draining", log, func() bool { return strings.Contains(log.String(), "source: reader stopped: draining") })
	time.Sleep(2 * time.Second) // the drain's INSERT fails, and is retried
	interruptAndWait(t, cmd, 30*time.Second, log)
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(log.String(), "interrupted again") ||
		!strings.Contains(log.String(), "gave back the messages not acknowledged") {
		t.Errorf("the run interrupted twice exited %d, want 130, and logged\n%s", code, log.String())
	}
	checkOutput(t, "the binary's log", log.Bytes())
	if got := len(e.ps.PullAll(t, e.opts.InputSubscription)); got != n {
		t.Errorf("right after the interrupt the subscription delivered %d of the %d messages, want all", got, n)
	}
	if rows := e.srv.MustQuery(t, "SELECT count() FROM events"); rows != "0" {
		t.Errorf("%s rows inserted by a run whose server was down", rows)
	}
}

// TestInterruptDuringStartUp: an interrupt while the start-up checks wait for a ClickHouse that
// does not answer ends the run at once, before anything runs, and leaves nothing in its TMPDIR
// (startLocalRun's checkNothingLeft). (The run's temporary directory was made before the checks,
// and the process ended by the signal left it behind.)
func TestInterruptDuringStartUp(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	silent := silentServer(t)
	cmd, log := startLocalRun(t, e, "clickhouse://"+silent+"?dial_timeout=60s")
	waitUntil(t, 30*time.Second, "the start-up checks", log, func() bool { return strings.Contains(log.String(), "msg=target") })
	time.Sleep(500 * time.Millisecond) // in the check of the table, which waits for the server's hello
	interruptAndWait(t, cmd, 10*time.Second, log)
	if cmd.ProcessState.Success() || strings.Contains(log.String(), "source: reader started") {
		t.Errorf("the run interrupted at start-up: %v, want it ended before the source started\n%s", cmd.ProcessState, log.String())
	}
}

// TestSecondInterruptWhilePulling: two interrupts 10 ms apart while the run pulls a backlog.
// The second waits for the Pull under way before it gives the messages back, so every message
// is stored or delivered again at once: none waits for its ack deadline. (The Pull's messages
// were tracked after the give-back, and came back 60 s later, in most runs of a helper's.)
// Rows whose INSERT committed and whose acknowledgement had not gone out may be given back
// too, and come twice, as docs/delivery.md says of a second signal.
func TestSecondInterruptWhilePulling(t *testing.T) {
	const n = 60000
	e := newE2E(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d}`, i))})
	}
	e.ps.Publish(t, e.topic, msgs...)
	cmd, log := startLocalRun(t, e, e.opts.ClickHouseURL, "--batchRowCount=5000")
	waitUntil(t, 60*time.Second, "rows landing", log, func() bool { return e.srv.MustQuery(t, "SELECT count() FROM events") != "0" })
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	interruptAndWait(t, cmd, 30*time.Second, log)
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("the run interrupted twice exited %d, want 130\n%s", code, log.String())
	}
	seen := map[string]bool{}
	for _, id := range strings.Fields(e.srv.MustQuery(t, "SELECT DISTINCT id FROM events")) {
		seen[id] = true
	}
	stored := len(seen)
	for _, m := range e.ps.PullAll(t, e.opts.InputSubscription) {
		var v struct{ ID int }
		if err := json.Unmarshal(m.Data, &v); err != nil {
			t.Fatal(err)
		}
		seen[fmt.Sprint(v.ID)] = true
	}
	t.Logf("%d ids stored, %d in all after the messages delivered again", stored, len(seen))
	if len(seen) != n {
		t.Errorf("right after the run, %d of %d messages are stored or delivered again; the rest wait for their ack deadline\n%s", len(seen), n, log.String())
	}
}

// TestInterruptWaitsForAcknowledgements: a drain whose INSERT commits while Pub/Sub is
// unreachable (drainDuringPubSubOutage): the acknowledgement fails in line (30 s) and is left to
// the acknowledger's loop, which tries it once a second for 60 s after it began. The drained run
// waits for that loop, which acknowledges every message once Pub/Sub is back, 15 s after the
// failure in line, and exits with status 130: nothing comes again. (The run ended once the
// acknowledgement failed in line, tried it once more for 10 s while Pub/Sub was still away and
// exited saying that every message was acknowledged: none was, and all came again once their
// deadline passed, to be stored twice.)
func TestInterruptWaitsForAcknowledgements(t *testing.T) {
	const n = 500
	e, proxy, cmd, log := drainDuringPubSubOutage(t, n)
	time.Sleep(15 * time.Second)
	proxy.Up()
	waitForExit(t, cmd, 60*time.Second, log)
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("the interrupted run exited %d, want 130\n%s", code, log.String())
	}
	if got := e.srv.MustQuery(t, "SELECT count(), uniqExact(id) FROM events"); got != fmt.Sprintf("%d\t%d", n, n) {
		t.Errorf("rows, distinct ids = %q, want %d of each", got, n)
	}
	if unacked := e.unacknowledged(); unacked > 0 {
		t.Errorf("%d of the %d messages stored were never acknowledged: Pub/Sub delivers them again\n%s", unacked, n, log.String())
	}
}

// TestInterruptOutlastedByPubSubOutage: as TestInterruptWaitsForAcknowledgements, with Pub/Sub
// away until the run has exited: the run gives up its acknowledgements 60 s after they began,
// and its last line says that those of the 500 messages stored failed and that Pub/Sub delivers
// them again. (It said that every message read was acknowledged.)
func TestInterruptOutlastedByPubSubOutage(t *testing.T) {
	const n = 500
	e, _, cmd, log := drainDuringPubSubOutage(t, n)
	waitForExit(t, cmd, 90*time.Second, log)
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("the interrupted run exited %d, want 130\n%s", code, log.String())
	}
	if unacked := e.unacknowledged(); unacked != n {
		t.Fatalf("%d of the %d messages unacknowledged, want all: Pub/Sub was away until the end\n%s", unacked, n, log.String())
	}
	want := fmt.Sprintf("interrupted (interrupt): drained, but the acknowledgements of %d messages stored failed", n)
	if out := log.String(); !strings.Contains(out, want) || strings.Contains(out, "UDF, and acknowledged") {
		t.Errorf("the run's last line does not say that the acknowledgements failed (want %q)\n%s", want, out)
	}
}

// drainDuringPubSubOutage publishes n messages {"id":i}, runs the binary on them through a proxy
// in front of e's emulator, holding their rows (a batch of 100,000 or 600 s), then takes Pub/Sub
// away (proxy.Down) and interrupts the run, and returns once the drain's acknowledgement has
// failed in line (its INSERT has committed): the proxy is still down, the run still running.
func drainDuringPubSubOutage(t *testing.T, n int) (*e2e, *chtest.Proxy, *exec.Cmd, *lockedBuffer) {
	t.Helper()
	e := newE2EApart(t, `CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id`)
	proxy := chtest.NewProxy(t, e.ps.Addr)
	// The subscription's deadline outlasts the test: Pub/Sub goes away before the run first
	// extends it, and a message comes again only if it is never acknowledged.
	e.opts.InputSubscription = e.ps.Subscription(t, e.topic, "events-sub-600s", 600*time.Second)
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d}`, i))})
	}
	e.ps.Publish(t, e.topic, msgs...)
	cmd, log := startLocalRunThrough(t, e, e.opts.ClickHouseURL, proxy.Addr(), "--batchRowCount=100000", "--windowSeconds=600")
	waitUntil(t, 60*time.Second, fmt.Sprintf("the run pulling all %d messages", n), log, func() bool {
		pulled := 0
		for _, m := range e.ps.Server.Messages() {
			if m.Deliveries > 0 {
				pulled++
			}
		}
		return pulled == n
	})
	proxy.Down()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 60*time.Second, "the acknowledgement failing in line", log, func() bool {
		return strings.Contains(log.String(), "ack: acknowledging failed; retrying every tick")
	})
	return e, proxy, cmd, log
}

// waitForExit waits for cmd, at most limit; past it the test fails with the run's log.
func waitForExit(t *testing.T, cmd *exec.Cmd, limit time.Duration, log fmt.Stringer) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(limit):
		cmd.Process.Kill()
		t.Fatalf("the run did not exit within %v\n%s", limit, log.String())
	}
}

// unacknowledged counts the messages of e's emulator that no subscription acknowledged.
func (e *e2e) unacknowledged() int {
	n := 0
	for _, m := range e.ps.Server.Messages() {
		if m.Acks == 0 {
			n++
		}
	}
	return n
}

// TestLaterInsertOfABatchFails: a batch whose rows give two sets of columns is two INSERTs. The
// first commits; the second never does (the proxy cuts every upload that holds its rows), so the
// run fails once its retries are spent. The first INSERT's messages were acknowledged as it
// committed: the run gives back only the second's, and the next run inserts those, each row
// once. (The batch's messages were acknowledged only after every INSERT of it: the first
// INSERT's rows were given back too, and stored twice.)
func TestLaterInsertOfABatchFails(t *testing.T) {
	const n, marker = 200, "CUT-7f3e-marker"
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, note String DEFAULT 'n/a') ENGINE = MergeTree ORDER BY id`)
	proxy := e.srv.Proxy(t)
	bin, _ := launchBinary(t)
	o := e.opts
	// The first message (the rows' order is the message ids') gives no note: its INSERT goes first.
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		data := fmt.Sprintf(`{"id":%d}`, i)
		if i >= n/2 {
			data = fmt.Sprintf(`{"id":%d,"note":"%s"}`, i, marker)
		}
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(data)})
	}
	e.ps.Publish(t, e.topic, msgs...)
	run := func(windowSeconds int) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, "--runner=prism", "--inputSubscription="+o.InputSubscription, "--clickHouseUrl="+proxy.URL(),
			"--clickHouseDatabase="+o.ClickHouseDatabase, "--clickHouseTable=events", "--clickHouseUsername=default",
			"--clickHousePassword=", "--clickHouseDeadLetterTable=dead_letters", "--clickHouseCompression=none",
			fmt.Sprintf("--batchRowCount=%d", n), fmt.Sprintf("--windowSeconds=%d", windowSeconds), "--stopAfterIdle=5",
			"--maxRetries=2", "--retryInitialBackoffMillis=100", "--retryMaxBackoffMillis=200")
		cmd.Env = append(os.Environ(), "PUBSUB_EMULATOR_HOST="+e.ps.Addr)
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		start := time.Now()
		defer func() { t.Logf("the run took %v", time.Since(start).Round(time.Millisecond)) }()
		select {
		case <-done:
		case <-time.After(3 * time.Minute):
			cmd.Process.Kill()
			t.Fatalf("the run did not end in 3 minutes\n%s", log.String())
		}
		checkOutput(t, "the binary's log", log.Bytes())
		return cmd.ProcessState.ExitCode(), log.String()
	}
	proxy.CutUploadsHolding([]byte(marker))
	code, log := run(60) // the batch fires at its n rows, one batch
	if code != 1 || !strings.Contains(log, "gave back the messages not acknowledged") {
		t.Fatalf("the run whose second INSERT never commits exited %d, want 1, and logged\n%s", code, log)
	}
	if got := e.srv.MustQuery(t, "SELECT count(), min(id), max(id) FROM events"); got != fmt.Sprintf("%d\t0\t%d", n/2, n/2-1) {
		t.Fatalf("after the first run the table holds (count, min, max) %s, want the first INSERT's %d rows", got, n/2)
	}
	proxy.CutUploadsHolding(nil)
	if code, log := run(2); code != 0 {
		t.Fatalf("the second run exited %d\n%s", code, log)
	}
	if got := e.srv.MustQuery(t, "SELECT count(), uniqExact(id), countIf(note = '"+marker+"') FROM events"); got != fmt.Sprintf("%d\t%d\t%d", n, n, n/2) {
		t.Errorf("after the second run the table holds (rows, distinct ids, notes) %s, want %d, %d and %d: the first INSERT's rows stored twice", got, n, n, n/2)
	}
	if got := e.srv.MustQuery(t, "SELECT count() FROM dead_letters"); got != "0" {
		t.Errorf("%s dead letters, want none", got)
	}
}

type rowCounts struct{ total, distinct int }

// checkAccountedAllowingDuplicates is checkAccounted that reports duplicates instead of failing.
func (e *e2e) checkAccountedAllowingDuplicates(t *testing.T, published int, key string) (rowCounts, int) {
	t.Helper()
	var r rowCounts
	fmt.Sscanf(e.srv.MustQuery(t, fmt.Sprintf("SELECT count(), uniqExact(%s) FROM events", key)), "%d\t%d", &r.total, &r.distinct)
	var dl int
	fmt.Sscanf(e.srv.MustQuery(t, "SELECT count() FROM dead_letters"), "%d", &dl)
	if r.distinct+dl != published {
		t.Errorf("%d messages published, %d distinct rows + %d dead letters = %d", published, r.distinct, dl, r.distinct+dl)
	}
	return r, dl
}

// TestMemoryLimitSplitsInserts: the server runs out of memory for large INSERTs (code 241; a
// MATERIALIZED column needs ~2 MB per row and the server allows 100 MB per query). The INSERTs are
// split in halves until they fit; every row lands and none goes to the dead letter.
func TestMemoryLimitSplitsInserts(t *testing.T) {
	const n = 400
	own := chtest.StartOwn(t, "CLICKHOUSE_MAX_MEMORY_USAGE=100000000")
	e := newE2EOn(t, own.Server, `CREATE TABLE {table} (id UInt32, big String MATERIALIZED arrayStringConcat(arrayMap(i -> toString(i), range(100000)))) ENGINE = MergeTree ORDER BY id`)
	e.opts.BatchRowCount = pipeline.GivenInt(n)
	e.opts.WindowSeconds = pipeline.GivenInt(5)
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d}`, i))})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	res := e.run(t)
	c := counters(res)
	t.Logf("counters: %v", c)
	e.checkAccounted(t, n, "id")
	if c["insert-splits"] == 0 || c["rows-rejected-by-clickhouse"] != 0 || c["rows-inserted"] != n {
		t.Errorf("counters %v: want splits, %d rows inserted, none rejected", c, n)
	}
	for _, d := range res.Metrics().AllMetrics().Distributions() {
		if d.Key.Name == "insert-batch-rows" && d.Committed.Max > 25 {
			t.Errorf("an INSERT of %d rows went through under a limit that only 25 fit", d.Committed.Max)
		}
	}
	e.checkAllAcked(t, ids)
}

// interruptAndWait sends cmd an interrupt (SIGINT, as Ctrl-C does) and waits for it to exit, at
// most limit; past it the test fails with out, the command's output so far.
func interruptAndWait(t *testing.T, cmd *exec.Cmd, limit time.Duration, out fmt.Stringer) {
	t.Helper()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(limit):
		cmd.Process.Kill()
		t.Fatalf("%s did not exit within %v of the interrupt\n%s", cmd.Args[0], limit, out.String())
	}
}
