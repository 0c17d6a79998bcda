package integration_test

// The subcommands check, publish and replay, run as the built binary against the real server
// and the emulator (reached through PUBSUB_EMULATOR_HOST, which pubsubtest.Start sets for the
// test and so for the binary it starts).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/deadletter"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

// runCommand runs the binary with args and stdin, and returns its standard output, standard
// error and exit code. It stops the binary after two minutes.
func runCommand(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin, _ := launchBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%v: still running after 2 minutes\n%s%s", args, out.String(), errOut.String())
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// chFlags are the ClickHouse flags of a command for the test database.
func chFlags(ch *chtest.Server) []string {
	return []string{"--clickHouseUrl=" + ch.URL, "--clickHouseDatabase=" + ch.Database, "--clickHouseUsername=default", "--clickHousePassword="}
}

func writeTestFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckCommand(t *testing.T) {
	ch := chtest.New(t)
	ch.CreateTable(t, "CREATE TABLE {table} (id UInt32, name String, ts DateTime('UTC'), n UInt8, tags Array(String), "+
		"score Nullable(Float64), kind Enum8('a' = 1, 'b' = 2), note String DEFAULT 'n/a', day Date MATERIALIZED toDate(ts)) "+
		"ENGINE = MergeTree ORDER BY id", "events")
	args := append([]string{"check", "--clickHouseTable=events"}, chFlags(ch)...)

	t.Run("metadataColumns and unknownFieldsColumn from envelopes", func(t *testing.T) {
		mc := chtest.New(t)
		mc.CreateTable(t, "CREATE TABLE {table} (id UInt32, msg_id String, src String, n UInt32, extra String) ENGINE = MergeTree ORDER BY id", "events")
		file := writeTestFile(t, "e.jsonl", strings.Join([]string{
			`{"data": {"id":1, "src":"payload", "zz": [1, 2]}, "attributes": {"source": "app", "n": "42"}}`,
			`{"data": {"id":2}, "attributes": {"source": "web", "n": "x"}}`,
		}, "\n")+"\n")
		margs := append([]string{"check", "--clickHouseTable=events", "--envelope",
			"--metadataColumns=message_id=msg_id,attribute.source=src,attribute.n=n", "--unknownFieldsColumn=extra"}, chFlags(mc)...)
		out, errOut, code := runCommand(t, "", append(margs, file)...)
		for _, want := range []string{
			file + ":1: row\n  id = 1\n  msg_id = '1'\n  src = 'app'\n  n = 42\n  extra = '{\"src\":\"payload\",\"zz\":[1, 2]}'\n",
			file + `:2: dead letter: column "n" (UInt32, from metadataColumns attribute.n=n)`,
			"2 messages: 1 would be a row, 1 dead letter",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("check printed\n%s\nwant it to contain\n%s\nstderr:\n%s", out, want, errOut)
			}
		}
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
	})

	t.Run("hints", func(t *testing.T) {
		hc := chtest.New(t)
		hc.CreateTable(t, "CREATE TABLE {table} (id UInt32, name String, ts DateTime('UTC'), ok String, day Date MATERIALIZED toDate(ts)) ENGINE = MergeTree ORDER BY id", "events")
		file := writeTestFile(t, "h.jsonl", strings.Join([]string{
			`{"Id":1,"name":"a","ts":"2024-03-10T12:00:00Z"}`,
			`{"id":2,"name":"b","ts":1710072002000}`,
			`{"id":3,"name":"c","ts":"1710072003000"}`,
			`{"id":4,"name":"d","ts":1710072004,"extra":1,"more":{"x" : 1},"ok":"not read","day":"2024-03-10"}`,
			`{"id":5,"name":"e","ts":1710072005,"x":true}`,
		}, "\n")+"\n")
		hargs := append([]string{"check", "--clickHouseTable=events", "--envelope=false", "--metadataColumns=ordering_key=ok"}, chFlags(hc)...)
		out, errOut, code := runCommand(t, "", append(hargs, file)...)
		for _, want := range []string{
			file + `:1: dead letter: column "id" (UInt32): the field is missing, and the column has no DEFAULT and is not Nullable` + "\n" +
				`  hint: the payload has the field "Id", and field names are case-sensitive: did you mean "id", the column's name?` + "\n",
			// The error itself says what a DateTime number reads as in milliseconds (as the dead letter's does).
			file + `:2: dead letter: column "ts" (DateTime('UTC')): 1710072002000 is out of range for DateTime (0 to 4294967295 seconds: ` +
				`1970-01-01 00:00:00 to 2106-02-07 06:28:15 UTC), and as Unix milliseconds it reads 2024-03-10 12:00:02.000 UTC: send 1710072002, ` +
				"or divide it by 1000 in a JavaScript UDF, javascriptTextTransformGcsPath (milliseconds are never guessed)\n",
			file + `:3: dead letter: column "ts" (DateTime('UTC')): "1710072003000" is out of range for DateTime (0 to 4294967295 seconds: ` +
				`1970-01-01 00:00:00 to 2106-02-07 06:28:15 UTC), and as Unix milliseconds it reads 2024-03-10 12:00:03.000 UTC: send 1710072003, `,
			// A message without an ordering key gives '' to a String column. A dropped field that
			// names a column says why that column does not take it.
			file + ":4: row\n  id = 4\n  name = 'd'\n  ts = '2024-03-10 12:00:04'\n  ok = ''\n" +
				`  note: the field "ok" is dropped: its column "ok" is filled from ordering_key (metadataColumns); unknownFieldsColumn would keep it in a String column` + "\n" +
				`  note: the field "day" is dropped: its column "day" is MATERIALIZED, computed by the server; unknownFieldsColumn would keep it in a String column` + "\n" +
				`  note: no column takes the fields "extra", "more": dropped (unknownFieldsColumn would keep them in a String column)` + "\n" +
				file + ":5: row\n  id = 5\n  name = 'e'\n  ts = '2024-03-10 12:00:05'\n  ok = ''\n" +
				`  note: no column takes the field "x": dropped (unknownFieldsColumn would keep it in a String column)` + "\n\n",
			"5 messages: 2 would be rows, 3 dead letters\n2 rows with fields that no column takes, dropped from the row (see the notes; unknownFieldsColumn keeps them)\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("check printed\n%s\nwant it to contain\n%s\nstderr:\n%s", out, want, errOut)
			}
		}
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
	})

	t.Run("good and bad messages", func(t *testing.T) {
		file := writeTestFile(t, "m.jsonl", strings.Join([]string{
			`{"id":1,"name":"a\tb 'q'","ts":"2024-03-10T12:00:00Z","n":7,"tags":["x","y"],"score":1.5,"kind":"b"}`,
			`{"id":2,"name":"b","ts":"2024-03-10 12:00:01","n":300,"kind":1}`,
			``,
			`not json`,
			`{"id":3,"name":"c","ts":1710072000,"n":1,"kind":"a","note":"hi"}`,
			`{"id":-4,"name":"d","ts":"x","n":300,"kind":"a"}`,
		}, "\n")+"\n")
		out, errOut, code := runCommand(t, "", append(args, file)...)
		want := file + `:1: row
  id = 1
  name = 'a\tb \'q\''
  ts = '2024-03-10 12:00:00'
  n = 7
  tags = ['x','y']
  score = 1.5
  kind = 'b'
  note = DEFAULT ('n/a')
` + file + `:2: dead letter: column "n" (UInt8): 300 is out of range for UInt8 (0 to 255)
` + file + `:4: dead letter: payload: invalid JSON at byte 0: unexpected character 'n', expected a value
` + file + `:5: row
  id = 3
  name = 'c'
  ts = '2024-03-10 12:00:00'
  n = 1
  tags = []
  score = NULL
  kind = 'a'
  note = 'hi'
`
		if !strings.HasPrefix(out, want) {
			t.Fatalf("check printed (-want +got):\n%s\nstderr:\n%s", cmp.Diff(want, out), errOut)
		}
		// The message with three failing columns: the converter's error, and the summary.
		rest := strings.TrimPrefix(out, want)
		if !strings.HasPrefix(rest, file+`:6: dead letter: column "id" (UInt32): -4 `) || !strings.Contains(rest, `column "n" (UInt8): 300 is out of range`) {
			t.Errorf("the dead letter of line 6:\n%s", rest)
		}
		wantSummary := `
5 messages: 2 would be rows, 3 dead letters
dead letters by error kind (a message with several failing columns counts under each):
       2  column "n" (UInt8)
       1  column "id" (UInt32)
       1  column "ts" (DateTime('UTC'))
       1  payload: not one JSON object of distinct fields in UTF-8
`
		if !strings.HasSuffix(rest, wantSummary) {
			t.Errorf("summary (-want +got):\n%s", cmp.Diff(wantSummary, rest[max(0, len(rest)-len(wantSummary)):]))
		}
		if code != 1 {
			t.Errorf("exit code %d, want 1 (some message would be dead-lettered)\n%s", code, errOut)
		}
	})

	// A message Pub/Sub refuses (publish refuses it too) never reaches the pipeline: check says
	// so, apart from rows and dead letters, and exits 1.
	t.Run("messages Pub/Sub refuses", func(t *testing.T) {
		var hundred []string
		for i := range 101 {
			hundred = append(hundred, fmt.Sprintf(`"k%03d":"v"`, i))
		}
		ok := `{"id":1,"name":"a","ts":0,"n":0,"kind":"a"}`
		file := writeTestFile(t, "big.jsonl", strings.Join([]string{
			`{"data":` + ok + `}`,
			`{"data":{"id":2,"name":"` + strings.Repeat("x", 10_500_000) + `","ts":0,"n":0,"kind":"a"}}`,
			`{"data":` + ok + `,"attributes":{` + strings.Join(hundred, ",") + `}}`,
		}, "\n")+"\n")
		out, errOut, code := runCommand(t, "", append(args, "--envelope", file)...)
		for _, want := range []string{
			file + ":1: row\n",
			file + ":2: not a message Pub/Sub takes: the message is 10500",
			"bytes a publish request to any topic has room for (Pub/Sub's limit is 10 MB a request)\n",
			file + ":3: not a message Pub/Sub takes: the message has 101 attributes, over Pub/Sub's 100 a message\n",
			"3 messages: 1 would be a row, 0 dead letters, 2 that Pub/Sub refuses to publish\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("check printed\n%s\nwant it to contain\n%s\nstderr:\n%s", text.Cut([]byte(out), 2000), want, errOut)
			}
		}
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
	})

	t.Run("all convert, from standard input and a directory", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "one.json"), []byte("{\n  \"id\": 9,\n  \"name\": \"z\",\n  \"ts\": 0, \"n\": 0, \"kind\": 2\n}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runCommand(t, `{"id":8,"name":"y","ts":0,"n":0,"kind":"a"}`+"\n", append(args, "-", dir)...)
		if code != 0 {
			t.Fatalf("exit code %d, want 0\n%s\n%s", code, out, errOut)
		}
		for _, want := range []string{"-:1: row\n  id = 8\n", filepath.Join(dir, "one.json") + ": row\n  id = 9\n  name = 'z'\n  ts = '1970-01-01 00:00:00'\n",
			"\n2 messages: 2 would be rows, 0 dead letters\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("an error that quotes raw control characters keeps to its line", func(t *testing.T) {
		dir := t.TempDir()
		for name, content := range map[string]string{
			"a.json": "{\"id\":1,\"name\":\"a\",\"ts\":0,\"kind\":\"a\",\"n\":[1,\n2,\r\n3]}",
			"b.json": `{"id":2,"name":"b","ts":0,"n":1,"kind":"a"}`,
		} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out, errOut, code := runCommand(t, "", append(args, "--stackTrace", dir)...)
		a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
		want := a + `: dead letter: column "n" (UInt8): [1,\n2,\r\n3] is an array; UInt8 takes an integer` + "\n" +
			"    stage: parse\n    column: n\n" +
			`      error: column "n" (UInt8): [1,\n2,\r\n3] is an array; UInt8 takes an integer (*convert.ValueError)` + "\n" +
			b + ": row\n"
		if !strings.HasPrefix(out, want) {
			t.Errorf("check printed (-want +got):\n%s\nstderr:\n%s", cmp.Diff(want, out[:min(len(out), len(want)+200)]), errOut)
		}
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
	})

	t.Run("after a JavaScript UDF", func(t *testing.T) {
		js := writeTestFile(t, "udf.js", `function fix(payload, message) {
  var e = JSON.parse(payload);
  if (e.drop) { return null; }
  if (e.boom) { throw new Error("boom " + e.ident); }
  return JSON.stringify({id: e.ident, name: e.who, ts: 0, n: 1, kind: "a"});
}
`)
		file := writeTestFile(t, "u.jsonl", `{"ident":5,"who":"u"}`+"\n"+`{"drop":true}`+"\n"+`{"boom":true,"ident":6}`+"\n"+`{"ident":-1,"who":"v"}`+"\n"+
			"{\"ident\":7,\"who\":\"\xff\"}\n")
		uargs := append(append([]string{}, args...), "--javascriptTextTransformGcsPath="+js, "--javascriptTextTransformFunctionName=fix", file)
		out, errOut, code := runCommand(t, "", uargs...)
		for _, want := range []string{
			file + ":1: row\n  id = 5\n  name = 'u'\n",
			file + ":2: dropped by the javascript UDF",
			file + ":3: dead letter: javascript UDF fix failed: threw Error: boom 6 at line 4",
			file + `:4: dead letter: converting the output of the javascript UDF: column "id" (UInt32): -1 `,
			// Not UTF-8: a dead letter before any call, of the parse stage's kind.
			file + ":5: dead letter: payload: not valid UTF-8 (first bad byte at offset 18: 0xFF, in the value of field \"who\")",
			"       1  javascript UDF\n       1  payload: not one JSON object of distinct fields in UTF-8\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("check printed\n%s\nwant it to contain %q\nstderr:\n%s", out, want, errOut)
			}
		}
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
	})

	t.Run("usage errors and a wrong password", func(t *testing.T) {
		if _, errOut, code := runCommand(t, "", args...); code != 2 || !strings.Contains(errOut, "no FILE given") {
			t.Errorf("without a file: exit %d, want 2\n%s", code, errOut)
		}
		if _, errOut, code := runCommand(t, "", "check", "--clickHouseTable=db.events", "--clickHouseUrl=clickhouse://127.0.0.1:9000",
			"--clickHouseDatabase=d", "--clickHouseUsername=default", "--clickHousePassword=", "-"); code != 2 ||
			!strings.Contains(errOut, `clickHouseTable "db.events": must be a bare table name`) {
			t.Errorf("a dotted table: exit %d, want 2\n%s", code, errOut)
		}
		const password = "check-cmd-Pa55word"
		a := append([]string{"check", "--clickHouseTable=events"}, chFlags(ch)...)
		a = append(a, "--clickHousePassword="+password, "-")
		out, errOut, code := runCommand(t, `{"id":1}`+"\n", a...)
		if code != 3 {
			t.Errorf("a wrong password: exit %d, want 3\n%s%s", code, out, errOut)
		}
		if strings.Contains(out+errOut, password) {
			t.Errorf("the output shows the password:\n%s%s", out, errOut)
		}
	})
}

