package pipeline

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// TestParameterTable holds the parameter table to Options and to itself: one entry per field of
// Options, in field order, each accessor returning its own field with the type of its kind; a
// default exactly for the kinds that have one; unique names; and usage texts that say what the
// need says (flex-template/metadata_test.go holds the table to metadata.json and the docs).
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
		switch {
		case p.need != optional && !strings.Contains(p.usage, "Required"):
			t.Errorf("%s: required, but its usage does not say so: %q", p.name, p.usage)
		case p.need == optional && strings.Contains(p.usage, "Required"):
			t.Errorf("%s: optional, but its usage says required: %q", p.name, p.usage)
		case p.need == optional && p.def == nil && !strings.Contains(p.usage, "Optional, unset by default"):
			t.Errorf("%s: optional without a default, but its usage does not say so: %q", p.name, p.usage)
		}
		if p.need != optional && p.group == "" {
			t.Errorf("%s: required, but no template parameter (no group)", p.name)
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
