package main

// infer: the CREATE TABLE that a sample of messages gives by the column-type rule of schema
// evolution (transforms/evolve), printed, or run with --execute.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/evolve"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
)

const inferDescription = "Reads the messages of the files and prints the CREATE TABLE of clickHouseDatabase.clickHouseTable that they " +
	"give: one column per top-level field, in the order in which the fields first appear, each of the type the rule of " +
	"docs/conversion.md (\"Inferring a table from messages\") gives the field's values (a whole number is a Nullable(Int64), " +
	"a string a Nullable(String), an object or array a Nullable(String) of its JSON text, ...). The server at clickHouseUrl " +
	"is asked its version, so that the types are ones it has (Bool from ClickHouse 21.12, JSON from 25.3); with --execute " +
	"the statement is run there. Fields seen only with null get no column and are listed in a comment, as are fields " +
	"whose names cannot be columns; a message that is not one JSON object, or that Pub/Sub refuses to publish (over 10 MB, as check says), " +
	"is skipped, with a line on standard error.\n" +
	"A FILE is read as JSON lines (one message per line; lines of only spaces, tabs and carriage returns skipped), or whole with --perFile; a directory holds one " +
	"message per regular file (symbolic links followed; what else it holds is skipped with a line on standard error); - is standard input. " +
	"Inputs that hold no message at all are a usage error. With --fromSubscription the sample is up to --samples messages pulled from a " +
	"subscription and acknowledged by none: each is released at once when the sample is read, so it is delivered again, one " +
	"delivery attempt more (which a dead-letter policy of the subscription counts). On a subscription with message ordering the " +
	"sample holds only the first messages of each ordering key, which a comment says.\n" +
	"Exit status: 0 when the statement is printed (and run), 1 when no column could be inferred or ClickHouse failed, " +
	"2 on a usage error."

// inferParams are the template parameters infer takes.
var inferParams = append(append([]string{}, pipeline.ConnectionParams...), "clickHouseTable")

// inferFlags are infer's own flags.
type inferFlags struct {
	perFile, execute, objectsAsJSON bool
	engine, orderBy                 string
	fromSubscription                string
	samples                         int
}

func (f *inferFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.perFile, "perFile", false, "read each FILE whole as one message, not as JSON lines")
	fs.BoolVar(&f.execute, "execute", false, "run the CREATE TABLE at clickHouseUrl after printing it")
	fs.BoolVar(&f.objectsAsJSON, "objectsAsJSON", false, "make an object field a JSON column where the server has JSON (ClickHouse 25.3 and later), not a Nullable(String) of its text")
	fs.StringVar(&f.fromSubscription, "fromSubscription", "", "Pub/Sub `subscription` to take the sample from instead of FILEs, projects/<project>/subscriptions/<name>; nothing is acknowledged")
	fs.IntVar(&f.samples, "samples", 1000, "with --fromSubscription, the most `messages` to read")
	fs.StringVar(&f.engine, "engine", "MergeTree", "the table `engine`, as SQL")
	fs.StringVar(&f.orderBy, "orderBy", "", "the table's ORDER BY `expression`, as SQL, for a MergeTree engine (default tuple(); the inferred columns are Nullable, which a sorting key takes only with allow_nullable_key); other engines take none")
}

