package pipeline

import (
	"reflect"
	"slices"
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
		case p.def != nil && u != p.usage:
			t.Errorf("%s: has a default, which the flag package prints, but its flag's usage adds %q", p.name, strings.TrimPrefix(u, p.usage))
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
		case strings.Contains(p.help, "Default:"):
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