// pulled is a message as the tests compare it.
type pulled struct {
	Data        string
	Attributes  map[string]string
	OrderingKey string
}

// byData compares pulled messages in any order: Pub/Sub keeps the order within an ordering key
// only, and the commands publish concurrently.
var byData = cmpopts.SortSlices(func(a, b pulled) bool { return a.Data < b.Data })

func pullAll(t *testing.T, e *pubsubtest.Emulator, sub string) []pulled {
	t.Helper()
	var out []pulled
	for _, m := range e.PullAll(t, sub) {
		out = append(out, pulled{string(m.Data), m.Attributes, m.OrderingKey})
	}
	return out
}

func TestPublishCommand(t *testing.T) {
	e := pubsubtest.Start(t)
	topic := "projects/" + pubsubtest.Project + "/topics/input"
	sub := "projects/" + pubsubtest.Project + "/subscriptions/input-sub"

	file := writeTestFile(t, "m.jsonl", `{"id":1,"s":"a\"b"}`+"\r\n\n"+`{"id":2}`+"\n")
	_, errOut, code := runCommand(t, "", "publish", "--topic="+topic, "--create", "--subscription="+sub, "--attribute=source=test", "--attribute=k=a=b", file)
	if code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "created topic "+topic) || !strings.Contains(errOut, "published 2 messages to "+topic+" in ") || strings.Contains(errOut, "warning") {
		t.Errorf("publish's report:\n%s", errOut)
	}
	want := []pulled{
		{`{"id":1,"s":"a\"b"}`, map[string]string{"source": "test", "k": "a=b"}, ""},
		{`{"id":2}`, map[string]string{"source": "test", "k": "a=b"}, ""},
	}
	if diff := cmp.Diff(want, pullAll(t, e, sub), byData); diff != "" {
		t.Errorf("pulled (-want +got):\n%s", diff)
	}

	// Envelopes, from standard input, to the existing topic.
	envelopes := `{"data": {"id": 3,  "x": [1, 2]}, "attributes": {"source": "env"}, "orderingKey": "k1"}` + "\n" +
		`{"data": "not JSON \u00e9", "attributes": {"a": "1"}}` + "\n"
	_, errOut, code = runCommand(t, envelopes, "publish", "--topic="+topic, "--envelope", "--attribute=source=flag", "--attribute=extra=1", "-")
	if code != 0 {
		t.Fatalf("publish --envelope: exit %d\n%s", code, errOut)
	}
	want = []pulled{
		{`{"id": 3,  "x": [1, 2]}`, map[string]string{"source": "env", "extra": "1"}, "k1"},
		{"not JSON é", map[string]string{"a": "1", "source": "flag", "extra": "1"}, ""},
	}
	if diff := cmp.Diff(want, pullAll(t, e, sub), byData); diff != "" {
		t.Errorf("pulled (-want +got):\n%s", diff)
	}

	// A topic that does not exist: said, with what to do.
	missing := "projects/" + pubsubtest.Project + "/topics/no-such-topic"
	_, errOut, code = runCommand(t, `{"id":9}`+"\n", "publish", "--topic="+missing, "-")
	if code != 1 || !strings.Contains(errOut, "the topic "+missing+" does not exist: create it (--create does, for the emulator) or check its name") ||
		!strings.Contains(errOut, "(0 of 1 messages published)") || strings.Contains(errOut, "published 0 messages") {
		t.Errorf("publish to a topic that does not exist: exit %d, want 1 and the count in the error alone (no summary line of a success)\n%s", code, errOut)
	}

	// A bad envelope is a usage error naming the line; nothing is published.
	_, errOut, code = runCommand(t, `{"data":1}`+"\n"+`{"payload":1}`+"\n", "publish", "--topic="+topic, "--envelope", "-")
	if code != 2 || !strings.Contains(errOut, `-:2: not an envelope`) || !strings.Contains(errOut, `unknown field "payload"`) {
		t.Errorf("a bad envelope: exit %d, want 2\n%s", code, errOut)
	}
	if got := pullAll(t, e, sub); len(got) != 0 {
		t.Errorf("a refused file published %v", got)
	}

	// A message of neither data nor attributes, which Pub/Sub refuses, is refused.
	_, errOut, code = runCommand(t, `{"data":1}`+"\n"+`{"data":""}`+"\n", "publish", "--topic="+topic, "--envelope", "-")
	if code != 2 || !strings.Contains(errOut, `-:2: the message has neither data nor attributes, which Pub/Sub refuses`) {
		t.Errorf("an empty message: exit %d, want 2\n%s", code, errOut)
	}
	// A topic without a subscription: what is published there is lost, which publish says.
	lonely := e.Topic(t, "no-subscription")
	_, errOut, code = runCommand(t, `{"id":1}`+"\n", "publish", "--topic="+lonely, "-")
	if code != 0 || !strings.Contains(errOut, "pubsub-to-clickhouse publish: warning: "+lonely+" has no subscription, and Pub/Sub delivers a message "+
		"only to the subscriptions that exist when it is published: these messages would reach no one and be lost") {
		t.Errorf("publish to a topic without a subscription: exit %d, want 0 and a warning\n%s", code, errOut)
	}

	// --create with a --subscription that exists on another topic: it would not receive them.
	other := e.Topic(t, "other")
	otherSub := e.Subscription(t, other, "other-sub", time.Minute)
	_, errOut, code = runCommand(t, `{"id":1}`+"\n", "publish", "--topic="+topic, "--create", "--subscription="+otherSub, "-")
	if code != 1 || !strings.Contains(errOut, "--subscription "+otherSub+" exists on topic "+other+", not on "+topic+": it would not receive the messages") {
		t.Errorf("--create with a subscription of another topic: exit %d, want 1\n%s", code, errOut)
	}
	if got := pullAll(t, e, sub); len(got) != 0 {
		t.Errorf("a refused file published %v", got)
	}

	// An empty attribute key, which Pub/Sub refuses, is refused in an envelope as from --attribute.
	const emptyKey = `"=v": the attribute key is empty; Pub/Sub requires a non-empty attribute key`
	_, errOut, code = runCommand(t, `{"data":1}`+"\n"+`{"data":2,"attributes":{"":"v"}}`+"\n", "publish", "--topic="+topic, "--envelope", "-")
	if code != 2 || !strings.Contains(errOut, `-:2: not an envelope`) || !strings.Contains(errOut, `"attributes": `+emptyKey) {
		t.Errorf("an envelope's empty attribute key: exit %d, want 2\n%s", code, errOut)
	}
	_, errOut, code = runCommand(t, `{"id":1}`+"\n", "publish", "--topic="+topic, "--attribute==v", "-")
	if code != 2 || !strings.Contains(errOut, emptyKey) {
		t.Errorf("--attribute==v: exit %d, want 2\n%s", code, errOut)
	}
	if got := pullAll(t, e, sub); len(got) != 0 {
		t.Errorf("a refused file published %v", got)
	}

	// A line above Pub/Sub's 10 MB is refused by its place before anything is published.
	big := writeTestFile(t, "big.jsonl", `{"id":1}`+"\n"+`{"s":"`+strings.Repeat("x", 10_000_000)+`"}`+"\n")
	_, errOut, code = runCommand(t, "", "publish", "--topic="+topic, big)
	limit := psclient.MaxMessageBytes(topic)
	if code != 2 || !strings.Contains(errOut, fmt.Sprintf(big+`:2: the message is 10000013 bytes as Pub/Sub encodes it (data, attributes and ordering key), above the %d bytes a publish request to %s has room for (Pub/Sub's limit is 10 MB a request); nothing was published`, limit, topic)) {
		t.Errorf("a message over 10 MB: exit %d, want 2\n%s", code, errOut)
	}
	if got := pullAll(t, e, sub); len(got) != 0 {
		t.Errorf("a refused file published %d messages", len(got))
	}
	// The limit is the client's to the byte: a message of the largest size it publishes to the
	// topic is published, one a byte larger refused (data alone: 5 bytes of framing for its tag
	// and length).
	atLimit := `"` + strings.Repeat("x", limit-5-2) + `"`
	if got := psclient.MessageSize(&pubsub.Message{Data: []byte(atLimit)}); got != limit {
		t.Fatalf("the message at the limit is %d bytes, want %d", got, limit)
	}
	_, errOut, code = runCommand(t, atLimit+"\n", "publish", "--topic="+topic, "-")
	if got := pullAll(t, e, sub); code != 0 || len(got) != 1 || len(got[0].Data) != len(atLimit) {
		t.Errorf("a message of the largest size: exit %d, %d messages pulled\n%s", code, len(got), errOut)
	}
	_, errOut, code = runCommand(t, atLimit+" \n", "publish", "--topic="+topic, "-")
	if code != 2 || !strings.Contains(errOut, fmt.Sprintf("-:1: the message is %d bytes as Pub/Sub encodes it", limit+1)) {
		t.Errorf("a message a byte over the limit: exit %d, want 2\n%s", code, errOut)
	}
	if got := pullAll(t, e, sub); len(got) != 0 {
		t.Errorf("a refused message was published")
	}
}

