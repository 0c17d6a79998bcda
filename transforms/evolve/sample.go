package evolve

import (
	"errors"
	"fmt"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
)

// Sample gathers the columns that a sample of messages gives by the rule: each top-level field
// a column of the kind that merges its values' kinds (Merge), in the order in which the fields
// first appear. Not safe for concurrent use.
type Sample struct {
	rule    Rule
	columns []Column       // every field with an acceptable name, Kind None while seen only with null
	index   map[string]int // field name -> index in columns
	refused []*NameError   // fields whose names cannot be columns, in order of first appearance
	seen    map[string]bool
	n       int // messages added
}

// NewSample returns an empty Sample whose columns get their types by r.
func NewSample(r Rule) *Sample {
	return &Sample{rule: r, index: map[string]int{}, seen: map[string]bool{}}
}

// Add adds the fields of one message's payload. Its errors leave the sample as it was: a payload
// that is not one JSON object (a *convert.PayloadError, as the pipeline's conversion gives it)
// and a field given twice in the payload (which value is meant is ambiguous, as the
// converter says). A field whose name cannot be a column (CheckName) is not an error: it is
// kept in Refused.
func (s *Sample) Add(payload []byte) error {
	type field struct {
		name string
		kind Kind
	}
	var fields []field
	names := map[string]bool{}
	err := convert.TopLevelFields(payload, func(name string, value []byte) error {
		if names[name] {
			return &convert.PayloadError{Rule: fmt.Sprintf("field %s appears twice; which value is meant is ambiguous", quote(name))}
		}
		names[name] = true
		k, err := Infer(value)
		if err != nil {
			return fmt.Errorf("field %s: %w", quote(name), err)
		}
		fields = append(fields, field{name, k})
		return nil
	})
	if err != nil {
		return err
	}
	s.n++
	for _, f := range fields {
		i, ok := s.index[f.name]
		if !ok {
			if s.seen[f.name] {
				continue // refused before
			}
			s.seen[f.name] = true
			var ne *NameError
			if err := CheckName(f.name); errors.As(err, &ne) {
				s.refused = append(s.refused, ne)
				continue
			}
			i = len(s.columns)
			s.index[f.name] = i
			s.columns = append(s.columns, Column{Name: f.name})
		}
		c := &s.columns[i]
		c.Kind = Merge(c.Kind, f.kind)
		c.Type = s.rule.Definition(c.Kind)
	}
	return nil
}

// Messages returns how many payloads Add took.
func (s *Sample) Messages() int { return s.n }

// Columns returns the columns that have a type (some value was not null), in the order of
// their fields' first appearance.
func (s *Sample) Columns() []Column {
	var out []Column
	for _, c := range s.columns {
		if c.Kind != None {
			out = append(out, c)
		}
	}
	return out
}

// Pending returns the fields seen only with null, in the order of first appearance: a null
// names no type, so they get no column until a value does.
func (s *Sample) Pending() []string {
	var out []string
	for _, c := range s.columns {
		if c.Kind == None {
			out = append(out, c.Name)
		}
	}
	return out
}

// Refused returns the fields whose names cannot be columns, with the rule each breaks, in the
// order of first appearance.
func (s *Sample) Refused() []*NameError { return s.refused }
