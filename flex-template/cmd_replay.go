package main

// replay: dead letters published again to the input topic, with their original bytes, attributes
// and ordering key (from the dead-letter table, where it has the optional columns attributes and
// ordering_key) plus replayed_from and replay_id; from the dead-letter table (a WHERE filter, a
// time range) or a subscription on the dead-letter topic.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/deadletter"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

// The attributes replay adds to every message it publishes.
const (
	AttrReplayedFrom = "replayed_from" // clickhouse://<database>.<table> or the subscription's name
	AttrReplayID     = "replay_id"     // the run's --replayId: by default its start, RFC 3339 UTC with milliseconds
)

const replayDescription = "Publishes dead letters again to --topic (the pipeline's input topic), each with its original bytes " +
	"and the attributes replayed_from (clickhouse://<database>.<table>, or the subscription) and replay_id (--replayId, by " +
	"default the run's start time, e.g. 2026-01-15T10:30:00.123Z), so that a replayed message can be told apart and a whole " +
	"replay found again.\n" +
	"From the dead-letter table (--fromTable, with the ClickHouse flags): the rows that match --where and failed_at in " +
	"[--since, --until), oldest first. A row carries its original attributes and ordering key back when the table has the optional " +
	"columns attributes and ordering_key (as the CREATE TABLE the pipeline suggests does); without them, only the two above. Rows " +
	"are kept unless --delete: after every message is published, the replayed rows (matched by a hash of all their columns, " +
	"so a dead letter written meanwhile is kept) are deleted with ALTER TABLE ... DELETE, a mutation, and replay waits for it.\n" +
	"From a subscription on the dead-letter topic (--fromSubscription): every message it delivers until a pull returns " +
	"nothing; the original attributes are the message's less errorMessage and failedAt, which the dead-letter stage added, " +
	"and its markers payloadTruncated, payloadBytes, payloadSha256 and attributesOmitted; its ordering key is the original's, and kept. " +
	"Each message is acknowledged only once it is published, its ack deadline extended meanwhile; one that the dead-letter stage cut to fit the topic (its payload: " +
	"payloadTruncated; or some of its attributes: attributesOmitted) is not replayed and not acknowledged (replay it from the " +
	"table, which keeps the payload whole).\n" +
	"--dry-run prints the count and the first --samples messages and publishes, deletes and acknowledges nothing.\n" +
	"Exit status: 0 when every dead letter found was replayed, 1 when something failed or was left (the count says what), " +
	"2 on a usage error."

// replayParams are the template parameters replay takes (for --fromTable).
var replayParams = pipeline.ConnectionParams

// runReplay runs replay.
func runReplay(ctx context.Context, cio *cmdIO, args []string) int {
	fs := newCommandFlags(cio, "replay", "--topic=projects/P/topics/T (--fromTable=T [ClickHouse flags] | --fromSubscription=S) [flags]", replayDescription)
	var o pipeline.Options
	pipeline.RegisterFlagsOf(fs, &o, replayParams...)
	var r replay
	fs.StringVar(&r.topic, "topic", "", "Pub/Sub `topic` to publish to (the pipeline's input topic), projects/<project>/topics/<name>. Required.")
	fs.StringVar(&r.table, "fromTable", "", "the dead-letter `table` in clickHouseDatabase to replay rows of")
	fs.StringVar(&r.where, "where", "", "with --fromTable: a SQL `condition` the rows must meet, e.g. \"error_message LIKE '%UInt8%'\"")
	since := fs.String("since", "", "with --fromTable: only rows with failed_at at or after this `time`: RFC 3339 (2026-01-15T10:00:00Z) or a duration ago (2h)")
	until := fs.String("until", "", "with --fromTable: only rows with failed_at before this `time`, in the forms of --since")
	fs.StringVar(&r.subscription, "fromSubscription", "", "a `subscription` on the dead-letter topic to replay messages of, projects/<project>/subscriptions/<name>")
	fs.BoolVar(&r.dryRun, "dry-run", false, "print what would be replayed, and publish, delete and acknowledge nothing")
	fs.BoolVar(&r.delete, "delete", false, "with --fromTable: delete the replayed rows once every message is published")
	fs.DurationVar(&r.deleteWait, "deleteWait", 10*time.Minute, "with --delete: how long to wait for the DELETE (a mutation) to finish, a `duration`")
	fs.IntVar(&r.samples, "samples", 3, "with --dry-run: how many messages to print")
	fs.StringVar(&r.id, "replayId", "", "the replay_id `attribute` of the messages (default: the run's start, RFC 3339 UTC with milliseconds)")
	rest, code, done := parseCommand(cio, "replay", fs, args, &o, nil)
	if done {
		return code
	}
	now := time.Now().UTC()
	if r.id == "" {
		r.id = now.Format(deadletter.FailedAtLayout)
	}
	var problems []error
	if len(rest) > 0 {
		problems = append(problems, fmt.Errorf("takes no arguments besides the flags, got %q", rest))
	}
	if _, err := psclient.ParseTopic(r.topic); err != nil {
		problems = append(problems, fmt.Errorf("--topic %q: %w", r.topic, err))
	}
	var err error
	if r.since, err = parseReplayTime("--since", *since, now); err != nil {
		problems = append(problems, err)
	}
	if r.until, err = parseReplayTime("--until", *until, now); err != nil {
		problems = append(problems, err)
	}
	if err := dateTimeBound("--since", *since, r.since); err != nil {
		problems = append(problems, err)
	}
	if err := dateTimeBound("--until", *until, r.until); err != nil {
		problems = append(problems, err)
	}
	// Every message carries it as its replay_id: a value Pub/Sub refuses would leave them all.
	if err := psclient.CheckMessage(&pubsub.Message{Attributes: map[string]string{AttrReplayID: r.id}}, ""); err != nil {
		problems = append(problems, fmt.Errorf("--replayId %q: %w", text.Cut(r.id, 40), err))
	}
	if err := checkWhere(r.where); err != nil {
		problems = append(problems, fmt.Errorf("--where %q: %w", r.where, err))
	}
	if r.samples < 0 {
		problems = append(problems, fmt.Errorf("--samples %d: must be 0 or more", r.samples))
	}
	if given(fs, "samples") && !r.dryRun {
		problems = append(problems, errors.New("--samples is for --dry-run, which prints that many messages; a replay prints none"))
	}
	if !r.since.IsZero() && !r.until.IsZero() && !r.since.Before(r.until) {
		problems = append(problems, fmt.Errorf("--since %s is not before --until %s: the range holds no dead letter", *since, *until))
	}
	switch {
	case (r.table == "") == (r.subscription == ""):
		problems = append(problems, errors.New("give one source: --fromTable (the dead-letter table) or --fromSubscription (on the dead-letter topic)"))
	case r.subscription != "":
		if _, err := psclient.ParseSubscription(r.subscription); err != nil {
			problems = append(problems, fmt.Errorf("--fromSubscription %q: %w", r.subscription, err))
		}
		for name, set := range map[string]bool{"--where": r.where != "", "--since": *since != "", "--until": *until != "", "--delete": r.delete, "--deleteWait": given(fs, "deleteWait")} {
			if set {
				problems = append(problems, fmt.Errorf("%s is for --fromTable; a subscription delivers all it holds", name))
			}
		}
	default:
		if err := o.ValidateOf(replayParams...); err != nil {
			problems = append(problems, err)
		}
		if strings.ContainsAny(r.table, "`.\x00") {
			problems = append(problems, fmt.Errorf("--fromTable %q: must be a bare table name in clickHouseDatabase, without a dot or a backtick", r.table))
		}
		if r.delete && r.dryRun {
			problems = append(problems, errors.New("--delete with --dry-run: a dry run deletes nothing; drop one of them"))
		}
		if r.deleteWait <= 0 {
			problems = append(problems, fmt.Errorf("--deleteWait=%v: must be a positive duration", r.deleteWait))
		}
		if given(fs, "deleteWait") && !r.delete {
			problems = append(problems, errors.New("--deleteWait is for --delete, which waits for its DELETE; without it nothing is deleted"))
		}
	}
	if len(problems) > 0 {
		return usageError(cio, "replay", errors.Join(problems...))
	}
	if r.subscription != "" {
		r.from = r.subscription
		return r.fromTopic(ctx, cio)
	}
	r.from = "clickhouse://" + o.ClickHouseDatabase + "." + r.table
	return r.fromDeadLetterTable(ctx, cio, o)
}

