// The parameter table: every template parameter written once, with what RegisterFlags, Defaults,
// Validate and String read from it, and the rules of its values.

package pipeline

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// kind is the kind of a parameter's value: the type of its field in Options, and how its flag
// reads and prints it.
type kind int

const (
	kindString      kind = iota // a string, as given
	kindSecret                  // a secret.String, which prints itself masked: the ClickHouse password
	kindURL                     // a string printed with its passwords hidden: clickHouseUrl
	kindRef                     // a string naming a file, a gs:// object or a Secret Manager secret version; PEM text in its place is printed as "xxxxx"
	kindInt                     // an int with a default; an empty value gives the default
	kindOptionalInt             // an OptionalInt: no default, an empty value leaves it unset
	kindBool                    // a bool with a default; an empty value gives the default
)

// need tells whether a parameter must be given.
type need int

const (
	optional need = iota // may be left out: it then has its default, or is unset
	required             // must be given, neither empty nor blank
)

// parameter is one flag of RegisterFlags and, when it has a group, one template parameter.
type parameter struct {
	name  string // the flag and template parameter name
	group string // its groupName in metadata.json; "" for a flag that is not a template parameter
	need  need   // whether it must be given
	kind  kind   // the kind of its value

	// def is the default: an int for kindInt, a bool for kindBool, nil for the other kinds.
	def any
	// field returns the field of o that holds the value: a *string, *int, *OptionalInt or *bool,
	// by kind.
	field func(o *Options) any
	// usage is the flag's usage; a `word` in backquotes names the value in -help.
	usage string
	// rule returns what is wrong with the value in o, "" if nothing; nil means no rule.
	rule func(p parameter, o Options) string
}

