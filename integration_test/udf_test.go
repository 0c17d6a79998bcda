package integration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/gcptest"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/source"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/udf"
)

// reshapeUDF renames and flattens the fields of the test's messages, takes the source from an
// attribute, drops test events, and throws for an event without a user (line 8).
const reshapeUDF = `// The test's UDF.
function reshape(payload, message) {
  var e = JSON.parse(payload);
  if (e.test) {
    return null;
  }
  if (!e.user) {
    throw new Error("event " + e.id + " has no user");
  }
  return JSON.stringify({
    event_id: e.id, user_id: e.user.id, country: e.user.geo.country,
    event_type: e.event, amount: e.amount === undefined ? null : e.amount,
    source: message.attributes.source, message_id: message.messageId
  });
}
`

// TestUDFReshape runs the whole pipeline with a JavaScript UDF read from Cloud Storage (the
// stand-in) and messages of five kinds: reshaped into rows, with the attribute source or without
// it (the column's DEFAULT); dropped by the UDF; failed in the UDF (it throws; the payload is not
// JSON; its output would carry an id JSON.parse rounded, or one of two values of a field); and
// transformed into a row that does not convert. Each reshaped message is a row with the reshaped
// values; each dropped one is counted and acknowledged, nowhere else; each failed
// one is a dead letter (table and topic) with the payload as published and the error of the UDF
// or of the conversion; the metrics equal the counts.
func TestUDFReshape(t *testing.T) {
	const n = 200
	gcs := gcptest.StartGCS(t, "udfs")
	t.Setenv("STORAGE_EMULATOR_HOST", gcs.Host())
	gcs.Write("udfs", "team/reshape.js", []byte(reshapeUDF))
	e := newE2E(t, `CREATE TABLE {table} (event_id String, user_id UInt64, country String, event_type String,
		amount Nullable(Decimal(10, 2)), source String DEFAULT 'unknown', message_id String) ENGINE = MergeTree ORDER BY event_id`)
	e.opts.JavascriptTextTransformGcsPath = "gs://udfs/team/reshape.js"
	e.opts.JavascriptTextTransformFunctionName = "reshape"
	e.opts.BatchRowCount = pipeline.GivenInt(100)
	e.opts.WindowSeconds = pipeline.GivenInt(1)

	var msgs []*pubsubpb.PubsubMessage
	var wantRows []string
	wantErrors := map[string]string{} // payload → the start of its dead letter's error
	dropped := 0
	for i := range n {
		id := fmt.Sprintf("e-%03d", i)
		m := &pubsubpb.PubsubMessage{Attributes: map[string]string{"n": fmt.Sprint(i)}}
		switch i % 10 {
		case 5:
			if i%20 == 15 {
				// JSON.parse keeps the second event, which the output carries renamed.
				m.Data = fmt.Appendf(nil, `{"id":%q,"user":{"id":3,"geo":{"country":"NO"}},"event":"view","event":"buy"}`, id)
				wantErrors[string(m.Data)] = `javascript UDF reshape failed: JSON.parse read an object that holds the field "event" twice, and keeps only the last value`
				break
			}
			// JSON.parse rounds the user id to the nearest double: 9007199254740992.
			m.Data = fmt.Appendf(nil, `{"id":%q,"user":{"id":9007199254740993,"geo":{"country":"NO"}},"event":"view"}`, id)
			wantErrors[string(m.Data)] = "javascript UDF reshape failed: returned 9007199254740992 where the payload holds 9007199254740993: "
		case 6:
			m.Data = fmt.Appendf(nil, `{"id":%q,"user":{"id":1,"geo":{"country":"NO"}},"event":"view","test":true}`, id)
			dropped++
		case 7:
			m.Data = fmt.Appendf(nil, `{"id":%q,"event":"view"}`, id)
			wantErrors[string(m.Data)] = "javascript UDF reshape failed: threw Error: event " + id + " has no user at line 8, column 11"
		case 8:
			m.Data = fmt.Appendf(nil, `not json %d`, i)
			wantErrors[string(m.Data)] = "javascript UDF reshape failed: threw SyntaxError: "
		case 9:
			m.Data = fmt.Appendf(nil, `{"id":%q,"user":{"id":2,"geo":{"country":"SE"}},"event":"buy","amount":"1.234"}`, id)
			wantErrors[string(m.Data)] = `converting the output of the javascript UDF: column "amount" (Nullable(Decimal(10, 2))): "1.234" has more digits`
		default:
			source, amount, wantAmount := "unknown", "", `\N`
			if i%2 == 0 {
				source = "web"
				m.Attributes["source"] = source
			}
			if i%3 == 0 {
				amount, wantAmount = fmt.Sprintf(`,"amount":"%d.50"`, i), fmt.Sprintf("%d.50", i)
			}
			m.Data = fmt.Appendf(nil, `{"id":%q,"user":{"id":%d,"geo":{"country":"DK","city":"Aarhus"}},"event":"click"%s}`, id, 1000+i, amount)
			wantRows = append(wantRows, strings.Join([]string{id, fmt.Sprint(1000 + i), "DK", "click", wantAmount, source}, "\t"))
		}
		msgs = append(msgs, m)
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	res := e.run(t)

	// The rows, reshaped; message_id is the Pub/Sub id the UDF's second argument carried.
	got := strings.Split(e.srv.MustQuery(t, "SELECT event_id, user_id, country, event_type, amount, source FROM events ORDER BY event_id"), "\n")
	if strings.Join(got, "\n") != strings.Join(wantRows, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantRows, "\n"))
	}
	published := map[string]bool{}
	for _, id := range ids {
		published[id] = true
	}
	for _, id := range strings.Split(e.srv.MustQuery(t, "SELECT message_id FROM events"), "\n") {
		if !published[id] {
			t.Errorf("row with message_id %q, which is no published message's id", id)
			break
		}
	}

	// The dead letters: the payload as published, the UDF's or the conversion's error, the stage.
	dl := e.srv.MustQuery(t, "SELECT raw_message, error_message, splitByChar('\\n', stack_trace)[1] FROM dead_letters ORDER BY raw_message")
	seen := 0
	for _, line := range strings.Split(dl, "\n") {
		f := strings.Split(line, "\t")
		want, ok := wantErrors[f[0]]
		switch {
		case !ok:
			t.Errorf("dead letter of a payload that should not fail: %s", line)
		case !strings.HasPrefix(f[1], want):
			t.Errorf("dead letter of %s: error %q, want it to start %q", f[0], f[1], want)
		case strings.HasPrefix(want, "converting") != (f[2] == "stage: parse (the output of the javascript UDF)") ||
			strings.HasPrefix(want, "javascript") != (f[2] == "stage: udf"):
			t.Errorf("dead letter of %s: stack trace starts %q", f[0], f[2])
		}
		seen++
	}
	if seen != len(wantErrors) {
		t.Errorf("%d dead letters in the table, want %d", seen, len(wantErrors))
	}
	var fromTopic []string
	for _, m := range e.ps.PullAll(t, e.dlqCheck) {
		fromTopic = append(fromTopic, string(m.Data))
		if m.Attributes["n"] == "" || !strings.HasPrefix(m.Attributes["errorMessage"], wantErrors[string(m.Data)]) {
			t.Errorf("dead-letter message %s with attributes %v", m.Data, m.Attributes)
		}
	}
	var wantTopic []string
	for p := range wantErrors {
		wantTopic = append(wantTopic, p)
	}
	sort.Strings(fromTopic)
	sort.Strings(wantTopic)
	if strings.Join(fromTopic, "\n") != strings.Join(wantTopic, "\n") {
		t.Errorf("dead-letter topic holds\n%s\nwant the payloads as published\n%s", strings.Join(fromTopic, "\n"), strings.Join(wantTopic, "\n"))
	}

	c := counters(res)
	t.Logf("counters: %v", c)
	failedInUDF, badOutput := 3*n/10, n/10
	transformed := n - dropped - failedInUDF
	for name, want := range map[string]int64{
		"udf-transformed": int64(transformed), "udf-dropped": int64(dropped), "udf-failed": int64(failedInUDF),
		"messages-received": int64(transformed), "rows-parse-failed": int64(badOutput), "rows-inserted": int64(len(wantRows)),
		"dead-letter-rows-clickhouse": int64(len(wantErrors)), "dead-letter-rows-pubsub": int64(len(wantErrors)),
	} {
		if c[name] != want {
			t.Errorf("counter %s = %d, want %d", name, c[name], want)
		}
	}
	// Every message acknowledged: the dropped ones too, or the source would wait for them.
	e.checkAllAcked(t, ids)
}

