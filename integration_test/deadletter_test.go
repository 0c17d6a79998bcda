package integration_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/flowtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/batch"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/deadletter"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/parse"
)

// wideTable has 30 Int8 columns, so that a message failing all of them has an error message
// longer than Pub/Sub's 1024-byte attribute limit.
func wideTable() string {
	var cols []string
	for i := range 30 {
		cols = append(cols, fmt.Sprintf("c%02d Int8", i))
	}
	return "CREATE TABLE {table} (" + strings.Join(cols, ", ") + ") ENGINE = MergeTree ORDER BY tuple()"
}

func wideBadPayload() string {
	var fields []string
	for i := range 30 {
		fields = append(fields, fmt.Sprintf(`"c%02d":"%s"`, i, strings.Repeat("ü", 60)))
	}
	return "{" + strings.Join(fields, ",") + "}"
}

// TestDeadLetterDestinations sends bad messages through parse and the dead-letter stage to the
// table, the topic, and both, and reads them back: all four columns from the table, the payload
// bytes and both attributes from a subscription to the topic.
func TestDeadLetterDestinations(t *testing.T) {
	// Every payload is bad: the first lacks 29 columns without DEFAULT.
	payloads := []string{`{"c00":1}`, `not json`, "{\"c00\":\"\xff\"}", wideBadPayload(), ``}
	for _, dest := range []string{"table", "topic", "both"} {
		t.Run(dest, func(t *testing.T) {
			srv := chtest.New(t)
			ps := pubsubtest.Start(t)
			srv.CreateTable(t, wideTable(), "events")
			cfg := deadletter.Config{
				ClickHouse: srv.Config(),
				Settings:   chclient.Settings{Deduplicate: true, DistributedSync: true, MaxInsertBlockSize: 1000},
				Retry:      chclient.Retry{MaxRetries: 1, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond},
			}
			var sub string
			if dest != "topic" {
				srv.MustExec(t, deadletter.CreateTable(srv.Database, "dead_letters"))
				cfg.Table = "dead_letters"
			}
			if dest != "table" {
				cfg.Topic = ps.Topic(t, "dead-letters")
				sub = ps.Subscription(t, cfg.Topic, "dead-letters-check", 60*time.Second)
			}
			var msgs []flow.Message
			for i, p := range payloads {
				msgs = append(msgs, flow.Message{ID: fmt.Sprint("m", i), Data: []byte(p)})
			}
			start := time.Now().Add(-time.Second).Truncate(time.Second)
			p, s := beam.NewPipelineWithRoot()
			_, dls := parse.Parse(s, parse.Config{ClickHouse: srv.Config(), Table: "events"}, beam.CreateList(s, flowtest.OneEach(msgs)))
			deadletter.Write(s, cfg, batch.Batches(s, batch.Config{Mode: batch.Mode{Rows: 2}, Shards: 1}, dls))
			res, err := ptest.RunWithMetrics(p)
			if err != nil {
				t.Fatal(err)
			}
			c := counters(res)
			wantTable, wantTopic := int64(0), int64(0)
			if cfg.Table != "" {
				wantTable = int64(len(payloads))
			}
			if cfg.Topic != "" {
				wantTopic = int64(len(payloads))
			}
			if c["dead-letter-rows-clickhouse"] != wantTable || c["dead-letter-rows-pubsub"] != wantTopic || c["rows-parse-failed"] != int64(len(payloads)) {
				t.Errorf("counters %v, want dead-letter-rows-clickhouse %d, dead-letter-rows-pubsub %d, rows-parse-failed %d", c, wantTable, wantTopic, len(payloads))
			}
			bad := payloads
			if cfg.Table != "" {
				got := srv.MustQuery(t, "SELECT raw_message, error_message, stack_trace, toUnixTimestamp(failed_at) FROM dead_letters ORDER BY raw_message FORMAT JSONEachRow")
				var lines []string
				for _, l := range strings.Split(got, "\n") {
					lines = append(lines, l)
				}
				if len(lines) != len(bad) {
					t.Fatalf("dead-letter table has %d rows, want %d:\n%s", len(lines), len(bad), got)
				}
				for _, l := range lines {
					if !strings.Contains(l, "stage: parse") || !strings.Contains(l, "error: ") {
						t.Errorf("row without a stack trace: %s", l)
					}
				}
				// The raw bytes round-trip exactly, invalid UTF-8 included.
				raw := strings.Split(srv.MustQuery(t, "SELECT hex(raw_message) FROM dead_letters ORDER BY raw_message"), "\n")
				var want []string
				for _, b := range bad {
					want = append(want, fmt.Sprintf("%X", b))
				}
				sort.Strings(want)
				sort.Strings(raw)
				if strings.Join(raw, ",") != strings.Join(want, ",") {
					t.Errorf("raw_message bytes: got %v, want %v", raw, want)
				}
				if n := srv.MustQuery(t, fmt.Sprintf("SELECT countIf(failed_at >= toDateTime(%d) AND failed_at <= now()) FROM dead_letters", start.Unix())); n != fmt.Sprint(len(bad)) {
					t.Errorf("%s rows have a failed_at within the run, want %d", n, len(bad))
				}
				if got := srv.MustQuery(t, `SELECT error_message FROM dead_letters WHERE raw_message = 'not json'`); !strings.HasPrefix(got, "payload: invalid JSON at byte 0") {
					t.Errorf("error_message of 'not json' = %q", got)
				}
			}
			if cfg.Topic != "" {
				got := ps.PullAll(t, sub)
				if len(got) != len(bad) {
					t.Fatalf("dead-letter topic has %d messages, want %d", len(got), len(bad))
				}
				seen := map[string]bool{}
				for _, m := range got {
					seen[string(m.Data)] = true
					em := m.Attributes["errorMessage"]
					if em == "" || len(em) > 1024 || !utf8.ValidString(em) {
						t.Errorf("errorMessage attribute of %q: %d bytes, valid UTF-8 %v", m.Data, len(em), utf8.ValidString(em))
					}
					at, err := time.Parse("2006-01-02T15:04:05.000Z", m.Attributes["failedAt"])
					if err != nil || at.Before(start) || at.After(time.Now()) {
						t.Errorf("failedAt attribute %q: %v", m.Attributes["failedAt"], err)
					}
					if string(m.Data) == wideBadPayload() && (len(em) < 1000 || !strings.HasSuffix(em, "…")) {
						t.Errorf("the long error is not cut to the limit: %d bytes", len(em))
					}
				}
				for _, b := range bad {
					if !seen[b] {
						t.Errorf("payload %q is not on the topic", b)
					}
				}
			}
		})
	}
}

// TestDeadLetterTableCheck shows the message a missing or wrong dead-letter table gives.
func TestDeadLetterTableCheck(t *testing.T) {
	srv := chtest.New(t)
	conn := srv.Conn(t)
	ctx := context.Background()
	err := deadletter.CheckTable(ctx, conn, srv.Database, "nope")
	if err == nil || !strings.Contains(err.Error(), "CREATE TABLE `"+srv.Database+"`.`nope` (raw_message String") {
		t.Errorf("missing table: %v", err)
	}
	srv.MustExec(t, "CREATE TABLE wrong (raw_message String, error_message String, failed_at Date) ENGINE = MergeTree ORDER BY tuple()")
	err = deadletter.CheckTable(ctx, conn, srv.Database, "wrong")
	for _, want := range []string{"no writable column stack_trace String", "column failed_at is Date, not DateTime", "CREATE TABLE"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("wrong table: %v, want it to contain %q", err, want)
		}
	}
	srv.MustExec(t, deadletter.CreateTable(srv.Database, "right"))
	if err := deadletter.CheckTable(ctx, conn, srv.Database, "right"); err != nil {
		t.Errorf("right table: %v", err)
	}
}
