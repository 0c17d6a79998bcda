package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
)

// runCmd runs command with args and returns its output, standard error and exit code.
func runCmd(run func(context.Context, *cmdIO, []string) int, stdin string, args ...string) (out, errOut string, code int) {
	var o, e bytes.Buffer
	code = run(context.Background(), newCmdIO(strings.NewReader(stdin), &o, &e), args)
	return o.String(), e.String(), code
}

// TestReadDirFollowsLinks: a directory's symbolic links to regular files are messages, read
// through the link; a link to a directory, a broken link and a subdirectory are skipped, each
// with a note that names it and says why.
func TestReadDirFollowsLinks(t *testing.T) {
	files, dir := t.TempDir(), t.TempDir()
	for name, data := range map[string]string{"a.json": `{"id":1}`, "b.json": `{"id":2}`} {
		if err := os.WriteFile(filepath.Join(files, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(files, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"c-dir": files, "d-broken": filepath.Join(files, "none.json")} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "e-sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	var notes []string
	msgs, err := readInputs(strings.NewReader(""), []string{dir}, false, func(s string) { notes = append(notes, s) })
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Where != filepath.Join(dir, "a.json") || string(msgs[0].Data) != `{"id":1}` || string(msgs[1].Data) != `{"id":2}` {
		t.Errorf("messages %q, want a.json's and b.json's, read through the links", msgs)
	}
	want := []string{
		filepath.Join(dir, "c-dir") + ": skipped: a symbolic link to a directory",
		filepath.Join(dir, "d-broken") + ": skipped: a broken symbolic link",
		filepath.Join(dir, "e-sub") + ": skipped: a directory (",
	}
	if len(notes) != len(want) {
		t.Fatalf("notes %q, want %d", notes, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(notes[i], w) {
			t.Errorf("note %q, want it to start %q", notes[i], w)
		}
	}
}

// TestNoMessageIsAnError: inputs that hold no message (an empty directory, a directory of broken
// links, an empty file, standard input of blank lines) are a usage error of check, infer and
// publish that names them, before anything is done; none reports success on nothing.
func TestNoMessageIsAnError(t *testing.T) {
	srv := chtest.New(t)
	srv.MustExec(t, "CREATE TABLE t (id UInt32) ENGINE = Memory")
	empty, links := t.TempDir(), t.TempDir()
	if err := os.Symlink(filepath.Join(empty, "gone.json"), filepath.Join(links, "m.json")); err != nil {
		t.Fatal(err)
	}
	blank := filepath.Join(t.TempDir(), "blank.jsonl")
	if err := os.WriteFile(blank, []byte("\n \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conn := []string{"--clickHouseUrl=" + srv.URL, "--clickHouseDatabase=" + srv.Database, "--clickHouseUsername=default", "--clickHousePassword=", "--clickHouseTable=t"}
	for _, tc := range []struct {
		name  string
		run   func(context.Context, *cmdIO, []string) int
		args  []string
		input string
		named string
	}{
		{"check", runCheck, append(conn, empty), "", fmt.Sprintf("no message in %q", empty)},
		{"check", runCheck, append(conn, links), "", fmt.Sprintf("no message in %q", links)},
		{"check", runCheck, append(conn, blank, "-"), "\n", fmt.Sprintf("no message in %q, - (standard input)", blank)},
		{"infer", runInfer, append(conn, empty), "", fmt.Sprintf("no message in %q", empty)},
		{"publish", runPublish, []string{"--topic=projects/my-project/topics/events", blank}, "", fmt.Sprintf("no message in %q", blank)},
	} {
		out, errOut, code := runCmd(tc.run, tc.input, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.named) || out != "" {
			t.Errorf("%s %s: exit %d, printed %q, stderr:\n%s\nwant exit 2 and %q", tc.name, tc.args[len(tc.args)-1], code, out, errOut, tc.named)
		}
	}
	// The broken link is said, before the error.
	if _, errOut, _ := runCmd(runCheck, "", append(conn, links)...); !strings.Contains(errOut, filepath.Join(links, "m.json")+": skipped: a broken symbolic link") {
		t.Errorf("stderr %q does not name the broken link", errOut)
	}
}

// TestCheckReadsLinkedFiles: check reads the messages of a directory of symbolic links to message
// files, and says so in its count.
func TestCheckReadsLinkedFiles(t *testing.T) {
	srv := chtest.New(t)
	srv.MustExec(t, "CREATE TABLE t (id UInt32) ENGINE = Memory")
	files, dir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(files, "m.json"), []byte(`{"id":300000000000}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(files, "m.json"), filepath.Join(dir, "m.json")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCmd(runCheck, "", "--clickHouseUrl="+srv.URL, "--clickHouseDatabase="+srv.Database, "--clickHouseUsername=default",
		"--clickHousePassword=", "--clickHouseTable=t", dir)
	if code != exitFailed || !strings.Contains(out, "1 message: 0 would be rows, 1 dead letter") {
		t.Errorf("exit %d, printed:\n%s\nstderr:\n%s\nwant the linked file's message, a dead letter (exit 1)", code, out, errOut)
	}
}

// TestURLSettingSaidAlike: an option of clickHouseUrl that clickhouse-go sends as a setting and
// cannot (a text setting over the native protocol) is said naming clickHouseUrl by check, infer and
// replay --fromTable alike.
func TestURLSettingSaidAlike(t *testing.T) {
	srv := chtest.New(t)
	file := filepath.Join(t.TempDir(), "m.jsonl")
	if err := os.WriteFile(file, []byte(`{"id":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conn := []string{"--clickHouseUrl=" + srv.URL + "?pass=x", "--clickHouseDatabase=" + srv.Database, "--clickHouseUsername=default", "--clickHousePassword="}
	const want = "clickHouseUrl: the option pass of the URL is none of clickhouse-go's, so it is sent to the server as a setting"
	for _, tc := range []struct {
		name string
		run  func(context.Context, *cmdIO, []string) int
		args []string
		code int
	}{
		{"check", runCheck, append(conn, "--clickHouseTable=t", file), exitCannotCheck},
		{"infer", runInfer, append(conn, "--clickHouseTable=t", file), exitFailed},
		{"replay", runReplay, append(conn, "--topic=projects/my-project/topics/events", "--fromTable=dl", "--dry-run"), exitFailed},
	} {
		_, errOut, code := runCmd(tc.run, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, "pubsub-to-clickhouse "+tc.name+": "+want) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit %d and %q", tc.name, code, errOut, tc.code, want)
		}
	}
}

// TestInferSkipsWhatPubSubRefuses: a line larger than Pub/Sub takes is no message of the pipeline:
// infer leaves it out of the sample, as check calls it "not a message Pub/Sub takes", naming
// file:line, and counts it in the first comment.
func TestInferSkipsWhatPubSubRefuses(t *testing.T) {
	srv := chtest.New(t)
	file := filepath.Join(t.TempDir(), "big.jsonl")
	big := `{"id":1.5,"huge":"` + strings.Repeat("x", 11<<20) + `"}`
	if err := os.WriteFile(file, []byte(`{"id":1}`+"\n"+big+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCmd(runInfer, "", "--clickHouseUrl="+srv.URL, "--clickHouseDatabase="+srv.Database, "--clickHouseUsername=default",
		"--clickHousePassword=", "--clickHouseTable=t", file)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if !strings.HasPrefix(out, "-- inferred from 1 message (1 skipped: not a message Pub/Sub takes)\n") ||
		!strings.Contains(out, "`id` Nullable(Int64)\n)") || strings.Contains(out, "huge") {
		t.Errorf("printed:\n%s\nwant the table of the first line alone", out)
	}
	if want := file + ":2: skipped: not a message Pub/Sub takes: the message is "; !strings.Contains(errOut, want) {
		t.Errorf("stderr %q, want it to contain %q", errOut, want)
	}
}