// parameters are the template parameters, in the order of the fields of Options, which is the
// order of String and of the problems of Validate.
//
// Validate calls a rule only for a value that is there: a required string that is not blank (a
// blank one is reported as missing), an optional string that is not empty, an OptionalInt that
// is given, an int always. Rules across parameters that belong to none of them (at least one
// dead-letter destination) are in Validate.
var parameters = []parameter{
	{
		name: "inputSubscription", group: "Source", need: required, kind: kindString,
		field: func(o *Options) any { return &o.InputSubscription },
		usage: "Pub/Sub `subscription` to read JSON messages from, as projects/<project>/subscriptions/<name>. Required.",
		rule:  pubsubName(psclient.ParseSubscription),
	},
	{
		name: "clickHouseUrl", group: "Target", need: required, kind: kindURL,
		field: func(o *Options) any { return &o.ClickHouseURL },
		usage: "ClickHouse server `URL`: http://host:8123, https://host:8443 (ClickHouse Cloud) or clickhouse://host:9000 (native protocol). " +
			"A password in it is never printed. Required.",
		rule: func(_ parameter, o Options) string {
			return chclient.URLRule(o.ClickHouseURL, o.ClickHouseUsername, o.ClickHousePassword, o.ClickHouseDatabase)
		},
	},
	{
		name: "clickHouseDatabase", group: "Target", need: required, kind: kindString,
		field: func(o *Options) any { return &o.ClickHouseDatabase },
		usage: "ClickHouse `database` of clickHouseTable and clickHouseDeadLetterTable. Required.",
		rule:  plainName("must be a database name without a dot"),
	},
	{
		name: "clickHouseTable", group: "Target", need: required, kind: kindString,
		field: func(o *Options) any { return &o.ClickHouseTable },
		usage: "ClickHouse `table` to insert rows into, a bare name without \"<database>.\". Required.",
		rule:  plainName("must be a bare table name without a dot: for <database>.<table>, put the database in clickHouseDatabase"),
	},
	{
		name: "clickHouseUsername", group: "Target", need: required, kind: kindString,
		field: func(o *Options) any { return &o.ClickHouseUsername },
		usage: "ClickHouse `user` name. Required.",
	},
	{
		// Optional, not required: the console will not submit an empty required field, and a user
		// without a password (ClickHouse's default user) gives an empty one.
		name: "clickHousePassword", group: "Target", need: optional, kind: kindSecret,
		field: func(o *Options) any { return &o.ClickHousePassword },
		usage: "ClickHouse `password` of clickHouseUsername, or better the Secret Manager secret version that holds it, " + secret.VersionForm +
			", which keeps it out of the job graph; a password is never printed. Optional, unset by default: empty for a user without a password (ClickHouse's default user).",
		rule: func(p parameter, o Options) string { return secret.PasswordRule(p.str(o)) },
	},
	{
		name: "clickHouseCaCertificate", group: "Target", kind: kindRef,
		field: func(o *Options) any { return &o.ClickHouseCaCertificate },
		usage: "PEM `certificate` of the authority that signs the ClickHouse server's certificate: a file path, gs://<bucket>/<object> or a Secret Manager secret version " +
			secret.VersionForm + "; for TLS URLs only (https://, clickhouse://...?secure=true). Optional, unset by default: the server is verified against the system's roots.",
		rule: tlsRef("", nil),
	},
	{
		name: "clickHouseClientCertificate", group: "Target", kind: kindRef,
		field: func(o *Options) any { return &o.ClickHouseClientCertificate },
		usage: "PEM client `certificate` presented to a ClickHouse server that asks for one (mutual TLS), in the forms of clickHouseCaCertificate, with clickHouseClientKey. Optional, unset by default.",
		rule:  tlsRef("clickHouseClientKey", func(o Options) string { return o.ClickHouseClientKey }),
	},
	{
		name: "clickHouseClientKey", group: "Target", kind: kindRef,
		field: func(o *Options) any { return &o.ClickHouseClientKey },
		usage: "PEM private `key` of clickHouseClientCertificate, in the forms of clickHouseCaCertificate (a Secret Manager secret version keeps it out of the files of the job). Optional, unset by default.",
		rule:  tlsRef("clickHouseClientCertificate", func(o Options) string { return o.ClickHouseClientCertificate }),
	},
	{
		name: "clickHouseCompression", group: "Target", kind: kindString,
		field: func(o *Options) any { return &o.ClickHouseCompression },
		usage: "How the blocks sent to ClickHouse are compressed, on both protocols: `lz4`, zstd or none. " +
			"Optional, unset by default: then it is clickHouseUrl's compress option, or lz4 when the URL has none.",
		rule: func(p parameter, o Options) string { return chclient.CompressionRule(o.ClickHouseURL, p.str(o)) },
	},
	{
		name: "clickHouseDeadLetterTable", group: "Dead letter", kind: kindString,
		field: func(o *Options) any { return &o.ClickHouseDeadLetterTable },
		usage: "ClickHouse `table` in clickHouseDatabase for messages that cannot be inserted. " +
			"Optional, unset by default; set it, deadLetterTopic, or both.",
		rule: notBlank("a table name", plainName("must be a bare table name without a dot: the dead-letter table is in clickHouseDatabase")),
	},
	{
		name: "deadLetterTopic", group: "Dead letter", kind: kindString,
		field: func(o *Options) any { return &o.DeadLetterTopic },
		usage: "Pub/Sub `topic` for messages that cannot be inserted, as projects/<project>/topics/<name>. " +
			"Optional, unset by default; set it, clickHouseDeadLetterTable, or both.",
		rule: notBlank("a topic", pubsubName(psclient.ParseTopic)),
	},
	{
		name: "windowSeconds", group: "Batching", kind: kindOptionalInt,
		field: func(o *Options) any { return &o.WindowSeconds },
		usage: "Length of the windows that group messages into inserts, in `seconds`; positive. Optional, unset by default (empty = unset).",
		rule:  atLeast(1, "must be a positive number of seconds (leave it empty for unset)"),
	},
	{
		name: "batchRowCount", group: "Batching", kind: kindOptionalInt,
		field: func(o *Options) any { return &o.BatchRowCount },
		usage: "Largest number of rows in one insert, in `rows`; positive. Optional, unset by default (empty = unset).",
		rule:  atLeast(1, "must be a positive number of rows (leave it empty for unset)"),
	},
	{
		name: "maxInsertBlockSize", group: "Insert tuning", kind: kindInt, def: 1_000_000,
		field: func(o *Options) any { return &o.MaxInsertBlockSize },
		usage: "ClickHouse setting max_insert_block_size for the inserts, in `rows`; positive.",
		rule:  atLeast(1, "must be a positive number of rows (default %d)"),
	},
	{
		name: "maxRetries", group: "Insert tuning", kind: kindInt, def: 5,
		field: func(o *Options) any { return &o.MaxRetries },
		usage: "How many times a failed ClickHouse insert is retried, a `count`; 0 = no retry.",
		rule:  atLeast(0, "must be 0 or more retries (0 = no retry; default %d)"),
	},
	{
		name: "insertDeduplicate", group: "Insert tuning", kind: kindBool, def: true,
		field: func(o *Options) any { return &o.InsertDeduplicate },
		usage: "ClickHouse setting insert_deduplicate: drop a retried insert of the same block into a Replicated*MergeTree table. " +
			"true or false; give --insertDeduplicate=false to turn it off.",
	},
	{
		name: "insertQuorum", group: "Insert tuning", kind: kindOptionalInt,
		field: func(o *Options) any { return &o.InsertQuorum },
		usage: "ClickHouse setting insert_quorum: number of `replicas` that must confirm each insert; 0 disables the quorum. " +
			"Optional, unset by default (empty = unset), leaving the server's setting.",
		rule: atLeast(0, "must be 0 or more replicas (0 disables the quorum; leave it empty for the server's setting)"),
	},
	{
		name: "insertDistributedSync", group: "Insert tuning", kind: kindBool, def: true,
		field: func(o *Options) any { return &o.InsertDistributedSync },
		usage: "ClickHouse setting insert_distributed_sync (distributed_foreground_insert): an insert into a Distributed table " +
			"returns once the data is on the shards. true or false; give --insertDistributedSync=false to turn it off.",
	},
	{
		name: "numShards", group: "Batching", kind: kindInt, def: 0, // auto: see [Options.Shards]
		field: func(o *Options) any { return &o.NumShards },
		usage: "Number of parallel INSERT streams (`shards`) the rows are spread over before batching; " +
			"0 = auto: 1 on the local runner, on Dataflow max_num_workers clamped to 4..16.",
		rule: atLeast(0, "must be a positive number of shards, or %d (the default) to choose by runner"),
	},
	{
		name: "retryInitialBackoffMillis", group: "Insert tuning", kind: kindInt, def: 5_000,
		field: func(o *Options) any { return &o.RetryInitialBackoffMillis },
		usage: "Wait before the first retry of a failed INSERT, in `milliseconds`; doubled at each retry up to retryMaxBackoffMillis, with jitter; positive.",
		rule:  atLeast(1, "must be a positive number of milliseconds (default %d)"),
	},
	{
		name: "retryMaxBackoffMillis", group: "Insert tuning", kind: kindInt, def: 60_000,
		field: func(o *Options) any { return &o.RetryMaxBackoffMillis },
		usage: "Longest wait between two attempts of an INSERT, in `milliseconds`; at least retryInitialBackoffMillis.",
		rule: func(p parameter, o Options) string {
			if p.number(o) < o.RetryInitialBackoffMillis {
				return fmt.Sprintf("must be at least retryInitialBackoffMillis (%d) milliseconds (default %d)", o.RetryInitialBackoffMillis, p.def)
			}
			return ""
		},
	},
	{
		name: "stopAfterIdle", kind: kindOptionalInt, // local runner only: no template parameter
		field: func(o *Options) any { return &o.StopAfterIdle },
		usage: "Local runner only: end the run once no message has arrived for this many `seconds` and everything pulled has been written. " +
			"Optional, unset by default (run until stopped).",
		rule: atLeast(1, "must be a positive number of seconds (leave it empty to run until stopped)"),
	},
	{
		name: "progressSeconds", kind: kindInt, def: 5, // local runner only: no template parameter
		field: func(o *Options) any { return &o.ProgressSeconds },
		usage: "Local runner only: how often a progress line is logged (messages read, rows inserted, dead letters, messages not yet acknowledged " +
			"and the age of the oldest), in `seconds`; 0 = never.",
		rule: atLeast(0, "must be 0 (never) or more seconds (default %d)"),
	},
	{
		name: "schemaRefreshSeconds", group: "Target", kind: kindInt, def: 60,
		field: func(o *Options) any { return &o.SchemaRefreshSeconds },
		usage: "How often each worker reads the table's schema again, in `seconds`, to pick up added columns; 0 = never.",
		rule:  atLeast(0, "must be 0 (never) or more seconds (default %d)"),
	},
	{
		name: "metadataColumns", group: "Target", kind: kindString,
		field: func(o *Options) any { return &o.MetadataColumns },
		usage: "Columns that take the message's metadata instead of a payload field: comma-separated `KEY=column` pairs, KEY one of " +
			"message_id, publish_time, ordering_key, attributes and attribute.NAME (message_id=msg_id,publish_time=published_at,attribute.source=src). " +
			"Optional, unset by default.",
		rule: func(p parameter, o Options) string { return metadataRule(p.str(o)) },
	},
	{
		name: "unknownFieldsColumn", group: "Target", kind: kindString,
		field: func(o *Options) any { return &o.UnknownFieldsColumn },
		usage: "A String or Map(String, String) `column` that takes, as one JSON object, the payload's fields that give the row no value " +
			"(no such column), keys and values as written. Optional, unset by default.",
		rule: notBlank("a column name", func(p parameter, o Options) string {
			v := p.str(o)
			if strings.TrimSpace(v) != v {
				return "must not start or end with spaces"
			}
			m, _ := convert.ParseMetadataColumns(o.MetadataColumns)
			if i := slices.IndexFunc(m, func(m convert.MetadataColumn) bool { return m.Column == v }); i >= 0 {
				return fmt.Sprintf("is also named in metadataColumns (%s); a column takes one value", m[i])
			}
			return ""
		}),
	},
	{
		name: "javascriptTextTransformGcsPath", group: "JavaScript UDF", kind: kindString,
		field: func(o *Options) any { return &o.JavascriptTextTransformGcsPath },
		usage: "JavaScript `file` of a user-defined function that reshapes each message before it is converted: gs://<bucket>/<object>, " +
			"or a local path for local runs. Optional, unset by default; set it and javascriptTextTransformFunctionName, or neither.",
		rule: notBlank("a gs://<bucket>/<object> path", func(p parameter, o Options) string {
			v := p.str(o)
			switch {
			case strings.HasPrefix(v, "gs://") && !gcsObject(v):
				return "must be gs://<bucket>/<object>, the path of one file"
			case strings.TrimSpace(v) != v:
				return "must not start or end with spaces"
			}
			return ""
		}),
	},
	{
		name: "javascriptTextTransformFunctionName", group: "JavaScript UDF", kind: kindString,
		field: func(o *Options) any { return &o.JavascriptTextTransformFunctionName },
		usage: "Name of the JavaScript `function` in javascriptTextTransformGcsPath to call on each message. " +
			"Optional, unset by default; set it and javascriptTextTransformGcsPath, or neither.",
		rule: func(p parameter, o Options) string {
			if !jsIdentifier(p.str(o)) {
				return "must be the name of a global JavaScript function: letters, digits, _ and $, not starting with a digit"
			}
			return ""
		},
	},
	{
		name: "javascriptTextTransformReloadIntervalMinutes", group: "JavaScript UDF", kind: kindInt, def: 0,
		field: func(o *Options) any { return &o.JavascriptTextTransformReloadIntervalMinutes },
		usage: "How often each worker reads the UDF's file again, in `minutes`, so that a changed function takes effect without a restart; 0 = never.",
		rule:  atLeast(0, "must be 0 (never) or more minutes (default %d)"),
	},
}

