package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCommandFlagProblems: a subcommand's flag it does not define is said in words, with the
// flag it resembles or as a parameter of the pipeline; a value a flag refuses names the flag,
// the value and the rule; exit status 2 each time, the problem said once.
func TestCommandFlagProblems(t *testing.T) {
	for _, tc := range []struct {
		run  func(context.Context, *cmdIO, []string) int
		args []string
		want string
	}{
		{runCheck, []string{"--clickhouseUrl=x", "f"}, "pubsub-to-clickhouse check: flag --clickhouseUrl is not defined: did you mean --clickHouseUrl? (names are case-sensitive)\n" +
			"(pubsub-to-clickhouse help check lists the flags)\n"},
		{runCheck, []string{"--windowSeconds=2", "f"}, "pubsub-to-clickhouse check: flag --windowSeconds is a parameter of the pipeline, which check does not take\n"},
		{runCheck, []string{"--nothingLikeIt=1", "f"}, "pubsub-to-clickhouse check: flag --nothingLikeIt is not defined\n"},
		{runPublish, []string{"--topic=projects/p/topics/t", "--envelope=yes", "-"}, "pubsub-to-clickhouse publish: --envelope \"yes\": not true or false\n"},
		// The flag package's "parse error", said by the flag's kind.
		{runInfer, []string{"--samples=abc", "f"}, "pubsub-to-clickhouse infer: --samples \"abc\": not a whole number, or out of range\n"},
		{runReplay, []string{"--deleteWait=10", "--topic=projects/p/topics/t", "--fromTable=dl"},
			"pubsub-to-clickhouse replay: --deleteWait \"10\": not a duration: a number with its unit, such as 30s, 10m or 1h\n"},
		// The replay_id attribute of every message: a value Pub/Sub refuses would leave them all.
		{runReplay, []string{"--replayId=" + strings.Repeat("r", 1025), "--topic=projects/my-project/topics/events", "--fromSubscription=projects/my-project/subscriptions/dead"},
			"pubsub-to-clickhouse replay: --replayId \"" + strings.Repeat("r", 40) + "…\": the value of the attribute \"replay_id\" is 1025 bytes, over Pub/Sub's 1024\n"},
		{runReplay, []string{"--replayId=r\xff", "--topic=projects/my-project/topics/events", "--fromSubscription=projects/my-project/subscriptions/dead"},
			"pubsub-to-clickhouse replay: --replayId \"r\\xff\": the value of the attribute \"replay_id\" is not valid UTF-8, which Pub/Sub requires of attributes\n"},
		// A flag that the rest of the command line makes meaningless is refused, not ignored.
		{runInfer, []string{"--clickHouseUrl=clickhouse://127.0.0.1:1", "--clickHouseDatabase=d", "--clickHouseUsername=u", "--clickHouseTable=t", "--samples=10", "m.jsonl"},
			"pubsub-to-clickhouse infer: --samples is for --fromSubscription; of FILEs every message is read\n"},
		{runInfer, []string{"--clickHouseUrl=clickhouse://127.0.0.1:1", "--clickHouseDatabase=d", "--clickHouseUsername=u", "--clickHouseTable=t", "--perFile", "--fromSubscription=projects/my-project/subscriptions/events-sub"},
			"pubsub-to-clickhouse infer: --perFile is for FILEs; each message of a subscription is one already\n"},
		{runReplay, []string{"--samples=10", "--topic=projects/my-project/topics/events", "--fromSubscription=projects/my-project/subscriptions/dead"},
			"pubsub-to-clickhouse replay: --samples is for --dry-run, which prints that many messages; a replay prints none\n"},
		{runReplay, []string{"--deleteWait=1m", "--topic=projects/my-project/topics/events", "--fromTable=dl", "--clickHouseUrl=clickhouse://127.0.0.1:1", "--clickHouseDatabase=d", "--clickHouseUsername=u"},
			"pubsub-to-clickhouse replay: --deleteWait is for --delete, which waits for its DELETE; without it nothing is deleted\n"},
	} {
		var out, errOut strings.Builder
		code := tc.run(context.Background(), newCmdIO(strings.NewReader(""), &out, &errOut), tc.args)
		if code != exitUsage || !strings.Contains(errOut.String(), tc.want) || strings.Count(errOut.String(), "lists the flags") != 1 || strings.Contains(errOut.String(), "provided but not defined") {
			t.Errorf("%v: exit %d, want %d, and standard error\n%s\nwant it to hold\n%s", tc.args, code, exitUsage, errOut.String(), tc.want)
		}
	}
}