// checkTopic checks --topic before anything is read (not in a dry run, which publishes nothing):
// a missing one (on the emulator, which forgets all when it stops) is named with the command that
// creates it, instead of a Publish's bare NotFound after the first dead letters were read (from a
// subscription: pulled, a delivery attempt spent); one without a subscription (and without the
// topic's own retention) is refused, since every message published there would be lost.
func (r *replay) checkTopic(ctx context.Context) error {
	if r.dryRun {
		return nil
	}
	topic, _ := psclient.ParseTopic(r.topic)
	if err := psclient.Check(ctx, topic); err != nil {
		return fmt.Errorf("--topic %w", err)
	}
	// What is published to a topic without a subscription is lost, and replay deletes or
	// acknowledges the dead letters it has published.
	if subscribed, retained, known := psclient.TopicKeeps(ctx, topic); known && !subscribed && !retained {
		return fmt.Errorf("--topic %w; replayed nothing (give the topic of the pipeline's input subscription)", psclient.NoSubscriptionError(topic, "every message replayed there"))
	}
	return nil
}

// replay is one run of replay.
type replay struct {
	topic, table, where, subscription string
	since, until                      time.Time // zero: unbounded
	dryRun, delete                    bool
	deleteWait                        time.Duration
	samples                           int
	id                                string
	from                              string // replayed_from
}

// checkWhere refuses a --where condition with a closing parenthesis it did not open (outside
// its strings, quoted names, heredoc strings and comments): replay puts the condition in
// parentheses of its own, beside those of --since and --until, and such a one would close them,
// so that "0) OR (1" chose every row of the table, whatever the time range. Other faults are the
// server's to name.
func checkWhere(where string) error {
	depth := 0
	for i := 0; i < len(where); i++ {
		switch c := where[i]; {
		case c == '\'' || c == '"' || c == '`': // a string or a quoted name, with \ escapes
			for i++; i < len(where) && where[i] != c; i++ {
				if where[i] == '\\' {
					i++
				}
			}
		case c == '$' && (i == 0 || !isWordByte(where[i-1])):
			// A heredoc string of newer servers, $$text$$ or $tag$text$tag$ (ClickHouse's lexer,
			// src/Parsers/Lexer.cpp: a token that begins with $, up to the next $, is the tag,
			// and the text runs to the tag's next appearance); without a closing tag the $ is
			// a word's, as the lexer reads it. 18.16 has none and refuses the $.
			if tag := strings.IndexByte(where[i+1:], '$'); tag >= 0 {
				open := where[i : i+tag+2]
				if end := strings.Index(where[i+len(open):], open); end >= 0 {
					i += len(open) + end + len(open) - 1
				}
			}
		case strings.HasPrefix(where[i:], "--"):
			for i < len(where) && where[i] != '\n' {
				i++
			}
		case strings.HasPrefix(where[i:], "/*"):
			end := strings.Index(where[i+2:], "*/")
			if end < 0 {
				return nil // unclosed: the server says so
			}
			i += 2 + end + 1
		case c == '(':
			depth++
		case c == ')':
			if depth == 0 {
				return fmt.Errorf("the \")\" at byte %d (from 1) closes a parenthesis the condition did not open; replay puts the condition in parentheses of its own, "+
					"beside --since and --until, which it would close (choosing rows outside them): balance the condition's parentheses", i+1)
			}
			depth--
		}
	}
	return nil
}