// runInfer runs infer.
func runInfer(ctx context.Context, cio *cmdIO, args []string) int {
	fs := newCommandFlags(cio, "infer", "[flags] (FILE... | --fromSubscription=S)", inferDescription)
	var o pipeline.Options
	pipeline.RegisterFlagsOf(fs, &o, inferParams...)
	var f inferFlags
	f.register(fs)
	files, code, done := parseCommand(cio, "infer", fs, args, &o, inferParams)
	if done {
		return code
	}
	if err := evolve.CheckOrderBy(f.engine, f.orderBy); err != nil {
		return usageError(cio, "infer", fmt.Errorf("--engine, --orderBy: %w", err))
	}
	var msgs []inputMessage
	var heldBack string // peekSubscription's
	var err error
	switch {
	case f.fromSubscription != "" && len(files) > 0:
		return usageError(cio, "infer", errors.New("give FILEs or --fromSubscription, not both"))
	case f.fromSubscription != "" && f.perFile:
		return usageError(cio, "infer", errors.New("--perFile is for FILEs; each message of a subscription is one already"))
	case f.fromSubscription != "":
		if f.samples < 1 {
			return usageError(cio, "infer", fmt.Errorf("--samples=%d: must be 1 or more messages", f.samples))
		}
		if _, err := psclient.ParseSubscription(f.fromSubscription); err != nil {
			return usageError(cio, "infer", fmt.Errorf("--fromSubscription %q %w", f.fromSubscription, err))
		}
		if msgs, heldBack, err = peekSubscription(ctx, f.fromSubscription, f.samples); err != nil {
			return failure(cio, "infer", fmt.Errorf("--fromSubscription: %w", err))
		}
		fmt.Fprintf(cio.Err, "pubsub-to-clickhouse infer: read %s from %s and released them unacknowledged\n", count(len(msgs), "message"), f.fromSubscription)
	case len(files) == 0:
		return usageError(cio, "infer", errors.New("no FILE given: name a file of JSON lines, a directory of messages, or - for standard input; or give --fromSubscription"))
	case given(fs, "samples"):
		return usageError(cio, "infer", errors.New("--samples is for --fromSubscription; of FILEs every message is read"))
	default:
		if msgs, err = readInputs(cio.In, files, f.perFile, inputNotes(cio, "infer")); err != nil {
			return usageError(cio, "infer", err)
		}
	}

	conn, err := openClickHouse(ctx, o)
	if err != nil {
		return failure(cio, "infer", err)
	}
	defer conn.Close()
	server, err := evolve.ServerOfConn(ctx, conn)
	if err != nil {
		return failure(cio, "infer", err)
	}

	sample := evolve.NewSample(evolve.Rule{Server: server, ObjectsAsJSON: f.objectsAsJSON})
	var nNotJSON, nUnpublishable int
	var kept []inputMessage // the sample's messages
	for _, m := range msgs {
		// A message Pub/Sub refuses never reaches the pipeline (check's rule): it is no sample of
		// what the table will get.
		if err := pubsubRefuses(flow.Message{Data: m.Data}); err != nil {
			nUnpublishable++
			fmt.Fprintf(cio.Err, "pubsub-to-clickhouse infer: %s: skipped: not a message Pub/Sub takes: %s\n", flow.OneLine(m.Where), flow.OneLine(err.Error()))
			continue
		}
		if err := sample.Add(m.Data); err != nil {
			nNotJSON++
			fmt.Fprintf(cio.Err, "pubsub-to-clickhouse infer: %s: skipped: %s\n", flow.OneLine(m.Where), flow.OneLine(err.Error()))
			continue
		}
		kept = append(kept, m)
	}
	msgs = kept
	fmt.Fprintf(cio.Out, "-- inferred from %s", count(sample.Messages(), "message"))
	switch notJSON, unpublishable := "not one JSON object of distinct fields", "not a message Pub/Sub takes"; {
	case nNotJSON > 0 && nUnpublishable > 0:
		fmt.Fprintf(cio.Out, " (%d skipped: %d %s, %d %s)", nNotJSON+nUnpublishable, nNotJSON, notJSON, nUnpublishable, unpublishable)
	case nNotJSON > 0:
		fmt.Fprintf(cio.Out, " (%d skipped: %s)", nNotJSON, notJSON)
	case nUnpublishable > 0:
		fmt.Fprintf(cio.Out, " (%d skipped: %s)", nUnpublishable, unpublishable)
	}
	fmt.Fprintln(cio.Out)
	if heldBack != "" {
		fmt.Fprintf(cio.Out, "-- %s\n", heldBack)
	}
	if pending := sample.Pending(); len(pending) > 0 {
		fmt.Fprintf(cio.Out, "-- not inferred, only null in the sample (no column until a value comes): %s\n", quoteAll(pending))
	}
	for _, r := range sample.Refused() {
		fmt.Fprintf(cio.Out, "-- not a column: %s\n", flow.OneLine(r.Error()))
	}
	if len(sample.Columns()) == 0 {
		return failure(cio, "infer", fmt.Errorf("no column inferred: no field of the %s had a value other than null", count(sample.Messages(), "message")))
	}
	for _, note := range roundedInFloat(sample.Columns(), msgs, server) {
		fmt.Fprintf(cio.Out, "-- %s\n", note)
	}
	ddl, err := evolve.CreateTable(o.ClickHouseDatabase, o.ClickHouseTable, sample.Columns(), f.engine, f.orderBy)
	if err != nil {
		return failure(cio, "infer", err)
	}
	fmt.Fprintf(cio.Out, "%s;\n", ddl)
	if !f.execute {
		return exitOK
	}
	if err := conn.Exec(clickhouse.Context(ctx, clickhouse.WithSettings(chclient.WithQuerySize(nil, ddl))), ddl); err != nil {
		return failure(cio, "infer", fmt.Errorf("creating table %s.%s: %w%s", o.ClickHouseDatabase, o.ClickHouseTable, err, nullableKeyHint(err, f.orderBy)))
	}
	fmt.Fprintf(cio.Err, "pubsub-to-clickhouse infer: created table %s.%s with %s\n", o.ClickHouseDatabase, o.ClickHouseTable, count(len(sample.Columns()), "column"))
	return exitOK
}