// TestPublishInterrupted: publish interrupted (SIGINT, as Ctrl-C sends) stops, waits for the
// publishes under way, says how many messages it published, and exits with status 130; the topic
// holds exactly that many, each once. (It counted those under way as failed, though the client
// went on to publish them: the topic held about a thousand more than it said.)
func TestPublishInterrupted(t *testing.T) {
	e := pubsubtest.Start(t)
	topic := e.Topic(t, "input")
	sub := e.Subscription(t, topic, "input-sub", time.Minute)
	const total = 300_000
	var b strings.Builder
	for i := range total {
		fmt.Fprintf(&b, "{\"id\":%d}\n", i)
	}
	file := writeTestFile(t, "m.jsonl", b.String())
	bin, _ := launchBinary(t)
	cmd := exec.Command(bin, "publish", "--topic="+topic, file)
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errOut, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	interruptAndWait(t, cmd, 90*time.Second, &errOut)
	// The count is in the error ("(N of M messages published)"), with no summary line of a success.
	var published int
	count := regexp.MustCompile(`\((\d+) of \d+ messages published\)`).FindStringSubmatch(errOut.String())
	if count != nil {
		published, _ = strconv.Atoi(count[1])
	}
	if count == nil || cmd.ProcessState.ExitCode() != 130 || !strings.Contains(errOut.String(), "publish: interrupted (interrupt): stopping") ||
		strings.Contains(errOut.String(), " msgs/s)") {
		t.Fatalf("publish interrupted: exit %d, want 130, and a report of the interrupt and of the count in the error\n%s", cmd.ProcessState.ExitCode(), errOut.String())
	}
	if published == 0 || published >= total {
		t.Errorf("published %d of %d before the interrupt, want some and not all (the test's timing)", published, total)
	}
	ids := map[string]int{}
	for _, m := range e.PullAll(t, sub) {
		ids[string(m.Data)]++
	}
	twice := 0
	for _, n := range ids {
		if n > 1 {
			twice++
		}
	}
	if len(ids) != published || twice > 0 {
		t.Errorf("the topic holds %d distinct messages (%d more than once), want the %d reported, each once", len(ids), twice, published)
	}
	t.Logf("published %d reported, %d on the topic\n%s", published, len(ids), errOut.String())
}

