package evolve

import (
	"strings"
	"testing"
)

// TestChecker: each rule of the limits refuses with the parameter, the field, its value and the
// rule, in the order excluded, name, pattern; a name that passes them all is nil.
func TestChecker(t *testing.T) {
	c, err := NewChecker(Limits{Max: 2, Pattern: "^[a-z_]+$", Excluded: []string{"debug", "Trace"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field, value, group, want string
	}{
		{"event", `1`, "", ""},
		{"debug", `true`, "", `addNewColumnsExcluded: field "debug" (value true) is excluded: it never becomes a column`},
		{"Trace", `"x"`, "", `addNewColumnsExcluded: field "Trace" (value "x") is excluded: it never becomes a column`}, // excluded before the pattern
		{"Foo", `{"a": 1}`, "", `addNewColumnsPattern: field "Foo" (value {"a": 1}) does not match ^[a-z_]+$`},
		{"a(b)", `1`, "", `addNewColumns: field "a(b)" (value 1) cannot be a column: the name contains a parenthesis, which clickhouse-go cannot name in an INSERT`},
		{"", `1`, "", `addNewColumns: field "" (value 1) cannot be a column: the name is empty; a column needs a name`},
		{"long", `"` + strings.Repeat("x", 200) + `"`, "", ""},
		{"n_b", `5`, "n", `addNewColumns: field "n_b" (value 5) cannot be a column: it falls under "n", a column or a Nested group of the table, whose field a new column there would read differently`},
	} {
		r := c.Check(tc.field, []byte(tc.value), tc.group)
		got := ""
		if r != nil {
			got = r.Error()
		}
		if got != tc.want {
			t.Errorf("Check(%q, %s) = %q, want %q", tc.field, tc.value, got, tc.want)
		}
	}
	r := c.Beyond("n", []byte(strings.Repeat("9", 150)), 2, 1)
	want := `addNewColumnsMax: field "n" (value ` + strings.Repeat("9", 100) + `...) is beyond the limit: this worker has added 2 columns to the table, the message would add 1 more, and it adds at most 2`
	if r.Error() != want && !strings.HasPrefix(r.Error(), `addNewColumnsMax: field "n" (value 999`) {
		t.Errorf("Beyond = %q, want %q", r.Error(), want)
	}
	if !strings.HasSuffix(r.Error(), "the message would add 1 more, and it adds at most 2") {
		t.Errorf("Beyond = %q, want the counts", r.Error())
	}

	// Without a pattern any name CheckName accepts passes.
	c, _ = NewChecker(Limits{Max: 1})
	if r := c.Check("Any Name.x", []byte(`1`), ""); r != nil {
		t.Errorf("without limits: %v", r)
	}
	if _, err := NewChecker(Limits{Pattern: "^[a-"}); err == nil || !strings.Contains(err.Error(), `addNewColumnsPattern "^[a-" is not an RE2 regular expression`) {
		t.Errorf("a pattern that is not RE2: %v", err)
	}
}
