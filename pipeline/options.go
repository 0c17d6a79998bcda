// Package pipeline holds the streaming Beam pipeline that reads JSON messages
// from a Pub/Sub subscription and inserts them as rows into ClickHouse,
// launched as a Dataflow Flex Template.
//
// Its template parameters are [Options], with their flags ([RegisterFlags])
// and their checks ([Options.Validate]). A Flex Template passes each template
// parameter to the launcher as a Go flag of the same name, --name=value.
package pipeline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
)

// Flag names, which are also the template parameter names. Keep them in step
// with the Flex Template metadata.
const (
	flagInputSubscription         = "inputSubscription"
	flagClickHouseURL             = "clickHouseUrl"
	flagClickHouseDatabase        = "clickHouseDatabase"
	flagClickHouseTable           = "clickHouseTable"
	flagClickHouseUsername        = "clickHouseUsername"
	flagClickHousePassword        = "clickHousePassword"
	flagClickHouseDeadLetterTable = "clickHouseDeadLetterTable"
	flagDeadLetterTopic           = "deadLetterTopic"
	flagWindowSeconds             = "windowSeconds"
	flagBatchRowCount             = "batchRowCount"
	flagMaxInsertBlockSize        = "maxInsertBlockSize"
	flagMaxRetries                = "maxRetries"
	flagInsertDeduplicate         = "insertDeduplicate"
	flagInsertQuorum              = "insertQuorum"
	flagInsertDistributedSync     = "insertDistributedSync"
	flagNumShards                 = "numShards"
	flagRetryInitialBackoffMillis = "retryInitialBackoffMillis"
	flagRetryMaxBackoffMillis     = "retryMaxBackoffMillis"
	flagStopAfterIdle             = "stopAfterIdle"
	flagSchemaRefreshSeconds      = "schemaRefreshSeconds"
)

// Defaults of the parameters that have one; see [Defaults].
const (
	defaultMaxInsertBlockSize    = 1_000_000
	defaultMaxRetries            = 5
	defaultInsertDeduplicate     = true
	defaultInsertDistributedSync = true
	defaultNumShards             = 0 // auto: see [Options.Shards]
	defaultRetryInitialBackoffMs = 5_000
	defaultRetryMaxBackoffMs     = 60_000
	defaultSchemaRefreshSeconds  = 60
)

// redacted replaces a password wherever one would be shown.
const redacted = "xxxxx"

// maxShownValue is how many characters of an offending value a [ParamError]
// shows.
const maxShownValue = 100

