// The parameter table's types: every template parameter is written once, in the table (its two
// parts are params_endpoints.go and params_processing.go, its shared rules params_rules.go), with
// what RegisterFlags, Defaults, Validate and String read from it, the rules of its values and its
// texts; Parameters and Groups give it to go generate, which writes metadata.json and
// docs/parameters.md from it.

package pipeline

//go:generate go run ./internal/gen -root ..

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

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
	// usage is the flag's usage, without what need and def say, which flagUsage adds; a `word`
	// in backquotes names the value in -help.
	usage string
	// unset is what an optional parameter without a default does when unset, which flagUsage
	// adds after "Optional, unset by default: "; "" for the note, or for nothing.
	unset string
	// rule returns what is wrong with the value in o, "" if nothing; nil means no rule. Of an
	// integer, it is called only for a value within most, and says what is wrong below (math.MinInt
	// in Defaults gives its rule for a number too small for an int: see parameter.beyond).
	rule func(p parameter, o Options) string
	// most is the upper bound of an integer parameter (kindInt, kindOptionalInt), which Validate
	// checks before rule and the usage, help and reference state; the zero bound for the others.
	most bound

	// What metadata.json and docs/parameters.md say of it, which go generate writes from here.
	label string       // the console's label; "" for a flag that is not a template parameter
	help  string       // the console's help text, without "Default: …", which is added
	typ   string       // the paramType, when not the kind's (TEXT, NUMBER or BOOLEAN)
	enum  []EnumOption // the choices of an ENUM
	regex string       // the console's check of a value, in RE2 and POSIX ERE; "" for none
	note  string       // added to the reference's default, or to its "unset": "auto", "lz4"
	doc   string       // the reference's text (Markdown)
}

// parameters are the template parameters, in the order of the fields of Options, which is the
// order of String and of the problems of Validate.
//
// Validate calls a rule only for a value that is there: a required string that is not blank (a
// blank one is reported as missing), an optional string that is not empty, an OptionalInt that
// is given, an int always. Rules across parameters that belong to none of them (at least one
// dead-letter destination) are in Validate.
var parameters = slices.Concat(endpointParameters, processingParameters)

// bound is the largest value of an integer parameter and what it counts: the one source of the
// rule of a value above it and of the sentence of the texts that states it.
type bound struct {
	most int    // the largest value
	unit string // what the number counts, and what it comes to where that helps: "seconds (365 days)"
}

// rule is the rule text of a value above b: "must be at most 31536000 seconds (365 days)".
func (b bound) rule() string { return fmt.Sprintf("must be at most %d %s", b.most, b.unit) }

// text is the sentence of the usage, help and reference that states b: "At most 31536000
// seconds (365 days)."; "" for the zero bound (a parameter that is no integer).
func (b bound) text() string {
	if b == (bound{}) {
		return ""
	}
	return fmt.Sprintf("At most %d %s.", b.most, b.unit)
}

// digits is an RE2 and POSIX ERE alternation, without anchors or group, that matches the
// whole numbers from 1 to b.most in decimal digits without a leading zero, and no other: for
// 1024, "[1-9][0-9]{0,2}|10[0-1][0-9]|102[0-4]". The console's regex of an integer parameter
// puts it where its lower rule says a positive number, so that the form refuses a value above
// the bound as the binary does (the form's check cannot compare numbers, only text).
func (b bound) digits() string {
	n := strconv.Itoa(b.most)
	var alts []string
	switch len(n) {
	case 1: // the loop below covers it
	case 2:
		alts = append(alts, "[1-9]")
	default:
		alts = append(alts, fmt.Sprintf("[1-9][0-9]{0,%d}", len(n)-2))
	}
	// Numbers of n's length: the same first i digits as n, then a smaller digit at i (the last
	// digit: at most n's), then any digits.
	for i := range len(n) {
		low, high := byte('0'), n[i]
		if i == 0 {
			low = '1'
		}
		if i < len(n)-1 {
			high--
		}
		if high < low {
			continue
		}
		class := string(low)
		if high > low {
			class = "[" + string(low) + "-" + string(high) + "]"
		}
		alt := n[:i] + class
		switch rest := len(n) - 1 - i; rest {
		case 0:
		case 1:
			alt += "[0-9]"
		default:
			alt += fmt.Sprintf("[0-9]{%d}", rest)
		}
		alts = append(alts, alt)
	}
	return strings.Join(alts, "|")
}

// withBound returns text followed by the sentence of p's bound, if it has one.
func (p parameter) withBound(text string) string {
	if t := p.most.text(); t != "" {
		return text + " " + t
	}
	return text
}

// positive is what the regex of an integer parameter says of a positive number, which
// consoleRegex replaces by its bound's digits.
const positive = "[1-9][0-9]*"

// consoleRegex is p's regex as metadata.json gives it: an integer's states its bound, so that
// the console refuses a number above it (see [bound.digits]).
func (p parameter) consoleRegex() string {
	if p.most == (bound{}) {
		return p.regex
	}
	return strings.Replace(p.regex, positive, p.most.digits(), 1)
}

// boundBeforeEnding returns help with the sentence of a bound, t, before what help says of unset,
// which ends it; at its end when it says nothing of it (the default, which Parameters adds, then
// follows).
func boundBeforeEnding(help, t string) string {
	if i := strings.Index(help, " Unset by default"); i >= 0 {
		return help[:i] + " " + t + help[i:]
	}
	return help + " " + t
}

