package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/shared"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/evolve"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

// wikiColumns are the columns that the first 200 Wikipedia edits give on ClickHouse 18.16 (no
// Bool: booleans are UInt8), in the order of the fields' first appearance.
var wikiColumns = []string{
	"time\tNullable(String)",
	"channel\tNullable(String)",
	"cityName\tNullable(String)",
	"comment\tNullable(String)",
	"countryIsoCode\tNullable(String)",
	"countryName\tNullable(String)",
	"isAnonymous\tNullable(UInt8)",
	"isMinor\tNullable(UInt8)",
	"isNew\tNullable(UInt8)",
	"isRobot\tNullable(UInt8)",
	"isUnpatrolled\tNullable(UInt8)",
	"metroCode\tNullable(Int64)",
	"namespace\tNullable(String)",
	"page\tNullable(String)",
	"regionIsoCode\tNullable(String)",
	"regionName\tNullable(String)",
	"user\tNullable(String)",
	"delta\tNullable(Int64)",
	"added\tNullable(Int64)",
	"deleted\tNullable(Int64)",
}

// firstLines writes the first n lines of the shared corpus name to a file of the test's and
// returns its path.
func firstLines(t *testing.T, name string, n int) string {
	t.Helper()
	f, err := os.Open(filepath.Join(shared.Dir(t), "data", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b bytes.Buffer
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxLineBytes)
	for i := 0; i < n && sc.Scan(); i++ {
		b.Write(sc.Bytes())
		b.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// infer runs the infer command with args and returns its output, standard error and exit code.
func infer(t *testing.T, args ...string) (out, errOut string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = runInfer(context.Background(), newCmdIO(strings.NewReader(""), &o, &e), args)
	return o.String(), e.String(), code
}

// TestInferWikipedia: the first 200 Wikipedia edits give the CREATE TABLE that the rule says,
// printed; with --execute the table is created on the server with those columns, and a second
// --execute fails with the server's error, exit 1.
func TestInferWikipedia(t *testing.T) {
	srv := chtest.New(t)
	file := firstLines(t, "wikipedia_edits.jsonl", 200)
	conn := []string{"--clickHouseUrl=" + srv.URL, "--clickHouseDatabase=" + srv.Database, "--clickHouseUsername=default", "--clickHouseTable=wiki"}
	server, err := evolve.ServerOf(srv.MustQuery(t, "SELECT version()"))
	if err != nil {
		t.Fatal(err)
	}
	cols := strings.Join(wikiColumns, "\n")
	if server.Bool {
		cols = strings.ReplaceAll(cols, "Nullable(UInt8)", "Nullable(Bool)")
	}

	out, errOut, code := infer(t, append(conn, file)...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var lines []string
	for _, c := range strings.Split(cols, "\n") {
		name, typ, _ := strings.Cut(c, "\t")
		lines = append(lines, "    `"+name+"` "+typ)
	}
	want := "-- inferred from 200 messages\nCREATE TABLE `" + srv.Database + "`.`wiki`\n(\n" + strings.Join(lines, ",\n") + "\n)\nENGINE = MergeTree\nORDER BY tuple();\n"
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("printed (-want +got):\n%s", diff)
	}
	if got := srv.MustQuery(t, "EXISTS TABLE wiki"); got != "0" {
		t.Errorf("without --execute the table exists (%s)", got)
	}

	out2, errOut, code := infer(t, append(conn, "--execute", file)...)
	if code != exitOK || out2 != out {
		t.Fatalf("--execute: exit %d, printed\n%s\nstderr:\n%s", code, out2, errOut)
	}
	if want := "created table " + srv.Database + ".wiki with 20 columns"; !strings.Contains(errOut, want) {
		t.Errorf("--execute said %q, want it to contain %q", errOut, want)
	}
	got := srv.MustQuery(t, "SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 'wiki' FORMAT TSVRaw")
	if diff := cmp.Diff(cols, got); diff != "" {
		t.Errorf("system.columns (-want +got):\n%s", diff)
	}
	if engine := srv.MustQuery(t, "SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = 'wiki'"); engine != "MergeTree" {
		t.Errorf("engine %s, want MergeTree", engine)
	}

	_, errOut, code = infer(t, append(conn, "--execute", file)...)
	if code != exitFailed || !strings.Contains(errOut, "creating table "+srv.Database+".wiki") || !strings.Contains(errOut, "already exists") {
		t.Errorf("a second --execute: exit %d, stderr %s; want 1 and the server's error", code, errOut)
	}
}

// TestInferWide: --execute creates a table of more columns than a CREATE TABLE of ClickHouse's
// default max_query_size (256 KiB) holds: 1,200 fields of 240-byte names. It used to fail with
// code 62, "Max query size exceeded", exit 1, where the DDL it printed was right.
func TestInferWide(t *testing.T) {
	srv := chtest.New(t)
	fields := []string{`"id":1`}
	for i := range 1200 {
		fields = append(fields, fmt.Sprintf(`"%s%04d":%d`, strings.Repeat("w", 236), i, i))
	}
	file := filepath.Join(t.TempDir(), "wide.jsonl")
	if err := os.WriteFile(file, []byte("{"+strings.Join(fields, ",")+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := infer(t, "--clickHouseUrl="+srv.URL, "--clickHouseDatabase="+srv.Database, "--clickHouseUsername=default",
		"--clickHouseTable=wide", "--execute", file)
	if code != exitOK || !strings.Contains(errOut, "created table "+srv.Database+".wide with 1201 columns") {
		t.Fatalf("exit %d, stderr %s; want 0 and the table created", code, text.Cut(errOut, 500))
	}
	got := srv.MustQuery(t, "SELECT count(), countIf(type = 'Nullable(Int64)') FROM system.columns WHERE database = currentDatabase() AND table = 'wide'")
	if got != "1201\t1201" {
		t.Errorf("columns, Nullable(Int64) ones: %s, want 1201 of each", got)
	}
}

// TestInferComments: fields seen only with null, names that cannot be columns and messages that
// are not one JSON object are said in comments and on standard error; the engine and key are
// the flags'; no column at all, and no FILE, are errors.
func TestInferComments(t *testing.T) {
	srv := chtest.New(t)
	conn := []string{"--clickHouseUrl=" + srv.URL, "--clickHouseDatabase=" + srv.Database, "--clickHouseUsername=default", "--clickHouseTable=t"}
	dir := t.TempDir()
	file := filepath.Join(dir, "sample.jsonl")
	sample := strings.Join([]string{
		`{"id": 1, "gone": null, "f(x)": 1, "a b": "x", "obj": {"k": 1}}`,
		`not json`,
		``,
		`{"id": 2, "gone": null, "new\nline": null, "obj": [1]}`,
	}, "\n")
	if err := os.WriteFile(file, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := infer(t, append(conn, "--engine=ReplacingMergeTree", "--orderBy=id", "--execute", file)...)
	if code != exitFailed || !strings.Contains(errOut, "creating table "+srv.Database+".t: ") ||
		!strings.Contains(errOut, "(--orderBy=id names inferred columns, which are all Nullable: leave --orderBy out for ORDER BY tuple(), ") {
		// ORDER BY a Nullable column is refused by the server: the statement is printed, the
		// server's error said, and how to get a table all the same.
		t.Errorf("ORDER BY a Nullable column: exit %d, want 1; stderr:\n%s", code, errOut)
	}
	want := "-- inferred from 2 messages (1 skipped: not one JSON object of distinct fields)\n" +
		"-- not inferred, only null in the sample (no column until a value comes): \"gone\", \"new\\nline\"\n" +
		"-- not a column: field \"f(x)\" cannot be a column: the name contains a parenthesis, which clickhouse-go cannot name in an INSERT\n" +
		"CREATE TABLE `" + srv.Database + "`.`t`\n(\n    `id` Nullable(Int64),\n    `a b` Nullable(String),\n    `obj` Nullable(String)\n)\n" +
		"ENGINE = ReplacingMergeTree\nORDER BY id;\n"
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("printed (-want +got):\n%s", diff)
	}
	if want := "sample.jsonl:2: skipped: payload: "; !strings.Contains(errOut, want) {
		t.Errorf("stderr %q, want it to contain %q", errOut, want)
	}

	nulls := filepath.Join(dir, "nulls.jsonl")
	if err := os.WriteFile(nulls, []byte(`{"a": null}`+"\n"+`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := infer(t, append(conn, nulls)...); code != exitFailed || !strings.Contains(errOut, "no column inferred: no field of the 2 messages had a value other than null") {
		t.Errorf("only nulls: exit %d, stderr %s", code, errOut)
	}
	if _, errOut, code := infer(t, conn...); code != exitUsage || !strings.Contains(errOut, "no FILE given") {
		t.Errorf("no FILE: exit %d, stderr %s", code, errOut)
	}

	// An engine outside the MergeTree family takes no ORDER BY: the table is created on the
	// server, and an --orderBy beside it is a usage error before anything is read.
	logConn := append(conn[:len(conn)-1:len(conn)-1], "--clickHouseTable=log")
	out, errOut, code = infer(t, append(logConn, "--engine=Log", "--execute", file)...)
	if code != exitOK || !strings.HasSuffix(out, ")\nENGINE = Log;\n") {
		t.Errorf("--engine=Log: exit %d, printed\n%s\nstderr:\n%s", code, out, errOut)
	}
	if engine := srv.MustQuery(t, "SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = 'log'"); engine != "Log" {
		t.Errorf("--engine=Log created engine %q", engine)
	}
	// An engine with SETTINGS: the key goes before them, as the server takes it.
	stConn := append(conn[:len(conn)-1:len(conn)-1], "--clickHouseTable=st")
	if out, errOut, code := infer(t, append(stConn, "--engine=MergeTree SETTINGS index_granularity = 8192", "--execute", file)...); code != exitOK {
		t.Errorf("--engine with SETTINGS: exit %d, printed\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, errOut, code := infer(t, append(logConn, "--engine=Log", "--orderBy=id", file)...); code != exitUsage ||
		!strings.Contains(errOut, "--engine, --orderBy: ORDER BY id with engine Log: ORDER BY is a clause of the MergeTree engines alone") {
		t.Errorf("--engine=Log --orderBy=id: exit %d, stderr %s; want 2", code, errOut)
	}
}

// TestInferModern: on the ClickHouse 26 engine (skipped where it is not installed), booleans are
// Bool columns and, with --objectsAsJSON, objects JSON columns, created by --execute; an
// --engine with the table's COMMENT has the sorting key before it, and the note on a rounded
// integer names the big integer types.
func TestInferModern(t *testing.T) {
	srv := chtest.StartModern(t)
	file := filepath.Join(t.TempDir(), "sample.jsonl")
	if err := os.WriteFile(file, []byte(`{"id": 1, "ok": true, "obj": {"a": {"b": 1}}, "arr": [1]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := infer(t, "--clickHouseUrl="+srv.URL, "--clickHouseDatabase="+srv.Database, "--clickHouseUsername=default",
		"--clickHouseTable=t", "--objectsAsJSON", "--execute", file)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	want := "-- inferred from 1 message\nCREATE TABLE `" + srv.Database + "`.`t`\n(\n    `id` Nullable(Int64),\n    `ok` Nullable(Bool),\n" +
		"    `obj` JSON DEFAULT '{}',\n    `arr` Nullable(String)\n)\nENGINE = MergeTree\nORDER BY tuple();\n"
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("printed (-want +got):\n%s", diff)
	}
	got := srv.MustQuery(t, "SELECT name, type, default_expression FROM system.columns WHERE database = currentDatabase() AND table = 't' ORDER BY position FORMAT TSVRaw")
	if want := "id\tNullable(Int64)\t\nok\tNullable(Bool)\t\nobj\tJSON\t'{}'\narr\tNullable(String)\t"; got != want {
		t.Errorf("system.columns:\n%s\nwant\n%s", got, want)
	}

	// The table's COMMENT comes after the sorting key, which 26 refuses after it (code 62); the
	// note on an integer a Float64 rounds names the big integer types 26 has.
	if err := os.WriteFile(file, []byte("{\"v\": 18446744073709551615}\n{\"v\": -1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = infer(t, "--clickHouseUrl="+srv.URL, "--clickHouseDatabase="+srv.Database, "--clickHouseUsername=default",
		"--clickHouseTable=t2", "--engine=MergeTree COMMENT 'made by infer'", "--execute", file)
	if code != exitOK {
		t.Fatalf("--engine with a COMMENT: exit %d\n%s", code, errOut)
	}
	want = "-- inferred from 2 messages\n-- column `v` is Nullable(Float64), which stores the integer 18446744073709551615 (" + file + ":1) as 18446744073709552000: " +
		"declare it Int128 or Decimal by hand to keep such values\nCREATE TABLE `" + srv.Database + "`.`t2`\n(\n    `v` Nullable(Float64)\n)\nENGINE = MergeTree\nORDER BY tuple()\nCOMMENT 'made by infer';\n"
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("printed (-want +got):\n%s", diff)
	}
	if got := srv.MustQuery(t, "SELECT comment, sorting_key FROM system.tables WHERE database = currentDatabase() AND name = 't2' FORMAT TSVRaw"); got != "made by infer\t" {
		t.Errorf("system.tables: comment and sorting key %q, want %q", got, "made by infer\t")
	}
}

// TestInferFromSubscription: infer takes its sample from a subscription, acknowledges nothing,
// and releases every message it read, so that a reader gets all of them at once afterwards.
func TestInferFromSubscription(t *testing.T) {
	srv := chtest.New(t)
	e := pubsubtest.Start(t)
	topic := e.Topic(t, "events")
	sub := e.Subscription(t, topic, "events-sub", 60*time.Second) // a long deadline: only a release brings them back soon
	var msgs []*pubsubpb.PubsubMessage
	for i := range 30 {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"id":%d,"name":"n%d","score":%d.5}`, i, i, i))})
	}
	e.Publish(t, topic, msgs...)
	conn := []string{"--clickHouseUrl=" + srv.URL, "--clickHouseDatabase=" + srv.Database, "--clickHouseUsername=default", "--clickHouseTable=t"}

	out, errOut, code := infer(t, append(conn, "--fromSubscription="+sub, "--samples=10")...)
	want := "-- inferred from 10 messages\nCREATE TABLE `" + srv.Database + "`.`t`\n(\n    `id` Nullable(Int64),\n    `name` Nullable(String),\n" +
		"    `score` Nullable(Float64)\n)\nENGINE = MergeTree\nORDER BY tuple();\n"
	if code != exitOK || out != want || !strings.Contains(errOut, "read 10 messages from "+sub+" and released them unacknowledged") {
		t.Errorf("infer --fromSubscription: exit %d\n%s\nwant\n%s\nstderr:\n%s", code, out, want, errOut)
	}
	// Every message is still there, and comes at once (well before the 60 s ack deadline).
	start := time.Now()
	if got := len(e.PullAll(t, sub)); got != 30 {
		t.Errorf("after the sample the subscription delivered %d messages, want all 30", got)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the sampled messages came back after %v: they were not released", d)
	}
	for _, m := range e.Server.Messages() {
		if m.Acks > 1 {
			t.Errorf("message %s acknowledged %d times", m.ID, m.Acks)
		}
	}

	_, errOut, code = infer(t, append(conn, "--fromSubscription="+sub, "file.jsonl")...)
	if code != exitUsage || !strings.Contains(errOut, "give FILEs or --fromSubscription, not both") {
		t.Errorf("FILEs and --fromSubscription: exit %d, %s", code, errOut)
	}
	_, errOut, code = infer(t, append(conn, "--fromSubscription=my-sub")...)
	if code != exitUsage || !strings.Contains(errOut, `--fromSubscription "my-sub"`) {
		t.Errorf("a malformed subscription: exit %d, %s", code, errOut)
	}
	// A Pull that fails is said, not taken for an empty subscription.
	missing := "projects/" + pubsubtest.Project + "/subscriptions/no-such-sub"
	_, errOut, code = infer(t, append(conn, "--fromSubscription="+missing)...)
	if code != exitFailed || !strings.Contains(errOut, "--fromSubscription: "+missing+" does not exist in the Pub/Sub emulator") ||
		!strings.Contains(errOut, "publish --create --topic=projects/<project>/topics/<its topic> --subscription="+missing) || strings.Contains(errOut, "no answer") {
		t.Errorf("a subscription that does not exist: exit %d, want 1\n%s", code, errOut)
	}
	// Nothing listens at PUBSUB_EMULATOR_HOST: said at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	t.Setenv("PUBSUB_EMULATOR_HOST", dead)
	_, errOut, code = infer(t, append(conn, "--fromSubscription="+sub)...)
	if code != exitFailed || !strings.Contains(errOut, "PUBSUB_EMULATOR_HOST="+dead+": nothing listens there: start the emulator") {
		t.Errorf("an emulator that is not there: exit %d, want 1\n%s", code, errOut)
	}
	// An emulator that does not answer (it takes the connection, and closes it): the client
	// retries Unavailable until the Pull's 5 s are up, and the failure it retried is said, not an
	// empty subscription.
	mute, _ := listen(t)
	t.Setenv("PUBSUB_EMULATOR_HOST", mute)
	_, errOut, code = infer(t, append(conn, "--fromSubscription="+sub)...)
	if code != exitFailed || !strings.Contains(errOut, "--fromSubscription: pulling from "+sub+": no answer within 5s: ") || !strings.Contains(errOut, "Unavailable") {
		t.Errorf("an emulator that does not answer: exit %d, want 1\n%s", code, errOut)
	}
}

// TestNullableKeyHint: the server's refusal of a Nullable sorting key, in 18.16's words and in a
// newer server's, gets infer's way out; other errors, and no --orderBy, get nothing.
func TestNullableKeyHint(t *testing.T) {
	for _, tc := range []struct {
		err      string
		orderBy  string
		wantHint bool
	}{
		{"code: 44, message: Sorting key cannot contain nullable columns", "id", true},
		{"code: 44, message: Sorting key contains nullable columns, but merge tree setting `allow_nullable_key` is disabled", "(a, b)", true},
		{"code: 57, message: Table db.t already exists", "id", false},
		{"code: 44, message: Sorting key cannot contain nullable columns", "", false},
	} {
		got := nullableKeyHint(errors.New(tc.err), tc.orderBy)
		if want := "(--orderBy=" + tc.orderBy + " names inferred columns, which are all Nullable: leave --orderBy out"; tc.wantHint != strings.Contains(got, want) {
			t.Errorf("nullableKeyHint(%q, %q) = %q, want a hint: %v", tc.err, tc.orderBy, got, tc.wantHint)
		}
	}
}

// TestRoundedInFloat: a Float64 column inferred from integers and fractions gets a note for the
// first integer of the sample that a double does not hold exactly, with the value it would
// store (a string of digits too, which such a column takes as a number), and the types that hold
// every value of the column in the sample; integers a double holds (2^53, 2^60) and other columns
// get none.
func TestRoundedInFloat(t *testing.T) {
	columns := []evolve.Column{{Name: "id", Type: "Nullable(Int64)"}, {Name: "v", Type: "Nullable(Float64)"}, {Name: "w", Type: "Nullable(Float64)"},
		{Name: "x", Type: "Nullable(Float64)"}, {Name: "y", Type: "Nullable(Float64)"}, {Name: "z", Type: "Nullable(Float64)"}}
	msgs := []inputMessage{
		{Where: "f:1", Data: []byte(`{"id":9007199254740993,"v":1.5,"w":9007199254740992,"y":-0,"z":1e-99999999}`)},
		{Where: "f:2", Data: []byte(`{"id":1,"v":-9007199254740993,"w":1152921504606846976,"y":1e3,"z":9007199254740993}`)},
		{Where: "f:3", Data: []byte(`{"id":1,"v":18446744073709551615,"w":"9007199254740993","x":1.5,"y":0.0e-99999999}`)},
		{Where: "f:4", Data: []byte(`{"id":1,"x":12345678901234567.0,"y":9007199254740993}`)},
	}
	// Neither integer type for a column with a fraction (v, x: 1.5), which it would refuse, nor a
	// Decimal for one of more digits than a Decimal holds (z: 10^-99999999); integers in other
	// forms (-0, 1e3, 0.0e-99999999) are integers.
	want := []string{"column `v` is Nullable(Float64), which stores the integer -9007199254740993 (f:2) as -9007199254740992: declare it Decimal by hand to keep such values",
		// A string of digits converts into a Float64 column as the number it writes.
		"column `w` is Nullable(Float64), which stores the integer 9007199254740993 (f:3) as 9007199254740992: declare it Int64, UInt64 or Decimal by hand to keep such values",
		"column `x` is Nullable(Float64), which stores the integer 12345678901234567.0 (f:4) as 12345678901234568: declare it Decimal by hand to keep such values",
		"column `y` is Nullable(Float64), which stores the integer 9007199254740993 (f:4) as 9007199254740992: declare it Int64, UInt64 or Decimal by hand to keep such values",
		"column `z` is Nullable(Float64), which stores the integer 9007199254740993 (f:2) as 9007199254740992: declare it String by hand to keep such values"}
	if diff := cmp.Diff(want, roundedInFloat(columns, msgs, evolve.Server{})); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	// The types named are those that hold the integer and the column's other values: not Int64
	// for one beyond its range, nor UInt64 beside a negative one (-1, which it refuses), nor
	// either integer type for one beyond 64 bits.
	wide := []inputMessage{
		{Where: "g:1", Data: []byte(`{"a":18446744073709551615,"b":-9223372036854775809,"c":123456789012345678901234567890,"d":1` + strings.Repeat("0", 40) + `,"e":18446744073709551615}`)},
		{Where: "g:2", Data: []byte(`{"a":-1,"b":0.5,"c":0.5,"d":0.5,"e":1}`)},
	}
	floats := []evolve.Column{{Name: "a", Type: "Nullable(Float64)"}, {Name: "b", Type: "Nullable(Float64)"}, {Name: "c", Type: "Nullable(Float64)"}, {Name: "d", Type: "Nullable(Float64)"},
		{Name: "e", Type: "Nullable(Float64)"}}
	wantWide := []string{"column `a` is Nullable(Float64), which stores the integer 18446744073709551615 (g:1) as 18446744073709552000: declare it Decimal by hand to keep such values",
		"column `b` is Nullable(Float64), which stores the integer -9223372036854775809 (g:1) as -9223372036854776000: declare it Decimal by hand to keep such values",
		"column `c` is Nullable(Float64), which stores the integer 123456789012345678901234567890 (g:1) as 123456789012345680000000000000: declare it Decimal by hand to keep such values",
		"column `d` is Nullable(Float64), which stores the integer 1" + strings.Repeat("0", 40) + " (g:1) as 10000000000000000303786028427003666890752: declare it String by hand to keep such values",
		"column `e` is Nullable(Float64), which stores the integer 18446744073709551615 (g:1) as 18446744073709552000: declare it UInt64 or Decimal by hand to keep such values"}
	if diff := cmp.Diff(wantWide, roundedInFloat(floats, wide, evolve.Server{})); diff != "" {
		t.Errorf("notes of integers beyond Int64 (-want +got):\n%s", diff)
	}
	// A server with big integers (ClickHouse 21.7 and later) has the narrowest integer types of
	// each range named, and Decimals of up to 76 digits.
	modern, err := evolve.ServerOf("26.7.3.1")
	if err != nil {
		t.Fatal(err)
	}
	huge := append(wide, inputMessage{Where: "g:3", Data: []byte(`{"f":1` + strings.Repeat("0", 40) + `,"g":1` + strings.Repeat("0", 80) + `}`)},
		inputMessage{Where: "g:4", Data: []byte(`{"f":1,"g":1}`)})
	wantModern := []string{"column `a` is Nullable(Float64), which stores the integer 18446744073709551615 (g:1) as 18446744073709552000: declare it Int128 or Decimal by hand to keep such values",
		"column `b` is Nullable(Float64), which stores the integer -9223372036854775809 (g:1) as -9223372036854776000: declare it Decimal by hand to keep such values",
		"column `c` is Nullable(Float64), which stores the integer 123456789012345678901234567890 (g:1) as 123456789012345680000000000000: declare it Decimal by hand to keep such values",
		"column `d` is Nullable(Float64), which stores the integer 1" + strings.Repeat("0", 40) + " (g:1) as 10000000000000000303786028427003666890752: declare it Decimal by hand to keep such values",
		"column `e` is Nullable(Float64), which stores the integer 18446744073709551615 (g:1) as 18446744073709552000: declare it Int128, UInt64 or Decimal by hand to keep such values",
		"column `f` is Nullable(Float64), which stores the integer 1" + strings.Repeat("0", 40) + " (g:3) as 10000000000000000303786028427003666890752: declare it Int256, UInt256 or Decimal by hand to keep such values",
		"column `g` is Nullable(Float64), which stores the integer 1" + strings.Repeat("0", 80) + " (g:3) as 100000000000000000026609864708367276537402401181200809098131977453489758916313088: declare it String by hand to keep such values"}
	if diff := cmp.Diff(wantModern, roundedInFloat(append(floats, evolve.Column{Name: "f", Type: "Nullable(Float64)"}, evolve.Column{Name: "g", Type: "Nullable(Float64)"}), huge, modern)); diff != "" {
		t.Errorf("notes on a server with big integers (-want +got):\n%s", diff)
	}
	// The bounds of each range: Int128 holds -2^127 but not 2^127, UInt128 2^128 - 1 but not 2^128.
	for values, want := range map[string]string{
		"-170141183460469231731687303715884105728": "Int128 or Decimal", "170141183460469231731687303715884105728": "Int256, UInt128 or Decimal",
		"340282366920938463463374607431768211455": "Int256, UInt128 or Decimal", "340282366920938463463374607431768211456": "Int256, UInt256 or Decimal",
		"-9223372036854775808": "Int64 or Decimal", "9223372036854775808": "Int128, UInt64 or Decimal",
	} {
		if got := integerTypes([]string{values}, modern); got != want {
			t.Errorf("integerTypes(%s) on 26 = %q, want %q", values, got, want)
		}
	}
	for text, want := range map[string]struct {
		neg    bool
		digits string
		exp    int
	}{"1.50e3": {false, "15", 2}, "-0.001": {true, "1", -3}, "-0.0e5": {false, "", 0}, "100": {false, "1", 2}, "1e-99999999999": {false, "1", -1 << 40}} {
		if neg, digits, exp, ok := decimalDigits(text); !ok || neg != want.neg || digits != want.digits || exp != want.exp {
			t.Errorf("decimalDigits(%s) = %v, %q, %d, %v, want %v", text, neg, digits, exp, ok, want)
		}
	}
	for text, want := range map[string]string{"18446744073709551615": "18446744073709552000", "123456789012345678": "123456789012345680", "1e400": "",
		// An integer written with a fraction or an exponent is an integer too.
		"12345678901234567.0": "12345678901234568", "1.2345678901234567e16": "12345678901234568", "-123456789012345678E0": "-123456789012345680",
		"9007199254740993.5": "", "1e20": "", "9007199254740992.0": "", "1" + strings.Repeat("0", 400): "infinity", "1" + strings.Repeat("0", 40): "10000000000000000303786028427003666890752", "0.5": "", "-0.0": "", "0x20000000000001p0": "",
		// More than 800 digits before an exponent, which strconv alone misread (as 10^-180 and
		// 1.2345678901234567): 10^20, a double exactly, and 12345678901234567, which no double is.
		"1" + strings.Repeat("0", 1000) + "e-980": "", "12345678901234567" + strings.Repeat("0", 800) + "e-800": "12345678901234568"} {
		if got, _ := doubleOfInteger(text); got != want {
			t.Errorf("doubleOfInteger(%s) = %q, want %q", text, got, want)
		}
	}
}

// TestInferFromOrderedSubscription: on a subscription with message ordering, Pub/Sub delivers no
// later message of an ordering key while an earlier one is unacknowledged, and infer
// acknowledges none, so its sample holds the first message of each key alone. The output says
// so; before, it said "inferred from 2 messages" and nothing more, and the fields that only the
// later messages of a key had were not in the table, with nothing to tell why.
func TestInferFromOrderedSubscription(t *testing.T) {
	srv := chtest.New(t)
	e := pubsubtest.Start(t)
	topic := e.Topic(t, "events")
	sub := "projects/" + pubsubtest.Project + "/subscriptions/events-ordered"
	if _, err := e.Client.SubscriptionAdminClient.CreateSubscription(context.Background(), &pubsubpb.Subscription{
		Name: sub, Topic: topic, AckDeadlineSeconds: 60, EnableMessageOrdering: true,
	}); err != nil {
		t.Fatal(err)
	}
	var msgs []*pubsubpb.PubsubMessage
	for i := range 20 {
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: fmt.Appendf(nil, `{"id":%d,"later%d":1}`, i, i), OrderingKey: fmt.Sprint("k", i%2)})
	}
	e.Publish(t, topic, msgs...)
	conn := []string{"--clickHouseUrl=" + srv.URL, "--clickHouseDatabase=" + srv.Database, "--clickHouseUsername=default", "--clickHouseTable=t"}
	out, errOut, code := infer(t, append(conn, "--fromSubscription="+sub)...)
	note := `-- messages read have 2 ordering keys ("k0", "k1"): the subscription has message ordering, and Pub/Sub delivers no later message of a key ` +
		"while an earlier one is unacknowledged, so the sample holds only the first messages of each key, and a field that only later messages of a key have is not in it\n"
	if code != exitOK || !strings.HasPrefix(out, "-- inferred from 2 messages\n"+note) {
		t.Errorf("infer from an ordered subscription: exit %d\n%s\nwant it to start with\n-- inferred from 2 messages\n%s\nstderr:\n%s", code, out, note, errOut)
	}
	// Without message ordering nothing is held back, and nothing said.
	plain := e.Subscription(t, topic, "events-plain", 60*time.Second)
	e.Publish(t, topic, msgs...)
	out, errOut, code = infer(t, append(conn, "--fromSubscription="+plain)...)
	if code != exitOK || !strings.HasPrefix(out, "-- inferred from 20 messages\nCREATE TABLE") {
		t.Errorf("infer from a subscription without message ordering: exit %d\n%s\nstderr:\n%s", code, out, errOut)
	}
}
