// The checks of the parameters: Options.Validate, which applies the rules of the parameter table
// and the rules across parameters, and ParamError, the problem it reports.

package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// maxShownValue is how many characters of an offending value a [ParamError]
// shows.
const maxShownValue = 100

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
//     resource name rules (see [psclient.ParseSubscription]).
//   - clickHouseUrl is http://, https:// or clickhouse:// (any case)
//     followed by a host, or several comma-separated, each with an optional
//     port 1 to 65535, and without surrounding spaces (see
//     [Options.RedactedURL] for how a password in it is hidden).
//   - clickHousePassword, when it looks like a Secret Manager name, is a
//     secret version's, projects/<p>/secrets/<s>/versions/<v|latest>, and
//     clickHouseUrl then holds no password.
//   - clickHouseCaCertificate, clickHouseClientCertificate and
//     clickHouseClientKey, when set, name a file, a gs://<bucket>/<object> or a
//     Secret Manager secret version (not the PEM text itself), for a
//     clickHouseUrl that asks for TLS; the client certificate and key come
//     together.
//   - clickHouseDatabase, clickHouseTable and clickHouseDeadLetterTable are
//     plain names: no backtick, no NUL and no dot (a dot in a table name
//     usually means "<database>.<table>" was given).
//   - windowSeconds and batchRowCount, when given, and maxInsertBlockSize
//     are positive; maxRetries, and insertQuorum when given, are 0 or more.
//   - javascriptTextTransformGcsPath and javascriptTextTransformFunctionName
//     are both set or both unset; the path, when it starts with gs://, is
//     gs://<bucket>/<object>; the function is a JavaScript identifier;
//     javascriptTextTransformReloadIntervalMinutes is 0 or more.
//
// Each parameter's own rule is in the parameter table (params.go), beside its
// flag; the rules across parameters (a dead-letter destination, the UDF's
// file and function together) are here.
//
// The errors never show the password: not as clickHousePassword, not in the
// userinfo or query of clickHouseUrl, and not where it appears in another
// parameter.
func (o Options) Validate() error {
	return o.validate(func(string) bool { return true })
}

// validate applies the rules of the parameters that in accepts and the rules across parameters
// that are all in it.
func (o Options) validate(in func(name string) bool) error {
	c := checker{password: o.ClickHousePassword}
	for _, p := range parameters {
		if in(p.name) {
			c.check(p, o)
		}
	}

	// Rules across parameters.
	if in("clickHouseDeadLetterTable") && in("deadLetterTopic") && o.ClickHouseDeadLetterTable == "" && o.DeadLetterTopic == "" {
		c.fail("clickHouseDeadLetterTable", "",
			"is unset and so is deadLetterTopic: set at least one of them, for the messages that cannot be inserted")
	}
	switch path, function := o.JavascriptTextTransformGcsPath, o.JavascriptTextTransformFunctionName; {
	case !in("javascriptTextTransformGcsPath") || !in("javascriptTextTransformFunctionName"):
	case path != "" && function == "":
		c.fail("javascriptTextTransformFunctionName", "",
			"is unset but javascriptTextTransformGcsPath is set: give the name of the function to call, or unset both")
	case path == "" && function != "":
		c.fail("javascriptTextTransformGcsPath", "",
			"is unset but javascriptTextTransformFunctionName is set: give the JavaScript file, or unset both")
	}

	// In flag order. The problem across parameters and the parameter's own never come together
	// (the one is for an empty parameter, the other for a non-empty one).
	slices.SortStableFunc(c.errs, func(a, b error) int {
		return paramIndex(a.(*ParamError).Param) - paramIndex(b.(*ParamError).Param)
	})
	return errors.Join(c.errs...)
}

// paramIndex returns the place of the parameter name in the table.
func paramIndex(name string) int {
	return slices.IndexFunc(parameters, func(p parameter) bool { return p.name == name })
}

// checker collects the problems for Validate, with the password hidden from
// their text.
type checker struct {
	password secret.String
	errs     []error
}

// fail adds a problem. The value is shown with its URL passwords redacted
// (only clickHouseUrl is a URL, but a password pasted into another
// parameter is hidden as well) and with the password hidden.
func (c *checker) fail(param, value, rule string) {
	c.errs = append(c.errs, &ParamError{
		Param: param,
		Value: c.password.Hide(chclient.RedactURL(value)),
		Rule:  c.password.Hide(rule),
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

// check applies p's rules to its value in o: a required string must not be blank; a value that
// is there (see the table) must pass p.rule. The value shown is p.shown's: PEM text given for a
// certificate or key shows as "xxxxx".
func (c *checker) check(p parameter, o Options) {
	switch p.kind {
	case kindString, kindSecret, kindURL, kindRef:
		v := p.str(o)
		if p.need == required {
			if !c.required(p.name, v) {
				return
			}
		} else if v == "" {
			return // unset (the empty password among them)
		}
	case kindOptionalInt:
		if !p.field(&o).(*OptionalInt).Given {
			return
		}
	}
	if p.rule == nil {
		return
	}
	if rule := p.rule(p, o); rule != "" {
		c.fail(p.name, p.shown(o), rule)
	}
}