// isWordByte reports whether c continues a word of ClickHouse's SQL (a name, a number, a
// keyword): an ASCII letter or digit, _ or $, which a name holds after its first character
// (ClickHouse's isWordCharASCII, and the $ its lexer takes in a bare word).
func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// parseReplayTime reads --since or --until: RFC 3339, or a Go duration before now; "" is zero.
func parseReplayTime(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%s %q: is neither an RFC 3339 time (2026-01-15T10:00:00Z) nor a duration ago (90m, 2h; not negative, and at most 2562047h, Go's longest)", flag, s)
}

// The times a DateTime holds: replay compares failed_at with toDateTime(<Unix seconds>), which
// takes a number outside them modulo 2^32 (ClickHouse 18.16: toDateTime(-1800000000) is
// 2049-01-22), so that a --since before 1970 chose no row at all, and an --until after 2106 fewer
// rows than it said.
var (
	minDateTime = time.Unix(0, 0).UTC()
	maxDateTime = time.Unix(1<<32-1, 0).UTC()
)

// dateTimeBound refuses t, the time flag s gives (zero: none), outside the times a DateTime holds.
func dateTimeBound(flag, s string, t time.Time) error {
	switch {
	case t.IsZero():
	case t.Before(minDateTime):
		return fmt.Errorf("%s %q: is before %s, the earliest time a DateTime (failed_at) holds, and ClickHouse would take it as a time to come: leave %s out to take the rows from the first",
			flag, s, minDateTime.Format(time.RFC3339), flag)
	case t.After(maxDateTime):
		return fmt.Errorf("%s %q: is after %s, the latest time a DateTime (failed_at) holds, and ClickHouse would take it as a time past: leave %s out to take the rows to the last",
			flag, s, maxDateTime.Format(time.RFC3339), flag)
	}
	return nil
}

// outsideRange reports whether failedAt, a row's failed_at as replay reads it (toString(failed_at,
// 'UTC'), "NULL" for a NULL), is outside [since, until) as the query bounds them (whole seconds,
// toDateTime(Unix)); a zero since or until bounds nothing. A row outside was chosen by --where past
// the parentheses replay puts around it, whatever checkWhere made of the condition (ClickHouse
// 26 reads "# " and nested /* */ comments, and $$ strings, which checkWhere takes as text).
func outsideRange(failedAt string, since, until time.Time) bool {
	if since.IsZero() && until.IsZero() {
		return false
	}
	t, err := time.ParseInLocation(time.DateTime, failedAt, time.UTC)
	if err != nil { // NULL, which no bound takes
		return true
	}
	return !since.IsZero() && t.Before(time.Unix(since.Unix(), 0)) || !until.IsZero() && !t.Before(time.Unix(until.Unix(), 0))
}

// message returns the message to publish for a dead letter's payload, original attributes and
// ordering key ("" for none).
func (r *replay) message(data []byte, attrs map[string]string, orderingKey string) *pubsub.Message {
	out := make(map[string]string, len(attrs)+2)
	maps.Copy(out, attrs)
	out[AttrReplayedFrom] = r.from
	out[AttrReplayID] = r.id
	return &pubsub.Message{Data: data, Attributes: out, OrderingKey: orderingKey}
}

// printSample prints one message of a dry run, each part on its line (line breaks inside the
// payload, an attribute or the ordering key shown as \n, \r, flow.OneLine).
func printSample(cio *cmdIO, i int, m *pubsub.Message) {
	fmt.Fprintf(cio.Out, "  %d. %s\n     attributes: %s\n", i+1, flow.OneLine(text.Cut(m.Data, 200)), flow.OneLine(formatAttributes(m.Attributes)))
	if m.OrderingKey != "" {
		fmt.Fprintf(cio.Out, "     ordering key: %s\n", flow.OneLine(m.OrderingKey))
	}
}

// formatAttributes prints attributes as k=v, sorted by key.
func formatAttributes(attrs map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(attrs) {
		parts = append(parts, k+"="+attrs[k])
	}
	return strings.Join(parts, " ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// condition returns the WHERE condition of the table's rows to replay, and its arguments.
func (r *replay) condition() (string, []any) {
	conds := []string{"1"}
	var args []any
	if !r.since.IsZero() {
		conds = append(conds, "failed_at >= toDateTime(?)")
		args = append(args, r.since.Unix())
	}
	if !r.until.IsZero() {
		conds = append(conds, "failed_at < toDateTime(?)")
		args = append(args, r.until.Unix())
	}
	if r.where != "" {
		conds = append(conds, "("+r.where+")")
	}
	return strings.Join(conds, " AND "), args
}

// rowHash returns the expression that identifies a row of the dead-letter table for --delete: a
// hash of every column of it replay knows (the four required ones, and those of message_id,
// attributes and ordering_key it has), so that two rows with the same hash are copies of each
// other. The columns may be Nullable (the pipeline writes to one as to its type): assumeNotNull
// reads a NULL as the type's default, so every row has a hash.
func rowHash(columns []string) string {
	parts := []string{"assumeNotNull(raw_message)", "assumeNotNull(error_message)", "assumeNotNull(stack_trace)", "assumeNotNull(failed_at)"}
	for _, c := range []string{"message_id", "attributes", "ordering_key"} {
		if slices.Contains(columns, c) {
			parts = append(parts, "assumeNotNull("+c+")")
		}
	}
	return "cityHash64(" + strings.Join(parts, ", ") + ")"
}

// fromDeadLetterTable replays the rows of the dead-letter table.
func (r *replay) fromDeadLetterTable(ctx context.Context, cio *cmdIO, o pipeline.Options) int {
	conn, err := openClickHouse(ctx, o)
	if err != nil {
		return failure(cio, "replay", err)
	}
	defer conn.Close()
	columns, err := deadletter.ColumnsToRead(ctx, conn, o.ClickHouseDatabase, r.table)
	if err != nil {
		return failure(cio, "replay", fmt.Errorf("--fromTable: %w", err))
	}
	if err := r.checkTopic(ctx); err != nil {
		return failure(cio, "replay", err)
	}
	if r.delete {
		// ALTER TABLE ... DELETE is a mutation, which ClickHouse has for the MergeTree engines
		// alone: learn it before publishing, or every message would be replayed again.
		var engine string
		if err := conn.QueryRow(ctx, "SELECT engine FROM system.tables WHERE database = ? AND name = ?", o.ClickHouseDatabase, r.table).Scan(&engine); err != nil {
			return failure(cio, "replay", fmt.Errorf("--delete: reading the engine of %s: %w; replayed nothing", r.from, err))
		}
		if !strings.HasSuffix(engine, "MergeTree") {
			return failure(cio, "replay", fmt.Errorf("--delete: %s has engine %s, and ClickHouse deletes rows (ALTER TABLE ... DELETE, a mutation) from a MergeTree engine's tables alone; replayed nothing: drop --delete, or move the dead letters to a MergeTree table", r.from, engine))
		}
	}
	table := chclient.QuoteIdent(o.ClickHouseDatabase) + "." + chclient.QuoteIdent(r.table)
	cond, args := r.condition()
	// The attributes and the ordering key, where the table keeps them (its optional columns).
	// A NULL (the columns may be Nullable, failed_at too) reads as none.
	attributes, orderingKey, messageID := "'{}'", "''", "''"
	if slices.Contains(columns, "attributes") {
		attributes = "ifNull(attributes, '{}')"
	}
	if slices.Contains(columns, "ordering_key") {
		orderingKey = "ifNull(ordering_key, '')"
	}
	if slices.Contains(columns, "message_id") { // to name a row in an error
		messageID = "ifNull(message_id, '')"
	}
	hash := rowHash(columns)
	rows, err := conn.Query(ctx, "SELECT ifNull(raw_message, ''), "+hash+", "+attributes+", "+orderingKey+", ifNull(toString(failed_at, 'UTC'), 'NULL'), "+messageID+
		" FROM "+table+" WHERE "+cond+" ORDER BY failed_at", args...)
	if err != nil {
		if code, ok := chclient.Code(err); ok && r.where != "" && whereCodes[code] {
			return failure(cio, "replay", fmt.Errorf("--where %q: ClickHouse refused the condition (%v); it is a SQL condition on the columns of %s "+
				"(%s), e.g. \"error_message LIKE '%%UInt8%%'\"; replayed nothing", r.where, chclient.ServerError(err), r.from, strings.Join(columns, ", ")))
		}
		return failure(cio, "replay", fmt.Errorf("reading %s: %w", r.from, err))
	}
	var msgs []*pubsub.Message
	var hashes []uint64
	var names []string // each row's, for an error: when it failed, and its message id
	for rows.Next() {
		var raw, attrsJSON, key, failedAt, id string
		var h uint64
		if err := rows.Scan(&raw, &h, &attrsJSON, &key, &failedAt, &id); err != nil {
			rows.Close()
			return failure(cio, "replay", fmt.Errorf("reading %s: %w", r.from, err))
		}
		name := "the row that failed at " + failedAt + " UTC"
		if failedAt == "NULL" { // a Nullable failed_at
			name = "the row with no failed_at (NULL)"
		}
		if id != "" {
			name += fmt.Sprintf(" (message_id %q)", id)
		}
		if r.where != "" && outsideRange(failedAt, r.since, r.until) {
			rows.Close()
			return failure(cio, "replay", fmt.Errorf("--where %q chose %s, outside --since and --until: the condition reaches past the parentheses replay puts around it "+
				"(a parenthesis closed in a comment or a string as the server reads them); replayed nothing: balance the condition's parentheses", r.where, name))
		}
		attrs, err := parseAttributes(attrsJSON)
		if err != nil {
			rows.Close()
			shown := text.Cut([]byte(attrsJSON), 200)
			if shown == "" {
				shown = "(empty)"
			}
			return failure(cio, "replay", fmt.Errorf("reading %s: the attributes %s of %s are not a JSON object of strings (%v); "+
				"replayed nothing: correct the row's attributes column, or leave the row out with --where", r.from, shown, name, err))
		}
		msgs = append(msgs, r.message([]byte(raw), attrs, key))
		hashes = append(hashes, h)
		names = append(names, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return failure(cio, "replay", fmt.Errorf("reading %s: %w", r.from, err))
	}
	// A dead letter Pub/Sub would refuse with the replay's attributes (too large, more than 100
	// attributes, text that is not UTF-8 in its attributes or ordering key, which only a hand can
	// have written into the table) stays in the table, and is not deleted: checked before any is
	// published, so that one such row holds up none of the others. The exit status says some
	// were left.
	var refused []error
	kept := 0
	for i, m := range msgs {
		if err := psclient.CheckMessage(m, r.topic); err != nil {
			refused = append(refused, fmt.Errorf("%s, a dead letter of %d bytes: %w", names[i], len(m.Data), err))
			continue
		}
		msgs[kept], hashes[kept] = m, hashes[i]
		kept++
	}
	msgs, hashes = msgs[:kept], hashes[:kept]
	if r.delete {
		// The DELETE finds rows by their hash, so it takes every exact copy of a replayed row (the
		// same in every column replay knows), chosen by the condition or not (a --where with
		// rand()): those it would take are replayed too, or they would go unreplayed.
		copies, err := copiesNotSelected(ctx, conn, table, hash, hashes)
		if err != nil {
			return failure(cio, "replay", fmt.Errorf("reading %s: %w; replayed nothing", r.from, err))
		}
		added := 0
		for i, n := 0, len(msgs); i < n; i++ {
			for ; copies[hashes[i]] > 0; copies[hashes[i]]-- {
				msgs, hashes = append(msgs, msgs[i]), append(hashes, hashes[i])
				added++
			}
		}
		if added > 0 {
			fmt.Fprintf(cio.Err, "pubsub-to-clickhouse replay: replaying %s more, exact copies of rows the condition chose, which the DELETE cannot tell apart from them\n", count(added, "dead letter"))
		}
	}
	code := exitOK
	if len(refused) > 0 {
		code = exitFailed
		fmt.Fprintf(cio.Err, "pubsub-to-clickhouse replay: leaving %s in %s, which Pub/Sub would refuse with the replay's attributes (replayed_from, replay_id): %v\n",
			count(len(refused), "dead letter"), r.from, flow.OneLine(errors.Join(refused...).Error()))
	}
	if r.dryRun {
		r.printDryRun(cio, msgs, "")
		return code
	}
	n, err := r.publish(ctx, cio, msgs)
	if err != nil {
		return failure(cio, "replay", fmt.Errorf("%w; replayed %d of %d rows of %s, deleted none", err, n, len(msgs), r.from))
	}
	fmt.Fprintf(cio.Out, "replayed %s from %s to %s (replay_id=%s)\n", count(n, "dead letter"), r.from, r.topic, r.id)
	if !r.delete || n == 0 {
		return code
	}
	// An exact copy of a replayed row written since the rows were read (the pipeline writing the
	// same dead letter again, or one of the same bytes at the same second) would go with it, not
	// replayed: the rows of a hash that now outnumber the replayed ones are all kept. A copy
	// written between this count and the DELETE's submission still goes (a mutation takes the
	// parts that exist when it is submitted): a window of a query's time, not the replay's.
	grown, err := copiesNotSelected(ctx, conn, table, hash, hashes)
	if err != nil {
		return failure(cio, "replay", fmt.Errorf("reading %s: %w; replayed %d rows, deleted none (they were replayed; delete them by hand, or a replay publishes them again)", r.from, err, n))
	}
	toDelete := withoutGrown(hashes, grown)
	if len(toDelete) < len(hashes) {
		code = exitFailed
		fmt.Fprintf(cio.Err, "pubsub-to-clickhouse replay: keeping %s in %s: exact copies of them were written while the replay ran, which the DELETE cannot tell apart; "+
			"they were replayed, and a later replay publishes them again\n", count(len(hashes)-len(toDelete), "replayed row"), r.from)
	}
	if len(toDelete) == 0 {
		return code
	}
	deleted, err := deleteRows(ctx, cio, conn, o.ClickHouseDatabase, r.table, hash, toDelete, r.deleteWait)
	if submitted := (deleteSubmitted{}); errors.As(err, &submitted) { // it says what becomes of the rows
		return failure(cio, "replay", fmt.Errorf("deleting the replayed rows of %s: %w", r.from, err))
	}
	if err != nil {
		return failure(cio, "replay", fmt.Errorf("deleting the replayed rows of %s: %w (they were replayed; delete them by hand, or a replay publishes them again)", r.from, err))
	}
	fmt.Fprintf(cio.Out, "deleted %s from %s\n", count(deleted, "replayed row"), r.from)
	if deleted != len(toDelete) {
		code = exitFailed
		fmt.Fprintf(cio.Err, "pubsub-to-clickhouse replay: %d rows were to be deleted and %d were: the table changed while the replay ran (rows deleted by another hand, or copies of replayed rows written as the DELETE began)\n", len(toDelete), deleted)
	}
	return code
}

// cutReason says why replay leaves a dead letter that the dead-letter stage cut to fit the topic
// (its attributes a), and how to find its row in the dead-letter table, which keeps it whole.
func cutReason(a map[string]string) string {
	if a[deadletter.AttrPayloadTruncated] == "true" {
		return fmt.Sprintf("the dead-letter stage cut its payload of %s bytes to fit the topic (payloadTruncated; it failed at %s): replay it from the dead-letter table, "+
			"--where \"lower(hex(SHA256(raw_message))) = '%s'\"", a[deadletter.AttrPayloadBytes], a[deadletter.AttrFailedAt], a[deadletter.AttrPayloadSHA256])
	}
	return fmt.Sprintf("the dead-letter stage left out %s of its attributes to fit the topic, or for their names (attributesOmitted; it failed at %s): "+
		"replay it from the dead-letter table, which keeps them in its attributes column when it has one", a[deadletter.AttrAttributesOmitted], a[deadletter.AttrFailedAt])
}

// orderingKeys are distinct ordering keys, in the order added; "" is none and not added.
type orderingKeys []string

func (k *orderingKeys) add(key string) {
	if key != "" && !slices.Contains(*k, key) {
		*k = append(*k, key)
	}
}

// String lists the keys, quoted, the first 5 and how many more.
func (k orderingKeys) String() string {
	var b strings.Builder
	for i, key := range k {
		if i == 5 {
			fmt.Fprintf(&b, " and %d more", len(k)-5)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(key))
	}
	return b.String()
}

// withoutGrown returns hashes less every hash of grown (copiesNotSelected's: the hashes of which
// the table now holds more rows than hashes lists), in their order; hashes itself when none is.
func withoutGrown(hashes []uint64, grown map[uint64]int) []uint64 {
	if len(grown) == 0 {
		return hashes
	}
	out := make([]uint64, 0, len(hashes))
	for _, h := range hashes {
		if grown[h] == 0 {
			out = append(out, h)
		}
	}
	return out
}

// copiesNotSelected returns, for each of hashes (the expression hash, rowHash, of rows of table),
// how many more rows of that hash table holds than hashes lists.
func copiesNotSelected(ctx context.Context, conn driver.Conn, table, hash string, hashes []uint64) (map[uint64]int, error) {
	selected := map[uint64]int{}
	for _, h := range hashes {
		selected[h]++
	}
	more := map[uint64]int{}
	const perQuery = 10_000
	distinct := slices.Collect(maps.Keys(selected))
	for start := 0; start < len(distinct); start += perQuery {
		list := make([]string, 0, perQuery)
		for _, h := range distinct[start:min(start+perQuery, len(distinct))] {
			list = append(list, fmt.Sprint(h))
		}
		rows, err := conn.Query(ctx, "SELECT "+hash+" AS h, count() FROM "+table+" WHERE h IN ("+strings.Join(list, ",")+") GROUP BY h")
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var h, n uint64
			if err := rows.Scan(&h, &n); err != nil {
				rows.Close()
				return nil, err
			}
			if extra := int(n) - selected[h]; extra > 0 {
				more[h] = extra
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return more, nil
}

// deleteSubmitted is an error of deleteRows once its DELETE was submitted: ClickHouse goes on
// with the mutation whatever replay does, and the error says so.
type deleteSubmitted struct{ error }

// deleteRows deletes the rows of database.table whose hash (the expression hash, rowHash) is one
// of hashes, with one mutation per 10,000 hashes (within ClickHouse's default max_query_size of
// 256 KiB), and waits up to wait for those mutations to finish, saying on standard error every
// 30 s what it waits for; it returns how many rows went, counted before and after. The rows are
// found by their hash alone, not by the replay's condition again, which may have changed
// meaning since (a --where with now() or rand()). ClickHouse runs a table's mutations in order,
// so a mutation of the table that never finishes (one whose expression throws, on ClickHouse
// 18.16, stays unfinished for ever) holds up these: after wait the error names it. An error once
// the DELETE is submitted (wait passed, an interrupt, or a DELETE after the first of several
// failed) is a deleteSubmitted.
func deleteRows(ctx context.Context, cio *cmdIO, conn driver.Conn, database, table, hash string, hashes []uint64, wait time.Duration) (int, error) {
	type mutation struct {
		ID, Command string
		Created     time.Time
		Done        uint8
	}
	mutations := func() (map[string]mutation, error) {
		rows, err := conn.Query(ctx, "SELECT mutation_id, command, create_time, is_done FROM system.mutations WHERE database = ? AND table = ?", database, table)
		if err != nil {
			return nil, fmt.Errorf("reading system.mutations: %w", err)
		}
		defer rows.Close()
		out := map[string]mutation{}
		for rows.Next() {
			var m mutation
			if err := rows.Scan(&m.ID, &m.Command, &m.Created, &m.Done); err != nil {
				return nil, fmt.Errorf("reading system.mutations: %w", err)
			}
			out[m.ID] = m
		}
		return out, rows.Err()
	}
	quoted := chclient.QuoteIdent(database) + "." + chclient.QuoteIdent(table)
	const perMutation = 10_000
	var lists []string
	for start := 0; start < len(hashes); start += perMutation {
		chunk := hashes[start:min(start+perMutation, len(hashes))]
		list := make([]string, len(chunk))
		for i, h := range chunk {
			list[i] = fmt.Sprint(h)
		}
		lists = append(lists, hash+" IN ("+strings.Join(list, ",")+")")
	}
	// rows counts the table's rows of the hashes.
	rows := func() (int, error) {
		total := 0
		for _, in := range lists {
			var n uint64
			if err := conn.QueryRow(ctx, "SELECT count() FROM "+quoted+" WHERE "+in).Scan(&n); err != nil {
				return 0, fmt.Errorf("counting the replayed rows: %w", err)
			}
			total += int(n)
		}
		return total, nil
	}
	before, err := mutations()
	if err != nil {
		return 0, err
	}
	had, err := rows()
	if err != nil {
		return 0, err
	}
	// Submitted whole, even after an interrupt (a statement each, quick): an interrupt stops the
	// wait below, not the DELETE, which ClickHouse goes on with.
	for i, in := range lists {
		if err := conn.Exec(context.WithoutCancel(ctx), "ALTER TABLE "+quoted+" DELETE WHERE "+in); err != nil {
			if i == 0 {
				return 0, err
			}
			// The DELETEs before it were submitted, and ClickHouse goes on with them.
			return 0, deleteSubmitted{fmt.Errorf("DELETE %d of %d failed: %w; the %d before it, of the first %d replayed rows' hashes, were submitted, and ClickHouse "+
				"deletes those rows when they finish (see system.mutations); the rows of the other %d of the %d hashes were replayed and are kept: "+
				"delete them by hand, or a replay publishes them again", i+1, len(lists), err, i, i*perMutation, len(hashes)-i*perMutation, len(hashes))}
		}
	}
	deadline := time.Now().Add(wait)
	nextNote := time.Now().Add(30 * time.Second)
	seen := map[string]bool{} // our mutations, once system.mutations shows them
	what := "the DELETE (its mutation not yet in system.mutations)"
	for {
		now, err := mutations()
		if ctx.Err() != nil {
			return 0, deleteSubmitted{fmt.Errorf("interrupted while waiting for %s to finish: ClickHouse goes on with it, and the rows are deleted when it finishes; "+
				"until then a replay of the same rows publishes them again; see system.mutations", what)}
		}
		if err != nil {
			return 0, err
		}
		// Ours are the mutations that were not there before and delete by a row hash (a
		// replicated table shows them once it has read them from ZooKeeper or Keeper, so they
		// are waited for until each has been seen); the unfinished ones older than ours hold
		// them up.
		var ours, ahead []mutation
		for id, m := range now {
			_, old := before[id]
			switch {
			case !old && strings.Contains(m.Command, "cityHash64("):
				seen[id] = true
				if m.Done == 0 {
					ours = append(ours, m)
				}
			case old && m.Done == 0:
				ahead = append(ahead, m)
			}
		}
		if len(ours) == 0 && len(seen) >= len(lists) {
			left, err := rows()
			return max(0, had-left), err
		}
		slices.SortFunc(ahead, func(a, b mutation) int {
			return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.ID, b.ID))
		})
		waitingOn := ""
		if len(ahead) > 0 {
			m := ahead[0]
			waitingOn = fmt.Sprintf("; ClickHouse runs a table's mutations in order, and the table's mutation %s of %s (%s) has not finished either",
				m.ID, m.Created.UTC().Format(time.RFC3339), flow.OneLine(text.Cut([]byte(m.Command), 200)))
		}
		if len(ours) > 0 {
			what = "the DELETE (mutation " + ours[0].ID + ")"
		}
		if time.Now().After(deadline) {
			return 0, deleteSubmitted{fmt.Errorf("%s has not finished after %v (--deleteWait)%s: the rows are deleted when it finishes, "+
				"and until then a replay of the same rows publishes them again; see system.mutations (and KILL MUTATION, on a server that has it)", what, wait, waitingOn)}
		}
		if time.Now().After(nextNote) {
			fmt.Fprintf(cio.Err, "pubsub-to-clickhouse replay: waiting for %s to finish%s\n", what, waitingOn)
			nextNote = time.Now().Add(30 * time.Second)
		}
		select {
		case <-ctx.Done(): // said at the top
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// printDryRun prints the count and the first samples of a dry run. heldBack is "" or, from a
// subscription with message ordering, orderedHeldBack's sentence: the count is then a least.
func (r *replay) printDryRun(cio *cmdIO, msgs []*pubsub.Message, heldBack string) {
	atLeast := ""
	if heldBack != "" {
		atLeast = "at least "
	}
	fmt.Fprintf(cio.Out, "dry run: would replay %s%s from %s to %s (replay_id=%s); nothing published, deleted or acknowledged\n",
		atLeast, count(len(msgs), "dead letter"), r.from, r.topic, r.id)
	for i, m := range msgs[:min(r.samples, len(msgs))] {
		printSample(cio, i, m)
	}
	if heldBack != "" {
		fmt.Fprintln(cio.Out, heldBack)
	}
}

// publish publishes msgs to the topic.
func (r *replay) publish(ctx context.Context, cio *cmdIO, msgs []*pubsub.Message) (int, error) {
	w, err := openTopicWriter(ctx, r.topic)
	if err != nil {
		return 0, err
	}
	defer w.close()
	p := newProgress(cio, "published", r.topic)
	n, err := w.publish(ctx, p, msgs)
	p.done(n, err)
	return n, err
}

// whereCodes are the codes of ClickHouse's refusal of a query whose fault is most likely the
// condition of --where: SYNTAX_ERROR (62), UNKNOWN_IDENTIFIER (47), UNKNOWN_FUNCTION (46),
// ILLEGAL_TYPE_OF_ARGUMENT (43), TYPE_MISMATCH (53), ILLEGAL_TYPE_OF_COLUMN_FOR_FILTER (59),
// NUMBER_OF_ARGUMENTS_DOESNT_MATCH (42), CANNOT_PARSE_TEXT (6) and its kin for dates and numbers
// (38, 41, 72).
var whereCodes = map[int32]bool{62: true, 47: true, 46: true, 43: true, 53: true, 59: true, 42: true, 6: true, 38: true, 41: true, 72: true}

// clockMargin is how much earlier than the replay's start a dead letter carrying its --replayId
// may have failed and still count as one of this run's own replay that failed again: failedAt is
// a worker's clock, and the start this machine's.
const clockMargin = time.Minute

// pullTimeout bounds one Pull: a pull that returns nothing within it ends the replay.
const pullTimeout = 10 * time.Second

// replayAckSettings are the settings of the Acker that keeps the ack deadlines of a batch being
// published extended (and of the messages replay and infer hold to their end), for a
// subscription whose ack deadline is ackDeadlineSeconds (0: unknown, GetSubscription denied;
// Pub/Sub's least is 10 s). The first extension comes within a third of
// it (the Acker's 5 s at most); each asks for the Acker's 60 s.
func replayAckSettings(ackDeadlineSeconds int32) psclient.AckSettings {
	var s psclient.AckSettings
	if d := time.Duration(ackDeadlineSeconds) * time.Second; d > 0 {
		s.FirstExtendAfter = min(5*time.Second, d/3)
		s.Tick = min(time.Second, s.FirstExtendAfter/2)
	}
	return s
}

// fromTopic replays the messages of a subscription on the dead-letter topic: pull, publish, then
// acknowledge, batch by batch, until a pull returns nothing.
func (r *replay) fromTopic(ctx context.Context, cio *cmdIO) int {
	name, _ := psclient.ParseSubscription(r.subscription)
	client, err := psclient.NewCheckedClient(ctx, name.Project)
	if err != nil {
		return failure(cio, "replay", fmt.Errorf("--fromSubscription %s: creating the Pub/Sub client: %w", r.subscription, err))
	}
	defer client.Close()
	subs := client.SubscriptionAdminClient
	// A subscription on the topic replay publishes to would deliver the replay's own messages
	// again, without end. (Reading the subscription needs pubsub.subscriptions.get, which a
	// subscriber may lack: then only the replay_id check below guards.)
	gctx, cancel := context.WithTimeout(ctx, pullTimeout)
	retry, retried := recordRetries()
	s, err := subs.GetSubscription(gctx, &pubsubpb.GetSubscriptionRequest{Subscription: r.subscription}, retry)
	subKnown := err == nil // s says the subscription's topic, ack deadline and message ordering
	noAnswer := errors.Is(gctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	if err != nil && noAnswer {
		return failure(cio, "replay", fmt.Errorf("--fromSubscription %s: no answer from Pub/Sub within %v: %v", r.subscription, pullTimeout, cmp.Or(retried(), err)))
	}
	if err == nil && s.GetTopic() == r.topic {
		return usageError(cio, "replay", fmt.Errorf("--fromSubscription %s is on --topic %s: it would deliver the replayed messages again; give a subscription on the dead-letter topic", r.subscription, r.topic))
	}
	if err != nil && status.Code(err) == codes.NotFound {
		return failure(cio, "replay", fmt.Errorf("--fromSubscription %w", psclient.NotFound(r.subscription, err)))
	}
	if err := r.checkTopic(ctx); err != nil {
		return failure(cio, "replay", err)
	}
	var w *topicWriter
	p := newProgress(cio, "published", r.topic)
	// fail reports err on a line of its own, after the progress line a terminal shows.
	fail := func(err error) int {
		p.clear()
		return failure(cio, "replay", err)
	}
	if !r.dryRun {
		if w, err = openTopicWriter(ctx, r.topic); err != nil {
			return fail(err)
		}
		defer w.close()
	}
	seen := map[string]bool{}
	var dry []*pubsub.Message
	// The messages of a batch stay with replay while it is published, however long that takes (a
	// large batch, a slow or retried publish): the Acker extends their ack deadline from the pull
	// until they are acknowledged, or else Pub/Sub would deliver them again once the
	// subscription's deadline (10 s by default) passed, and they would be replayed twice. So do
	// the messages held to the end (a dry run's, those left): delivered again while the run goes
	// on, a pull of only those would end it, and its count, with others still to come. Every
	// message pulled and not acknowledged goes back to the subscription at once when the replay
	// ends, however it ends (Release): a dry run's, those left, and a failed batch's.
	acker, err := psclient.NewAcker(ctx, r.subscription, replayAckSettings(s.GetAckDeadlineSeconds()))
	if err != nil {
		return fail(fmt.Errorf("--fromSubscription %s: %w", r.subscription, err))
	}
	defer func() {
		acker.Release(context.WithoutCancel(ctx))
		acker.Close()
	}()
	replayed, cut := 0, 0 // cut: messages the dead-letter stage cut to fit the topic
	tooLarge := 0         // messages Pub/Sub would refuse with the replay's attributes (psclient.CheckMessage)
	again := 0            // dead letters of messages this run replayed, which failed again
	unreadable := 0       // dead letters with this run's replay id whose failedAt is not the stage's
	start := time.Now()
	var heldKeys orderingKeys // of the messages left unacknowledged
	var dryKeys orderingKeys  // of the messages a dry run holds
	for {
		resp, err := pullWithin(ctx, subs, &pubsubpb.PullRequest{Subscription: r.subscription, MaxMessages: 1000}, pullTimeout)
		if err != nil {
			return fail(fmt.Errorf("%w (replayed %d)", err, replayed))
		}
		var batch []*pubsub.Message
		var acks []string
		fresh := 0
		for _, rm := range resp.GetReceivedMessages() {
			m := rm.GetMessage()
			if seen[m.GetMessageId()] {
				acker.Track(rm.GetAckId()) // delivered again while held
				continue
			}
			seen[m.GetMessageId()] = true
			fresh++
			// left is the count of the kind of message left unacknowledged that m is, if it is one.
			var left *int
			why := "" // why m is left, on its line of standard error
			a := m.GetAttributes()
			if a[AttrReplayID] == r.id {
				// A message this replay id published: without the dead-letter stage's attributes it
				// is one of the replayed messages themselves (the subscription is on --topic); with
				// them, a dead letter of one. One that failed before this run started was replayed by
				// an earlier run given the same --replayId, and is replayed again; one that failed
				// since failed again on this run's replay, and is left, or the two would loop.
				failedAt, err := time.Parse(deadletter.FailedAtLayout, a[deadletter.AttrFailedAt])
				switch {
				case a[deadletter.AttrErrorMessage] == "" && a[deadletter.AttrFailedAt] == "":
					for _, other := range resp.GetReceivedMessages() { // none of this pull is published
						acker.Track(other.GetAckId())
					}
					return fail(fmt.Errorf("--fromSubscription %s delivers this replay's own messages (replay_id=%s, without the dead-letter stage's errorMessage and failedAt): it is on --topic %s, not on the dead-letter topic; stopped after %d", r.subscription, r.id, r.topic, replayed))
				case err != nil: // not the stage's time: when it failed cannot be told
					left, why = &unreadable, fmt.Sprintf("it carries this run's replay_id, and its failedAt %q is not the dead-letter stage's (%s)", a[deadletter.AttrFailedAt], deadletter.FailedAtLayout)
				case !failedAt.Before(start.Add(-clockMargin)):
					left, why = &again, fmt.Sprintf("it carries this run's replay_id and failed at %s, since the run started: a message this run replayed that failed again (%s)",
						a[deadletter.AttrFailedAt], flow.OneLine(text.Cut(a[deadletter.AttrErrorMessage], 200)))
				}
			}
			if left == nil && (a[deadletter.AttrPayloadTruncated] == "true" || a[deadletter.AttrAttributesOmitted] != "") {
				left, why = &cut, cutReason(a)
			}
			if left != nil {
				*left++
				p.clear()
				fmt.Fprintf(cio.Err, "pubsub-to-clickhouse replay: leaving message %s on %s, unacknowledged: %s\n", m.GetMessageId(), r.subscription, why)
				acker.Track(rm.GetAckId())
				heldKeys.add(m.GetOrderingKey())
				continue
			}
			attrs := maps.Clone(m.GetAttributes())
			for _, k := range deadletter.AddedAttributes {
				delete(attrs, k)
			}
			msg := r.message(m.GetData(), attrs, m.GetOrderingKey())
			if err := psclient.CheckMessage(msg, r.topic); err != nil {
				tooLarge++
				acker.Track(rm.GetAckId())
				heldKeys.add(m.GetOrderingKey())
				p.clear()
				fmt.Fprintf(cio.Err, "pubsub-to-clickhouse replay: leaving message %s on %s, unacknowledged: %v\n", m.GetMessageId(), r.subscription, err)
				continue
			}
			if r.dryRun {
				dry = append(dry, msg)
				dryKeys.add(m.GetOrderingKey())
				acker.Track(rm.GetAckId())
				continue
			}
			batch = append(batch, msg)
			acks = append(acks, rm.GetAckId())
		}
		if fresh == 0 {
			break
		}
		if len(batch) > 0 {
			acker.Track(acks...)
			n, err := w.publish(ctx, p, batch)
			if err != nil {
				// Nothing of this batch is acknowledged: it is delivered again at once, and a second
				// run replays the published ones again (tracked, they are handed back by Release).
				return fail(fmt.Errorf("%w; replayed %d before this pull; of its %d, %d were published (and those that failed may have been), and all %d stay on %s, unacknowledged: "+
					"the next run publishes them again", err, replayed, len(batch), n, len(batch), r.subscription))
			}
			// Published, they are acknowledged after an interrupt too, or the next run would
			// publish them again.
			if err := acker.Ack(context.WithoutCancel(ctx), acks); err != nil {
				acker.Track(acks...) // the failed Ack stopped tracking them: handed back by Release
				return fail(fmt.Errorf("acknowledging on %s: %w (their %d messages were published and will be delivered again)", r.subscription, err, len(acks)))
			}
			replayed += n
		}
	}
	code := exitOK
	if r.dryRun {
		// Held to the end, the messages of a dry run hold back the later ones of their ordering
		// keys on a subscription with message ordering: the count is of the first of each key.
		r.printDryRun(cio, dry, orderedHeldBack(dryKeys, subKnown, s.GetEnableMessageOrdering(), "a dry run, which acknowledges none, "+
			"reads only the first dead letters of each key, and the count is of those: the replay itself, which acknowledges each once published, reads the others"))
	} else {
		// An acknowledgement that failed with a transient error was left to the Acker, which
		// retries it while the deadline it set holds; Release tries it once more. Those that
		// still failed are published and not acknowledged: Pub/Sub delivers them again, and the
		// next replay publishes them a second time.
		acker.Release(context.WithoutCancel(ctx))
		unacked := acker.Stats().AckFailed
		p.done(replayed, nil)
		fmt.Fprintf(cio.Out, "replayed %s from %s to %s (replay_id=%s)\n", count(replayed, "dead letter"), r.from, r.topic, r.id)
		if unacked > 0 {
			fmt.Fprintf(cio.Out, "of those, %s could not be acknowledged on %s (the warnings above say why): Pub/Sub delivers them again, and a replay from it publishes them a second time; "+
				"check the input for duplicates (replay_id=%s) before replaying again\n", count(int(unacked), "message"), r.subscription, r.id)
			code = exitFailed
		}
	}
	if len(heldKeys) > 0 {
		// With message ordering, Pub/Sub delivers no later message of a key while an earlier one
		// is unacknowledged: those behind the ones left were not delivered, and no count has them.
		fmt.Fprintf(cio.Out, "the messages left unacknowledged (below) have ordering keys (%s): on a subscription with message ordering, Pub/Sub delivers no later message of those keys "+
			"until they are acknowledged, so the dead letters behind them were not delivered to this replay; deal with the ones left as said, then replay again\n", heldKeys)
	}
	if cut > 0 {
		fmt.Fprintf(cio.Out, "left %s whose dead letter on the topic is not the whole message (payloadTruncated=true: the payload was cut to fit the topic; "+
			"attributesOmitted: attributes were left out, to stay within Pub/Sub's 100 or because they have a name the dead-letter stage gives its own) "+
			"on %s, unacknowledged: replay them from the dead-letter table, which keeps the whole message\n", count(cut, "message"), r.subscription)
		code = exitFailed
	}
	if tooLarge > 0 {
		fmt.Fprintf(cio.Out, "left %s that Pub/Sub would refuse with the replay's attributes (replayed_from, replay_id) on %s, unacknowledged\n", count(tooLarge, "message"), r.subscription)
		code = exitFailed
	}
	if unreadable > 0 {
		fmt.Fprintf(cio.Out, "left %s with this run's replay_id=%s whose failedAt is not the dead-letter stage's (%s), so when they failed cannot be told, on %s, unacknowledged: replay them with another --replayId\n",
			count(unreadable, "message"), r.id, deadletter.FailedAtLayout, r.subscription)
		code = exitFailed
	}
	if again > 0 {
		fmt.Fprintf(cio.Out, "left %s with this run's replay_id=%s that failed since it started (or within a minute before), taken for messages it replayed that failed again, on %s, unacknowledged: see their errorMessage, fix the cause, and replay again\n", count(again, "dead letter"), r.id, r.subscription)
		code = exitFailed
	}
	return code
}
