package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestReplayWhereParentheses: a --where with a closing parenthesis it did not open would close
// the parentheses replay puts around it, and "0) OR (1" chose every row of the table, whatever
// --since and --until; it is a usage error naming the flag, the value and the rule, before
// ClickHouse is asked anything. Parentheses in strings, quoted names and comments are text.
func TestReplayWhereParentheses(t *testing.T) {
	// A heredoc string ends at its tag; a $ in a name, or one without a closing tag, opens none.
	for _, where := range []string{"0) OR (1", "error_message LIKE '%a%') OR (1 = 1", "(1))", ")", "raw_message = $$a$$) OR (1", "a$b$ = 1) OR ($b$",
		"$) OR (1", "raw_message = $t$x$t$ AND 1) OR (1"} {
		var out, errOut strings.Builder
		args := []string{"--topic=projects/my-project/topics/events", "--fromTable=dl", "--clickHouseUrl=clickhouse://127.0.0.1:1",
			"--clickHouseDatabase=d", "--clickHouseUsername=u", "--clickHousePassword=", "--since=1h", "--where=" + where}
		code := runReplay(context.Background(), newCmdIO(strings.NewReader(""), &out, &errOut), args)
		want := "pubsub-to-clickhouse replay: --where " + `"` + strings.ReplaceAll(where, `"`, `\"`) + `": the ")" at byte `
		if code != exitUsage || !strings.Contains(errOut.String(), want) || !strings.Contains(errOut.String(), "closes a parenthesis the condition did not open") {
			t.Errorf("--where=%s: exit %d, want %d, and standard error\n%s\nwant it to hold\n%s", where, code, exitUsage, errOut.String(), want)
		}
	}
	for _, where := range []string{
		"error_message LIKE '%)%'", `raw_message = 'a\')'`, "raw_message = 'it''s )'", "`a)` = 1", `"a)" = 1`,
		"1 -- a comment )\n", "1 /* ) */", "(1) AND ((2))", "", "bogus((",
		// Heredoc strings of newer servers: $$text$$ and $tag$text$tag$, quotes inside as text.
		"raw_message = $$a)$$", "raw_message = $t$a) $$ ' $t$", "$$)$$ = $x$($x$", "f($$)$$)",
	} {
		if err := checkWhere(where); err != nil {
			t.Errorf("checkWhere(%q) = %v, want nil", where, err)
		}
	}
}

// TestParseReplayTime: --since and --until take RFC 3339 or a duration ago; a negative duration,
// or one longer than Go's durations go, is refused with the rule's bounds.
func TestParseReplayTime(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                     {},
		"2026-01-15T10:00:00Z": time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC),
		"90m":                  now.Add(-90 * time.Minute),
	} {
		if got, err := parseReplayTime("--since", in, now); err != nil || !got.Equal(want) {
			t.Errorf("parseReplayTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"-5m", "9999999h", "yesterday", "2026-01-15"} {
		_, err := parseReplayTime("--since", in, now)
		if err == nil || !strings.Contains(err.Error(), "not negative, and at most 2562047h") {
			t.Errorf("parseReplayTime(%q): %v, want the rule with its bounds", in, err)
		}
	}
}

// TestReplayTimeDateTimeBounds: a --since before 1970 or an --until after 2106 is refused, as
// times a DateTime cannot hold: ClickHouse takes toDateTime(<Unix seconds>) of them modulo 2^32,
// and --since=1900-01-01T00:00:00Z chose no row (toDateTime(-2208988800) is 2036-02-07 on 18.16), exit 0.
func TestReplayTimeDateTimeBounds(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"--since=1900-01-01T00:00:00Z", `--since "1900-01-01T00:00:00Z": is before 1970-01-01T00:00:00Z, the earliest time a DateTime (failed_at) holds`},
		{"--since=1000000h", `--since "1000000h": is before 1970-01-01T00:00:00Z`},
		{"--until=2200-01-01T00:00:00Z", `--until "2200-01-01T00:00:00Z": is after 2106-02-07T06:28:15Z, the latest time a DateTime (failed_at) holds`},
	} {
		code, errOut := replayUsage(tc.flag)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, want %d, and standard error\n%s\nwant it to hold\n%s", tc.flag, code, exitUsage, errOut, tc.want)
		}
	}
	for _, ok := range []string{"--since=1970-01-01T00:00:00Z", "--until=2106-02-07T06:28:15Z", "--since=90m"} {
		_, errOut := replayUsage(ok)
		if strings.Contains(errOut, "a DateTime (failed_at) holds") {
			t.Errorf("%s: refused as outside a DateTime's times\n%s", ok, errOut)
		}
	}
}

// replayUsage runs replay with the table flags and flag, against no server, and returns its exit
// status and standard error.
func replayUsage(flag string) (int, string) {
	var out, errOut strings.Builder
	args := []string{"--topic=projects/my-project/topics/events", "--fromTable=dl", "--clickHouseUrl=clickhouse://127.0.0.1:1",
		"--clickHouseDatabase=d", "--clickHouseUsername=u", "--clickHousePassword=", "--dry-run", flag}
	code := runReplay(context.Background(), newCmdIO(strings.NewReader(""), &out, &errOut), args)
	return code, errOut.String()
}

// TestOutsideRange: a row's failed_at (as replay reads it) outside [--since, --until), as the
// query bounds them in whole seconds, or NULL while a bound is given, is one that --where chose
// past replay's parentheses; within them, or with no bound, it is not.
func TestOutsideRange(t *testing.T) {
	since := time.Date(2026, 1, 15, 10, 0, 0, 500_000_000, time.UTC) // the query's bound: 10:00:00
	until := time.Date(2026, 1, 15, 11, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		failedAt     string
		since, until time.Time
		want         bool
	}{
		{"2026-01-15 10:00:00", since, until, false},
		{"2026-01-15 10:59:59", since, until, false},
		{"2026-01-15 09:59:59", since, until, true},
		{"2026-01-15 11:00:00", since, until, true},
		{"2026-01-15 11:00:00", since, time.Time{}, false},
		{"2026-01-15 09:59:59", time.Time{}, until, false},
		{"NULL", since, time.Time{}, true},
		{"NULL", time.Time{}, time.Time{}, false},
		{"1999-01-01 00:00:00", time.Time{}, time.Time{}, false},
	} {
		if got := outsideRange(tc.failedAt, tc.since, tc.until); got != tc.want {
			t.Errorf("outsideRange(%q, %v, %v) = %v, want %v", tc.failedAt, tc.since, tc.until, got, tc.want)
		}
	}
}