// Options are the template parameters. Each field is one flag of the same
// name as given in its comment (see [RegisterFlags]); [Defaults] gives the
// defaults and [Options.Validate] checks the values.
//
// Options holds the ClickHouse password in clear, so that it reaches the
// workers when Options is a field of a DoFn (Beam serializes DoFns as JSON;
// Options has no custom JSON encoding on purpose). Any other printing of
// Options hides the password: String, GoString and every fmt verb (Options
// implements [fmt.Formatter]) show "xxxxx" instead, and hide the password in
// the userinfo of clickHouseUrl too.
type Options struct {
	// InputSubscription (flag inputSubscription, required) is the Pub/Sub
	// subscription to read JSON messages from, as
	// projects/<project>/subscriptions/<name>; see [SplitSubscription].
	InputSubscription string

	// ClickHouseURL (flag clickHouseUrl, required) is the ClickHouse server:
	// http://host:8123 (HTTP interface), https://host:8443 (HTTPS, as on
	// ClickHouse Cloud) or clickhouse://host:9000 (native protocol). It may
	// carry a path, a query and several comma-separated hosts; a password in
	// its userinfo is hidden by String and [Options.RedactedURL].
	ClickHouseURL string

	// ClickHouseDatabase (flag clickHouseDatabase, required) is the database
	// of ClickHouseTable and ClickHouseDeadLetterTable.
	ClickHouseDatabase string

	// ClickHouseTable (flag clickHouseTable, required) is the table that rows
	// are inserted into: a bare table name, without "<database>.".
	ClickHouseTable string

	// ClickHouseUsername (flag clickHouseUsername, required) is the
	// ClickHouse user.
	ClickHouseUsername string

	// ClickHousePassword (flag clickHousePassword) is the password of
	// ClickHouseUsername. The flag is meant to be given (a required template
	// parameter), but the empty string is a valid value, because ClickHouse's
	// default user has an empty password; Validate does not check it.
	// It is never shown: see the type's comment.
	ClickHousePassword string

	// ClickHouseDeadLetterTable (flag clickHouseDeadLetterTable, optional;
	// "" = unset) is the table in ClickHouseDatabase for messages that cannot
	// be inserted into ClickHouseTable. At least one of it and
	// DeadLetterTopic must be set.
	ClickHouseDeadLetterTable string

	// DeadLetterTopic (flag deadLetterTopic, optional; "" = unset) is the
	// Pub/Sub topic for messages that cannot be inserted, as
	// projects/<project>/topics/<name>; see [SplitTopic]. At least one of it
	// and ClickHouseDeadLetterTable must be set.
	DeadLetterTopic string

	// WindowSeconds (flag windowSeconds, optional; unset by default) is the
	// length of the windows that group messages into inserts, in seconds.
	// When given it must be positive.
	WindowSeconds OptionalInt

	// BatchRowCount (flag batchRowCount, optional; unset by default) is the
	// largest number of rows in one insert, in rows. When given it must be
	// positive.
	BatchRowCount OptionalInt

	// MaxInsertBlockSize (flag maxInsertBlockSize, default 1000000) is the
	// ClickHouse setting max_insert_block_size for the inserts, in rows. It
	// must be positive.
	MaxInsertBlockSize int

	// MaxRetries (flag maxRetries, default 5) is how many times a failed
	// ClickHouse insert is retried, a count; 0 means no retry. It must not be
	// negative.
	MaxRetries int

	// InsertDeduplicate (flag insertDeduplicate, default true) is the
	// ClickHouse setting insert_deduplicate: a retried insert of an identical
	// block is dropped as a duplicate (by Replicated*MergeTree tables, and by
	// MergeTree tables with non_replicated_deduplication_window set).
	InsertDeduplicate bool

	// InsertQuorum (flag insertQuorum, optional; unset by default) is the
	// ClickHouse setting insert_quorum, the number of replicas that must
	// confirm each insert; 0 disables the quorum, and unset leaves the
	// server's setting. When given it must not be negative.
	InsertQuorum OptionalInt

	// InsertDistributedSync (flag insertDistributedSync, default true) is the
	// ClickHouse setting insert_distributed_sync (called
	// distributed_foreground_insert in newer releases, the old name being an
	// alias): an insert into a Distributed table returns only once the data
	// is stored on the shards.
	InsertDistributedSync bool

	// NumShards (flag numShards, default 0 = auto) is the number of parallel INSERT streams: rows
	// are keyed by a shard number in [0, numShards) before they are batched, and each shard's
	// batches are inserted by one worker at a time. 0 chooses by runner ([Options.Shards]): 1 on
	// the local runner, and on Dataflow max_num_workers clamped to [4, 16]. It must not be
	// negative.
	NumShards int

	// RetryInitialBackoffMillis (flag retryInitialBackoffMillis, default 5000) is the wait before
	// the first retry of a failed INSERT, in milliseconds; each further retry doubles it, up to
	// RetryMaxBackoffMillis, with jitter. It must be positive.
	RetryInitialBackoffMillis int

	// RetryMaxBackoffMillis (flag retryMaxBackoffMillis, default 60000) caps the wait between two
	// attempts of an INSERT, in milliseconds. It must be at least RetryInitialBackoffMillis.
	RetryMaxBackoffMillis int

	// StopAfterIdle (flag stopAfterIdle, optional; unset = run forever) ends a run on the local
	// runner once no message has arrived for that many seconds and everything pulled has been
	// written, so that the pipeline drains and finishes. Ignored on Dataflow (drain the job
	// instead). When given it must be positive.
	StopAfterIdle OptionalInt

	// SchemaRefreshSeconds (flag schemaRefreshSeconds, default 60) is how often each worker reads
	// the table's schema again, in seconds, so that a column added while the job runs is filled
	// without a restart; 0 never (a dropped or changed column is still noticed at the next
	// failing INSERT). It must not be negative.
	SchemaRefreshSeconds int
}

// Defaults returns the parameters as they are before any flag is given:
// maxInsertBlockSize 1000000 rows, maxRetries 5, insertDeduplicate true,
// insertDistributedSync true; every other parameter empty or unset.
func Defaults() Options {
	return Options{
		MaxInsertBlockSize:        defaultMaxInsertBlockSize,
		MaxRetries:                defaultMaxRetries,
		InsertDeduplicate:         defaultInsertDeduplicate,
		InsertDistributedSync:     defaultInsertDistributedSync,
		NumShards:                 defaultNumShards,
		RetryInitialBackoffMillis: defaultRetryInitialBackoffMs,
		RetryMaxBackoffMillis:     defaultRetryMaxBackoffMs,
		SchemaRefreshSeconds:      defaultSchemaRefreshSeconds,
	}
}

