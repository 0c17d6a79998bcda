package write

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

func column(t *testing.T, name, typ, defaultKind string) schema.Column {
	t.Helper()
	ct, err := chtype.Parse(typ)
	if err != nil {
		t.Fatal(err)
	}
	return schema.Column{Name: name, TypeName: typ, Type: ct, DefaultKind: defaultKind}
}

// row builds a RowBinaryWithDefaults row of (UInt8, String): nil values take the DEFAULT.
func row(id string, a *byte, s *string) *Row {
	var data []byte
	if a == nil {
		data = append(data, 1)
	} else {
		data = append(data, 0, *a)
	}
	if s == nil {
		data = append(data, 1)
	} else {
		data = append(data, 0, byte(len(*s)))
		data = append(data, *s...)
	}
	return &Row{Row: &flow.Row{MessageID: id}, Data: data}
}

func ptr[T any](v T) *T { return &v }

func TestBlocks(t *testing.T) {
	cols := []schema.Column{column(t, "a", "UInt8", "DEFAULT"), column(t, "s", "String", "DEFAULT")}
	rows := []*Row{
		row("m1", ptr(byte(1)), ptr("x")),
		row("m2", ptr(byte(2)), nil),
		row("m3", ptr(byte(3)), ptr("y")),
		row("m4", nil, nil),
		row("m5", ptr(byte(5)), ptr("z")),
	}
	blocks, err := Blocks(cols, rows, 2)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Columns []string
		IDs     []string
	}
	var gotBlocks []got
	for _, b := range blocks {
		g := got{}
		for _, c := range b.Columns {
			g.Columns = append(g.Columns, c.Name)
		}
		for _, r := range b.Rows {
			g.IDs = append(g.IDs, r.MessageID)
		}
		gotBlocks = append(gotBlocks, g)
	}
	want := []got{
		{Columns: []string{"a", "s"}, IDs: []string{"m1", "m3"}}, // maxRows 2: m5 opens a new block
		{Columns: []string{"a"}, IDs: []string{"m2"}},
		{Columns: nil, IDs: []string{"m4"}}, // every DEFAULT: no column named
		{Columns: []string{"a", "s"}, IDs: []string{"m5"}},
	}
	if diff := cmp.Diff(want, gotBlocks); diff != "" {
		t.Errorf("Blocks (-want +got):\n%s", diff)
	}
	if got := blocks[1].Statement("db", "t`x"); got != "INSERT INTO `db`.`t\\`x` (`a`)" {
		t.Errorf("Statement = %s", got)
	}

	// A row that does not match the columns names its message.
	if _, err := Blocks(cols, []*Row{{Row: &flow.Row{MessageID: "bad"}, Data: []byte{0}}}, 10); err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Errorf("corrupt row: %v", err)
	}
}

func TestSplitAndToken(t *testing.T) {
	cols := []schema.Column{column(t, "a", "UInt8", ""), column(t, "s", "String", "")}
	var rows []*Row
	for i := range 5 {
		rows = append(rows, row(string(rune('a'+i)), ptr(byte(i)), ptr("v")))
	}
	blocks, err := Blocks(cols, rows, 100)
	if err != nil || len(blocks) != 1 {
		t.Fatalf("%v, %d blocks", err, len(blocks))
	}
	b := blocks[0]
	first, second := b.Split()
	if len(first.Rows) != 2 || len(second.Rows) != 3 || first.Rows[0].MessageID != "a" || second.Rows[0].MessageID != "c" {
		t.Errorf("Split: %d and %d rows", len(first.Rows), len(second.Rows))
	}
	if len(first.spans) != len(first.Rows) || len(second.spans) != len(second.Rows) {
		t.Error("Split: spans and rows differ in length")
	}

	// The same block built again has the same token; any change of id, data or columns changes it.
	again, _ := Blocks(cols, rows, 100)
	if b.DeduplicationToken() != again[0].DeduplicationToken() {
		t.Error("the same block got two tokens")
	}
	tokens := map[string]string{"block": b.DeduplicationToken(), "first half": first.DeduplicationToken(), "second half": second.DeduplicationToken()}
	other := []*Row{row("a", ptr(byte(0)), ptr("v")), row("b", ptr(byte(1)), ptr("v")), row("c", ptr(byte(2)), ptr("v")), row("d", ptr(byte(3)), ptr("v")), row("z", ptr(byte(4)), ptr("v"))}
	ob, _ := Blocks(cols, other, 100)
	tokens["another message id"] = ob[0].DeduplicationToken()
	other[4] = row("e", ptr(byte(9)), ptr("v"))
	ob, _ = Blocks(cols, other, 100)
	tokens["other data"] = ob[0].DeduplicationToken()
	seen := map[string]string{}
	for name, tok := range tokens {
		if prev, ok := seen[tok]; ok {
			t.Errorf("%s and %s share the token %s", name, prev, tok)
		}
		seen[tok] = name
	}
}
