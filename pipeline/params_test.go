package pipeline

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// TestParameterTable holds the parameter table to Options and to itself: one entry per field of
// Options, in field order, each accessor returning its own field with the type of its kind; a
// default exactly for the kinds that have one; unique names; and usage texts that leave the need
// and the default to flagUsage, which says them (internal/gen writes metadata.json and the docs from it; flex-template/metadata_test.go holds metadata.json to the binary).
func TestParameterTable(t *testing.T) {
	var o Options
	rv := reflect.ValueOf(&o).Elem()
	if len(parameters) != rv.NumField() {
		t.Errorf("the table has %d parameters, Options %d fields", len(parameters), rv.NumField())
	}
	wantType := map[kind]reflect.Type{
		kindString:      reflect.TypeFor[*string](),
		kindSecret:      reflect.TypeFor[*secret.String](),
		kindURL:         reflect.TypeFor[*string](),
		kindRef:         reflect.TypeFor[*string](),
		kindInt:         reflect.TypeFor[*int](),
		kindOptionalInt: reflect.TypeFor[*OptionalInt](),
		kindBool:        reflect.TypeFor[*bool](),
	}
	wantDef := map[kind]reflect.Type{kindInt: reflect.TypeFor[int](), kindBool: reflect.TypeFor[bool]()}
	seen := map[string]bool{}
	for i, p := range parameters {
		if p.name == "" || seen[p.name] {
			t.Errorf("parameter %d: name %q is empty or repeated", i, p.name)
		}
		seen[p.name] = true
		f := reflect.ValueOf(p.field(&o))
		if f.Type() != wantType[p.kind] {
			t.Errorf("%s: field is a %v, want %v for its kind", p.name, f.Type(), wantType[p.kind])
		}
		if i < rv.NumField() && f.Pointer() != rv.Field(i).Addr().Pointer() {
			t.Errorf("%s: field is not Options.%s, the field in its place", p.name, rv.Type().Field(i).Name)
		}
		if got := reflect.TypeOf(p.def); got != wantDef[p.kind] {
			t.Errorf("%s: default %v of type %v, want a %v", p.name, p.def, got, wantDef[p.kind])
		}
		// The usage leaves the need and the default to flagUsage, which says them once.
		u := p.flagUsage()
		switch {
		case strings.Contains(p.usage, "Required") || strings.Contains(p.usage, "Optional") || strings.Contains(p.usage, "default"):
			t.Errorf("%s: its usage states its need or default, which flagUsage adds: %q", p.name, p.usage)
		case p.unset != "" && (p.need != optional || p.def != nil):
			t.Errorf("%s: says what unset does (%q), but it is required or has a default", p.name, p.unset)
		case p.need != optional && !strings.HasSuffix(u, " Required."):
			t.Errorf("%s: required, but its flag's usage does not say so: %q", p.name, u)
		case p.need == optional && strings.Contains(u, "Required"):
			t.Errorf("%s: optional, but its flag's usage says required: %q", p.name, u)
		case p.need == optional && p.def == nil && !strings.Contains(u, ". Optional, unset by default"):
			t.Errorf("%s: optional without a default, but its flag's usage does not say so: %q", p.name, u)
		case p.def != nil && u != p.withBound(p.usage):
			t.Errorf("%s: has a default, which the flag package prints, but its flag's usage adds %q", p.name, strings.TrimPrefix(u, p.withBound(p.usage)))
		}
		if p.need != optional && p.group == "" {
			t.Errorf("%s: required, but no template parameter (no group)", p.name)
		}
		// The texts that go generate writes out: a template parameter has a group of groups, a
		// label and a help text, whose default the generator adds; every flag has its reference text.
		switch {
		case p.group != "" && (!slices.Contains(groups, p.group) || p.label == "" || p.help == ""):
			t.Errorf("%s: group %q (of %q), label %q, help %q: a template parameter needs all three", p.name, p.group, groups, p.label, p.help)
		case p.group == "" && (p.label != "" || p.help != "" || p.regex != "" || p.typ != ""):
			t.Errorf("%s: not a template parameter, but it has a console label, help, regex or type", p.name)
		case strings.Contains(p.help, "Default"):
			t.Errorf("%s: help states its default, which Parameters adds: %q", p.name, p.help)
		case p.doc == "":
			t.Errorf("%s: no reference text (doc)", p.name)
		case (p.typ == "ENUM") != (len(p.enum) > 0):
			t.Errorf("%s: type %q with %d choices: an ENUM, and only an ENUM, has them", p.name, p.typ, len(p.enum))
		}
	}
}

// TestParameters checks the exported view of the table against the flags.
func TestParameters(t *testing.T) {
	_, fs, err := parseFlags()
	if err != nil {
		t.Fatal(err)
	}
	ps := Parameters()
	if len(ps) != len(allFlags) {
		t.Fatalf("Parameters() has %d entries, want %d", len(ps), len(allFlags))
	}
	for i, p := range ps {
		if p.Name != allFlags[i] {
			t.Errorf("Parameters()[%d] is %s, want %s", i, p.Name, allFlags[i])
		}
		f := fs.Lookup(p.Name)
		if f == nil {
			t.Errorf("%s is not a flag", p.Name)
		} else if f.DefValue != p.Default {
			t.Errorf("%s: Default %q, but the flag's default is %q", p.Name, p.Default, f.DefValue)
		}
	}
}

