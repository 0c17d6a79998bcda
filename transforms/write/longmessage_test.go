package write

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
)

// TestServerMessageQuotingLongValue: a row the server rejects with a message that quotes a value
// of megabytes (18.16's "Cannot parse string '<value>' as UInt8" from a DEFAULT over a String
// column of 1 MB) is a dead letter whose error keeps the value's start and the rule within
// chclient.MaxServerMessageBytes, within the topic's errorMessage attribute, and no log line of
// the INSERT's split and rejection repeats the value; the other rows of the batch land. Before,
// each of three log lines held the megabyte, and the dead letter's error, cut from its start at
// 16 KiB, held the value and not the rule.
func TestServerMessageQuotingLongValue(t *testing.T) {
	srv := chtest.New(t)
	srv.CreateTable(t, `CREATE TABLE {table} (id UInt32, s String, n UInt8 DEFAULT toUInt8(s)) ENGINE = MergeTree ORDER BY id`, "events")
	ctx := context.Background()
	f := &insertFn{Config: Config{ClickHouse: srv.Config(), Table: "events", Settings: chclient.Settings{MaxInsertBlockSize: 1000}}}
	if err := f.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Teardown()
	var logs bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))

	long := strings.Repeat("a", 1<<20)
	schema := f.conv.SchemaHash()
	rows := flow.Rows{Rows: []flow.Row{
		{Payload: []byte(`{"id":1,"s":"5"}`), Schema: schema, MessageID: "m1"},
		{Payload: fmt.Appendf(nil, `{"id":2,"s":%q}`, long), Schema: schema, MessageID: "m2"},
		{Payload: []byte(`{"id":3,"s":"7"}`), Schema: schema, MessageID: "m3"},
	}}
	var dead []flow.DeadLetter
	if err := f.ProcessElement(ctx, 0, rows, func(d flow.DeadLetter) { dead = append(dead, d) }, func([]string) {}); err != nil {
		t.Fatal(err)
	}
	if got := srv.MustQuery(t, "SELECT id, n FROM events ORDER BY id"); got != "1\t5\n3\t7" {
		t.Errorf("rows %q, want 1\\t5\\n3\\t7", got)
	}
	if len(dead) != 1 || dead[0].MessageID != "m2" {
		t.Fatalf("dead letters %d, want the one of m2", len(dead))
	}
	msg := dead[0].ErrorMessage
	const start, rule = "ClickHouse rejected the row: code: 6, message: Cannot parse string 'aaaa", "' as UInt8: syntax error at begin of string"
	// Within an attribute's 1024 bytes, so that the dead-letter topic's errorMessage holds it whole.
	if !strings.HasPrefix(msg, start) || !strings.Contains(msg, rule) || len(msg) > psclient.MaxAttributeValueBytes {
		t.Errorf("error message of %d bytes, want one of at most %d starting %q and holding %q: %.300q … %.300q",
			len(msg), psclient.MaxAttributeValueBytes, start, rule, msg, msg[max(0, len(msg)-300):])
	}
	if !bytes.Contains(logs.Bytes(), []byte("the server rejected a row")) {
		t.Errorf("no log line of the rejection:\n%.2000s", logs.String())
	}
	for line := range strings.Lines(logs.String()) {
		if len(line) > 2*chclient.MaxServerMessageBytes {
			t.Errorf("log line of %d bytes: %.300q", len(line), line)
		}
	}
}