// nullableKeyHint returns what to do when the server refused the CREATE TABLE because its sorting
// key (--orderBy) names Nullable columns, which every inferred column is: ClickHouse 18.16 says
// only "Sorting key cannot contain nullable columns", and a newer server names the setting
// allow_nullable_key but not infer's own way out. "" for any other error.
func nullableKeyHint(err error, orderBy string) string {
	msg := strings.ToLower(err.Error())
	if orderBy == "" || !strings.Contains(msg, "sorting key") || !strings.Contains(msg, "nullable") {
		return ""
	}
	return fmt.Sprintf(" (--orderBy=%s names inferred columns, which are all Nullable: leave --orderBy out for ORDER BY tuple(), "+
		"or run the printed statement yourself with the key's columns made non-Nullable; a server that has the MergeTree "+
		"setting allow_nullable_key, which 18.16 has not, takes --engine='MergeTree SETTINGS allow_nullable_key=1')", orderBy)
}

// roundedInFloat returns, for each Float64 column of columns, a note on the first integer of the
// sample (msgs) that the column would not store as it is: an integer a double does not hold
// exactly (beyond 2^53, most of them), which the server stores as the nearest double. A column
// of integers and fractions is Float64 (evolve's rule), and the note says so before the table
// is made, naming the types of server that would hold every value of the column in the sample.
func roundedInFloat(columns []evolve.Column, msgs []inputMessage, server evolve.Server) []string {
	var notes []string
	for _, c := range columns {
		if !strings.Contains(c.Type, "Float64") {
			continue
		}
		var values []string
		note := "" // the note but for the types
		for _, m := range msgs {
			text, found, err := convert.TopLevel(m.Data, c.Name)
			if err != nil || !found {
				continue
			}
			values = append(values, text)
			if stored, rounded := doubleOfInteger(text); rounded && note == "" {
				note = fmt.Sprintf("column %s is %s, which stores the integer %s (%s) as %s: declare it ",
					chclient.QuoteIdent(c.Name), c.Type, text, flow.OneLine(m.Where), stored)
			}
		}
		if note != "" {
			notes = append(notes, note+integerTypes(values, server)+" by hand to keep such values")
		}
	}
	return notes
}

