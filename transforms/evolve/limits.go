package evolve

import (
	"fmt"
	"regexp"
	"slices"

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
// Param ParamAdd), the name does not match Pattern. value is the field's JSON text, which the
// refusal shows.
func (c *Checker) Check(field string, value []byte) *Refusal {
	r := &Refusal{Field: field, Value: text.Cut(value, maxQuoted)}
	var ne *NameError
	switch {
	case slices.Contains(c.limits.Excluded, field):
		r.Param, r.Rule = ParamExcluded, "is excluded: it never becomes a column"
	case CheckName(field) != nil:
		ne = CheckName(field).(*NameError)
		r.Param, r.Rule = ParamAdd, "cannot be a column: "+ne.Rule
	case c.pattern != nil && !c.pattern.MatchString(field):
		r.Param, r.Rule = ParamPattern, "does not match "+c.limits.Pattern
	default:
		return nil
	}
	return r
}

// Beyond returns the refusal of a field beyond Max: the worker has added added columns to the
// table already, and the field's message would add more.
func (c *Checker) Beyond(field string, value []byte, added, more int) *Refusal {
	return &Refusal{Param: ParamMax, Field: field, Value: text.Cut(value, maxQuoted),
		Rule: fmt.Sprintf("is beyond the limit: this worker has added %d columns to the table, the message would add %d more, and it adds at most %d",
			added, more, c.limits.Max)}
}