// beyond returns p's rule for an integer too large for an int (negative false: the rule of its
// bound) or too small (negative true: what its rule says of math.MinInt, with the other
// parameters at their defaults), so that a flag's error states the parameter's own range rather
// than an int's.
func (p parameter) beyond(negative bool) string {
	if !negative {
		return p.most.rule()
	}
	if rule := p.ruleAt(math.MinInt); rule != "" {
		return rule
	}
	return fmt.Sprintf("out of range: a whole number to %d", p.most.most) // no table entry comes here (TestBeyond)
}

// ruleAt returns what p's rule says of the integer v, with the other parameters at their
// defaults; "" when the rule takes it.
func (p parameter) ruleAt(v int) string {
	o := Defaults()
	switch f := p.field(&o).(type) {
	case *int:
		*f = v
	case *OptionalInt:
		*f = GivenInt(v)
	}
	if p.rule == nil {
		return ""
	}
	return p.rule(p, o)
}

// str returns the value of a string parameter in o.
func (p parameter) str(o Options) string {
	if s, ok := p.field(&o).(*secret.String); ok {
		return s.Reveal()
	}
	return *p.field(&o).(*string)
}

// flagUsage returns the usage of p's flag: its usage, the sentence of its bound and what its need
// and default say, which the usage texts leave out. A required parameter's ends "Required."; an optional one's without
// a default "Optional, unset by default", with "(empty = unset)" for an OptionalInt and what
// unset does (unset, or else the note); a default is left to the flag package's "(default …)".
func (p parameter) flagUsage() string {
	usage := p.withBound(p.usage)
	switch {
	case p.need == required:
		return usage + " Required."
	case p.def != nil:
		return usage
	}
	s := usage + " Optional, unset by default"
	if p.kind == kindOptionalInt {
		s += " (empty = unset)"
	}
	if does := cmp.Or(p.unset, p.note); does != "" {
		s += ": " + does
	}
	return s + "."
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

// Parameter describes one flag of [RegisterFlags] as the Flex Template metadata (metadata.json)
// and the reference (docs/parameters.md) declare it; go generate ./pipeline writes both from
// [Parameters] and [Groups].
type Parameter struct {
	Name     string // the flag and template parameter name, such as "clickHouseTable"
	Group    string // its groupName in metadata.json; "" for a flag that is not a template parameter (stopAfterIdle, progressSeconds)
	Required bool   // whether the template parameter is required (isOptional false): it must be given, not empty
	Default  string // the default as the flag shows it (its DefValue, metadata.json's defaultValue); "" for none

	Label     string       // metadata.json's label; "" when Group is ""
	HelpText  string       // metadata.json's helpText, which ends "Default: <Default>." when there is a default; an integer's states its bound ("At most …") before what it says of its default or of unset
	ParamType string       // metadata.json's paramType: TEXT, NUMBER, BOOLEAN, PUBSUB_SUBSCRIPTION, PUBSUB_TOPIC, JAVASCRIPT_UDF_FILE or ENUM
	Enum      []EnumOption // metadata.json's enumOptions, for an ENUM
	Regex     string       // metadata.json's one regex; "" for none (any text, the password)
	Shown     string       // the reference's "Required / default": "required", the default or "unset", with a note in parentheses
	Doc       string       // the reference's text of it, Markdown, which ends with the bound of an integer ("At most …")
}

// EnumOption is one choice of an ENUM parameter (metadata.json's enumOptions).
type EnumOption struct {
	Value       string // the value given to the flag
	Label       string // the console's name of it
	Description string // one sentence on when to choose it
}

// groups are the groups of the template parameters, in the order of the console's form, of
// metadata.json, of docs/parameters.md and of --help.
var groups = []string{"Source", "JavaScript UDF", "Target", "Dead letter", "Batching", "Insert tuning"}

// Groups returns the groups of the template parameters in the order of the console's form.
func Groups() []string { return slices.Clone(groups) }

// Parameters returns every flag of [RegisterFlags], in the order of the fields of [Options].
func Parameters() []Parameter {
	out := make([]Parameter, len(parameters))
	for i, p := range parameters {
		q := Parameter{Name: p.name, Group: p.group, Required: p.need != optional,
			Label: p.label, HelpText: p.help, ParamType: p.typ, Enum: slices.Clone(p.enum), Regex: p.consoleRegex(), Doc: p.withBound(p.doc)}
		if t := p.most.text(); t != "" && p.group != "" {
			q.HelpText = boundBeforeEnding(p.help, t)
		}
		if p.def != nil {
			q.Default = fmt.Sprint(p.def)
			q.HelpText += " Default: " + q.Default + "."
		}
		if q.ParamType == "" {
			q.ParamType = map[kind]string{kindInt: "NUMBER", kindOptionalInt: "NUMBER", kindBool: "BOOLEAN"}[p.kind]
			if q.ParamType == "" {
				q.ParamType = "TEXT"
			}
		}
		switch {
		case q.Required:
			q.Shown = "required"
		case q.Default != "":
			q.Shown = q.Default
		default:
			q.Shown = "unset"
		}
		if p.note != "" {
			q.Shown += " (" + p.note + ")"
		}
		out[i] = q
	}
	return out
}
