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
// problem, in flag order. Each parameter's own rule is in the parameter table
// (docs/parameters.md gives them); the rules across parameters are here: at
// least one of clickHouseDeadLetterTable and deadLetterTopic is set, and
// javascriptTextTransformGcsPath and javascriptTextTransformFunctionName are
// set together or not at all.
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
	c := paramChecks{password: o.ClickHousePassword}
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

// paramChecks collects the problems for Validate, with the password hidden from
// their text.
type paramChecks struct {
	password secret.String
	errs     []error
}

// fail adds a problem. The value is shown with its URL passwords redacted
// (only clickHouseUrl is a URL, but a password pasted into another
// parameter is hidden as well) and with the password hidden.
func (c *paramChecks) fail(param, value, rule string) {
	c.errs = append(c.errs, &ParamError{
		Param: param,
		Value: c.password.Hide(chclient.RedactURL(value)),
		Rule:  c.password.Hide(rule),
	})
}

// required reports whether value is non-blank, adding a problem if not.
func (c *paramChecks) required(param, value string) bool {
	if strings.TrimSpace(value) != "" {
		return true
	}
	c.fail(param, value, "is required and must not be empty or blank")
	return false
}

// check applies p's rules to its value in o: a required string must not be blank; a value that
// is there (see the table) must pass p.rule, and an integer must first be at most its bound
// (p.most). The value shown is p.shown's: PEM text given for a certificate or key shows as
// "xxxxx".
func (c *paramChecks) check(p parameter, o Options) {
	switch p.kind {
	case kindInt, kindOptionalInt:
		if p.kind == kindOptionalInt && !p.field(&o).(*OptionalInt).Given {
			return
		}
		if p.number(o) > p.most.most {
			c.fail(p.name, p.shown(o), p.most.rule())
			return
		}
	case kindString, kindSecret, kindURL, kindRef:
		v := p.str(o)
		if p.need == required {
			if !c.required(p.name, v) {
				return
			}
		} else if v == "" {
			return // unset (the empty password among them)
		}
	}
	if p.rule == nil {
		return
	}
	if rule := p.rule(p, o); rule != "" {
		c.fail(p.name, p.shown(o), rule)
	}
}
