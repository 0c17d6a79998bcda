package evolve

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

// Limits are an operator's bounds on the columns that schema evolution adds, the template
// parameters addNewColumns* (docs/parameters.md). The zero Limits adds no column at all
// (Max 0); the pipeline's default Max is 50.
type Limits struct {
	// Max is the most columns one worker adds to one table while it runs (addNewColumnsMax);
	// each worker process counts its own (the parse stage counts them).
	Max int
	// Pattern is an RE2 regular expression that a field's name must match, anywhere unless
	// anchored (regexp.MatchString), to become a column (addNewColumnsPattern); "" any name
	// CheckName accepts.
	Pattern string
	// Excluded are field names that never become columns, matched exactly
	// (addNewColumnsExcluded).
	Excluded []string
	// OnCluster is the cluster of the ALTERs' ON CLUSTER (addNewColumnsOnCluster); "" none.
	OnCluster string
}

// The template parameters that a Refusal names.
const (
	ParamAdd       = "addNewColumns"
	ParamMax       = "addNewColumnsMax"
	ParamPattern   = "addNewColumnsPattern"
	ParamExcluded  = "addNewColumnsExcluded"
	ParamOnCluster = "addNewColumnsOnCluster"
)

// Refusal says why a new field does not become a column: the template parameter whose rule
// refuses it, the field, its value and the rule.
type Refusal struct {
	Param string // ParamPattern, ParamExcluded, ParamMax; ParamAdd for a name no column may have, or a DDL the server refused
	Field string // the field's name
	Value string // the field's value, its JSON text cut to 100 bytes
	Rule  string // "does not match ^[a-z_]+$", ...
	Err   error  // the server's error, for a refused DDL; nil else
}

// Error returns `addNewColumnsPattern: field "Foo" (value 1) does not match ^[a-z_]+$`.
func (r *Refusal) Error() string {
	return fmt.Sprintf("%s: field %s (value %s) %s", r.Param, quote(r.Field), r.Value, r.Rule)
}

// Unwrap returns the server's error of a refused DDL, nil else.
func (r *Refusal) Unwrap() error { return r.Err }

// Checker applies the Limits that depend on a field's name alone: Excluded, CheckName and
// Pattern, in that order. Safe for concurrent use.
type Checker struct {
	limits  Limits
	pattern *regexp.Regexp // nil for any name
}

// NewChecker compiles l.Pattern; its error quotes a pattern that is not RE2.
func NewChecker(l Limits) (*Checker, error) {
	c := &Checker{limits: l}
	if l.Pattern != "" {
		re, err := regexp.Compile(l.Pattern)
		if err != nil {
			return nil, fmt.Errorf("%s %q is not an RE2 regular expression: %w", ParamPattern, l.Pattern, err)
		}
		c.pattern = re
	}
	return c, nil
}

// Limits returns the Limits the checker was made of.
func (c *Checker) Limits() Limits { return c.limits }

// Check returns nil when the field may become a column by its name, else the *Refusal of the
// first rule that refuses it: the name is in Excluded, the name cannot be a column's (CheckName;
// Param ParamAdd), the name falls under group, the name does not match Pattern. value is the
// field's JSON text, which the refusal shows; group is the column, or the group of array columns
// (a flattened Nested), that the name falls under by the part before a dot
// (convert.Converter.GroupOf), "" for none: a new column there would change how that field is
// read.
func (c *Checker) Check(field string, value []byte, group string) *Refusal {
	return c.check(field, value, group, tableGroup)
}

// What a group of Check is, in its refusal's words.
const (
	tableGroup   = "a column or a Nested group of the table"
	messageGroup = "another new field of the message, which it would make a column"
	knownGroup   = "a column that earlier messages would add"
)

// check is Check, with what the group is (tableGroup, messageGroup, knownGroup).
func (c *Checker) check(field string, value []byte, group, what string) *Refusal {
	r := &Refusal{Field: field, Value: text.Cut(value, maxQuoted)}
	var ne *NameError
	switch {
	case slices.Contains(c.limits.Excluded, field):
		r.Param, r.Rule = ParamExcluded, "is excluded: it never becomes a column"
	case CheckName(field) != nil:
		ne = CheckName(field).(*NameError)
		r.Param, r.Rule = ParamAdd, "cannot be a column: "+ne.Rule
	case group != "":
		r.Param, r.Rule = ParamAdd, fmt.Sprintf("cannot be a column: it falls under %s, %s, whose field a new column there would read differently", quote(group), what)
	case c.pattern != nil && !c.pattern.MatchString(field):
		r.Param, r.Rule = ParamPattern, "does not match "+c.limits.Pattern
	default:
		return nil
	}
	return r
}