func TestReplayFromTable(t *testing.T) {
	ch := chtest.New(t)
	e := pubsubtest.Start(t)
	topic := e.Topic(t, "input")
	sub := e.Subscription(t, topic, "input-sub", time.Minute)
	ch.MustExec(t, deadletter.CreateTable(ch.Database, "dl"))
	// failed_at at 10:00, 11:00 and 12:00 UTC on 2026-01-15, as Unix seconds (the server's zone may be any).
	at := func(hour int) string { return fmt.Sprint(time.Date(2026, 1, 15, hour, 0, 0, 0, time.UTC).Unix()) }
	ch.MustExec(t, `INSERT INTO dl (raw_message, error_message, stack_trace, failed_at) VALUES ('{"id":1,"n":300}', 'column "n" (UInt8): 300 is out of range', 'st', `+at(10)+`), `+
		`('{"id":2}\n', 'column "x" (String): missing', 'st', `+at(11)+`), `+
		`('{"id":3,"n":301}', 'column "n" (UInt8): 301 is out of range', 'st', `+at(12)+`)`)
	from := "clickhouse://" + ch.Database + ".dl"
	args := append([]string{"replay", "--topic=" + topic, "--fromTable=dl", "--replayId=r1"}, chFlags(ch)...)

	out, errOut, code := runCommand(t, "", append(args, "--dry-run", "--samples=1")...)
	wantDry := "dry run: would replay 3 dead letters from " + from + " to " + topic + " (replay_id=r1); nothing published, deleted or acknowledged\n" +
		"  1. {\"id\":1,\"n\":300}\n     attributes: replay_id=r1 replayed_from=" + from + "\n"
	if code != 0 || out != wantDry {
		t.Errorf("dry run: exit %d\n%s\nstderr:\n%s", code, cmp.Diff(wantDry, out), errOut)
	}
	if got := pullAll(t, e, sub); len(got) != 0 {
		t.Errorf("a dry run published %v", got)
	}

	out, errOut, code = runCommand(t, "", append(args, `--where=error_message LIKE '%UInt8%'`, "--since=2026-01-15T10:30:00Z", "--delete")...)
	if code != 0 || !strings.Contains(out, "replayed 1 dead letter from "+from) || !strings.Contains(out, "deleted 1 replayed row") {
		t.Fatalf("replay --where --since --delete: exit %d\n%s%s", code, out, errOut)
	}
	attrs := map[string]string{"replayed_from": from, "replay_id": "r1"}
	if diff := cmp.Diff([]pulled{{`{"id":3,"n":301}`, attrs, ""}}, pullAll(t, e, sub), byData); diff != "" {
		t.Errorf("replayed (-want +got):\n%s", diff)
	}
	if got := ch.MustQuery(t, "SELECT raw_message FROM dl ORDER BY failed_at"); got != `{"id":1,"n":300}`+"\n"+`{"id":2}\n` {
		t.Errorf("after --delete the table holds:\n%s", got)
	}

	// A topic without a subscription keeps nothing published to it: a replay there with
	// --delete lost its dead letters, reporting them replayed and deleted.
	lonely := e.Topic(t, "no-subscription")
	out, errOut, code = runCommand(t, "", append([]string{"replay", "--topic=" + lonely, "--fromTable=dl", "--replayId=r1", "--delete"}, chFlags(ch)...)...)
	if code != 1 || out != "" || !strings.Contains(errOut, "--topic "+lonely+" has no subscription, and Pub/Sub delivers a message only to the subscriptions "+
		"that exist when it is published: every message replayed there would reach no one and be lost; create a subscription on it first "+
		"(pubsub-to-clickhouse publish --create --topic="+lonely+" --subscription=projects/"+pubsubtest.Project+"/subscriptions/<name>); replayed nothing") {
		t.Errorf("replay --delete to a topic without a subscription: exit %d, want 1\n%s%s", code, out, errOut)
	}
	if got := ch.MustQuery(t, "SELECT count() FROM dl"); got != "2" {
		t.Errorf("after a replay to a topic without a subscription the table holds %s rows, want 2", got)
	}

	// Without --delete the rows stay; the bytes are the original's, newline included.
	out, errOut, code = runCommand(t, "", append(args, "--until=2026-01-15T11:30:00Z")...)
	if code != 0 || !strings.Contains(out, "replayed 2 dead letters") {
		t.Fatalf("replay --until: exit %d\n%s%s", code, out, errOut)
	}
	if diff := cmp.Diff([]pulled{{`{"id":1,"n":300}`, attrs, ""}, {"{\"id\":2}\n", attrs, ""}}, pullAll(t, e, sub), byData); diff != "" {
		t.Errorf("replayed (-want +got):\n%s", diff)
	}
	if got := ch.MustQuery(t, "SELECT count() FROM dl"); got != "2" {
		t.Errorf("without --delete the table holds %s rows, want 2", got)
	}

	// A row with its attributes and ordering key (the optional columns) gets them back; the
	// replay's own attributes replace those of an earlier replay.
	ch.MustExec(t, `INSERT INTO dl VALUES ('{"id":4}', 'routeBy attribute:event_type: ...', 'stage: route', `+at(13)+`, '7', `+
		`'{"event_type":"click","replay_id":"old"}', 'k1')`)
	out, errOut, code = runCommand(t, "", append(args, "--since=2026-01-15T12:30:00Z")...)
	if code != 0 || !strings.Contains(out, "replayed 1 dead letter") {
		t.Fatalf("replay of a row with attributes: exit %d\n%s%s", code, out, errOut)
	}
	withAttrs := map[string]string{"replayed_from": from, "replay_id": "r1", "event_type": "click"}
	if diff := cmp.Diff([]pulled{{`{"id":4}`, withAttrs, "k1"}}, pullAll(t, e, sub), byData); diff != "" {
		t.Errorf("replayed with attributes (-want +got):\n%s", diff)
	}
	// Attributes that are not a JSON object of strings stop the replay before anything is published.
	ch.MustExec(t, `INSERT INTO dl VALUES ('{"id":5}', 'e', 's', `+at(14)+`, '8', '{"n":1}', '')`)
	out, errOut, code = runCommand(t, "", append(args, "--since=2026-01-15T13:30:00Z")...)
	if code != 1 || !strings.Contains(errOut, `the attributes {"n":1} of the row that failed at 2026-01-15 14:`) || !strings.Contains(errOut, `are not a JSON object of strings`) {
		t.Errorf("replay of a row with bad attributes: exit %d\n%s%s", code, out, errOut)
	}
	// A --where the server refuses is named, with the columns it may use.
	_, errOut, code = runCommand(t, "", append(args, "--where=bogus((")...)
	if code != 1 || !strings.Contains(errOut, `--where "bogus((": ClickHouse refused the condition (code: 62, message: Syntax error`) || !strings.Contains(errOut, "raw_message, ") {
		t.Errorf("replay with a --where ClickHouse cannot parse: exit %d, want 1 and the flag named\n%s", code, errOut)
	}
	// So do attributes that a lax decoder would take, changed: a key given twice (one value
	// would go), a lone surrogate or a byte that is not UTF-8 (either would become U+FFFD), an
	// empty key (Pub/Sub refuses it).
	for i, tc := range []struct{ attrs, want string }{
		{`{"a":"1","a":"2"}`, `the attribute "a" is given twice`},
		{`{"a":"\ud800"}`, `half of a UTF-16 surrogate pair`},
		{`{"":"v"}`, `the attribute key is empty`},
		{`{"a":"` + "\xff" + `"}`, `the text is not valid UTF-8`},
	} {
		ch.MustExec(t, fmt.Sprintf(`INSERT INTO dl VALUES ('{"id":%d}', 'e', 's', %s, '8', '%s', '')`, 50+i, at(15+i), strings.ReplaceAll(tc.attrs, `\`, `\\`)))
		out, errOut, code = runCommand(t, "", append(args, fmt.Sprintf("--since=2026-01-15T%d:30:00Z", 14+i))...)
		if code != 1 || !strings.Contains(errOut, "are not a JSON object of strings") || !strings.Contains(errOut, tc.want) || strings.Contains(out, "replayed") {
			t.Errorf("replay of a row with the attributes %s: exit %d, want 1 and an error saying %q\n%s%s", tc.attrs, code, tc.want, out, errOut)
		}
	}

	// Nullable columns (the pipeline writes to them as to their types) holding NULL read as none.
	// failed_at among them (a sorting key takes no Nullable column on 18.16).
	ch.MustExec(t, "CREATE TABLE dl_null (raw_message String, error_message Nullable(String), stack_trace String, failed_at Nullable(DateTime), "+
		"attributes Nullable(String), ordering_key Nullable(String)) ENGINE = MergeTree ORDER BY tuple()")
	ch.MustExec(t, `INSERT INTO dl_null VALUES ('{"id":8}', NULL, 's', NULL, NULL, NULL), ('{"id":9}', 'e', 's', `+at(11)+`, '{"k":"v"}', 'key')`)
	nullArgs := append([]string{"replay", "--topic=" + topic, "--fromTable=dl_null", "--replayId=r1", "--delete"}, chFlags(ch)...)
	out, errOut, code = runCommand(t, "", nullArgs...)
	if code != 0 || !strings.Contains(out, "replayed 2 dead letters") || !strings.Contains(out, "deleted 2 replayed rows") {
		t.Errorf("replay --delete from a table of Nullable columns: exit %d\n%s%s", code, out, errOut)
	}
	fromNull := map[string]string{"replayed_from": "clickhouse://" + ch.Database + ".dl_null", "replay_id": "r1"}
	if diff := cmp.Diff([]pulled{{`{"id":8}`, fromNull, ""}, {`{"id":9}`, map[string]string{"replayed_from": fromNull["replayed_from"], "replay_id": "r1", "k": "v"}, "key"}},
		pullAll(t, e, sub), byData); diff != "" {
		t.Errorf("replayed from a table of Nullable columns (-want +got):\n%s", diff)
	}
	if got := ch.MustQuery(t, "SELECT count() FROM dl_null"); got != "0" {
		t.Errorf("after --delete the table of Nullable columns holds %s rows", got)
	}

	// A --where that changes meaning between the SELECT and the DELETE (rand()): the DELETE
	// finds the rows replayed by their hash, so exactly those go and every other row stays.
	ch.MustExec(t, deadletter.CreateTable(ch.Database, "dl_rand"))
	var values []string
	for i := range 20 {
		values = append(values, fmt.Sprintf(`('{"id":%d}', 'e', 's', %s, 'm%d', '{}', '')`, 100+i, at(10), i))
	}
	ch.MustExec(t, "INSERT INTO dl_rand VALUES "+strings.Join(values, ", "))
	randArgs := append([]string{"replay", "--topic=" + topic, "--fromTable=dl_rand", "--replayId=r1", "--delete", "--where=rand() % 2 = 0"}, chFlags(ch)...)
	out, errOut, code = runCommand(t, "", randArgs...)
	replayedRand := map[string]bool{}
	for _, m := range pullAll(t, e, sub) {
		replayedRand[m.Data] = true
	}
	left := strings.Split(ch.MustQuery(t, "SELECT raw_message FROM dl_rand"), "\n")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("deleted %d replayed rows", len(replayedRand))) || len(replayedRand)+len(left) != 20 {
		t.Errorf("replay --delete --where=rand(): exit %d, %d replayed, %d left\n%s%s", code, len(replayedRand), len(left), out, errOut)
	}
	for _, l := range left {
		if replayedRand[l] {
			t.Errorf("%s was replayed and is still in the table", l)
		}
	}

	// Exact copies (the same in every column replay knows) that the condition did not choose are
	// replayed too, since the DELETE takes them: nothing goes unreplayed.
	ch.MustExec(t, deadletter.CreateTable(ch.Database, "dl_copies"))
	ch.MustExec(t, `INSERT INTO dl_copies (raw_message, error_message, stack_trace, failed_at) SELECT '{"id":11}', 'e', 's', `+at(10)+` FROM system.numbers LIMIT 8`)
	copiesArgs := append([]string{"replay", "--topic=" + topic, "--fromTable=dl_copies", "--replayId=r1", "--delete", "--where=rowNumberInAllBlocks() = 0"}, chFlags(ch)...)
	out, errOut, code = runCommand(t, "", copiesArgs...)
	if code != 0 || !strings.Contains(out, "replayed 8 dead letters") || !strings.Contains(out, "deleted 8 replayed rows") ||
		!strings.Contains(errOut, "replaying 7 dead letters more, exact copies of rows the condition chose") {
		t.Errorf("replay --delete of one of 8 exact copies: exit %d\n%s%s", code, out, errOut)
	}
	if got := pullAll(t, e, sub); len(got) != 8 {
		t.Errorf("replay --delete of one of 8 exact copies published %d messages, want 8", len(got))
	}

	// A mutation of the table that never finishes (its expression throws: 18.16 keeps it
	// unfinished for ever) holds up the DELETE: replay waits --deleteWait, then says why.
	ch.MustExec(t, deadletter.CreateTable(ch.Database, "dl_stuck"))
	ch.MustExec(t, `INSERT INTO dl_stuck (raw_message, error_message, stack_trace, failed_at) VALUES ('{"id":7}', 'e', 's', `+at(10)+`)`)
	ch.MustExec(t, "ALTER TABLE dl_stuck DELETE WHERE throwIf(length(raw_message) > 0) = 1")
	stuckArgs := append([]string{"replay", "--topic=" + topic, "--fromTable=dl_stuck", "--replayId=r1", "--delete", "--deleteWait=2s"}, chFlags(ch)...)
	out, errOut, code = runCommand(t, "", stuckArgs...)
	if code != 1 || !strings.Contains(out, "replayed 1 dead letter") ||
		!strings.Contains(errOut, "has not finished after 2s (--deleteWait); ClickHouse runs a table's mutations in order, and the table's mutation mutation_") ||
		!strings.Contains(errOut, "(DELETE WHERE throwIf(length(raw_message) > 0) = 1) has not finished either") {
		t.Errorf("replay --delete behind a stuck mutation: exit %d, want 1\n%s%s", code, out, errOut)
	}
	if got := pullAll(t, e, sub); len(got) != 1 || got[0].Data != `{"id":7}` {
		t.Errorf("replay --delete behind a stuck mutation published %v", got)
	}

	// --delete from a table whose engine has no mutations stops before anything is published.
	ch.MustExec(t, "CREATE TABLE dl_log (raw_message String, error_message String, stack_trace String, failed_at DateTime) ENGINE = Log")
	ch.MustExec(t, `INSERT INTO dl_log VALUES ('{"id":6}', 'e', 's', `+at(10)+`)`)
	logArgs := append([]string{"replay", "--topic=" + topic, "--fromTable=dl_log", "--replayId=r1"}, chFlags(ch)...)
	out, errOut, code = runCommand(t, "", append(logArgs, "--delete")...)
	if code != 1 || !strings.Contains(errOut, "--delete: clickhouse://"+ch.Database+".dl_log has engine Log, and ClickHouse deletes rows") ||
		!strings.Contains(errOut, "replayed nothing") {
		t.Errorf("replay --delete from a Log table: exit %d\n%s%s", code, out, errOut)
	}
	if got := pullAll(t, e, sub); len(got) != 0 {
		t.Errorf("replay --delete from a Log table published %v", got)
	}
}

// TestReplayDeleteInterrupted: an interrupt while replay --delete waits for its DELETE stops the
// wait, not the DELETE, a mutation ClickHouse goes on with: replay says so, naming it, and exits
// 130. (It said "context canceled (they were replayed; delete them by hand, or a replay publishes
// them again)", as though nothing would be deleted.) A mutation that never finishes (its
// expression throws: 18.16 keeps it unfinished for ever) holds the DELETE up until the interrupt.
func TestReplayDeleteInterrupted(t *testing.T) {
	ch := chtest.New(t)
	e := pubsubtest.Start(t)
	topic := e.Topic(t, "input")
	sub := e.Subscription(t, topic, "input-sub", time.Minute)
	ch.MustExec(t, deadletter.CreateTable(ch.Database, "dl"))
	ch.MustExec(t, `INSERT INTO dl (raw_message, error_message, stack_trace, failed_at) VALUES ('{"id":1}', 'e', 's', now())`)
	ch.MustExec(t, "ALTER TABLE dl DELETE WHERE throwIf(length(raw_message) > 0) = 1")

	bin, _ := launchBinary(t)
	cmd := exec.Command(bin, append([]string{"replay", "--topic=" + topic, "--fromTable=dl", "--replayId=r1", "--delete", "--deleteWait=2m"}, chFlags(ch)...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ours := "SELECT mutation_id FROM system.mutations WHERE database = currentDatabase() AND table = 'dl' AND command LIKE '%cityHash64(%'"
	for deadline := time.Now().Add(time.Minute); ch.MustQuery(t, ours) == ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("replay --delete has submitted no DELETE within a minute\n%s", out.String())
		}
	}
	time.Sleep(time.Second) // replay reads system.mutations every 200 ms: it has seen its mutation
	interruptAndWait(t, cmd, time.Minute, &out)
	mutation := ch.MustQuery(t, ours)
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(out.String(), "replayed 1 dead letter") ||
		!strings.Contains(out.String(), "interrupted while waiting for the DELETE (mutation "+mutation+") to finish: ClickHouse goes on with it, and the rows are deleted when it finishes") ||
		strings.Contains(out.String(), "delete them by hand") {
		t.Errorf("replay --delete interrupted while it waits for the DELETE: exit %d, want 130 and the DELETE said to go on\n%s", code, out.String())
	}
	if got := pullAll(t, e, sub); len(got) != 1 || got[0].Data != `{"id":1}` {
		t.Errorf("replay --delete interrupted published %v", got)
	}
}

// TestReplayTooLarge: a dead letter that the replay's own attributes (replayed_from, replay_id)
// would take past what the Pub/Sub client publishes, or that Pub/Sub would refuse for another
// reason (psclient.CheckMessage), is left where it is (in the table, not
// deleted; on the subscription, unacknowledged), named on standard error, and the others are
// replayed; exit 1.
func TestReplayTooLarge(t *testing.T) {
	ch := chtest.New(t)
	e, input, inputSub, dlTopic, dlSub := replayTopics(t)
	limit := psclient.MaxMessageBytes(input)
	huge := strings.Repeat("x", limit-10) // fits alone, not with two attributes

	ch.MustExec(t, deadletter.CreateTable(ch.Database, "dl"))
	if _, err := ch.Post("INSERT INTO dl (raw_message, error_message, stack_trace, failed_at) FORMAT TabSeparated",
		[]byte("{\"id\":1}\tbad\tst\t2026-01-15 10:00:00\n"+huge+"\tbad\tst\t2026-01-15 11:00:00\n")); err != nil {
		t.Fatal(err)
	}
	from := "clickhouse://" + ch.Database + ".dl"
	out, errOut, code := runCommand(t, "", append([]string{"replay", "--topic=" + input, "--fromTable=dl", "--replayId=r4", "--delete"}, chFlags(ch)...)...)
	if code != 1 || !strings.Contains(out, "replayed 1 dead letter from "+from) || !strings.Contains(out, "deleted 1 replayed row") ||
		!strings.Contains(errOut, fmt.Sprintf("leaving 1 dead letter in %s, which Pub/Sub would refuse with the replay's attributes (replayed_from, replay_id): "+
			"the row that failed at 2026-01-15 11:00:00 UTC, a dead letter of %d bytes: the message is ", from, len(huge))) {
		t.Errorf("replay --fromTable: exit %d, want 1\n%s%s", code, out, errOut)
	}
	if got := pullAll(t, e, inputSub); len(got) != 1 || got[0].Data != `{"id":1}` {
		t.Errorf("replayed %d messages, want only {\"id\":1}", len(got))
	}
	if got := ch.MustQuery(t, "SELECT length(raw_message) FROM dl"); got != fmt.Sprint(len(huge)) {
		t.Errorf("the table holds rows of lengths %s, want the large dead letter alone", got)
	}

	// Rows Pub/Sub would refuse for another reason stay too, checked before any is published, so
	// that the others are replayed and deleted: 100 attributes (102 with the replay's; the
	// dead-letter topic's copy had 3 left out), an ordering key that is not UTF-8 (only a hand
	// writes one into the table).
	ch.MustExec(t, deadletter.CreateTable(ch.Database, "dl_refused"))
	var hundred []string
	for i := range 100 {
		hundred = append(hundred, fmt.Sprintf(`"k%03d":"v"`, i))
	}
	ch.MustExec(t, `INSERT INTO dl_refused (raw_message, error_message, stack_trace, failed_at, attributes, ordering_key, message_id) VALUES `+
		`('{"id":3}', 'e', 's', '2026-01-15 10:00:00', '{`+strings.Join(hundred, ",")+`}', '', ''), `+
		`('{"id":4}', 'e', 's', '2026-01-15 10:00:01', '{}', 'k\xFF', 'm4'), `+
		`('{"id":5}', 'e', 's', '2026-01-15 10:00:02', '{}', '', 'm5')`)
	refusedFrom := "clickhouse://" + ch.Database + ".dl_refused"
	out, errOut, code = runCommand(t, "", append([]string{"replay", "--topic=" + input, "--fromTable=dl_refused", "--replayId=r6", "--delete"}, chFlags(ch)...)...)
	if code != 1 || !strings.Contains(out, "replayed 1 dead letter from "+refusedFrom) || !strings.Contains(out, "deleted 1 replayed row") ||
		!strings.Contains(errOut, "leaving 2 dead letters in "+refusedFrom+", which Pub/Sub would refuse with the replay's attributes (replayed_from, replay_id): ") ||
		// Each named by when it failed, and its message id where the row has one.
		!strings.Contains(errOut, "the row that failed at 2026-01-15 10:00:00 UTC, a dead letter of 8 bytes: the message has 102 attributes, over Pub/Sub's 100 a message") ||
		!strings.Contains(errOut, `the row that failed at 2026-01-15 10:00:01 UTC (message_id "m4"), a dead letter of 8 bytes: the ordering key "k\xff" is not valid UTF-8`) {
		t.Errorf("replay --fromTable of rows Pub/Sub refuses: exit %d, want 1\n%s%s", code, out, errOut)
	}
	if got := pullAll(t, e, inputSub); len(got) != 1 || got[0].Data != `{"id":5}` {
		t.Errorf("replayed %v, want only {\"id\":5}", got)
	}
	if got := ch.MustQuery(t, "SELECT arrayStringConcat(groupArray(raw_message), ' ') FROM (SELECT raw_message FROM dl_refused ORDER BY failed_at)"); got != `{"id":3} {"id":4}` {
		t.Errorf("dl_refused holds %s, want the two rows Pub/Sub would refuse", got)
	}

	// From the dead-letter topic: a message published there by another hand.
	e.Publish(t, dlTopic, &pubsubpb.PubsubMessage{Data: []byte(huge)}, &pubsubpb.PubsubMessage{Data: []byte(`{"id":2}`)})
	out, errOut, code = runCommand(t, "", "replay", "--topic="+input, "--fromSubscription="+dlSub, "--replayId=r5")
	if code != 1 || !strings.Contains(out, "replayed 1 dead letter from "+dlSub) ||
		!strings.Contains(out, "left 1 message that Pub/Sub would refuse with the replay's attributes (replayed_from, replay_id) on "+dlSub+", unacknowledged") ||
		!strings.Contains(errOut, "unacknowledged: the message is ") {
		t.Errorf("replay --fromSubscription: exit %d, want 1\n%s%s", code, out, errOut)
	}
	if got := pullAll(t, e, inputSub); len(got) != 1 || got[0].Data != `{"id":2}` {
		t.Errorf("replayed %d messages, want only {\"id\":2}", len(got))
	}
	if got := pullAll(t, e, dlSub); len(got) != 1 || len(got[0].Data) != len(huge) {
		t.Errorf("the dead-letter subscription delivers %d messages, want the large one", len(got))
	}
}

// replayTopics starts an emulator with the topics and subscriptions of a replay from the
// dead-letter topic: the input topic and a subscription on it, the dead-letter topic and one on it.
func replayTopics(t *testing.T) (e *pubsubtest.Emulator, input, inputSub, dlTopic, dlSub string) {
	t.Helper()
	e = pubsubtest.Start(t)
	input = e.Topic(t, "input")
	inputSub = e.Subscription(t, input, "input-sub", time.Minute)
	dlTopic = e.Topic(t, "dead-letters")
	dlSub = e.Subscription(t, dlTopic, "dead-letters-sub", time.Minute)
	return e, input, inputSub, dlTopic, dlSub
}

// slowPublishes returns a server option of the emulator under which every Publish to topic takes
// takes, and a channel closed when the first of them arrives.
func slowPublishes(topic string, takes time.Duration) (grpc.ServerOption, <-chan struct{}) {
	publishing := make(chan struct{})
	var once sync.Once
	return grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if p, ok := req.(*pubsubpb.PublishRequest); ok && p.GetTopic() == topic {
			once.Do(func() { close(publishing) })
			time.Sleep(takes)
		}
		return handler(ctx, req)
	}), publishing
}

// publishDeadLetters publishes n dead letters, as the dead-letter stage publishes them, of the
// payloads {"id":0} to {"id":n-1} to topic, and returns them.
func publishDeadLetters(t *testing.T, e *pubsubtest.Emulator, topic string, n int) []*pubsubpb.PubsubMessage {
	t.Helper()
	var msgs []*pubsubpb.PubsubMessage
	for i := range n {
		m := deadletter.TopicMessage(flow.DeadLetter{Payload: fmt.Appendf(nil, `{"id":%d}`, i), ErrorMessage: "bad", FailedAtMillis: int64(i + 1)})
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: m.Data, Attributes: m.Attributes})
	}
	e.Publish(t, topic, msgs...)
	return msgs
}

func TestReplayFromTopic(t *testing.T) {
	e, input, inputSub, dlTopic, dlSub := replayTopics(t)
	var msgs []*pubsubpb.PubsubMessage
	for i, dl := range []flow.DeadLetter{
		{Payload: []byte(`{"id":1,"n":300}`), ErrorMessage: "column \"n\" (UInt8): 300 is out of range", FailedAtMillis: 1, Attributes: map[string]string{"source": "a"}},
		{Payload: []byte("not json"), ErrorMessage: "payload: invalid JSON", FailedAtMillis: 2},
	} {
		m := deadletter.TopicMessage(dl)
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: m.Data, Attributes: m.Attributes})
		if m.Attributes["errorMessage"] == "" || m.Attributes["failedAt"] == "" {
			t.Fatalf("dead letter %d: the topic message has no errorMessage or failedAt: %v", i, m.Attributes)
		}
	}
	e.Publish(t, dlTopic, msgs...)
	args := []string{"replay", "--topic=" + input, "--fromSubscription=" + dlSub, "--replayId=r2"}

	out, errOut, code := runCommand(t, "", append(args, "--dry-run")...)
	if code != 0 || !strings.HasPrefix(out, "dry run: would replay 2 dead letters from "+dlSub+" to "+input+" (replay_id=r2)") ||
		!strings.Contains(out, "attributes: replay_id=r2 replayed_from="+dlSub+" source=a\n") {
		t.Errorf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	if got := pullAll(t, e, inputSub); len(got) != 0 {
		t.Errorf("a dry run published %v", got)
	}

	out, errOut, code = runCommand(t, "", args...)
	if code != 0 || !strings.Contains(out, "replayed 2 dead letters from "+dlSub) {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errOut)
	}
	want := []pulled{
		{`{"id":1,"n":300}`, map[string]string{"source": "a", "replayed_from": dlSub, "replay_id": "r2"}, ""},
		{"not json", map[string]string{"replayed_from": dlSub, "replay_id": "r2"}, ""},
	}
	if diff := cmp.Diff(want, pullAll(t, e, inputSub), byData); diff != "" {
		t.Errorf("replayed (-want +got):\n%s", diff)
	}
	// Acknowledged once published: the dead-letter subscription is empty.
	if got := pullAll(t, e, dlSub); len(got) != 0 {
		t.Errorf("the dead-letter subscription still delivers %v", got)
	}

	// A subscription on the topic replay publishes to is refused: it would loop.
	_, errOut, code = runCommand(t, "", "replay", "--topic="+input, "--fromSubscription="+inputSub)
	if code != 2 || !strings.Contains(errOut, "it would deliver the replayed messages again") {
		t.Errorf("a subscription on --topic: exit %d, want 2\n%s", code, errOut)
	}

	// A topic or a subscription that does not exist is named, with the command that creates it,
	// before anything is pulled (it was a Publish's bare NotFound after a pull); the dead letter
	// stays on its subscription.
	e.Publish(t, dlTopic, msgs[0])
	missingTopic, missingSub := "projects/"+pubsubtest.Project+"/topics/missing", "projects/"+pubsubtest.Project+"/subscriptions/missing"
	for _, tc := range []struct{ args, want []string }{
		{[]string{"--topic=" + missingTopic, "--fromSubscription=" + dlSub},
			[]string{"--topic " + missingTopic + " does not exist in the Pub/Sub emulator", "publish --create --topic=" + missingTopic}},
		{[]string{"--topic=" + input, "--fromSubscription=" + missingSub},
			[]string{"--fromSubscription " + missingSub + " does not exist in the Pub/Sub emulator", "publish --create --topic=projects/<project>/topics/<its topic> --subscription=" + missingSub}},
	} {
		_, errOut, code = runCommand(t, "", append([]string{"replay"}, tc.args...)...)
		for _, want := range tc.want {
			if code != 1 || !strings.Contains(errOut, want) {
				t.Errorf("replay %v: exit %d, want 1 and %q\n%s", tc.args, code, want, errOut)
			}
		}
	}
	if got := pullAll(t, e, dlSub); len(got) != 1 {
		t.Errorf("the dead-letter subscription delivers %d messages, want the 1 left", len(got))
	}
}

// TestReplayFromTopicSlowPublish: the dead letters of a pull stay with replay while their publish
// is under way, however long it takes: replay extends their ack deadline, so that Pub/Sub does not
// deliver them again meanwhile (to this replay's next pull, to another replay, to anyone) and
// they are replayed once. The dead-letter subscription's ack deadline is 2 s, and every Publish
// to the input topic takes 4 s (an interceptor of the emulator's server); halfway, at 3 s, a
// second puller of the subscription must get nothing.
func TestReplayFromTopicSlowPublish(t *testing.T) {
	const ackDeadline, publishTakes = 2 * time.Second, 4 * time.Second
	pstest.SetMinAckDeadline(time.Second)
	defer pstest.ResetMinAckDeadline()
	input := "projects/" + pubsubtest.Project + "/topics/input"
	slow, publishing := slowPublishes(input, publishTakes)
	e := pubsubtest.StartServing(t, []grpc.ServerOption{slow})
	if got := e.Topic(t, "input"); got != input {
		t.Fatalf("the input topic is %s, want %s", got, input)
	}
	inputSub := e.Subscription(t, input, "input-sub", time.Minute)
	dlTopic := e.Topic(t, "dead-letters")
	dlSub := e.Subscription(t, dlTopic, "dead-letters-sub", ackDeadline)
	msgs := publishDeadLetters(t, e, dlTopic, 20)

	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		out, errOut, code := runCommand(t, "", "replay", "--topic="+input, "--fromSubscription="+dlSub, "--replayId=slow")
		done <- result{out, errOut, code}
	}()
	select {
	case <-publishing:
	case r := <-done:
		t.Fatalf("replay ended before it published: exit %d\n%s%s", r.code, r.out, r.errOut)
	case <-time.After(time.Minute):
		t.Fatal("replay has not published within a minute")
	}
	time.Sleep(ackDeadline + ackDeadline/2) // the publish is under way for another 1 s
	resp, err := e.Client.SubscriptionAdminClient.Pull(context.Background(), &pubsubpb.PullRequest{Subscription: dlSub, MaxMessages: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetReceivedMessages()); n > 0 {
		t.Errorf("while replay publishes them, %d of its %d dead letters were delivered again (their ack deadline of %v passed): another replay would publish them twice", n, len(msgs), ackDeadline)
	}
	r := <-done
	if r.code != 0 || !strings.Contains(r.out, "replayed 20 dead letters from "+dlSub) {
		t.Errorf("replay: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	if got := pullAll(t, e, inputSub); len(got) != len(msgs) {
		t.Errorf("the input topic got %d messages, want %d", len(got), len(msgs))
	}
	// Acknowledged once published: nothing is left on the dead-letter subscription.
	if got := pullAll(t, e, dlSub); len(got) != 0 {
		t.Errorf("the dead-letter subscription still delivers %d messages", len(got))
	}
}

// TestReplayFromTopicInterrupted: replay interrupted while a pull's dead letters are being
// published waits for that publish, which the client goes on with, and acknowledges them: a
// later replay does not publish them again. They were counted as failed when the interrupt came
// and handed back to the subscription, though they had reached the input topic, so that the next
// run replayed each of them twice. Every Publish to the input topic takes 2 s (an interceptor of
// the emulator's server); the interrupt comes while the first is under way.
func TestReplayFromTopicInterrupted(t *testing.T) {
	input := "projects/" + pubsubtest.Project + "/topics/input"
	slow, publishing := slowPublishes(input, 2*time.Second)
	e := pubsubtest.StartServing(t, []grpc.ServerOption{slow})
	e.Topic(t, "input")
	inputSub := e.Subscription(t, input, "input-sub", time.Minute)
	dlTopic := e.Topic(t, "dead-letters")
	dlSub := e.Subscription(t, dlTopic, "dead-letters-sub", 10*time.Second)
	msgs := publishDeadLetters(t, e, dlTopic, 20)

	bin, _ := launchBinary(t)
	cmd := exec.Command(bin, "replay", "--topic="+input, "--fromSubscription="+dlSub, "--replayId=int")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-publishing:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("replay has not published within a minute\n%s", out.String())
	}
	interruptAndWait(t, cmd, time.Minute, &out)
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(out.String(), "(replayed 20)") {
		t.Errorf("replay interrupted: exit %d, want 130 and the 20 replayed\n%s", code, out.String())
	}
	if got := pullAll(t, e, inputSub); len(got) != len(msgs) {
		t.Errorf("the input topic got %d messages, want %d", len(got), len(msgs))
	}
	if got := pullAll(t, e, dlSub); len(got) != 0 {
		t.Errorf("the dead-letter subscription delivers %d of the %d published dead letters again: the next replay would publish them twice\n%s", len(got), len(msgs), out.String())
	}
}

// TestReplayFromTopicAckFails: when the acknowledgement of published dead letters fails, with a
// transient error the Acker retries (Internal) until replay ends, those messages are delivered
// again, and the next replay publishes them a second time: the replay says so and exits 1 (it
// exited 0, with a warning on standard error alone).
func TestReplayFromTopicAckFails(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	refuse := grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if _, ok := req.(*pubsubpb.AcknowledgeRequest); ok && failing.Load() {
			return nil, status.Error(codes.Internal, "acknowledgements are failing on purpose")
		}
		return handler(ctx, req)
	})
	e := pubsubtest.StartServing(t, []grpc.ServerOption{refuse})
	input := e.Topic(t, "input")
	inputSub := e.Subscription(t, input, "input-sub", time.Minute)
	dlTopic := e.Topic(t, "dead-letters")
	dlSub := e.Subscription(t, dlTopic, "dead-letters-sub", 10*time.Second)
	msgs := publishDeadLetters(t, e, dlTopic, 3)

	out, errOut, code := runCommand(t, "", "replay", "--topic="+input, "--fromSubscription="+dlSub, "--replayId=ackfails")
	failing.Store(false)
	want := "of those, 3 messages could not be acknowledged on " + dlSub
	if code != 1 || !strings.Contains(out, "replayed 3 dead letters from "+dlSub) || !strings.Contains(out, want) {
		t.Errorf("replay whose acknowledgements fail: exit %d, want 1 and %q\n%s%s", code, want, out, errOut)
	}
	if got := pullAll(t, e, inputSub); len(got) != len(msgs) {
		t.Errorf("the input topic got %d messages, want %d", len(got), len(msgs))
	}
	// Not acknowledged: Pub/Sub delivers them again once the deadline the Acker last set passes.
	acked := 0
	for _, m := range e.Server.Messages() {
		if m.Attributes[deadletter.AttrErrorMessage] != "" {
			acked += m.Acks
		}
	}
	if acked != 0 {
		t.Errorf("the emulator counts %d acknowledgements of the dead letters, want 0", acked)
	}
}

// TestReplayFromTopicSameReplayID: a dead letter that carries the run's --replayId is a message an
// earlier run with that id replayed, which failed before this run started (replayed again), or
// one this run replayed that failed again since (left, so the two cannot loop); a message with
// the id but without the dead-letter stage's attributes is one of the replayed messages
// themselves (the subscription is on --topic: refused). A subscription that does not exist is a
// failure, not an empty subscription.
func TestReplayFromTopicSameReplayID(t *testing.T) {
	e, input, inputSub, dlTopic, dlSub := replayTopics(t)
	dead := func(payload string, failedAt time.Time) *pubsubpb.PubsubMessage {
		m := deadletter.TopicMessage(flow.DeadLetter{Payload: []byte(payload), ErrorMessage: "bad", FailedAtMillis: failedAt.UnixMilli(),
			Attributes: map[string]string{"replay_id": "fix1", "replayed_from": dlSub}})
		return &pubsubpb.PubsubMessage{Data: m.Data, Attributes: m.Attributes}
	}
	e.Publish(t, dlTopic, dead(`{"id":1}`, time.Now().Add(-time.Hour)), dead(`{"id":2}`, time.Now().Add(time.Hour)))
	args := []string{"replay", "--topic=" + input, "--fromSubscription=" + dlSub, "--replayId=fix1"}
	out, errOut, code := runCommand(t, "", args...)
	if code != 1 || !strings.Contains(out, "replayed 1 dead letter from "+dlSub) ||
		!strings.Contains(out, "left 1 dead letter with this run's replay_id=fix1 that failed since it started (or within a minute before), taken for messages it replayed that failed again, on "+dlSub+", unacknowledged") {
		t.Errorf("replay with a reused --replayId: exit %d, want 1\n%s%s", code, out, errOut)
	}
	if got := pullAll(t, e, inputSub); len(got) != 1 || got[0].Data != `{"id":1}` || got[0].Attributes["replay_id"] != "fix1" {
		t.Errorf("replayed %v, want {\"id\":1} alone", got)
	}
	// The one left is handed back at once (the subscription's ack deadline is a minute).
	if got := pullAll(t, e, dlSub); len(got) != 1 || got[0].Data != `{"id":2}` {
		t.Errorf("the dead-letter subscription delivers %v, want {\"id\":2}", got)
	}

	// A message with the run's replay_id and a failedAt that is not the stage's: when it failed
	// cannot be told, so it is left; the others are replayed.
	e.Publish(t, dlTopic, &pubsubpb.PubsubMessage{Data: []byte(`{"id":4}`), Attributes: map[string]string{"replay_id": "fix1", "errorMessage": "x", "failedAt": "2026-12-05 07:00:00"}},
		dead(`{"id":5}`, time.Now().Add(-time.Hour)))
	out, errOut, code = runCommand(t, "", args...)
	if code != 1 || !strings.Contains(out, "replayed 1 dead letter from "+dlSub) ||
		!strings.Contains(out, "left 1 message with this run's replay_id=fix1 whose failedAt is not the dead-letter stage's") {
		t.Errorf("a dead letter with an unreadable failedAt: exit %d, want 1\n%s%s", code, out, errOut)
	}
	if got := pullAll(t, e, inputSub); len(got) != 1 || got[0].Data != `{"id":5}` {
		t.Errorf("replayed %v, want {\"id\":5} alone", got)
	}
	if got := pullAll(t, e, dlSub); len(got) != 1 || got[0].Data != `{"id":4}` {
		t.Errorf("the dead-letter subscription delivers %v, want {\"id\":4}", got)
	}

	// One of the replayed messages themselves, on the dead-letter topic: refused.
	e.Publish(t, dlTopic, &pubsubpb.PubsubMessage{Data: []byte(`{"id":3}`), Attributes: map[string]string{"replay_id": "fix1"}})
	out, errOut, code = runCommand(t, "", args...)
	if code != 1 || !strings.Contains(errOut, "delivers this replay's own messages (replay_id=fix1, without the dead-letter stage's errorMessage and failedAt)") {
		t.Errorf("a replayed message on the dead-letter topic: exit %d, want 1\n%s%s", code, out, errOut)
	}

	missing := "projects/" + pubsubtest.Project + "/subscriptions/no-such-sub"
	out, errOut, code = runCommand(t, "", "replay", "--topic="+input, "--fromSubscription="+missing)
	if code != 1 || !strings.Contains(errOut, "--fromSubscription "+missing+" does not exist in the Pub/Sub emulator") || strings.Contains(errOut, "no answer") {
		t.Errorf("a subscription that does not exist: exit %d, want 1\n%s%s", code, out, errOut)
	}
}

// TestReplayFromTopicLeavesCutMessages: a dead letter that left out some of its message's
// attributes (attributesOmitted), to stay within Pub/Sub's 100 or for a name the dead-letter stage
// gives its own, or whose payload was cut to fit the topic (payloadTruncated), is not an exact
// copy of the message, so replay leaves it on the subscription, says so (for every cause), names
// each on standard error with what finds its row in the dead-letter table, and exits 1; the
// others are replayed.
func TestReplayFromTopicLeavesCutMessages(t *testing.T) {
	e, input, inputSub, dlTopic, dlSub := replayTopics(t)
	huge := bytes.Repeat([]byte("x"), 9_999_000) // with the stage's attributes, over the topic's limit
	many := map[string]string{}
	for i := range 100 {
		many[fmt.Sprintf("k%03d", i)] = "v"
	}
	var msgs []*pubsubpb.PubsubMessage
	for _, dl := range []flow.DeadLetter{
		{Payload: []byte(`{"id":1}`), ErrorMessage: "bad", FailedAtMillis: 1, Attributes: map[string]string{"source": "a"}},
		{Payload: []byte(`{"id":2}`), ErrorMessage: "bad", FailedAtMillis: 2, Attributes: many, OrderingKey: "k1"},
		// An attribute of the name the stage gives its own: left out, not to fit.
		{Payload: []byte(`{"id":3}`), ErrorMessage: "bad", FailedAtMillis: 3, Attributes: map[string]string{deadletter.AttrErrorMessage: "the publisher's"}},
		{Payload: huge, ErrorMessage: strings.Repeat("e", 5000), FailedAtMillis: 4, Attributes: map[string]string{"source": strings.Repeat("s", 500)}},
	} {
		m := deadletter.TopicMessage(dl)
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: m.Data, Attributes: m.Attributes, OrderingKey: m.OrderingKey})
	}
	if msgs[1].Attributes[deadletter.AttrAttributesOmitted] != "3" {
		t.Fatalf("the dead letter of a message with 100 attributes: %v", msgs[1].Attributes)
	}
	if msgs[3].Attributes[deadletter.AttrPayloadTruncated] != "true" {
		t.Fatalf("the dead letter of a message of %d bytes was not cut", len(huge))
	}
	e.Publish(t, dlTopic, msgs...)
	out, errOut, code := runCommand(t, "", "replay", "--topic="+input, "--fromSubscription="+dlSub, "--replayId=r3")
	if code != 1 || !strings.Contains(out, "replayed 1 dead letter from "+dlSub) ||
		!strings.Contains(out, "left 3 messages whose dead letter on the topic is not the whole message (payloadTruncated=true: the payload was cut to fit the topic; "+
			"attributesOmitted: attributes were left out, to stay within Pub/Sub's 100 or because they have a name the dead-letter stage gives its own) on "+dlSub+
			", unacknowledged: replay them from the dead-letter table, which keeps the whole message") {
		t.Errorf("replay: exit %d, want 1\n%s%s", code, out, errOut)
	}
	// Each named, with what finds its row in the dead-letter table.
	sum := sha256.Sum256(huge)
	for _, want := range []string{
		" on " + dlSub + ", unacknowledged: the dead-letter stage left out 3 of its attributes to fit the topic, or for their names (attributesOmitted; it failed at 1970-01-01T00:00:00.002Z)",
		fmt.Sprintf(" on %s, unacknowledged: the dead-letter stage cut its payload of %d bytes to fit the topic (payloadTruncated; it failed at 1970-01-01T00:00:00.004Z): "+
			"replay it from the dead-letter table, --where \"lower(hex(SHA256(raw_message))) = '%x'\"", dlSub, len(huge), sum),
	} {
		if !strings.Contains(errOut, "pubsub-to-clickhouse replay: leaving message ") || !strings.Contains(errOut, want) {
			t.Errorf("replay does not name a message it leaves: want %q in\n%s", want, errOut)
		}
	}
	// The cut message has an ordering key: with message ordering, the dead letters of that key
	// behind it are not delivered until it is acknowledged, which replay says.
	if !strings.Contains(out, `the messages left unacknowledged (below) have ordering keys ("k1"): on a subscription with message ordering, Pub/Sub delivers no later message of those keys`) {
		t.Errorf("replay does not say which ordering keys the messages left hold up:\n%s", out)
	}
	if got := pullAll(t, e, inputSub); len(got) != 1 || got[0].Data != `{"id":1}` {
		t.Errorf("replayed %v, want only {\"id\":1}", got)
	}
	if got := pullAll(t, e, dlSub); len(got) != 3 || !slices.ContainsFunc(got, func(m pulled) bool { return m.Data == `{"id":2}` }) ||
		!slices.ContainsFunc(got, func(m pulled) bool { return m.Data == `{"id":3}` }) {
		t.Errorf("the dead-letter subscription delivers %d messages, want the three messages left", len(got))
	}
}
