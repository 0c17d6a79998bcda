package chclient

import (
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"github.com/ClickHouse/clickhouse-go/v2"
	chcolumn "github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/go-cmp/cmp"
)

func TestQuoteIdent(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"events", "`events`"},
		{"", "``"},
		{"t`x", "`t\\`x`"},
		{`a\b`, "`a\\\\b`"},
		{"a\\`b", "`a\\\\\\`b`"}, // a backslash then a backtick: each escaped on its own
		{"n.dotted", "`n.dotted`"},
		{"ü ß", "`ü ß`"},
		{"'\"", "`'\"`"},
	} {
		if got := QuoteIdent(tc.in); got != tc.want {
			t.Errorf("QuoteIdent(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestInsertStatement(t *testing.T) {
	for _, tc := range []struct {
		database, table string
		columns         []string
		want            string
	}{
		{"db", "t", []string{"a", "b"}, "INSERT INTO `db`.`t` (`a`, `b`)"},
		{"db", "t`x", []string{"a"}, "INSERT INTO `db`.`t\\`x` (`a`)"},
		{"d\\b", "t", []string{"n.x", "c`"}, "INSERT INTO `d\\\\b`.`t` (`n.x`, `c\\``)"},
		{"db", "dead_letters", []string{"raw_message", "error_message", "stack_trace", "failed_at"},
			"INSERT INTO `db`.`dead_letters` (`raw_message`, `error_message`, `stack_trace`, `failed_at`)"},
	} {
		if got := InsertStatement(tc.database, tc.table, tc.columns); got != tc.want {
			t.Errorf("InsertStatement(%q, %q, %q) = %s, want %s", tc.database, tc.table, tc.columns, got, tc.want)
		}
	}
}

func TestDeduplicationToken(t *testing.T) {
	cols := []string{"a", "b"}
	id := Identity{IDs: []string{"m1", "m2"}, Data: [][]byte{[]byte("x"), []byte("yz")}}
	base := DeduplicationToken(cols, id)
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(base) {
		t.Fatalf("token %q is not 64 lowercase hex digits", base)
	}
	// The same input, in fresh slices, gives the same token.
	again := DeduplicationToken([]string{"a", "b"}, Identity{IDs: []string{"m1", "m2"}, Data: [][]byte{[]byte("x"), []byte("yz")}})
	if again != base {
		t.Errorf("the same input got two tokens: %s and %s", base, again)
	}

	// Any change gives another token; so does any shift of a boundary between parts, which a
	// plain concatenation would not see.
	tokens := map[string]string{"base": base}
	add := func(name string, columns []string, id Identity) {
		t.Helper()
		tok := DeduplicationToken(columns, id)
		for prev, other := range tokens {
			if other == tok {
				t.Errorf("%s and %s share the token %s", name, prev, tok)
			}
		}
		tokens[name] = tok
	}
	add("another id", cols, Identity{IDs: []string{"m1", "m3"}, Data: id.Data})
	add("other data", cols, Identity{IDs: id.IDs, Data: [][]byte{[]byte("x"), []byte("yZ")}})
	add("other columns", []string{"a", "c"}, id)
	add("fewer columns", []string{"a"}, id)
	add("columns reordered", []string{"b", "a"}, id)
	add("rows reordered", cols, Identity{IDs: []string{"m2", "m1"}, Data: [][]byte{[]byte("yz"), []byte("x")}})
	add("ids reordered", cols, Identity{IDs: []string{"m2", "m1"}, Data: id.Data})
	add("data reordered", cols, Identity{IDs: id.IDs, Data: [][]byte{[]byte("yz"), []byte("x")}})
	add("one row fewer", cols, Identity{IDs: []string{"m1"}, Data: [][]byte{[]byte("x")}})
	add("data boundary moved", cols, Identity{IDs: id.IDs, Data: [][]byte{[]byte("xy"), []byte("z")}})
	add("id boundary moved", cols, Identity{IDs: []string{"m1m", "2"}, Data: id.Data})
	add("column boundary moved", []string{"ab", ""}, id)
	add("a column becomes an id", []string{"a"}, Identity{IDs: []string{"b", "m1", "m2"}, Data: id.Data})
	add("an id becomes data", cols, Identity{IDs: []string{"m1"}, Data: [][]byte{[]byte("m2"), []byte("x"), []byte("yz")}})
	add("an empty data part", cols, Identity{IDs: id.IDs, Data: [][]byte{[]byte("x"), []byte("yz"), {}}})
	add("no data", cols, Identity{IDs: id.IDs})
	add("nothing", nil, Identity{})
	add("one empty column", []string{""}, Identity{})
	add("one empty id", nil, Identity{IDs: []string{""}})
	add("one empty data", nil, Identity{Data: [][]byte{{}}})

	// nil and empty are the same input.
	if DeduplicationToken(nil, Identity{}) != DeduplicationToken([]string{}, Identity{IDs: []string{}, Data: [][]byte{}}) {
		t.Error("nil and empty lists got different tokens")
	}
	// The scheme is the one documented: these digests were computed apart from this code
	// (the BLAKE3 reference implementation's b3sum, Debian's package, over the bytes
	// DeduplicationToken's comment lays out, written by Python). A change of scheme
	// changes every token, and a block retried across a deployment would no longer be
	// deduplicated: change it only on purpose, with tokenScheme's version.
	for _, tc := range []struct {
		columns []string
		id      Identity
		want    string
	}{
		{nil, Identity{}, "424c5b1907387048f558c4e4ca14701440af21805400bac7010c265c3b4563e3"},
		{cols, id, "b6ff207858c5c38767cb63eca513b697896fb2399af698c2018a1da01557d260"},
	} {
		if got := DeduplicationToken(tc.columns, tc.id); got != tc.want {
			t.Errorf("DeduplicationToken(%q, %q) = %s, want %s", tc.columns, tc.id, got, tc.want)
		}
	}
}

func TestInsertSettings(t *testing.T) {
	settings := clickhouse.Settings{"insert_deduplicate": 1, "max_insert_block_size": 1000}
	id := Identity{IDs: []string{"m1"}, Data: [][]byte{[]byte("x")}}
	got := InsertSettings(settings, true, []string{"a"}, id)
	want := clickhouse.Settings{"insert_deduplicate": 1, "max_insert_block_size": 1000, TokenSetting: DeduplicationToken([]string{"a"}, id)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("with a token (-want +got):\n%s", diff)
	}
	if _, ok := settings[TokenSetting]; ok || len(settings) != 2 {
		t.Errorf("InsertSettings modified its argument: %v", settings)
	}
	if diff := cmp.Diff(settings, InsertSettings(settings, false, []string{"a"}, id)); diff != "" {
		t.Errorf("without a token (-want +got):\n%s", diff)
	}
	if got := InsertSettings(nil, true, nil, Identity{}); got[TokenSetting] != DeduplicationToken(nil, Identity{}) {
		t.Errorf("nil settings with a token: %v", got)
	}
}

// fakeConn records what Insert asks of the driver.
type fakeConn struct {
	driver.Conn // not implemented: a call other than PrepareBatch panics
	prepareErr  error
	batch       *fakeBatch
	query       string
}

func (c *fakeConn) PrepareBatch(_ context.Context, query string, _ ...driver.PrepareBatchOption) (driver.Batch, error) {
	c.query = query
	if c.prepareErr != nil {
		return nil, c.prepareErr
	}
	return c.batch, nil
}

type fakeBatch struct {
	driver.Batch
	appendErr map[int]error // by column index
	panics    map[int]any   // by column index: Append panics with it
	sendErr   error
	appended  []any
	sent      bool
	aborted   bool
	columns   []chcolumn.Interface // the driver's columns of the INSERT, as the server typed them
}

func (b *fakeBatch) Columns() []chcolumn.Interface { return b.columns }

func (b *fakeBatch) Column(i int) driver.BatchColumn { return fakeColumn{b, i} }
func (b *fakeBatch) Send() error                     { b.sent = true; return b.sendErr }
func (b *fakeBatch) Abort() error                    { b.aborted = true; return nil }

type fakeColumn struct {
	b *fakeBatch
	i int
}

func (c fakeColumn) Append(v any) error {
	if p := c.b.panics[c.i]; p != nil {
		panic(p)
	}
	if err := c.b.appendErr[c.i]; err != nil {
		return err
	}
	c.b.appended = append(c.b.appended, v)
	return nil
}

func (c fakeColumn) AppendRow(any) error { panic("AppendRow") }

func TestInsert(t *testing.T) {
	ctx := context.Background()
	cols := []string{"a", "b`"}
	values := []any{[]uint8{1, 2}, []string{"x", "y"}}
	id := Identity{IDs: []string{"m1", "m2"}}

	conn := &fakeConn{batch: &fakeBatch{}}
	if err := Insert(ctx, conn, "db", "t", cols, values, nil, true, id); err != nil {
		t.Fatal(err)
	}
	if want := "INSERT INTO `db`.`t` (`a`, `b\\``)"; conn.query != want {
		t.Errorf("statement %s, want %s", conn.query, want)
	}
	if diff := cmp.Diff(values, conn.batch.appended); diff != "" {
		t.Errorf("appended columns (-want +got):\n%s", diff)
	}
	if !conn.batch.sent || !conn.batch.aborted {
		t.Errorf("sent %v, aborted %v: want both", conn.batch.sent, conn.batch.aborted)
	}

	// A column clickhouse-go refuses is an *AppendError naming it (Classify: Schema); nothing is sent.
	refused := errors.New("converting []uint8 to String is unsupported")
	conn = &fakeConn{batch: &fakeBatch{appendErr: map[int]error{1: refused}}}
	err := Insert(ctx, conn, "db", "t", cols, values, nil, false, id)
	var ae *AppendError
	if !errors.As(err, &ae) || ae.Column != "b`" || !errors.Is(err, refused) || Classify(err) != Schema {
		t.Errorf("append failure: %v (%T)", err, err)
	}
	if conn.batch.sent || !conn.batch.aborted {
		t.Errorf("append failure: sent %v, aborted %v", conn.batch.sent, conn.batch.aborted)
	}

	if !ValuesRefused(err) {
		t.Errorf("append failure: ValuesRefused(%v) is false", err)
	}

	// A panic of clickhouse-go on values (v2.51.0's Enum8 column on the nil of a NULL in a Tuple)
	// is their refusal too, not the end of the worker.
	conn = &fakeConn{batch: &fakeBatch{panics: map[int]any{1: "runtime error: invalid memory address or nil pointer dereference"}}}
	err = Insert(ctx, conn, "db", "t", cols, values, nil, false, id)
	if !errors.As(err, &ae) || ae.Column != "b`" || !ValuesRefused(err) || Classify(err) != Schema ||
		!strings.Contains(err.Error(), "clickhouse-go panicked taking the values: runtime error: invalid memory address") {
		t.Errorf("append panic: %v (%T)", err, err)
	}
	if conn.batch.sent || !conn.batch.aborted {
		t.Errorf("append panic: sent %v, aborted %v", conn.batch.sent, conn.batch.aborted)
	}
	// The statement refused by clickhouse-go, or column types the server names otherwise, are
	// no values' refusal.
	if ValuesRefused(&AppendError{Column: "a", Err: refused, Statement: true}) ||
		ValuesRefused(&AppendError{Column: "a", Err: &TypesChangedError{}}) {
		t.Error("ValuesRefused of a statement's refusal or of changed types")
	}

	// The server's errors are returned as they are, for Classify.
	ex := &clickhouse.Exception{Code: 60, Message: "Table db.t doesn't exist"}
	conn = &fakeConn{prepareErr: ex}
	if err := Insert(ctx, conn, "db", "t", cols, values, nil, false, id); !errors.Is(err, ex) || Classify(err) != Refused {
		t.Errorf("prepare failure: %v", err)
	}
	ex = &clickhouse.Exception{Code: 53, Message: "Type mismatch"}
	conn = &fakeConn{batch: &fakeBatch{sendErr: ex}}
	if err := Insert(ctx, conn, "db", "t", cols, values, nil, false, id); !errors.Is(err, ex) || Classify(err) != Data {
		t.Errorf("send failure: %v", err)
	}

	// Nothing is sent for a malformed call.
	for name, call := range map[string]func(*fakeConn) error{
		"no column":        func(c *fakeConn) error { return Insert(ctx, c, "db", "t", nil, nil, nil, false, id) },
		"too few values":   func(c *fakeConn) error { return Insert(ctx, c, "db", "t", cols, values[:1], nil, false, id) },
		"too many values":  func(c *fakeConn) error { return Insert(ctx, c, "db", "t", cols[:1], values, nil, false, id) },
		"values, no names": func(c *fakeConn) error { return Insert(ctx, c, "db", "t", nil, values, nil, false, id) },
	} {
		conn := &fakeConn{batch: &fakeBatch{}}
		if err := call(conn); err == nil || conn.query != "" {
			t.Errorf("%s: error %v, statement %q", name, err, conn.query)
		} else if !strings.Contains(err.Error(), "column") {
			t.Errorf("%s: error %q does not say what is wrong", name, err)
		}
	}
}

// driverColumn is clickhouse-go's column of typ, as it builds one from an INSERT's header.
func driverColumn(t *testing.T, name, typ string) chcolumn.Interface {
	t.Helper()
	col, err := chcolumn.Type(typ).Column(name, &chcolumn.ServerContext{})
	if err != nil {
		t.Fatal(err)
	}
	return col
}

// TestInsertNative: a column in the Native format is read by the driver's column of the type
// the server gives it; when that type is not the one the rows were converted for (the table
// changed: the bytes would read as other values, a UInt16 300 as the UInt8 44 and 1), or the
// bytes hold more than the rows, Insert sends nothing and returns an *AppendError naming the
// column, which Classify takes for a schema change.
func TestInsertNative(t *testing.T) {
	ctx := context.Background()
	uint16s := []byte{0x2c, 0x01, 5, 0} // 300, 5
	strs := []byte{1, 'a', 2, 'b', 'c'} // "a", "bc"
	for _, tc := range []struct {
		name, server string
		native       Native
		want         string // the error, "" for none
	}{
		{"same type", "UInt16", Native{Values: uint16s, Rows: 2, Type: "UInt16"}, ""},
		{"same type spelt otherwise", "DateTime('UTC')", Native{Values: make([]byte, 8), Rows: 2, Type: "DateTime( 'UTC' )"}, ""},
		{"narrowed", "UInt8", Native{Values: uint16s, Rows: 2, Type: "UInt16"},
			`column "n": the table's column is UInt8 now, but the rows were converted for UInt16`},
		{"same width", "Int16", Native{Values: uint16s, Rows: 2, Type: "UInt16"},
			`column "n": the table's column is Int16 now, but the rows were converted for UInt16`},
		{"bytes left", "UInt16", Native{Values: uint16s, Rows: 1, Type: "UInt16"},
			`column "n": 1 rows of UInt16 in the Native format left bytes unread`},
		{"bytes missing", "UInt16", Native{Values: uint16s, Rows: 3, Type: "UInt16"}, `column "n": `},
		{"strings", "String", Native{Values: strs, Rows: 2, Type: "String"}, ""},
		{"strings in a Nullable", "Nullable(String)", Native{Head: []byte{0, 1}, Values: []byte{1, 'a', 0}, Rows: 2, Type: "Nullable(String)"}, ""},
		{"strings left", "String", Native{Values: strs, Rows: 1, Type: "String"},
			`column "n": 1 rows of String in the Native format hold 2 values`},
		{"string cut short", "String", Native{Values: strs[:4], Rows: 2, Type: "String"},
			`column "n": 2 rows of String in the Native format: value 1 is cut short`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			col := driverColumn(t, "n", tc.server)
			conn := &fakeConn{batch: &fakeBatch{columns: []chcolumn.Interface{col}}}
			err := Insert(ctx, conn, "db", "t", []string{"n"}, []any{tc.native}, nil, false, Identity{})
			if tc.want == "" {
				if err != nil || !conn.batch.sent || col.Rows() != tc.native.Rows {
					t.Fatalf("error %v, sent %v, %d rows in the driver's column: want no error, sent, %d rows", err, conn.batch.sent, col.Rows(), tc.native.Rows)
				}
				return
			}
			var appendErr *AppendError
			if !errors.As(err, &appendErr) || !strings.HasPrefix(err.Error(), tc.want) || Classify(err) != Schema {
				t.Fatalf("error %v (class %v), want an *AppendError starting %q, of class Schema", err, Classify(err), tc.want)
			}
			if conn.batch.sent {
				t.Error("the batch was sent")
			}
		})
	}
}

// TestInsertTyped: Go values converted for one type are refused when the server's INSERT header
// gives the column another (clickhouse-go would append a nil *uint8 to an Array(UInt8) as 0);
// every changed column is listed, and nothing is appended or sent. clickhouse-go's own name of a
// type (Array(Tuple(...)) for a Nested) is the type.
func TestInsertTyped(t *testing.T) {
	ctx := context.Background()
	one := uint8(1)
	nullables := [][]*uint8{{nil, &one}}
	for _, tc := range []struct {
		name    string
		server  []string
		columns []string
		values  []any
		want    string // the error, "" for none
	}{
		{"same type", []string{"Array(Nullable(UInt8))"}, []string{"a"},
			[]any{Typed{Values: nullables, Type: "Array(Nullable(UInt8))"}}, ""},
		{"Nullable dropped", []string{"Array(UInt8)"}, []string{"a"},
			[]any{Typed{Values: nullables, Type: "Array(Nullable(UInt8))"}},
			`column "a": the table's column is Array(UInt8) now, but the rows were converted for Array(Nullable(UInt8))`},
		{"Nested, as clickhouse-go names it", []string{"Nested(a UInt8, b String)"}, []string{"n"},
			[]any{Typed{Values: [][]any{{[]any{uint8(1), "x"}}}, Type: "Nested(a UInt8, b String)"}}, ""},
		{"Nested changed", []string{"Nested(a UInt16, b String)"}, []string{"n"},
			[]any{Typed{Values: [][]any{{[]any{uint8(1), "x"}}}, Type: "Nested(a UInt8, b String)"}},
			`column "n": the table's column is Array(Tuple(a UInt16, b String)) now, but the rows were converted for Nested(a UInt8, b String)`},
		{"two changed, one unchecked", []string{"UInt8", "String", "Int16"}, []string{"a", "b", "c"},
			[]any{Typed{Values: []uint16{1}, Type: "UInt16"}, []string{"x"}, Native{Values: []byte{1, 0}, Rows: 1, Type: "UInt16"}},
			`column "a": the table's column is UInt8 now, but the rows were converted for UInt16; column "c": the table's column is Int16 now, but the rows were converted for UInt16`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cols []chcolumn.Interface
			for i, s := range tc.server {
				cols = append(cols, driverColumn(t, tc.columns[i], s))
			}
			conn := &fakeConn{batch: &fakeBatch{columns: cols}}
			err := Insert(ctx, conn, "db", "t", tc.columns, tc.values, nil, false, Identity{})
			if tc.want == "" {
				if err != nil || !conn.batch.sent || len(conn.batch.appended) != len(tc.values) {
					t.Fatalf("error %v, sent %v, %d columns appended: want no error, sent, %d", err, conn.batch.sent, len(conn.batch.appended), len(tc.values))
				}
				return
			}
			var changed *TypesChangedError
			if !errors.As(err, &changed) || err.Error() != tc.want || Classify(err) != Schema {
				t.Fatalf("error %v (class %v), want a *TypesChangedError %q, of class Schema", err, Classify(err), tc.want)
			}
			if conn.batch.sent || len(conn.batch.appended) > 0 {
				t.Errorf("sent %v, %d columns appended: want neither", conn.batch.sent, len(conn.batch.appended))
			}
		})
	}
}