// RegisterFlags sets *o to [Defaults] and defines on fs one flag per field of
// o, named as the template parameter, whose value is stored in that field.
// Each flag's usage tells the meaning and the unit, and whether the parameter
// is required or optional; the flag package adds "(default …)" to the help
// of the flags with a default, which is also each flag's DefValue.
//
// Integers are parsed like [flag.Int] (decimal, or with a 0x, 0o or 0b
// prefix; surrounding spaces ignored). windowSeconds, batchRowCount and
// insertQuorum are [OptionalInt]: an empty value (--windowSeconds=, as the
// Dataflow console may pass for a parameter left empty) leaves them unset,
// while any number, 0 included, is a given value. For the same reason an
// empty value of a flag with a default (--maxRetries=, --insertDeduplicate=)
// gives the default, where the standard flag types would fail. Booleans take
// --insertDeduplicate=false or --insertDeduplicate=true, or any value of
// [strconv.ParseBool]; a bare --insertDeduplicate means true (as for any Go
// bool flag, a separate "false" argument is not its value).
//
// The flag values of clickHousePassword and clickHouseUrl print redacted
// (flag.Value.String), so that code which lists flags, such as Beam's
// runners when they copy the set flags into the job's pipeline options, shows
// no password; the fields of o hold the real values. Hence workers must get
// the password from Options (for example a DoFn field), not from the
// pipeline options.
//
// It panics if fs or o is nil, or if fs already defines one of the names.
func RegisterFlags(fs *flag.FlagSet, o *Options) {
	if fs == nil || o == nil {
		panic("pipeline.RegisterFlags: nil *flag.FlagSet or *Options")
	}
	*o = Defaults()

	fs.StringVar(&o.InputSubscription, flagInputSubscription, o.InputSubscription,
		"Pub/Sub `subscription` to read JSON messages from, as projects/<project>/subscriptions/<name>. Required.")
	fs.Var((*urlFlag)(&o.ClickHouseURL), flagClickHouseURL,
		"ClickHouse server `URL`: http://host:8123, https://host:8443 (ClickHouse Cloud) or clickhouse://host:9000 (native protocol). "+
			"A password in it is never printed. Required.")
	fs.StringVar(&o.ClickHouseDatabase, flagClickHouseDatabase, o.ClickHouseDatabase,
		"ClickHouse `database` of clickHouseTable and clickHouseDeadLetterTable. Required.")
	fs.StringVar(&o.ClickHouseTable, flagClickHouseTable, o.ClickHouseTable,
		"ClickHouse `table` to insert rows into, a bare name without \"<database>.\". Required.")
	fs.StringVar(&o.ClickHouseUsername, flagClickHouseUsername, o.ClickHouseUsername,
		"ClickHouse `user` name. Required.")
	fs.Var((*secretFlag)(&o.ClickHousePassword), flagClickHousePassword,
		"ClickHouse `password` of clickHouseUsername; never printed. Required, but may be empty (ClickHouse's default user has no password).")
	fs.StringVar(&o.ClickHouseDeadLetterTable, flagClickHouseDeadLetterTable, o.ClickHouseDeadLetterTable,
		"ClickHouse `table` in clickHouseDatabase for messages that cannot be inserted. "+
			"Optional, unset by default; set it, deadLetterTopic, or both.")
	fs.StringVar(&o.DeadLetterTopic, flagDeadLetterTopic, o.DeadLetterTopic,
		"Pub/Sub `topic` for messages that cannot be inserted, as projects/<project>/topics/<name>. "+
			"Optional, unset by default; set it, clickHouseDeadLetterTable, or both.")
	fs.Var(&o.WindowSeconds, flagWindowSeconds,
		"Length of the windows that group messages into inserts, in `seconds`; positive. Optional, unset by default (empty = unset).")
	fs.Var(&o.BatchRowCount, flagBatchRowCount,
		"Largest number of rows in one insert, in `rows`; positive. Optional, unset by default (empty = unset).")
	fs.Var(&intFlag{&o.MaxInsertBlockSize, o.MaxInsertBlockSize}, flagMaxInsertBlockSize,
		"ClickHouse setting max_insert_block_size for the inserts, in `rows`; positive.")
	fs.Var(&intFlag{&o.MaxRetries, o.MaxRetries}, flagMaxRetries,
		"How many times a failed ClickHouse insert is retried, a `count`; 0 = no retry.")
	fs.Var(&boolFlag{&o.InsertDeduplicate, o.InsertDeduplicate}, flagInsertDeduplicate,
		"ClickHouse setting insert_deduplicate: drop a retried insert of the same block into a Replicated*MergeTree table. "+
			"true or false; give --insertDeduplicate=false to turn it off.")
	fs.Var(&o.InsertQuorum, flagInsertQuorum,
		"ClickHouse setting insert_quorum: number of `replicas` that must confirm each insert; 0 disables the quorum. "+
			"Optional, unset by default (empty = unset), leaving the server's setting.")
	fs.Var(&boolFlag{&o.InsertDistributedSync, o.InsertDistributedSync}, flagInsertDistributedSync,
		"ClickHouse setting insert_distributed_sync (distributed_foreground_insert): an insert into a Distributed table "+
			"returns once the data is on the shards. true or false; give --insertDistributedSync=false to turn it off.")
	fs.Var(&intFlag{&o.NumShards, o.NumShards}, flagNumShards,
		"Number of parallel INSERT streams (`shards`) the rows are spread over before batching; "+
			"0 = auto: 1 on the local runner, on Dataflow max_num_workers clamped to 4..16.")
	fs.Var(&intFlag{&o.RetryInitialBackoffMillis, o.RetryInitialBackoffMillis}, flagRetryInitialBackoffMillis,
		"Wait before the first retry of a failed INSERT, in `milliseconds`; doubled at each retry up to retryMaxBackoffMillis, with jitter; positive.")
	fs.Var(&intFlag{&o.RetryMaxBackoffMillis, o.RetryMaxBackoffMillis}, flagRetryMaxBackoffMillis,
		"Longest wait between two attempts of an INSERT, in `milliseconds`; at least retryInitialBackoffMillis.")
	fs.Var(&o.StopAfterIdle, flagStopAfterIdle,
		"Local runner only: end the run once no message has arrived for this many `seconds` and everything pulled has been written. "+
			"Optional, unset by default (run until stopped).")
	fs.Var(&intFlag{&o.SchemaRefreshSeconds, o.SchemaRefreshSeconds}, flagSchemaRefreshSeconds,
		"How often each worker reads the table's schema again, in `seconds`, to pick up added columns; 0 = never.")
}