// metadataRule returns what is wrong with a metadataColumns value (convert.ParseMetadataColumns),
// "" if nothing.
func metadataRule(v string) string {
	if _, err := convert.ParseMetadataColumns(v); err != nil {
		return err.Error()
	}
	return ""
}

// gcsObject reports whether v is gs://<bucket>/<object>.
func gcsObject(v string) bool {
	bucket, object, ok := strings.Cut(strings.TrimPrefix(v, "gs://"), "/")
	return ok && bucket != "" && object != "" && !strings.HasSuffix(object, "/")
}

// jsIdentifier reports whether v is a JavaScript identifier of ASCII letters, digits, _ and $,
// not starting with a digit.
func jsIdentifier(v string) bool {
	for i, c := range v {
		switch {
		case c == '_' || c == '$' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return v != ""
}

// str returns the value of a string parameter in o; a secret's revealed, for its rule.
func (p parameter) str(o Options) string {
	if s, ok := p.field(&o).(*secret.String); ok {
		return s.Reveal()
	}
	return *p.field(&o).(*string)
}

// number returns the value of an integer parameter in o: the int, or the OptionalInt's Value.
func (p parameter) number(o Options) int {
	if v, ok := p.field(&o).(*OptionalInt); ok {
		return v.Value
	}
	return *p.field(&o).(*int)
}

// shown returns the value of p in o as a ParamError shows it: a string as it is, an integer in
// decimal.
func (p parameter) shown(o Options) string {
	switch p.kind {
	case kindInt, kindOptionalInt:
		return strconv.Itoa(p.number(o))
	case kindBool:
		return strconv.FormatBool(*p.field(&o).(*bool))
	case kindRef:
		return secret.ShownRef(p.str(o))
	case kindSecret:
		return p.field(&o).(*secret.String).String()
	}
	return p.str(o)
}

// atLeast is the rule of an integer that must be least or more. tooSmall says so; in the rule of
// a parameter with a default (kindInt), %d in it stands for the default.
func atLeast(least int, tooSmall string) func(parameter, Options) string {
	return func(p parameter, o Options) string {
		switch {
		case p.number(o) >= least:
			return ""
		case p.kind == kindInt:
			return fmt.Sprintf(tooSmall, p.def)
		}
		return tooSmall
	}
}

// plainName is the rule of a ClickHouse database or table name: no NUL, no backtick, backslash
// or parenthesis, and no dot; dot says what a dot means for this parameter.
func plainName(dot string) func(parameter, Options) string {
	return func(p parameter, o Options) string {
		v := p.str(o)
		switch {
		case strings.ContainsRune(v, 0):
			return "must not contain a NUL character"
		case strings.ContainsAny(v, "`\\()"):
			return "must not contain a backtick, a backslash or a parenthesis: clickhouse-go cannot name such a table in an INSERT"
		case strings.ContainsRune(v, '.'):
			return dot
		}
		return ""
	}
}

// pubsubName is the rule of a Pub/Sub resource name that parse (psclient.ParseSubscription,
// psclient.ParseTopic) checks.
func pubsubName(parse func(string) (psclient.Name, error)) func(parameter, Options) string {
	return func(p parameter, o Options) string {
		if _, err := parse(p.str(o)); err != nil {
			return err.Error()
		}
		return ""
	}
}

// tlsRef is the rule of a TLS parameter (clickHouseCaCertificate, clickHouseClientCertificate,
// clickHouseClientKey): a name that package secret can read, for a clickHouseUrl that asks for
// TLS, and, when partner is not "", given together with the parameter partner, whose value
// partnerValue returns.
func tlsRef(partner string, partnerValue func(Options) string) func(parameter, Options) string {
	return func(p parameter, o Options) string {
		if rule := secret.RefRule(p.str(o)); rule != "" {
			return rule
		}
		if chclient.URLRule(o.ClickHouseURL, o.ClickHouseUsername, o.ClickHousePassword, o.ClickHouseDatabase) != "" {
			return "" // clickHouseUrl's own problem, reported for it
		}
		if !chclient.UsesTLS(o.ClickHouseURL) {
			return "is set, but clickHouseUrl does not use TLS (http://, or clickhouse:// without secure=true): use https://, or clickhouse://host:9440?secure=true, or leave it empty"
		}
		if partner != "" && partnerValue(o) == "" {
			return "is set, but " + partner + " is not: give the client certificate and its key together"
		}
		return ""
	}
}

// notBlank is the rule of an optional string: a value of spaces only is refused (give what, or
// leave it empty for unset), any other value is checked by rule.
func notBlank(what string, rule func(parameter, Options) string) func(parameter, Options) string {
	return func(p parameter, o Options) string {
		if strings.TrimSpace(p.str(o)) == "" {
			return "is blank: give " + what + ", or leave it empty for unset"
		}
		return rule(p, o)
	}
}

// Parameter describes one flag of [RegisterFlags] as the Flex Template metadata (metadata.json)
// and docs/parameters.md declare it.
type Parameter struct {
	Name     string // the flag and template parameter name, such as "clickHouseTable"
	Group    string // its groupName in metadata.json; "" for a flag that is not a template parameter (stopAfterIdle, progressSeconds)
	Required bool   // whether the template parameter is required (isOptional false): it must be given, not empty
	Default  string // the default as the flag shows it (its DefValue, metadata.json's defaultValue); "" for none
}

// Parameters returns every flag of [RegisterFlags], in the order of the fields of [Options].
func Parameters() []Parameter {
	out := make([]Parameter, len(parameters))
	for i, p := range parameters {
		out[i] = Parameter{Name: p.name, Group: p.group, Required: p.need != optional}
		if p.def != nil {
			out[i].Default = fmt.Sprint(p.def)
		}
	}
	return out
}
