package integration_test

import (
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
)

// TestMessagesThatGiveNoColumn: into a table whose columns all have DEFAULTs, a message that
// gives no column a value ({} or only fields the table does not have) becomes a row of DEFAULTs
// computed by the server, in the same batches as ordinary rows; where the server cannot compute
// them (a division by zero), the dead letter says so with the server's error.
func TestMessagesThatGiveNoColumn(t *testing.T) {
	cases := newParallelCases(t)
	t.Run("the server computes the DEFAULTs", func(t *testing.T) {
		e := cases.newE2E(t, `CREATE TABLE {table} (id UInt32 DEFAULT 7, s String DEFAULT concat('x', toString(id)), t DateTime DEFAULT now()) ENGINE = MergeTree ORDER BY id`)
		e.opts.BatchRowCount = pipeline.GivenInt(100)
		e.opts.WindowSeconds = pipeline.GivenInt(2)
		ids := e.ps.Publish(t, e.topic,
			&pubsubpb.PubsubMessage{Data: []byte(`{}`)},
			&pubsubpb.PubsubMessage{Data: []byte(`{"id":1}`)},
			&pubsubpb.PubsubMessage{Data: []byte(`{"not_a_column":"x"}`)},
			&pubsubpb.PubsubMessage{Data: []byte(`{"id":2,"s":"given"}`)},
			&pubsubpb.PubsubMessage{Data: []byte(`{"id":null}`)})
		e.run(t)
		got := e.srv.MustQuery(t, "SELECT id, s, t > now() - 600 FROM events ORDER BY id, s")
		want := "1\tx1\t1\n2\tgiven\t1\n7\tx7\t1\n7\tx7\t1\n7\tx7\t1"
		if got = strings.TrimSpace(got); got != want {
			t.Errorf("rows:\n%s\nwant:\n%s", got, want)
		}
		if dl := strings.TrimSpace(e.srv.MustQuery(t, "SELECT count() FROM dead_letters")); dl != "0" {
			t.Errorf("%s dead letters, want none", dl)
		}
		e.checkAllAcked(t, ids)
	})
	t.Run("a column named number", func(t *testing.T) {
		// The row source of the INSERT ... SELECT must not give the expression a column of its
		// own: with system.numbers, "number" would be its column, not the table's.
		e := cases.newE2E(t, `CREATE TABLE {table} (x UInt64 DEFAULT number + 1, number UInt64 DEFAULT 42) ENGINE = MergeTree ORDER BY x`)
		e.opts.BatchRowCount = pipeline.GivenInt(100)
		e.opts.WindowSeconds = pipeline.GivenInt(2)
		e.ps.Publish(t, e.topic, &pubsubpb.PubsubMessage{Data: []byte(`{}`)}, &pubsubpb.PubsubMessage{Data: []byte(`{}`)})
		e.run(t)
		if got := strings.TrimSpace(e.srv.MustQuery(t, "SELECT x, number FROM events")); got != "43\t42\n43\t42" {
			t.Errorf("rows %q, want 43 42 twice", got)
		}
	})
	t.Run("the server cannot compute them", func(t *testing.T) {
		e := cases.newE2E(t, `CREATE TABLE {table} (a Int32 DEFAULT 1, b Int32 DEFAULT toInt32(rand() * 0), q Int32 DEFAULT intDiv(a, b)) ENGINE = MergeTree ORDER BY a`)
		e.opts.BatchRowCount = pipeline.GivenInt(100)
		e.opts.WindowSeconds = pipeline.GivenInt(2)
		ids := e.ps.Publish(t, e.topic,
			&pubsubpb.PubsubMessage{Data: []byte(`{}`)},
			&pubsubpb.PubsubMessage{Data: []byte(`{"a":6,"b":3}`)})
		e.run(t)
		if got := strings.TrimSpace(e.srv.MustQuery(t, "SELECT a, b, q FROM events")); got != "6\t3\t2" {
			t.Errorf("rows %q, want the row that gave b", got)
		}
		got := e.srv.MustQuery(t, "SELECT raw_message, error_message FROM dead_letters")
		for _, want := range []string{"{}\t", "ClickHouse rejected the row", "code: 153"} {
			if !strings.Contains(got, want) {
				t.Errorf("dead letter %q lacks %q", got, want)
			}
		}
		e.checkAllAcked(t, ids)
	})
}

// TestDefaultChangedWhileRunning: DEFAULTs changed while the job runs (ALTER TABLE ... MODIFY
// COLUMN ... DEFAULT), with schemaRefreshSeconds=0, so that neither stage reads the table again.
// A message that leaves a column out gets the new DEFAULT, which the server computes; so does
// one that gives no column a value, whose INSERT names a column and gives it that column's
// DEFAULT expression. Before, that expression was the one the stage had read at start-up: the
// row {} held the old DEFAULT of that column beside the new one of the other, a row of neither
// schema.
func TestDefaultChangedWhileRunning(t *testing.T) {
	e := newE2E(t, `CREATE TABLE {table} (a UInt32 DEFAULT 1, b UInt32 DEFAULT 2, k UInt32 DEFAULT 0) ENGINE = MergeTree ORDER BY k`)
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	e.opts.StopAfterIdle = pipeline.GivenInt(8)
	e.opts.SchemaRefreshSeconds = 0
	r := e.start(t)
	time.Sleep(time.Second)
	ids := e.ps.Publish(t, e.topic, &pubsubpb.PubsubMessage{Data: []byte(`{"k":1}`)})
	e.watch(t, 1, 30*time.Second)
	e.srv.MustExec(t, "ALTER TABLE events MODIFY COLUMN a UInt32 DEFAULT 10, MODIFY COLUMN b UInt32 DEFAULT 20")
	ids = append(ids, e.ps.Publish(t, e.topic, &pubsubpb.PubsubMessage{Data: []byte(`{"k":2}`)}, &pubsubpb.PubsubMessage{Data: []byte(`{}`)})...)
	r.wait(t, 60*time.Second)
	if got, want := e.srv.MustQuery(t, "SELECT a, b, k FROM events ORDER BY k"), "10\t20\t0\n1\t2\t1\n10\t20\t2"; got != want {
		t.Errorf("rows:\n%s\nwant:\n%s", got, want)
	}
	e.checkAllAcked(t, ids)
}