// OptionalInt is an integer parameter without a default, which tells "not
// given" (Given false; Value is then 0 and means nothing) from a given value,
// 0 included. Its zero value is unset. *OptionalInt is a [flag.Value] and a
// [flag.Getter].
type OptionalInt struct {
	Value int  // the value; meaningful only when Given
	Given bool // whether a value was given
}

// GivenInt returns the OptionalInt holding v.
func GivenInt(v int) OptionalInt { return OptionalInt{Value: v, Given: true} }

// Set parses s like [flag.Int] (decimal, or with a 0x, 0o or 0b prefix,
// surrounding spaces ignored) and marks the value given. An empty or blank s
// makes the value unset, as the Dataflow console may pass --name= for a
// parameter left empty.
func (p *OptionalInt) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		*p = OptionalInt{}
		return nil
	}
	v, err := parseInt(s)
	if err != nil {
		return fmt.Errorf("%v (leave it empty for unset)", err)
	}
	*p = GivenInt(v)
	return nil
}

// parseInt parses an integer flag value as flag.Int does, spaces trimmed.
func parseInt(s string) (int, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 0, strconv.IntSize)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, errors.New("out of range")
		}
		return 0, errors.New("not a whole number")
	}
	return int(v), nil
}

// String returns the value in decimal, or "" when it is unset.
func (p *OptionalInt) String() string {
	if p == nil || !p.Given {
		return ""
	}
	return strconv.Itoa(p.Value)
}

// Get returns the value as an int, or nil when it is unset.
func (p *OptionalInt) Get() any {
	if !p.Given {
		return nil
	}
	return p.Value
}

// show formats p for [Options.String]: the value, or "unset".
func (p OptionalInt) show() string {
	if !p.Given {
		return "unset"
	}
	return strconv.Itoa(p.Value)
}

// intFlag is the flag.Value of an int parameter with a default: like
// flag.Int, except that an empty value gives the default.
type intFlag struct {
	p   *int
	def int
}

func (f *intFlag) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		*f.p = f.def
		return nil
	}
	v, err := parseInt(s)
	if err != nil {
		return fmt.Errorf("%v (leave it empty for the default, %d)", err, f.def)
	}
	*f.p = v
	return nil
}

func (f *intFlag) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return strconv.Itoa(*f.p)
}

func (f *intFlag) Get() any { return *f.p }

// boolFlag is the flag.Value of a bool parameter with a default: like
// flag.Bool, except that an empty value gives the default.
type boolFlag struct {
	p   *bool
	def bool
}

func (f *boolFlag) Set(s string) error {
	s = strings.TrimSpace(s)
	if s == "" {
		*f.p = f.def
		return nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("not true or false (leave it empty for the default, %t)", f.def)
	}
	*f.p = v
	return nil
}

func (f *boolFlag) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return strconv.FormatBool(*f.p)
}

