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
	for _, where := range []string{"0) OR (1", "error_message LIKE '%a%') OR (1 = 1", "(1))", ")"} {
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
