package integration_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/shared"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
)

// corpus describes one real-event corpus of ../shared/data and how to check its rows.
type corpus struct {
	name string
	// key lists the columns (or expressions) whose values identify a line; each must be one of
	// the columns want returns.
	key []string
	// want returns, for a line, the expected text of every column as read back with
	// FORMAT JSONEachRow (strings as they are, numbers in decimal, NULL for null).
	want func(t *testing.T, line map[string]json.RawMessage) map[string]string
}

func compact(t *testing.T, raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func str(t *testing.T, raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return s
}

func unix(t *testing.T, raw json.RawMessage) string {
	tm, err := time.Parse(time.RFC3339Nano, str(t, raw))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(tm.Unix())
}

func boolNum(raw json.RawMessage) string {
	if string(raw) == "true" {
		return "1"
	}
	return "0"
}

var corpora = []corpus{
	{
		name: "github_events", key: []string{"id"},
		want: func(t *testing.T, l map[string]json.RawMessage) map[string]string {
			org := "NULL"
			if raw, ok := l["org"]; ok {
				org = compact(t, raw) // an object stored as its JSON text
			}
			return map[string]string{
				"id": str(t, l["id"]), "type": str(t, l["type"]), "actor": compact(t, l["actor"]),
				"repo": compact(t, l["repo"]), "payload": compact(t, l["payload"]), "public": boolNum(l["public"]),
				"toUnixTimestamp(created_at)": unix(t, l["created_at"]), "org": org,
			}
		},
	},
	{
		name: "gcp_log_entries", key: []string{"insertId"},
		want: func(t *testing.T, l map[string]json.RawMessage) map[string]string {
			severity := "DEFAULT" // absent: the column's DEFAULT
			if raw, ok := l["severity"]; ok {
				severity = str(t, raw)
			}
			opt := func(k string) string {
				if raw, ok := l[k]; ok {
					switch raw[0] {
					case '"':
						return str(t, raw)
					case 't', 'f': // a boolean into Nullable(UInt8)
						return boolNum(raw)
					}
					return compact(t, raw)
				}
				return "NULL"
			}
			return map[string]string{
				"insertId": str(t, l["insertId"]), "logName": str(t, l["logName"]), "resource": compact(t, l["resource"]),
				"severity": severity, "toUnixTimestamp(timestamp)": unix(t, l["timestamp"]),
				"toUnixTimestamp(receiveTimestamp)": unix(t, l["receiveTimestamp"]),
				"protoPayload":                      opt("protoPayload"), "jsonPayload": opt("jsonPayload"), "textPayload": opt("textPayload"),
				"httpRequest": opt("httpRequest"), "labels": opt("labels"), "operation": opt("operation"),
				"trace": opt("trace"), "spanId": opt("spanId"), "traceSampled": opt("traceSampled"),
			}
		},
	},
	{
		name: "wikipedia_edits", key: []string{"toUnixTimestamp(time)", "user", "page", "delta"},
		want: func(t *testing.T, l map[string]json.RawMessage) map[string]string {
			nullable := func(k string) string {
				if string(l[k]) == "null" {
					return "NULL"
				}
				if l[k][0] == '"' {
					return str(t, l[k])
				}
				return string(l[k])
			}
			return map[string]string{
				"toUnixTimestamp(time)": unix(t, l["time"]), "channel": str(t, l["channel"]), "page": str(t, l["page"]),
				"comment": str(t, l["comment"]), "user": str(t, l["user"]), "delta": string(l["delta"]),
				"added": string(l["added"]), "deleted": string(l["deleted"]), "namespace": str(t, l["namespace"]),
				"isAnonymous": boolNum(l["isAnonymous"]), "isMinor": boolNum(l["isMinor"]), "isNew": boolNum(l["isNew"]),
				"isRobot": boolNum(l["isRobot"]), "isUnpatrolled": boolNum(l["isUnpatrolled"]),
				"cityName": nullable("cityName"), "countryIsoCode": nullable("countryIsoCode"), "countryName": nullable("countryName"),
				"regionIsoCode": nullable("regionIsoCode"), "regionName": nullable("regionName"), "metroCode": nullable("metroCode"),
			}
		},
	},
}

// TestCorpora runs every line of each real-event corpus through the whole pipeline into its
// 18.16 table and checks that each line is exactly one row, with its values (objects stored as
// their JSON text, absent fields given their DEFAULT or NULL, non-ASCII text intact), and that
// the run ends by itself with no dead letter.
func TestCorpora(t *testing.T) {
	dir := filepath.Join(shared.Dir(t), "data")
	for _, c := range corpora {
		t.Run(c.name, func(t *testing.T) {
			ddl, err := os.ReadFile(filepath.Join(dir, c.name+".sql"))
			if err != nil {
				t.Fatal(err)
			}
			landCorpus(t, newE2E(t, string(ddl)), filepath.Join(dir, c.name+".jsonl"), c)
		})
	}
}

// landCorpus publishes every line of the corpus file, runs the whole pipeline of e into its table,
// and checks that each line is exactly one row with its values (c.want), that nothing was
// dead-lettered, that the counters agree and that every message was acknowledged.
func landCorpus(t *testing.T, e *e2e, file string, c corpus) {
	e.opts.BatchRowCount = pipeline.GivenInt(2000)
	e.opts.WindowSeconds = pipeline.GivenInt(2)

	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]json.RawMessage
	var msgs []*pubsubpb.PubsubMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: append([]byte(nil), sc.Bytes()...)})
	}
	ids := e.ps.Publish(t, e.topic, msgs...)

	res := e.run(t)

	if dl := e.srv.MustQuery(t, "SELECT error_message FROM dead_letters LIMIT 5"); dl != "" {
		t.Errorf("dead letters (a bug, or a line to explain):\n%s", dl)
	}
	wantRows := len(lines)
	if got := e.srv.MustQuery(t, "SELECT count() FROM events"); got != fmt.Sprint(wantRows) {
		t.Fatalf("%s rows in the table, want %d (one per line)", got, wantRows)
	}
	// Read every row back and compare it with its line.
	cols := c.want(t, lines[0])
	var names []string
	for k := range cols {
		names = append(names, k)
	}
	out := e.srv.MustQuery(t, "SELECT "+strings.Join(names, ", ")+" FROM events FORMAT JSONEachRow")
	byKey := map[string]map[string]any{}
	for _, r := range strings.Split(out, "\n") {
		dec := json.NewDecoder(strings.NewReader(r))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		byKey[keyOf(c.key, func(k string) string { return render(m[k]) })] = m
	}
	mismatches := 0
	for _, l := range lines {
		want := c.want(t, l)
		k := keyOf(c.key, func(col string) string { return want[col] })
		row, ok := byKey[k]
		if !ok {
			t.Errorf("no row for line %s", k)
			continue
		}
		for col, w := range want {
			if got := render(row[col]); got != w && mismatches < 10 {
				mismatches++
				t.Errorf("line %s column %s:\n got  %.200s\n want %.200s", k, col, got, w)
			}
		}
	}
	c2 := counters(res)
	if c2["rows-inserted"] != int64(wantRows) || c2["messages-received"] != int64(wantRows) {
		t.Errorf("counters %v, want %d messages received and rows inserted", c2, wantRows)
	}
	e.checkAllAcked(t, ids)
}

func keyOf(fields []string, value func(string) string) string {
	var parts []string
	for _, f := range fields {
		parts = append(parts, value(f))
	}
	return strings.Join(parts, "|")
}

// render prints a value decoded from JSONEachRow the way the expectations spell it.
func render(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return v
	case bool: // a Bool column (ClickHouse 23.x and newer): 1 and 0, as UInt8 prints them
		if v {
			return "1"
		}
		return "0"
	case json.Number:
		return v.String()
	default:
		return fmt.Sprint(v)
	}
}