func (f *boolFlag) Get() any { return *f.p }

// IsBoolFlag tells the flag package that a bare --name means --name=true.
func (f *boolFlag) IsBoolFlag() bool { return true }

// secretFlag is the flag.Value of clickHousePassword: it stores the string as
// given and prints "xxxxx" instead of a non-empty password.
type secretFlag string

func (s *secretFlag) Set(v string) error { *s = secretFlag(v); return nil }

func (s *secretFlag) String() string {
	if s == nil || *s == "" {
		return ""
	}
	return redacted
}

// urlFlag is the flag.Value of clickHouseUrl: it stores the URL as given and
// prints it with any password redacted.
type urlFlag string

func (u *urlFlag) Set(v string) error { *u = urlFlag(v); return nil }

func (u *urlFlag) String() string {
	if u == nil {
		return ""
	}
	return chclient.RedactURL(string(*u))
}

// ParamError is one problem that [Options.Validate] found: the parameter
// (flag name), the offending value and the rule it breaks. Value never holds
// the ClickHouse password: it is redacted before the ParamError is made.
type ParamError struct {
	Param string // flag name, such as "clickHouseTable"
	Value string // offending value as given, with passwords redacted
	Rule  string // what is wrong and what is expected
}

// Error returns `<param> "<value>": <rule>`, the value quoted with Go syntax
// and cut to its first 100 characters when longer.
func (e *ParamError) Error() string {
	return e.Param + " " + quoteCut(e.Value) + ": " + e.Rule
}

// quoteCut quotes s, cut to its first maxShownValue characters.
func quoteCut(s string) string {
	n := utf8.RuneCountInString(s)
	if n <= maxShownValue {
		return strconv.Quote(s)
	}
	cut, i := 0, 0
	for i = range s {
		if cut == maxShownValue {
			break
		}
		cut++
	}
	return fmt.Sprintf("%s... (%d characters in all)", strconv.Quote(s[:i]), n)
}