// integerTypes names the types of server that hold every number of texts (the values of a column
// in the sample, JSON numbers) as it is: the narrowest signed and the narrowest unsigned integer
// type of each integer's range (Int64 and UInt64; Int128, UInt128, Int256 and UInt256 where the
// server has them, Server.BigIntegers), and Decimal when their digits fit one (up to 38 digits,
// Decimal(38, S), the widest of every server; up to 76, Decimal(76, S), where the server has big
// integers); String when none does. A type that would refuse another value of the sample (an
// unsigned one a negative value, an integer type a fraction, a Decimal 1e-99) is not named:
// declared by hand, it would make that message a dead letter.
func integerTypes(texts []string, server evolve.Server) string {
	bits := []uint{64}
	maxDecimalDigits := 38
	if server.BigIntegers {
		bits, maxDecimalDigits = []uint{64, 128, 256}, 76
	}
	signed := make([]bool, len(bits))   // Int<bits[i]> holds every value
	unsigned := make([]bool, len(bits)) // UInt<bits[i]> holds every value
	for i := range bits {
		signed[i], unsigned[i] = true, true
	}
	whole, scale := 0, 0 // the most digits before and after the decimal point
	for _, text := range texts {
		neg, digits, exp, ok := decimalDigits(text)
		if !ok || digits == "" { // no number, or zero, which every type holds
			continue
		}
		whole, scale = max(whole, len(digits)+exp), max(scale, -exp)
		if exp < 0 || len(digits)+exp > 78 { // a fraction, or beyond 256 bits (2^256 has 78 digits)
			clear(signed)
			clear(unsigned)
			continue
		}
		n, _ := new(big.Int).SetString(digits+strings.Repeat("0", exp), 10)
		for i, b := range bits {
			// Int<b> holds -2^(b-1) to 2^(b-1) - 1; UInt<b> holds 0 to 2^b - 1.
			abs := n
			if neg {
				abs = new(big.Int).Sub(n, big.NewInt(1)) // -n fits when n - 1 < 2^(b-1)
			}
			signed[i] = signed[i] && abs.BitLen() < int(b)
			unsigned[i] = unsigned[i] && !neg && n.BitLen() <= int(b)
		}
	}
	var types []string
	for _, kind := range []struct {
		prefix string
		fits   []bool
	}{{"Int", signed}, {"UInt", unsigned}} {
		for i, b := range bits {
			if kind.fits[i] {
				types = append(types, fmt.Sprintf("%s%d", kind.prefix, b))
				break
			}
		}
	}
	if whole+scale <= maxDecimalDigits {
		types = append(types, "Decimal")
	}
	switch len(types) {
	case 0:
		return "String"
	case 1:
		return types[0]
	}
	return strings.Join(types[:len(types)-1], ", ") + " or " + types[len(types)-1]
}

// decimalDigits returns the value of text, a JSON number, as its sign and its significant digits
// times 10^exp, without leading or trailing zeros ("" for zero): 1.50e3 is "15" and 2, -0.001 is
// "1" and -3. ok is false when text is no JSON number. An exponent beyond int32 counts as 2^40,
// which no type holds, rather than be written out.
func decimalDigits(text string) (neg bool, digits string, exp int, ok bool) {
	s, neg := strings.CutPrefix(text, "-")
	mantissa, e, hasExp := strings.Cut(strings.ToLower(s), "e")
	if hasExp {
		n, err := strconv.ParseInt(e, 10, 32)
		if err != nil {
			n = 1 << 40
			if strings.HasPrefix(e, "-") {
				n = -n
			}
		}
		exp = int(n)
	}
	whole, fraction, _ := strings.Cut(mantissa, ".")
	if whole == "" || strings.Trim(whole+fraction, "0123456789") != "" {
		return false, "", 0, false
	}
	digits = strings.TrimLeft(whole+fraction, "0")
	trimmed := strings.TrimRight(digits, "0")
	if trimmed == "" {
		return false, "", 0, true
	}
	return neg, trimmed, exp - len(fraction) + len(digits) - len(trimmed), true
}

// doubleOfInteger returns, for text that is a JSON number of an integer value (digits, perhaps
// after a minus sign, or written with a fraction or an exponent: 12345678901234567.0,
// 1.2345678901234567e16) that no double holds exactly, the nearest double's value written out
// as ClickHouse shows it (the shortest text that reads back as the double; its exact value when
// that text is the integer's own, as for 10^40), with rounded true; "infinity" for digits beyond
// the largest double.
func doubleOfInteger(text string) (stored string, rounded bool) {
	if text == "" || strings.ContainsAny(text, "xXpP_iInN") {
		return "", false // JSON writes no hexadecimal, separator, Inf or NaN
	}
	f, err := convert.ParseFloat([]byte(text), 64) // not strconv alone: it misreads numbers of over 800 digits
	switch {
	case errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0):
		if strings.Trim(strings.TrimPrefix(text, "-"), "0123456789") == "" {
			return "infinity", true
		}
		return "", false
	case err != nil, math.Abs(f) < 1<<53:
		return "", false // every integer below 2^53 is a double, the nearest to its text
	}
	exact, ok := new(big.Rat).SetString(text)
	if !ok || !exact.IsInt() || new(big.Rat).SetFloat64(f).Cmp(exact) == 0 {
		return "", false
	}
	stored = strconv.FormatFloat(f, 'f', -1, 64)
	if r, ok := new(big.Rat).SetString(stored); ok && r.Cmp(exact) == 0 {
		// The shortest text that reads back as the double is the integer's own (10^40): the
		// double's exact value shows how it differs.
		stored = new(big.Float).SetFloat64(f).Text('f', 0)
	}
	return stored, true
}
