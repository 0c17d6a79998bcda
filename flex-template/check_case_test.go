package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

// TestCheckFieldInOtherLetterCase: a field that no column takes, while a column has its name in
// another letter case ("Id" beside the column "ID", which then takes its DEFAULT), gets a note
// naming the column, not only "no column takes the field". Before, a dead letter's missing field
// got that hint, and a row's dropped one did not.
func TestCheckFieldInOtherLetterCase(t *testing.T) {
	srv := chtest.New(t)
	srv.MustExec(t, "CREATE TABLE "+srv.Database+".events (ID UInt32 DEFAULT 7, n UInt8) ENGINE = MergeTree ORDER BY n")
	file := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(file, []byte(`{"Id":5,"n":1,"other":2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	code := runCheck(context.Background(), newCmdIO(strings.NewReader(""), &out, &errOut), []string{"--clickHouseUrl=" + srv.URL,
		"--clickHouseDatabase=" + srv.Database, "--clickHouseTable=events", "--clickHouseUsername=default", "--clickHousePassword=", file})
	for _, want := range []string{
		`  ID = DEFAULT (CAST(7, 'UInt32'))` + "\n",
		`  note: the field "Id" is dropped: the column "ID" differs from it only in letter case, and ClickHouse's names are case-sensitive: did you mean "ID"?; unknownFieldsColumn would keep it in a String column` + "\n",
		`  note: no column takes the field "other": dropped (unknownFieldsColumn would keep it in a String column)` + "\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("exit %d, standard output\n%s\nwant it to hold\n%s(standard error: %s)", code, out.String(), want, errOut.String())
		}
	}
}

// TestCheckNullTableWithoutView: a table of the engine Null that no materialized view reads
// stores nothing of what the job inserts, and its messages are acknowledged all the same: check
// says so after the rows (and the launch warns, checkTable). Before, the rows were shown as
// stored, with no word; with a materialized view reading the table, nothing is said.
func TestCheckNullTableWithoutView(t *testing.T) {
	srv := chtest.New(t)
	srv.MustExec(t, "CREATE TABLE "+srv.Database+".events (id UInt32) ENGINE = Null")
	file := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(file, []byte(`{"id":5}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func() string {
		var out, errOut strings.Builder
		code := runCheck(context.Background(), newCmdIO(strings.NewReader(""), &out, &errOut), []string{"--clickHouseUrl=" + srv.URL,
			"--clickHouseDatabase=" + srv.Database, "--clickHouseTable=events", "--clickHouseUsername=default", "--clickHousePassword=", file})
		if code != exitOK {
			t.Fatalf("exit %d; standard error: %s", code, errOut.String())
		}
		return out.String()
	}
	want := "note: " + srv.Database + ".events stores none of these rows: it has the engine Null, and no materialized view reads it: ClickHouse takes every INSERT into it and stores nothing\n"
	if out := check(); !strings.Contains(out, want) {
		t.Errorf("standard output\n%s\nwant it to hold\n%s", out, want)
	}
	srv.MustExec(t, "CREATE TABLE "+srv.Database+".kept (id UInt32) ENGINE = MergeTree ORDER BY id")
	srv.MustExec(t, "CREATE MATERIALIZED VIEW "+srv.Database+".mv TO "+srv.Database+".kept AS SELECT id FROM "+srv.Database+".events")
	if out := check(); strings.Contains(out, "stores none") {
		t.Errorf("with a materialized view reading the table, standard output\n%s\nsays it stores nothing", out)
	}
}

// TestCheckNotesBounded: check's notes on the fields no column takes quote at most 20 names, each
// cut to 200 bytes, then say how many more: a message of 10,000 fields, or with a field name of a
// megabyte, gave a note of as many bytes, the name whole.
func TestCheckNotesBounded(t *testing.T) {
	srv := chtest.New(t)
	srv.MustExec(t, "CREATE TABLE "+srv.Database+".events (id UInt32) ENGINE = MergeTree ORDER BY id")
	var b strings.Builder
	b.WriteString(`{"id":1,"` + strings.Repeat("n", 1<<20) + `":1`)
	for i := range 5000 {
		fmt.Fprintf(&b, `,"f%d":1`, i)
	}
	b.WriteString("}\n")
	file := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	code := runCheck(context.Background(), newCmdIO(strings.NewReader(""), &out, &errOut), []string{"--clickHouseUrl=" + srv.URL,
		"--clickHouseDatabase=" + srv.Database, "--clickHouseTable=events", "--clickHouseUsername=default", "--clickHousePassword=", file})
	if code != exitOK {
		t.Fatalf("exit %d; standard error: %s", code, errOut.String())
	}
	if n := out.Len(); n > 8<<10 {
		t.Errorf("standard output is %d bytes; want at most 8 KiB", n)
	}
	want := `"` + strings.Repeat("n", 200) + `…", "f0", "f1", `
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), `"f18", and 4981 more: dropped`) {
		t.Errorf("standard output\n%s\nwant the first name cut to 200 bytes, 20 names, and 4981 more", text.Cut(out.String(), 4000))
	}
}