// Validate checks the parameters and reports every problem at once: nil if
// there is none, otherwise an [errors.Join] of one [*ParamError] per
// problem, in flag order. The rules:
//
//   - inputSubscription, clickHouseUrl, clickHouseDatabase, clickHouseTable
//     and clickHouseUsername are required: not empty, nor only spaces.
//     clickHousePassword is not checked: ClickHouse's default user has an
//     empty password.
//   - At least one of clickHouseDeadLetterTable and deadLetterTopic is set
//     (the empty string is unset; only spaces is an error).
//   - inputSubscription is projects/<project>/subscriptions/<name> and
//     deadLetterTopic is projects/<project>/topics/<name>, by Pub/Sub's
//     resource name rules (see [SplitSubscription]).
//   - clickHouseUrl is http://, https:// or clickhouse:// (any case)
//     followed by a host, or several comma-separated, each with an optional
//     port 1 to 65535, and without surrounding spaces (see
//     [Options.RedactedURL] for how a password in it is hidden).
//   - clickHouseDatabase, clickHouseTable and clickHouseDeadLetterTable are
//     plain names: no backtick, no NUL and no dot (a dot in a table name
//     usually means "<database>.<table>" was given).
//   - windowSeconds and batchRowCount, when given, and maxInsertBlockSize
//     are positive; maxRetries, and insertQuorum when given, are 0 or more.
//
// The errors never show the password: not as clickHousePassword, not in the
// userinfo or query of clickHouseUrl, and not where it appears in another
// parameter.
func (o Options) Validate() error {
	c := checker{password: o.ClickHousePassword}

	if c.required(flagInputSubscription, o.InputSubscription) {
		if _, _, err := SplitSubscription(o.InputSubscription); err != nil {
			c.fail(flagInputSubscription, o.InputSubscription, err.Error())
		}
	}
	if c.required(flagClickHouseURL, o.ClickHouseURL) {
		if rule := chclient.URLRule(o.ClickHouseURL, o.ClickHouseUsername, o.ClickHousePassword, o.ClickHouseDatabase); rule != "" {
			c.fail(flagClickHouseURL, o.ClickHouseURL, rule)
		}
	}
	if c.required(flagClickHouseDatabase, o.ClickHouseDatabase) {
		c.name(flagClickHouseDatabase, o.ClickHouseDatabase,
			"must be a database name without a dot")
	}
	if c.required(flagClickHouseTable, o.ClickHouseTable) {
		c.name(flagClickHouseTable, o.ClickHouseTable,
			"must be a bare table name without a dot: for <database>.<table>, put the database in clickHouseDatabase")
	}
	c.required(flagClickHouseUsername, o.ClickHouseUsername)

	if o.ClickHouseDeadLetterTable == "" && o.DeadLetterTopic == "" {
		c.fail(flagClickHouseDeadLetterTable, "",
			"is unset and so is deadLetterTopic: set at least one of them, for the messages that cannot be inserted")
	}
	if t := o.ClickHouseDeadLetterTable; t != "" {
		if strings.TrimSpace(t) == "" {
			c.fail(flagClickHouseDeadLetterTable, t, "is blank: give a table name, or leave it empty for unset")
		} else {
			c.name(flagClickHouseDeadLetterTable, t,
				"must be a bare table name without a dot: the dead-letter table is in clickHouseDatabase")
		}
	}
	if t := o.DeadLetterTopic; t != "" {
		if strings.TrimSpace(t) == "" {
			c.fail(flagDeadLetterTopic, t, "is blank: give a topic, or leave it empty for unset")
		} else if _, _, err := SplitTopic(t); err != nil {
			c.fail(flagDeadLetterTopic, t, err.Error())
		}
	}

	if o.WindowSeconds.Given && o.WindowSeconds.Value <= 0 {
		c.fail(flagWindowSeconds, strconv.Itoa(o.WindowSeconds.Value),
			"must be a positive number of seconds (leave it empty for unset)")
	}
	if o.BatchRowCount.Given && o.BatchRowCount.Value <= 0 {
		c.fail(flagBatchRowCount, strconv.Itoa(o.BatchRowCount.Value),
			"must be a positive number of rows (leave it empty for unset)")
	}
	if o.MaxInsertBlockSize <= 0 {
		c.fail(flagMaxInsertBlockSize, strconv.Itoa(o.MaxInsertBlockSize),
			fmt.Sprintf("must be a positive number of rows (default %d)", defaultMaxInsertBlockSize))
	}
	if o.MaxRetries < 0 {
		c.fail(flagMaxRetries, strconv.Itoa(o.MaxRetries),
			fmt.Sprintf("must be 0 or more retries (0 = no retry; default %d)", defaultMaxRetries))
	}
	if o.InsertQuorum.Given && o.InsertQuorum.Value < 0 {
		c.fail(flagInsertQuorum, strconv.Itoa(o.InsertQuorum.Value),
			"must be 0 or more replicas (0 disables the quorum; leave it empty for the server's setting)")
	}
	if o.NumShards < 0 {
		c.fail(flagNumShards, strconv.Itoa(o.NumShards),
			"must be a positive number of shards, or 0 (the default) to choose by runner")
	}
	if o.RetryInitialBackoffMillis <= 0 {
		c.fail(flagRetryInitialBackoffMillis, strconv.Itoa(o.RetryInitialBackoffMillis),
			fmt.Sprintf("must be a positive number of milliseconds (default %d)", defaultRetryInitialBackoffMs))
	}
	if o.RetryMaxBackoffMillis < o.RetryInitialBackoffMillis {
		c.fail(flagRetryMaxBackoffMillis, strconv.Itoa(o.RetryMaxBackoffMillis),
			fmt.Sprintf("must be at least retryInitialBackoffMillis (%d) milliseconds (default %d)", o.RetryInitialBackoffMillis, defaultRetryMaxBackoffMs))
	}
	if o.SchemaRefreshSeconds < 0 {
		c.fail(flagSchemaRefreshSeconds, strconv.Itoa(o.SchemaRefreshSeconds),
			fmt.Sprintf("must be 0 (never) or more seconds (default %d)", defaultSchemaRefreshSeconds))
	}
	if o.StopAfterIdle.Given && o.StopAfterIdle.Value <= 0 {
		c.fail(flagStopAfterIdle, strconv.Itoa(o.StopAfterIdle.Value),
			"must be a positive number of seconds (leave it empty to run until stopped)")
	}
	return errors.Join(c.errs...)
}

// checker collects the problems for Validate, with the password hidden from
// their text.
type checker struct {
	password string
	errs     []error
}

// fail adds a problem. The value is shown with its URL passwords redacted
// (only clickHouseUrl is a URL, but a password pasted into another
// parameter is hidden as well) and with the password hidden.
func (c *checker) fail(param, value, rule string) {
	c.errs = append(c.errs, &ParamError{
		Param: param,
		Value: hide(chclient.RedactURL(value), c.password),
		Rule:  hide(rule, c.password),
	})
}

// required reports whether value is non-blank, adding a problem if not.
func (c *checker) required(param, value string) bool {
	if strings.TrimSpace(value) != "" {
		return true
	}
	c.fail(param, value, "is required and must not be empty or blank")
	return false
}