// TestIntegerBounds holds every integer parameter to a bound that its texts state: metadata.json's
// help, the reference (docs/parameters.md) and the flag's usage (--help) say "At most <bound>
// <unit>.", from the same bound that Validate checks, which refuses the next number up.
func TestIntegerBounds(t *testing.T) {
	byName := map[string]Parameter{}
	for _, q := range Parameters() {
		byName[q.Name] = q
	}
	for _, p := range parameters {
		isInt := p.kind == kindInt || p.kind == kindOptionalInt
		if !isInt {
			if p.most != (bound{}) {
				t.Errorf("%s: not an integer, but has the bound %+v", p.name, p.most)
			}
			continue
		}
		if p.most.most <= 0 || p.most.unit == "" {
			t.Errorf("%s: an integer without a bound (%+v)", p.name, p.most)
			continue
		}
		text := fmt.Sprintf("At most %d %s.", p.most.most, p.most.unit)
		q := byName[p.name]
		if p.group != "" && !strings.Contains(q.HelpText, text) {
			t.Errorf("%s: metadata.json's help does not state its bound %q: %q", p.name, text, q.HelpText)
		}
		if !strings.Contains(q.Doc, text) {
			t.Errorf("%s: the reference does not state its bound %q: %q", p.name, text, q.Doc)
		}
		if !strings.Contains(p.flagUsage(), text) {
			t.Errorf("%s: the flag's usage does not state its bound %q: %q", p.name, text, p.flagUsage())
		}
		// The console's regex refuses what the binary refuses above the bound.
		if p.group != "" {
			re, err := regexp.Compile(q.Regex)
			switch {
			case !strings.Contains(p.regex, positive):
				t.Errorf("%s: regex %q has no %q to state its bound in", p.name, p.regex, positive)
			case err != nil:
				t.Errorf("%s: metadata.json's regex %q: %v", p.name, q.Regex, err)
			case !re.MatchString("1") || !re.MatchString(strconv.Itoa(p.most.most)) || re.MatchString(strconv.Itoa(p.most.most+1)):
				t.Errorf("%s: metadata.json's regex %q does not take 1 to %d alone", p.name, q.Regex, p.most.most)
			}
		}
		// The bound passes (the other parameters as companions need), the next number up does not.
		for v, want := range map[int]string{p.most.most: "", p.most.most + 1: p.most.rule()} {
			o := validOptions()
			o.AddNewColumns = true
			o.JavascriptTextTransformGcsPath, o.JavascriptTextTransformFunctionName = "gs://b/udf.js", "transform"
			switch f := p.field(&o).(type) {
			case *int:
				*f = v
			case *OptionalInt:
				*f = GivenInt(v)
			}
			if p.name == "retryInitialBackoffMillis" {
				o.RetryMaxBackoffMillis = v
			}
			var got string
			if err := o.validate(func(name string) bool { return name == p.name }); err != nil {
				got = err.(interface{ Unwrap() []error }).Unwrap()[0].(*ParamError).Rule
			}
			if got != want {
				t.Errorf("%s=%d: rule %q, want %q", p.name, v, got, want)
			}
		}
	}
}

// TestBoundDigits holds bound.digits to the numbers 1 to its bound, in digits without a leading
// zero, for every bound up to 2,100 and some larger, against every number to ten times the bound.
func TestBoundDigits(t *testing.T) {
	bounds := []int{math.MaxInt32, 10_000, 31_536_000, 100_000, 99_999, 1_000_000}
	for n := 1; n <= 2_100; n++ {
		bounds = append(bounds, n)
	}
	for _, n := range bounds {
		b := bound{most: n}
		re := regexp.MustCompile("^(" + b.digits() + ")$")
		if _, err := regexp.CompilePOSIX("^(" + b.digits() + ")$"); err != nil {
			t.Fatalf("%d: %q is not POSIX ERE: %v", n, b.digits(), err)
		}
		check := func(v int) {
			if got, want := re.MatchString(strconv.Itoa(v)), v >= 1 && v <= n; got != want {
				t.Fatalf("bound %d: %q matches %d: %v, want %v", n, b.digits(), v, got, want)
			}
		}
		if n > 30_000 { // the numbers about the bound and about each power of ten
			for _, v := range []int{0, 1, 9, 10, 11, n - 1, n, n + 1, n * 10} {
				check(v)
			}
			for p := 10; p <= n*10 && p > 0; p *= 10 {
				check(p - 1)
				check(p)
				check(p + 1)
			}
			continue
		}
		for v := 0; v <= n*10; v++ {
			check(v)
		}
		for _, v := range []string{"0" + strconv.Itoa(n), "", "-1", "+1"} {
			if re.MatchString(v) {
				t.Fatalf("bound %d: %q matches %q", n, b.digits(), v)
			}
		}
	}
}

// TestBeyondInt holds the flags of the integer parameters to their own rules for a number beyond
// an int, either way: never an int's range ("from -9223372036854775808"), which suggested that a
// negative number would do.
func TestBeyondInt(t *testing.T) {
	for _, p := range parameters {
		if p.kind != kindInt && p.kind != kindOptionalInt {
			continue
		}
		for _, v := range []string{"99999999999999999999", "-99999999999999999999"} {
			_, _, err := parseFlags("--" + p.name + "=" + v)
			if err == nil {
				t.Errorf("--%s=%s: accepted", p.name, v)
				continue
			}
			got := err.Error()
			if strings.Contains(got, "out of range") || !strings.Contains(got, "must be") {
				t.Errorf("--%s=%s: %v, want the parameter's own rule", p.name, v, err)
			}
			if want := p.most.rule(); !strings.HasPrefix(v, "-") && !strings.HasSuffix(got, ": "+want) {
				t.Errorf("--%s=%s: %v, want it to end %q", p.name, v, err, want)
			}
		}
	}
}