// Field is a top-level field of a payload that no column of the table takes and that may become
// a column: its name (escapes resolved), its value's exact text and the value's kind (not None).
type Field struct {
	Name  string
	Value []byte
	Kind  Kind
}

// Fields returns the top-level fields of payload that no column of conv's table takes
// (convert.Converter.NewFields), in the payload's order: those that may become columns (fresh),
// and the refusals of those the rules of Check refuse. A field falls under a group (Check) by the
// table's columns (convert.Converter.GroupOf), and also by the message's other new fields (x.y
// beside a new x: adding both would make the ambiguity GroupOf keeps out) and by the names known
// says will be columns (nil: none; the check command's columns to be). A field whose value is
// null is neither (no type yet). err makes the message a dead letter: a field given twice (a
// *convert.PayloadError, since which value is meant is ambiguous), or a value that is not JSON.
// The parse stage and the check command both decide a message's new fields here.
func (c *Checker) Fields(conv *convert.Converter, payload []byte, known func(name string) bool) (fresh []Field, refused []*Refusal, err error) {
	var seen map[string]bool
	var candidates []Field
	err = conv.NewFields(payload, func(name string, value []byte) error {
		if seen == nil {
			seen = map[string]bool{}
		}
		if seen[name] {
			return convert.FieldTwice(name)
		}
		seen[name] = true
		k, err := Infer(value)
		switch {
		case err != nil:
			return fmt.Errorf("field %q: %w", name, err)
		case k == None:
			return nil // null: no type, no column yet
		}
		candidates = append(candidates, Field{name, value, k})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	others := make(map[string]bool, len(candidates))
	for _, f := range candidates {
		others[f.Name] = true
	}
	for _, f := range candidates {
		group, what := conv.GroupOf(f.Name), tableGroup
		for j := 1; group == "" && j < len(f.Name); j++ {
			switch prefix := f.Name[:j]; {
			case f.Name[j] != '.':
			case others[prefix]:
				group, what = prefix, messageGroup
			case known != nil && known(prefix):
				group, what = prefix, knownGroup
			}
		}
		if r := c.check(f.Name, f.Value, group, what); r != nil {
			refused = append(refused, r)
		} else {
			fresh = append(fresh, f)
		}
	}
	return fresh, refused, nil
}

// Refusals is the dead-letter error of a message with new fields that do not become columns,
// while unknownFieldsColumn is unset: each refusal, then "the message is a dead letter".
type Refusals []*Refusal

// Error lists the refusals, joined with "; ", as many as fit in maxRefusalsText (at least one),
// then says how many more there were: a message may hold thousands of new fields, and its dead
// letter keeps at most 16 KiB of the error (flow.MaxErrorBytes).
func (e Refusals) Error() string {
	var b strings.Builder
	for i, r := range e {
		s := r.Error()
		if i > 0 && b.Len()+2+len(s) > maxRefusalsText {
			fmt.Fprintf(&b, "; and %d more fields refused", len(e)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(s)
	}
	return b.String() + "; the message is a dead letter"
}

// maxRefusalsText is the most of Refusals.Error's text that lists refusals: room within
// flow.MaxErrorBytes (16 KiB) for the rest of the dead letter's error message.
const maxRefusalsText = 15 << 10

// Unwrap returns each refusal, for errors.As.
func (e Refusals) Unwrap() []error {
	out := make([]error, len(e))
	for i, r := range e {
		out[i] = r
	}
	return out
}

// Beyond returns the refusal of a field beyond Max: the worker has added added columns to the
// table already, and the field's message would add more.
func (c *Checker) Beyond(field string, value []byte, added, more int) *Refusal {
	return &Refusal{Param: ParamMax, Field: field, Value: text.Cut(value, maxQuoted),
		Rule: fmt.Sprintf("is beyond the limit: this worker has added %d columns to the table, the message would add %d more, and it adds at most %d",
			added, more, c.limits.Max)}
}