// name checks that value is a plain ClickHouse name; dotRule says what a dot
// means for this parameter.
func (c *checker) name(param, value, dotRule string) {
	switch {
	case strings.ContainsRune(value, 0):
		c.fail(param, value, "must not contain a NUL character")
	case strings.ContainsAny(value, "`\\()"):
		c.fail(param, value, "must not contain a backtick, a backslash or a parenthesis: clickhouse-go cannot name such a table in an INSERT")
	case strings.ContainsRune(value, '.'):
		c.fail(param, value, dotRule)
	}
}

// hide replaces each occurrence of a non-empty password in s by "xxxxx".
func hide(s, password string) string {
	if password == "" {
		return s
	}
	return strings.ReplaceAll(s, password, redacted)
}

// RedactURL is [chclient.RedactURL]: raw with the passwords of its userinfo and query hidden.
func RedactURL(raw string) string { return chclient.RedactURL(raw) }

// RedactedURL returns clickHouseUrl with its passwords replaced by "xxxxx":
// the password of the userinfo (user:password@), the value of a "password"
// query parameter, the password in an "http_proxy" query parameter (both of
// which the ClickHouse driver reads), and any occurrence of
// clickHousePassword. It reads the URL as text so as to work on malformed
// URLs too; when in doubt it hides too much rather than too little (for
// example, everything from the first ":" after the scheme up to an "@" found
// later in the path).
func (o Options) RedactedURL() string {
	return hide(chclient.RedactURL(o.ClickHouseURL), o.ClickHousePassword)
}

// SplitSubscription splits a Pub/Sub subscription name,
// projects/<project>/subscriptions/<name>, into the project ID and the
// subscription ID, by Pub/Sub's resource name rules
// (https://cloud.google.com/pubsub/docs/pubsub-basics#resource_names) and
// Google Cloud's project ID rules
// (https://cloud.google.com/resource-manager/docs/creating-managing-projects):
//
//   - the project ID is 6 to 30 lowercase letters, digits and hyphens,
//     starting with a letter and not ending with a hyphen; a domain-scoped
//     project ID, example.com:my-project, is accepted too (the part after
//     the colon by the same rule);
//   - the subscription ID is 3 to 255 characters, starts with a letter, holds
//     only letters, digits and - _ . ~ + %, and does not start with "goog".
//
// The error tells the broken rule; it does not repeat s.
func SplitSubscription(s string) (project, id string, err error) {
	return splitResource(s, "subscriptions", "topics")
}

// SplitTopic splits a Pub/Sub topic name, projects/<project>/topics/<name>,
// into the project ID and the topic ID, by the rules of [SplitSubscription].
// The error tells the broken rule; it does not repeat s.
func SplitTopic(s string) (project, id string, err error) {
	return splitResource(s, "topics", "subscriptions")
}

// splitResource splits projects/<project>/<collection>/<id>; other is the
// collection that is likely given by mistake.
func splitResource(s, collection, other string) (project, id string, err error) {
	form := "projects/<project>/" + collection + "/<name>"
	parts := strings.Split(s, "/")
	if len(parts) != 4 || parts[0] != "projects" || parts[2] != collection {
		if len(parts) == 4 && parts[0] == "projects" && parts[2] == other {
			return "", "", fmt.Errorf("is the name of a Pub/Sub %s, not of a %s; want %s",
				singular(other), singular(collection), form)
		}
		return "", "", fmt.Errorf("must have the form %s", form)
	}
	if err := checkProjectID(parts[1]); err != nil {
		return "", "", fmt.Errorf("project ID %q %v", parts[1], err)
	}
	if err := checkResourceID(parts[3]); err != nil {
		return "", "", fmt.Errorf("%s ID %q %v", singular(collection), parts[3], err)
	}
	return parts[1], parts[3], nil
}

func singular(collection string) string { return strings.TrimSuffix(collection, "s") }

// checkProjectID checks a Google Cloud project ID, plain or domain-scoped.
func checkProjectID(p string) error {
	if p == "" {
		return errors.New("must not be empty")
	}
	if domain, name, scoped := strings.Cut(p, ":"); scoped {
		if err := checkDomain(domain); err != nil {
			return fmt.Errorf("has an invalid domain before \":\": %v", err)
		}
		p = name
	}
	switch {
	case len(p) < 6 || len(p) > 30:
		return fmt.Errorf("must be 6 to 30 characters long (not %d)", len(p))
	case p[0] < 'a' || p[0] > 'z':
		return errors.New("must start with a lowercase letter")
	case strings.Trim(p, "abcdefghijklmnopqrstuvwxyz0123456789-") != "":
		return errors.New("may hold only lowercase letters, digits and hyphens")
	case strings.HasSuffix(p, "-"):
		return errors.New("must not end with a hyphen")
	}
	return nil
}