// TestEmptySecretFlag: a secret flag given empty, with its value split off by a space, stops
// every command without showing the value (it was read as a file, and named in the error).
func TestEmptySecretFlag(t *testing.T) {
	const pw = "S3cret-Pw-stray"
	for _, tc := range []struct {
		run  func(context.Context, *cmdIO, []string) int
		args []string
	}{
		{runCheck, []string{"--clickHouseUrl=clickhouse://127.0.0.1:1", "--clickHouseTable=t", "--clickHousePassword=", pw, "m.jsonl"}},
		{runInfer, []string{"--clickHouseTable=t", "--clickHousePassword=", pw, "m.jsonl"}},
		{runReplay, []string{"--topic=projects/p/topics/t", "--fromTable=dl", "--clickHousePassword=", pw, "--dry-run"}},
		{runCheck, []string{"--clickHouseTable=t", "--clickHouseClientKey=", "MIGHAgEAMBMG" + pw, "m.jsonl"}},
		// A value that starts with a dash, which the flag package would name as an unknown flag.
		{runCheck, []string{"--clickHouseTable=t", "--clickHousePassword=", "-" + pw, "m.jsonl"}},
	} {
		var out, errOut strings.Builder
		code := tc.run(context.Background(), newCmdIO(strings.NewReader(""), &out, &errOut), tc.args)
		if code != exitUsage || !strings.Contains(errOut.String(), "is empty, and the argument after it is ") || strings.Contains(out.String()+errOut.String(), pw) {
			t.Errorf("%v: exit %d, want %d, and standard error\n%s", tc.args[len(tc.args)-3:], code, exitUsage, errOut.String())
		}
	}
	// An empty password on purpose, then a file: not this problem.
	file := filepath.Join(t.TempDir(), "m.jsonl")
	if err := os.WriteFile(file, []byte(`{"id":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	runCheck(context.Background(), newCmdIO(strings.NewReader(""), &out, &errOut), []string{"--clickHouseUrl=clickhouse://127.0.0.1:1", "--clickHouseTable=t", "--clickHousePassword=", file})
	if strings.Contains(errOut.String(), "is empty") {
		t.Errorf("--clickHousePassword= and then a file is refused:\n%s", errOut.String())
	}
}

// TestMetadataNote: the publish_time that check's note gives is the one its rows get (a String
// column's RFC 3339 with milliseconds, from flow.Message.PublishTimeMillis), not the clock's
// nanoseconds.
func TestMetadataNote(t *testing.T) {
	published := time.Date(2026, 12, 6, 17, 57, 59, 18291260, time.UTC)
	note := metadataNote(published)
	if want := "its publish_time the time of this check (2026-12-06T17:57:59.018Z); "; !strings.Contains(note, want) {
		t.Errorf("the note %q lacks %q", note, want)
	}
}

// TestURLSecretsHiddenByCommands: the value of a clickHouseUrl option whose name says it holds a
// secret (?my_token=, a setting sent with every query) is hidden from a command's output, as from
// the pipeline's log, also where clickhouse-go's error quotes the request's URL (over http://,
// every setting is a parameter of it).
func TestURLSecretsHiddenByCommands(t *testing.T) {
	const tok = "T0ken-in-url-77"
	file := filepath.Join(t.TempDir(), "m.jsonl")
	if err := os.WriteFile(file, []byte(`{"id":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  func(context.Context, *cmdIO, []string) int
		args []string
	}{
		{"check", runCheck, []string{"--clickHouseUrl=http://127.0.0.1:1?my_token=" + tok, "--clickHouseDatabase=d", "--clickHouseUsername=default", "--clickHouseTable=t", file}},
		{"infer --execute", runInfer, []string{"--clickHouseUrl=http://127.0.0.1:1?x_auth=" + tok, "--clickHouseDatabase=d", "--clickHouseUsername=default", "--clickHouseTable=t", "--execute", file}},
		{"replay", runReplay, []string{"--clickHouseUrl=http://127.0.0.1:1?my_token=" + tok, "--clickHouseDatabase=d", "--clickHouseUsername=default", "--topic=projects/my-project/topics/events", "--fromTable=dl", "--dry-run"}},
	} {
		var out, errOut strings.Builder
		code := tc.run(context.Background(), newCmdIO(strings.NewReader(""), &out, &errOut), tc.args)
		if code == exitOK || strings.Contains(out.String()+errOut.String(), tok) || !strings.Contains(errOut.String(), "127.0.0.1:1") {
			t.Errorf("%s: exit %d; want a failure to reach 127.0.0.1:1 that does not show %q; standard error:\n%s", tc.name, code, tok, errOut.String())
		}
	}
}

// TestCommandHelpDefaults: a command's --help gives a flag's default as a user would type it, and
// none for a flag without one (not Go's empty map, "map[]", of --attribute).
func TestCommandHelpDefaults(t *testing.T) {
	for name, run := range map[string]func(context.Context, *cmdIO, []string) int{
		"check": runCheck, "publish": runPublish, "replay": runReplay, "infer": runInfer,
	} {
		var out, errOut strings.Builder
		if code := run(context.Background(), newCmdIO(strings.NewReader(""), &out, &errOut), []string{"--help"}); code != exitOK {
			t.Errorf("%s --help: exit %d, want %d", name, code, exitOK)
		}
		help := out.String() + errOut.String()
		for _, def := range regexp.MustCompile(`\(default [^\n]*`).FindAllString(help, -1) {
			if strings.ContainsAny(def, "[]{}") {
				t.Errorf("%s --help gives a default in Go's syntax: %s", name, def)
			}
		}
	}
}

// TestCommandArgsEndOfFlags: "--" ends a command's flags, so that every argument after it is a
// file name, one that starts with "-" or looks like a flag included; flags and file names before
// it come in any order.
func TestCommandArgsEndOfFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--stackTrace=false", "a.jsonl", "--", "-b.jsonl", "--stackTrace", "c.jsonl"}, []string{"a.jsonl", "-b.jsonl", "--stackTrace", "c.jsonl"}},
		{[]string{"--", "-b.jsonl", "--stackTrace"}, []string{"-b.jsonl", "--stackTrace"}},
		{[]string{"a.jsonl", "--stackTrace=false", "b.jsonl"}, []string{"a.jsonl", "b.jsonl"}},
	} {
		var out, errOut strings.Builder
		fs := newCommandFlags(newCmdIO(strings.NewReader(""), &out, &errOut), "check", "", "")
		stackTrace := fs.Bool("stackTrace", false, "")
		got, err := parseCommandArgs(newCmdIO(strings.NewReader(""), &out, &errOut), fs, tc.args)
		if err != nil || !slices.Equal(got, tc.want) || *stackTrace {
			t.Errorf("%q: files %q, --stackTrace %v, error %v (%s); want files %q, no --stackTrace", tc.args, got, *stackTrace, err, errOut.String(), tc.want)
		}
	}
}
