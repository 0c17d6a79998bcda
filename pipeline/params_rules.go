// The rules of the parameter table's values, shared by several parameters.

package pipeline

import (
	"fmt"
	"math"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

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

// The bounds of the integer parameters (parameter.most). Each is far above any real use and
// keeps the value within what the code that takes it holds.
var (
	// yearOfSeconds bounds the parameters in seconds: a number of seconds beyond what a
	// time.Duration holds (about 292 years) wraps around, and a year is beyond any real interval.
	yearOfSeconds = bound{maxSeconds, "seconds (365 days)"}
	// yearOfMillis and yearOfMinutes are the same year in milliseconds and in minutes.
	yearOfMillis  = bound{maxSeconds * 1000, "milliseconds (365 days)"}
	yearOfMinutes = bound{maxSeconds / 60, "minutes (365 days)"}
	// int32Rows bounds the numbers of rows: Beam's count trigger (batchRowCount) counts in an
	// int32, beyond which it wraps around.
	int32Rows = bound{math.MaxInt32, "rows"}
)

// maxSeconds is a year in seconds, the bound of the parameters in seconds.
const maxSeconds = 365 * 24 * 3600

// maxShards bounds numShards. Each shard is a batcher on every worker, with its own state and
// timers, and an INSERT stream of its own into ClickHouse; on the local runner each heartbeat of
// the source (every 200 ms) goes to every shard, so that 200,000 shards stalled a run and took
// gigabytes while idle. 1024 is 64 times the largest automatic choice (16), beyond the INSERTs
// ClickHouse takes well at once (each INSERT makes a part to merge).
const maxShards = 1024

// plainName is the rule of a ClickHouse database or table name (see tableRule); dot says what
// a dot means for this parameter.
func plainName(dot string) func(parameter, Options) string {
	return func(p parameter, o Options) string { return tableRule(p.str(o), dot) }
}

// tableRule returns what is wrong with the ClickHouse database or table name v, "" if nothing:
// a NUL, a backtick, backslash or parenthesis, what else clickhouse-go cannot name in an INSERT
// (chclient.InsertNameFault), or a dot, which dot explains.
func tableRule(v, dot string) string {
	switch fault := chclient.InsertNameFault(v); {
	case strings.ContainsRune(v, 0):
		return "must not contain a NUL character"
	case strings.ContainsAny(v, "`\\()"):
		return "must not contain a backtick, a backslash or a parenthesis: clickhouse-go cannot name such a table in an INSERT"
	case fault != "":
		return "must not hold " + fault
	case strings.ContainsRune(v, '.'):
		return dot
	}
	return ""
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
		if chclient.URLRule(o.ClickHouseURL, o.ClickHouseUsername, o.ClickHousePassword, o.ClickHouseDatabase, ClickHouseParam) != "" {
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

// withAddNewColumns is the rule of a parameter that only addNewColumns uses: "" when
// addNewColumns is on; does says what the parameter does ("it bounds how many columns
// addNewColumns adds"), in the refusal of a value without addNewColumns.
func withAddNewColumns(o Options, does string) string {
	if o.AddNewColumns {
		return ""
	}
	return "is set, but addNewColumns is not: " + does + "; set addNewColumns=true, or unset it"
}

// excludedFields parses addNewColumnsExcluded: comma-separated field names, as written. The
// error names an empty name (two commas in a row, or one at an end).
func excludedFields(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	names := strings.Split(v, ",")
	for i, n := range names {
		if n == "" {
			return nil, fmt.Errorf("name %d of %d is empty (two commas in a row, or a comma at an end); give comma-separated field names", i+1, len(names))
		}
		if t := strings.TrimSpace(n); t != n {
			// "debug, trace" would exclude the field " trace", never "trace".
			return nil, fmt.Errorf("name %d of %d, %q, starts or ends with a space: names are matched exactly, so it would never match the field %q; "+
				"write the list without spaces around the commas (debug,trace_id)", i+1, len(names), n, t)
		}
	}
	return names, nil
}