// TestInsertStrings: a String column's Go strings reach the driver's String column, which copies
// them; when the server's INSERT header gives the column another type, Insert refuses them before
// anything is appended or sent (a Schema error), and ReadStrings itself refuses any column but a
// String one, which takes nothing.
func TestInsertStrings(t *testing.T) {
	ctx := context.Background()
	src := []byte("hello world")
	values := []string{unsafe.String(&src[0], 5), "", unsafe.String(&src[6], 5)}
	t.Run("String", func(t *testing.T) {
		col := driverColumn(t, "s", "String")
		conn := &fakeConn{batch: &fakeBatch{columns: []chcolumn.Interface{col}}}
		err := Insert(ctx, conn, "db", "t", []string{"s"}, []any{Strings{Values: values, Bytes: 10, Type: "String"}}, nil, false, Identity{})
		if err != nil || !conn.batch.sent {
			t.Fatalf("error %v, sent %v: want no error, sent", err, conn.batch.sent)
		}
		copy(src, "XXXXXXXXXXX") // the column holds copies
		var got []string
		for i := range col.Rows() {
			got = append(got, col.Row(i, false).(string))
		}
		if diff := cmp.Diff([]string{"hello", "", "world"}, got); diff != "" {
			t.Errorf("the driver's column (-want +got):\n%s", diff)
		}
	})
	for _, server := range []string{"LowCardinality(String)", "Nullable(String)", "LowCardinality(Nullable(String))", "FixedString(1)", "Enum8('a' = 1)", "UUID", "Array(String)"} {
		t.Run(server, func(t *testing.T) {
			col := driverColumn(t, "s", server)
			conn := &fakeConn{batch: &fakeBatch{columns: []chcolumn.Interface{col}}}
			err := Insert(ctx, conn, "db", "t", []string{"s"}, []any{Strings{Values: []string{"a"}, Bytes: 1, Type: "String"}}, nil, false, Identity{})
			var changed *TypesChangedError
			if !errors.As(err, &changed) || Classify(err) != Schema || conn.batch.sent || col.Rows() != 0 {
				t.Errorf("error %v (class %v), sent %v, %d rows: want a *TypesChangedError of class Schema, nothing sent or appended", err, Classify(err), conn.batch.sent, col.Rows())
			}
			if err := ReadStrings(col, Strings{Values: []string{"a"}, Bytes: 1, Type: "String"}); err == nil || col.Rows() != 0 {
				t.Errorf("ReadStrings: error %v, %d rows: want an error, nothing appended", err, col.Rows())
			}
		})
	}
}

// TestNativeReaderReadsOneSourceAfterAnother: a pooled nativeReader, having read one column to its
// end, reads the next from its own source, with nothing of the first left in its buffer.
func TestNativeReaderReadsOneSourceAfterAnother(t *testing.T) {
	r := nativeReaders.Get().(*nativeReader)
	first, second := driverColumn(t, "a", "UInt16"), driverColumn(t, "b", "Nullable(String)")
	r.src.parts = [2][]byte{nil, {0x2c, 0x01, 5, 0}}
	if err := first.Decode(r.Reader, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the first column: %v, want io.EOF", err)
	}
	r.src.parts = [2][]byte{{1, 0}, {0, 2, 'h', 'i'}} // NULL, "hi"
	if err := second.Decode(r.Reader, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the second column: %v, want io.EOF", err)
	}
	got := []any{first.Row(0, false), first.Row(1, false), second.Row(0, false), *second.Row(1, false).(*string)}
	if diff := cmp.Diff([]any{uint16(300), uint16(5), nil, "hi"}, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}
