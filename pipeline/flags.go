// The flags of the parameters: RegisterFlags, which defines them from the parameter table, and
// the flag.Value of each kind of parameter (OptionalInt and the unexported ones).

package pipeline

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// RegisterFlags sets *o to [Defaults] and defines on fs one flag per field of
// o, named as the template parameter, whose value is stored in that field.
// Each flag's usage tells the meaning and the unit, and whether the parameter
// is required or optional, which is added from the table's need and default
// (Required., or Optional, unset by default and what unset does); the flag
// package adds "(default …)" to the help of the flags with a default, which
// is also each flag's DefValue.
//
// Integers are parsed in decimal digits, as the template's form (metadata.json's regex) takes
// them: no 0x, 0o or 0b prefix, no _, no leading 0 or +, no spaces around the number (the form
// refuses " 1" and "+1", so Dataflow's launch would too). A number too large or too small for an
// int is refused with the parameter's own rule (its bound, or what its rule says below), not an
// int's range. windowSeconds, batchRowCount and
// insertQuorum are [OptionalInt]: an empty or blank value (--windowSeconds=, as the
// Dataflow console may pass for a parameter left empty) leaves them unset,
// while any number, 0 included, is a given value. For the same reason an
// empty or blank value of a flag with a default (--maxRetries=, --insertDeduplicate=)
// gives the default, where the standard flag types would fail. Booleans take
// --insertDeduplicate=false or --insertDeduplicate=true, or any value of
// [strconv.ParseBool] (the form's list), without spaces around it; a bare --insertDeduplicate
// means true (as for any Go bool flag, a separate "false" argument is not its value).
//
// The flag values of clickHousePassword and clickHouseUrl print redacted
// (flag.Value.String), so that code which lists flags, such as Beam's
// runners when they copy the set flags into the job's pipeline options, shows
// no password (a Secret Manager secret version's name shows as it is); the
// fields of o hold the real values. Hence workers get the password, or the
// name of its secret version, from the stages' configuration (the
// chclient.Config that Build puts into each DoFn), never from the pipeline
// options.
//
// It panics if fs or o is nil, or if fs already defines one of the names.
func RegisterFlags(fs *flag.FlagSet, o *Options) {
	if fs == nil || o == nil {
		panic("pipeline.RegisterFlags: nil *flag.FlagSet or *Options")
	}
	*o = Defaults()
	for _, p := range parameters {
		registerFlag(fs, p, o)
	}
}

// registerFlag defines on fs the flag of parameter p, stored in its field of o.
func registerFlag(fs *flag.FlagSet, p parameter, o *Options) {
	switch f, usage := p.field(o), p.flagUsage(); p.kind {
	case kindString, kindRef:
		fs.StringVar(f.(*string), p.name, *f.(*string), usage)
	case kindSecret:
		fs.Var((*secretFlag)(f.(*secret.String)), p.name, usage)
	case kindURL:
		fs.Var((*urlFlag)(f.(*string)), p.name, usage)
	case kindInt:
		fs.Var(&intFlag{f.(*int), *f.(*int), p}, p.name, usage)
	case kindOptionalInt:
		fs.Var(&optionalIntFlag{f.(*OptionalInt), p}, p.name, usage)
	case kindBool:
		fs.Var(&boolFlag{f.(*bool), *f.(*bool)}, p.name, usage)
	}
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

// Set parses s in decimal (parseInt: no spaces around it, no leading + or 0, no 0x, 0o or 0b
// prefix, no _) and marks the value given. An empty or blank s makes the value unset, as the
// Dataflow console may pass --name= for a parameter left empty.
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

// optionalIntFlag is the flag.Value of an OptionalInt parameter: OptionalInt's, except that a
// number beyond an int is refused with the parameter's own rule (parameter.beyond).
type optionalIntFlag struct {
	*OptionalInt
	p parameter
}

func (f *optionalIntFlag) Set(s string) error {
	if rule, ok := beyondInt(f.p, s); ok {
		return errors.New(rule)
	}
	return f.OptionalInt.Set(s)
}

// rangeError is parseInt's error for a number of decimal digits beyond an int.
type rangeError struct{ negative bool }

func (e rangeError) Error() string {
	return fmt.Sprintf("out of range: a whole number from %d to %d", math.MinInt, math.MaxInt)
}

// beyondInt returns p's rule for s when s is a number beyond an int (see parameter.beyond), or
// -0 where p's rule refuses 0: parseInt's "give 0" would send the user to a value refused too
// (batchRowCount, windowSeconds).
func beyondInt(p parameter, s string) (rule string, ok bool) {
	var r rangeError
	if _, err := parseInt(s); errors.As(err, &r) {
		return p.beyond(r.negative), true
	}
	if s == "-0" {
		if rule := p.ruleAt(0); rule != "" {
			return rule, true
		}
	}
	return "", false
}

// parseInt parses an integer flag value in decimal digits as the template's form does
// (metadata.json): it refuses spaces around the number, a leading + and a leading 0 (and -0).
// flag.Int reads 010 as 8, 0x10 as 16 and 1_000 as 1000, which neither the form nor a reader
// of the command takes them for; and a value the form refuses, Dataflow's launch refuses too.
// A number beyond an int is a rangeError.
func parseInt(s string) (int, error) {
	switch digits := strings.TrimPrefix(s, "-"); {
	case strings.TrimSpace(s) != s:
		return 0, errors.New("has spaces around it: give the number alone")
	case strings.HasPrefix(s, "+"):
		return 0, errors.New("has a leading +: give the number without it")
	case len(digits) > 1 && digits[0] == '0' && strings.Trim(digits, "0123456789") == "":
		// Only digits: 010, which flag.Int reads as 8. 0.5 and 0x10 are no whole numbers in
		// decimal digits, which the default case says.
		return 0, errors.New("has a leading 0: give the number in decimal digits without it")
	case s == "-0":
		return 0, errors.New("is -0: give 0")
	}
	v, err := strconv.ParseInt(s, 10, strconv.IntSize)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, rangeError{negative: strings.HasPrefix(s, "-")}
		}
		return 0, errors.New("not a whole number in decimal digits")
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
// flag.Int, except that an empty value gives the default, and a number beyond an int is refused
// with the parameter's own rule (parameter.beyond).
type intFlag struct {
	p     *int
	def   int
	param parameter
}

func (f *intFlag) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		*f.p = f.def
		return nil
	}
	if rule, ok := beyondInt(f.param, s); ok {
		return errors.New(rule)
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
// flag.Bool, except that an empty or blank value gives the default, and a value with spaces
// around it is refused, as the template's form refuses it.
type boolFlag struct {
	p   *bool
	def bool
}

func (f *boolFlag) Set(s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		*f.p = f.def
		return nil
	case strings.TrimSpace(s) != s:
		return fmt.Errorf("has spaces around it: give true or false alone (leave it empty for the default, %t)", f.def)
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

// secretFlag is the flag.Value of clickHousePassword: it stores the string as given and prints
// it as secret.String does (the mask instead of a password; a secret version's name as it is).
type secretFlag secret.String

func (s *secretFlag) Set(v string) error { *s = secretFlag(v); return nil }

func (s *secretFlag) String() string {
	if s == nil {
		return ""
	}
	return secret.String(*s).String()
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