// checkDomain checks the domain of a domain-scoped project ID, such as
// example.com: lowercase labels of letters, digits and inner hyphens,
// at least two of them.
func checkDomain(d string) error {
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
		return errors.New("want a domain such as example.com")
	}
	for _, l := range labels {
		if l == "" || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" ||
			strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return errors.New("want a lowercase domain such as example.com")
		}
	}
	return nil
}

// checkResourceID checks a Pub/Sub topic or subscription ID.
func checkResourceID(id string) error {
	const allowed = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~+%"
	switch {
	case id == "":
		return errors.New("must not be empty")
	case !('a' <= id[0] && id[0] <= 'z' || 'A' <= id[0] && id[0] <= 'Z'):
		return errors.New("must start with a letter")
	case strings.Trim(id, allowed) != "":
		return errors.New("may hold only letters, digits and - _ . ~ + %")
	case len(id) < 3 || len(id) > 255:
		return fmt.Errorf("must be 3 to 255 characters long (not %d)", len(id))
	case strings.HasPrefix(id, "goog"):
		return errors.New(`must not start with "goog"`)
	}
	return nil
}

// String returns all parameters on one line, as flag=value in flag order,
// for start-up logging: strings quoted, unset optional integers as "unset".
// The password shows as "xxxxx" when non-empty (and as "" when empty, the
// default user's case); clickHouseUrl shows as [Options.RedactedURL], and so
// does every other string parameter, so that neither the password nor a URL
// with a password pasted into the wrong parameter shows.
func (o Options) String() string {
	r := o.redact()
	var b strings.Builder
	str := func(name, v string) { fmt.Fprintf(&b, "%s=%q ", name, v) }
	val := func(name string, v any) { fmt.Fprintf(&b, "%s=%v ", name, v) }
	str(flagInputSubscription, r.InputSubscription)
	str(flagClickHouseURL, r.ClickHouseURL)
	str(flagClickHouseDatabase, r.ClickHouseDatabase)
	str(flagClickHouseTable, r.ClickHouseTable)
	str(flagClickHouseUsername, r.ClickHouseUsername)
	str(flagClickHousePassword, r.ClickHousePassword)
	str(flagClickHouseDeadLetterTable, r.ClickHouseDeadLetterTable)
	str(flagDeadLetterTopic, r.DeadLetterTopic)
	val(flagWindowSeconds, r.WindowSeconds.show())
	val(flagBatchRowCount, r.BatchRowCount.show())
	val(flagMaxInsertBlockSize, r.MaxInsertBlockSize)
	val(flagMaxRetries, r.MaxRetries)
	val(flagInsertDeduplicate, r.InsertDeduplicate)
	val(flagInsertQuorum, r.InsertQuorum.show())
	val(flagInsertDistributedSync, r.InsertDistributedSync)
	val(flagNumShards, r.NumShards)
	val(flagRetryInitialBackoffMillis, r.RetryInitialBackoffMillis)
	val(flagRetryMaxBackoffMillis, r.RetryMaxBackoffMillis)
	val(flagStopAfterIdle, r.StopAfterIdle.show())
	val(flagSchemaRefreshSeconds, r.SchemaRefreshSeconds)
	return strings.TrimSuffix(b.String(), " ")
}

// GoString returns Options as a Go composite literal (the %#v verb), with
// the password hidden as in [Options.String].
func (o Options) GoString() string {
	type plain Options // no methods, so %#v prints the fields
	s := fmt.Sprintf("%#v", plain(o.redact()))
	return strings.Replace(s, "plain{", "Options{", 1)
}

// Format implements [fmt.Formatter], so that no verb prints the password:
// %#v prints [Options.GoString], any other verb formats [Options.String].
func (o Options) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, o.GoString())
		return
	}
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), o.String())
}

// redact returns a copy of o fit to print: the password "xxxxx" when
// non-empty, and every other string as [Options.RedactedURL] shows the URL,
// which also covers a URL pasted into the wrong parameter.
func (o Options) redact() Options {
	pw := o.ClickHousePassword
	show := func(s string) string { return hide(chclient.RedactURL(s), pw) }
	r := o
	r.InputSubscription = show(o.InputSubscription)
	r.ClickHouseURL = show(o.ClickHouseURL)
	r.ClickHouseDatabase = show(o.ClickHouseDatabase)
	r.ClickHouseTable = show(o.ClickHouseTable)
	r.ClickHouseUsername = show(o.ClickHouseUsername)
	if pw != "" {
		r.ClickHousePassword = redacted
	}
	r.ClickHouseDeadLetterTable = show(o.ClickHouseDeadLetterTable)
	r.DeadLetterTopic = show(o.DeadLetterTopic)
	return r
}