// TestUDFReload runs the pipeline while the UDF's file changes: a local file, and an object of
// the Cloud Storage stand-in. The messages published before the change go through the first
// version, those published after it (and after the reload interval) through the second.
//
// The template parameter counts minutes, so the test builds the graph as pipeline.Build does,
// with the UDF stage's reload interval in seconds.
func TestUDFReload(t *testing.T) {
	const v1 = `function version(payload) { var e = JSON.parse(payload); e.version = 1; return JSON.stringify(e); }`
	const v2 = `function version(payload) { var e = JSON.parse(payload); e.version = 2; return JSON.stringify(e); }`
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) (path string, write func(src string))
	}{
		{"local file", func(t *testing.T) (string, func(string)) {
			path := filepath.Join(t.TempDir(), "version.js")
			write := func(src string) {
				if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			return path, write
		}},
		{"Cloud Storage", func(t *testing.T) (string, func(string)) {
			gcs := gcptest.StartGCS(t, "udfs")
			t.Setenv("STORAGE_EMULATOR_HOST", gcs.Host())
			return "gs://udfs/version.js", func(src string) { gcs.Write("udfs", "version.js", []byte(src)) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, write := tc.setup(t)
			write(v1)
			e := newE2E(t, `CREATE TABLE {table} (id UInt32, version UInt8) ENGINE = MergeTree ORDER BY id`)
			e.opts.BatchRowCount = pipeline.GivenInt(100)
			e.opts.WindowSeconds = pipeline.GivenInt(1)
			e.opts.StopAfterIdle = pipeline.GivenInt(6) // longer than the pause between the waves
			const reload = time.Second
			publish := func(from, to int) []string {
				var msgs []*pubsubpb.PubsubMessage
				for i := from; i < to; i++ {
					msgs = append(msgs, &pubsubpb.PubsubMessage{Data: fmt.Appendf(nil, `{"id":%d}`, i)})
				}
				return e.ps.Publish(t, e.topic, msgs...)
			}
			ids := publish(0, 100)

			p, s := beam.NewPipelineWithRoot()
			msgs := source.Read(s, source.Config{Subscription: e.opts.InputSubscription, StopAfterIdle: 6 * time.Second})
			msgs, _, _ = udf.Transform(s, udf.Config{Path: path, Function: "version", Reload: reload}, msgs)
			pipeline.BuildFrom(s, pipeline.MustCheck(e.opts), pipeline.LocalSource, msgs)
			r := startPipeline(p)

			e.watch(t, 100, 30*time.Second)
			write(v2)
			time.Sleep(reload + 500*time.Millisecond)
			ids = append(ids, publish(100, 200)...)
			e.watch(t, 200, 30*time.Second)
			c := counters(r.wait(t, 60*time.Second))
			t.Logf("counters: %v", c)

			got := e.srv.MustQuery(t, "SELECT version, count(), min(id), max(id) FROM events GROUP BY version ORDER BY version")
			if want := "1\t100\t0\t99\n2\t100\t100\t199"; got != want {
				t.Errorf("version, rows, first and last id:\n%s\nwant\n%s", got, want)
			}
			if c["udf-reloads"] < 1 {
				t.Errorf("udf-reloads = %d, want at least 1", c["udf-reloads"])
			}
			e.checkAllAcked(t, ids)
		})
	}
}

// slowUDF runs, for a message of each kind, a call that goja's interrupt cannot stop or that
// takes more memory than the UDF's process may have; any other message passes as it is.
const slowUDF = `function f(payload) {
  var e = JSON.parse(payload), a, i;
  switch (e.kind) {
  case "regex": /^(?=(a+)+$)/.test("a".repeat(40) + "c"); break;
  case "stringify": a = [1]; for (i = 0; i < 40; i++) { a = [a, a]; } JSON.stringify(a); break;
  case "parse": JSON.parse("[" + "1,".repeat(300000000) + "1]"); break;
  case "join": new Array(Math.pow(2, 32) - 1).join(""); break;
  case "indexOf": new Array(Math.pow(2, 32) - 1).indexOf(1); break;
  case "repeat": "ab".repeat(Math.pow(2, 40)); break;
  case "sort": a = []; for (i = 0; i < 100000; i++) { a.push(i % 7); } a.sort(function (x, y) { for (var j = 0; j < 1000; j++) {} return x - y; }); break;
  case "recursion": (function r(n) { return r(n + 1) + 1; })(0); break;
  }
  return payload;
}`

// TestUDFSlowBuiltins runs the pipeline with a UDF that, on one message of each kind, calls a
// built-in that does not return within the bound (1 s) or runs out of the UDF's memory, each
// followed by a message that passes. The pipeline ends by stopAfterIdle; each slow message is a
// dead letter whose error gives the bound (or the memory limit), and every other message is a
// row: no slow message holds up the ones behind it.
func TestUDFSlowBuiltins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slow.js")
	if err := os.WriteFile(path, []byte(slowUDF), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, kind String) ENGINE = MergeTree ORDER BY id`)
	e.opts.JavascriptTextTransformGcsPath = path
	e.opts.JavascriptTextTransformFunctionName = "f"
	e.opts.WindowSeconds = pipeline.GivenInt(1)
	const (
		timedOut = "javascript UDF f failed: ran longer than 1s on this message and was stopped"
		noMemory = "javascript UDF f failed: ran out of memory on this message (the UDF's process may use 4 GiB of address space) and was stopped"
	)
	kinds := []struct{ kind, want string }{
		{"regex", timedOut + ": a built-in function it called"},
		{"stringify", timedOut + ": a built-in function it called"},
		{"parse", ""}, // over the bound or out of memory, as the machine goes
		{"join", timedOut + ": a built-in function it called"},
		{"indexOf", timedOut + ": a built-in function it called"},
		{"repeat", noMemory},
		{"sort", timedOut + " at line 10"},
		{"recursion", "javascript UDF f failed: RangeError: the call stack exceeded 10000 frames (a recursion without end?) at line 11"},
	}
	var msgs []*pubsubpb.PubsubMessage
	var wantRows []string
	for i, k := range kinds {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: fmt.Appendf(nil, `{"id":%d,"kind":%q}`, 2*i, k.kind)},
			&pubsubpb.PubsubMessage{Data: fmt.Appendf(nil, `{"id":%d,"kind":"after %s"}`, 2*i+1, k.kind)})
		wantRows = append(wantRows, fmt.Sprintf("%d\tafter %s", 2*i+1, k.kind))
	}
	ids := e.ps.Publish(t, e.topic, msgs...)
	res := e.run(t)

	if got := e.srv.MustQuery(t, "SELECT id, kind FROM events ORDER BY id"); got != strings.Join(wantRows, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", got, strings.Join(wantRows, "\n"))
	}
	got := map[string]string{}
	for _, line := range strings.Split(e.srv.MustQuery(t, "SELECT visitParamExtractString(raw_message, 'kind'), error_message, length(stack_trace) FROM dead_letters"), "\n") {
		f := strings.Split(line, "\t")
		got[f[0]] = strings.ReplaceAll(f[1], `\'`, `'`) // TabSeparated escapes quotes
		if n, _ := strconv.Atoi(f[2]); n > 4096 {
			t.Errorf("dead letter of %s: a stack trace of %d bytes", f[0], n)
		}
	}
	for _, k := range kinds {
		switch g := got[k.kind]; {
		case k.want == "" && (strings.HasPrefix(g, timedOut) || strings.HasPrefix(g, noMemory)):
		case k.want == "" || !strings.HasPrefix(g, k.want):
			t.Errorf("dead letter of %s: %q; want it to start %q", k.kind, g, k.want)
		}
	}
	if len(got) != len(kinds) {
		t.Errorf("%d dead letters, want %d: %v", len(got), len(kinds), got)
	}
	c := counters(res)
	t.Logf("counters: %v", c)
	if c["udf-failed"] != int64(len(kinds)) || c["rows-inserted"] != int64(len(kinds)) || c["udf-restarts"] < 5 {
		t.Errorf("udf-failed %d, rows-inserted %d, udf-restarts %d; want %d, %d and at least 5", c["udf-failed"], c["rows-inserted"], c["udf-restarts"], len(kinds), len(kinds))
	}
	e.checkAllAcked(t, ids)
}

// TestUDFOutputNarrowedColumnWhileRunning: a column narrowed (UInt16 to UInt8) after the parse
// stage converted the output of a UDF that renames a field, and before its batch is written. The
// write stage converts the output again; the row whose value no longer fits is a dead letter with
// the message as published, whose field has another name than the error's, so its stack trace
// ends with the output it failed on, as the parse stage's does; the other row is inserted.
func TestUDFOutputNarrowedColumnWhileRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rename.js")
	if err := os.WriteFile(path, []byte(`function rename(payload) { var e = JSON.parse(payload); return JSON.stringify({id: e.id, n: e.count}); }`), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newE2E(t, `CREATE TABLE {table} (id UInt32, n UInt16) ENGINE = MergeTree ORDER BY id`)
	e.opts.JavascriptTextTransformGcsPath = path
	e.opts.JavascriptTextTransformFunctionName = "rename"
	ids := e.narrowWhileRunning(t, `{"id":1,"count":300}`, `{"id":2,"count":5}`)
	if got := e.srv.MustQuery(t, "SELECT id, n FROM events ORDER BY id"); got != "2\t5" {
		t.Errorf("rows %q, want only id 2", got)
	}
	got := strings.ReplaceAll(e.srv.MustQuery(t, "SELECT raw_message, error_message, stack_trace FROM dead_letters"), `\n`, "\n")
	for _, want := range []string{`{"id":1,"count":300}`, `converting the output of the javascript UDF: column "n" (UInt8): 300 is out of range`,
		"stage: write (converting again after the table changed)\ncolumn: n\n", "\nudf output: {\"id\":1,\"n\":300}"} {
		if !strings.Contains(got, want) {
			t.Errorf("dead letter %q does not contain %q", got, want)
		}
	}
	e.checkAllAcked(t, ids)
}
