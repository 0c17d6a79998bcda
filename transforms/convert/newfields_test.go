package convert_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
)

// TestNewFields: Untaken counts the fields that gave the row no value, and NewFields passes those
// among them that name no column at all: not a writable column, a MATERIALIZED one, a column of
// metadataColumns or unknownFieldsColumn, a group (n of n.a) or an element of a Tuple (t.a).
func TestNewFields(t *testing.T) {
	tb := table(t, "id UInt32", "m String MATERIALIZED 'x'", "msg String", "u String", "n.a Array(UInt8)", "tup Tuple(a UInt8)")
	conv, err := convert.NewWith(tb, convert.Options{Metadata: []convert.MetadataColumn{{Key: convert.KeyMessageID, Column: "msg"}}, UnknownFields: "u"})
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"id":1,"new":2,"m":3,"msg":"4","u":5,"n":{"a":[1]},"tup":{"a":1},"other":{"x": [1]},"nul":null}`)
	if _, err := conv.ConvertMessage(nil, payload, &convert.Meta{ID: "1"}); err != nil {
		t.Fatal(err)
	}
	// new, m, msg, u, other and nul give the row no value.
	if got := conv.Untaken(); got != 6 {
		t.Errorf("Untaken() = %d, want 6", got)
	}
	var got []string
	if err := conv.NewFields(payload, func(name string, value []byte) error {
		got = append(got, name+"="+string(value))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"new=2", `other={"x": [1]}`, "nul=null"}, got); diff != "" {
		t.Errorf("NewFields (-want +got):\n%s", diff)
	}
	if _, err := conv.ConvertMessage(nil, []byte(`{"id":1,"tup":{"a":1}}`), &convert.Meta{ID: "1"}); err != nil || conv.Untaken() != 0 {
		t.Errorf("a payload of columns only: %v, Untaken() = %d", err, conv.Untaken())
	}
}
