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
	blocks, err := Blocks(cols, rows, 2, 0)
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
	if _, err := Blocks(cols, []*Row{{Row: &flow.Row{MessageID: "bad"}, Data: []byte{0}}}, 10, 0); err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Errorf("corrupt row: %v", err)
	}
}

// TestBlocksByBytes: with maxBytes a block ends before the row whose Data would take it above
// maxBytes; a row larger than maxBytes is a block alone; maxRows still holds.
func TestBlocksByBytes(t *testing.T) {
	cols := []schema.Column{column(t, "a", "UInt8", "DEFAULT"), column(t, "s", "String", "DEFAULT")}
	rows := []*Row{
		row("m1", ptr(byte(1)), ptr(strings.Repeat("x", 10))),
		row("m2", ptr(byte(2)), ptr(strings.Repeat("x", 10))),
		row("m3", ptr(byte(3)), ptr(strings.Repeat("x", 100))),
		row("m4", ptr(byte(4)), ptr(strings.Repeat("x", 10))),
		row("m5", ptr(byte(5)), ptr(strings.Repeat("x", 10))),
		row("m6", ptr(byte(6)), ptr(strings.Repeat("x", 10))),
	}
	small := int64(len(rows[0].Data))
	if big := int64(len(rows[2].Data)); big <= 2*small {
		t.Fatalf("rows of %d and %d bytes; the test needs the third above two of the others", small, big)
	}
	ids := func(blocks []*Block) [][]string {
		var out [][]string
		for _, b := range blocks {
			var block []string
			for _, r := range b.Rows {
				block = append(block, r.MessageID)
			}
			out = append(out, block)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		maxRows  int
		maxBytes int64
		want     [][]string
	}{
		{"two small rows fit, the third would not", 100, 2*small + 1, [][]string{{"m1", "m2"}, {"m3"}, {"m4", "m5"}, {"m6"}}},
		{"a block that reaches maxBytes exactly", 100, 2 * small, [][]string{{"m1", "m2"}, {"m3"}, {"m4", "m5"}, {"m6"}}},
		{"maxRows first", 2, 10 * small, [][]string{{"m1", "m2"}, {"m3", "m4"}, {"m5", "m6"}}},
		{"maxRows first, no byte bound", 4, 0, [][]string{{"m1", "m2", "m3", "m4"}, {"m5", "m6"}}},
		{"every row above the bound", 100, 1, [][]string{{"m1"}, {"m2"}, {"m3"}, {"m4"}, {"m5"}, {"m6"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := Blocks(cols, rows, tc.maxRows, tc.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ids(blocks)); diff != "" {
				t.Errorf("blocks of %d rows at most and %d bytes (rows of %d and %d bytes) (-want +got):\n%s",
					tc.maxRows, tc.maxBytes, small, len(rows[2].Data), diff)
			}
		})
	}
}

func TestSplitAndToken(t *testing.T) {
	cols := []schema.Column{column(t, "a", "UInt8", ""), column(t, "s", "String", "")}
	var rows []*Row
	for i := range 5 {
		rows = append(rows, row(string(rune('a'+i)), ptr(byte(i)), ptr("v")))
	}
	blocks, err := Blocks(cols, rows, 100, 0)
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
	again, _ := Blocks(cols, rows, 100, 0)
	if b.DeduplicationToken() != again[0].DeduplicationToken() {
		t.Error("the same block got two tokens")
	}
	tokens := map[string]string{"block": b.DeduplicationToken(), "first half": first.DeduplicationToken(), "second half": second.DeduplicationToken()}
	other := []*Row{row("a", ptr(byte(0)), ptr("v")), row("b", ptr(byte(1)), ptr("v")), row("c", ptr(byte(2)), ptr("v")), row("d", ptr(byte(3)), ptr("v")), row("z", ptr(byte(4)), ptr("v"))}
	ob, _ := Blocks(cols, other, 100, 0)
	tokens["another message id"] = ob[0].DeduplicationToken()
	other[4] = row("e", ptr(byte(9)), ptr("v"))
	ob, _ = Blocks(cols, other, 100, 0)
	tokens["other data"] = ob[0].DeduplicationToken()
	seen := map[string]string{}
	for name, tok := range tokens {
		if prev, ok := seen[tok]; ok {
			t.Errorf("%s and %s share the token %s", name, prev, tok)
		}
		seen[tok] = name
	}
}
