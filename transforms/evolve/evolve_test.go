package evolve

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

var (
	old    = Rule{}                                                                                  // ClickHouse 18.16
	modern = Rule{Server: Server{Bool: true, JSON: true, AddIfNotExists: true}}                      // 25.3 and later, objects as text
	asJSON = Rule{Server: Server{Bool: true, JSON: true, AddIfNotExists: true}, ObjectsAsJSON: true} // and objects as JSON
)

// ruleTable is every row of the package's table: a value, its kind, and its column type on
// 18.16, on a modern server, and on a modern server with ObjectsAsJSON.
var ruleTable = []struct {
	value              string
	kind               Kind
	old, modern, json_ string
}{
	{`null`, None, "", "", ""},
	{`true`, Bool, "Nullable(UInt8)", "Nullable(Bool)", "Nullable(Bool)"},
	{`false`, Bool, "Nullable(UInt8)", "Nullable(Bool)", "Nullable(Bool)"},
	{`42`, Whole, "Nullable(Int64)", "Nullable(Int64)", "Nullable(Int64)"},
	{`0`, Whole, "Nullable(Int64)", "Nullable(Int64)", "Nullable(Int64)"},
	{`-7`, Int64, "Nullable(Int64)", "Nullable(Int64)", "Nullable(Int64)"},
	{`-0`, Whole, "Nullable(Int64)", "Nullable(Int64)", "Nullable(Int64)"},
	{`9223372036854775807`, Whole, "Nullable(Int64)", "Nullable(Int64)", "Nullable(Int64)"},
	{`-9223372036854775808`, Int64, "Nullable(Int64)", "Nullable(Int64)", "Nullable(Int64)"},
	{`9223372036854775808`, UInt64, "Nullable(UInt64)", "Nullable(UInt64)", "Nullable(UInt64)"},
	{`18446744073709551615`, UInt64, "Nullable(UInt64)", "Nullable(UInt64)", "Nullable(UInt64)"},
	{`18446744073709551616`, Float64, "Nullable(Float64)", "Nullable(Float64)", "Nullable(Float64)"},
	{`-9223372036854775809`, Float64, "Nullable(Float64)", "Nullable(Float64)", "Nullable(Float64)"},
	{`1.5`, Float64, "Nullable(Float64)", "Nullable(Float64)", "Nullable(Float64)"},
	{`42.0`, Float64, "Nullable(Float64)", "Nullable(Float64)", "Nullable(Float64)"},
	{`1e3`, Float64, "Nullable(Float64)", "Nullable(Float64)", "Nullable(Float64)"},
	{`-2.5E-3`, Float64, "Nullable(Float64)", "Nullable(Float64)", "Nullable(Float64)"},
	{`1e400`, String, "Nullable(String)", "Nullable(String)", "Nullable(String)"},
	{`1` + strings.Repeat("0", 400), String, "Nullable(String)", "Nullable(String)", "Nullable(String)"},
	// Beyond Float64 written with more than 800 digits, which strconv alone read as 0, and 1 so
	// written, which it read as 0.1.
	{`1` + strings.Repeat("0", 20000) + `e-19690`, String, "Nullable(String)", "Nullable(String)", "Nullable(String)"},
	{`1` + strings.Repeat("0", 800) + `e-800`, Float64, "Nullable(Float64)", "Nullable(Float64)", "Nullable(Float64)"},
	{`"text"`, String, "Nullable(String)", "Nullable(String)", "Nullable(String)"},
	{`""`, String, "Nullable(String)", "Nullable(String)", "Nullable(String)"},
	{`"2024-01-02T03:04:05Z"`, String, "Nullable(String)", "Nullable(String)", "Nullable(String)"},
	{`"42"`, String, "Nullable(String)", "Nullable(String)", "Nullable(String)"},
	{`[1, 2]`, String, "Nullable(String)", "Nullable(String)", "Nullable(String)"},
	{`[]`, String, "Nullable(String)", "Nullable(String)", "Nullable(String)"},
	{`{"a": 1, "b": [true]}`, Object, "Nullable(String)", "Nullable(String)", "JSON DEFAULT '{}'"},
	{`{}`, Object, "Nullable(String)", "Nullable(String)", "JSON DEFAULT '{}'"},
}

// TestRuleTable: every row of the rule's table, under the three rules.
func TestRuleTable(t *testing.T) {
	for _, tc := range ruleTable {
		k, err := Infer([]byte(tc.value))
		if err != nil {
			t.Errorf("Infer(%.40s): %v", tc.value, err)
			continue
		}
		if k != tc.kind {
			t.Errorf("Infer(%.40s) = %v, want %v", tc.value, k, tc.kind)
		}
		for _, r := range []struct {
			name string
			rule Rule
			want string
		}{{"18.16", old, tc.old}, {"modern", modern, tc.modern}, {"objects as JSON", asJSON, tc.json_}} {
			if got := r.rule.Definition(k); got != r.want {
				t.Errorf("%.40s under %s: %q, want %q", tc.value, r.name, got, r.want)
			}
		}
	}
	// On a server without JSON, ObjectsAsJSON changes nothing.
	if got := (Rule{ObjectsAsJSON: true}).Definition(Object); got != "Nullable(String)" {
		t.Errorf("ObjectsAsJSON without JSON: %q", got)
	}
	// White space around a value is not part of it.
	if k, err := Infer([]byte(" \t42\n")); k != Whole || err != nil {
		t.Errorf("Infer(\" 42\") = %v, %v", k, err)
	}
	for _, bad := range []string{"", "  ", "x", "-", "01x"} {
		if _, err := Infer([]byte(bad)); err == nil || !strings.Contains(err.Error(), "not") {
			t.Errorf("Infer(%q): %v, want an error", bad, err)
		}
	}
}

// TestConverterTakes: the converter takes every value of the table into the column type the
// rule gives it, and stores it as the table says: strings as their text, other values as their
// JSON text, numbers to the nearest value of their type.
func TestConverterTakes(t *testing.T) {
	for _, r := range []Rule{old, modern} {
		for _, tc := range ruleTable {
			k, _ := Infer([]byte(tc.value))
			if k == None {
				continue
			}
			typ := r.Type(k)
			parsed, err := chtype.Parse(typ)
			if err != nil {
				t.Fatal(err)
			}
			tab := &schema.Table{Database: "db", Name: "t", ServerTimeZone: "UTC",
				Columns: []schema.Column{{Name: "c", TypeName: typ, Type: parsed}}}
			conv, err := convert.New(tab)
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			for _, payload := range []string{`{"c": ` + tc.value + `}`, `{"c": null}`, `{}`} {
				if _, err := conv.Convert(nil, []byte(payload)); err != nil {
					t.Errorf("%.60s into %s: %v", payload, typ, err)
				}
			}
		}
	}
}

// TestMerge: every pair of kinds, both ways round, and associativity over every triple.
func TestMerge(t *testing.T) {
	kinds := []Kind{None, Bool, Whole, Int64, UInt64, Float64, String, Object}
	want := map[[2]Kind]Kind{
		{Bool, Whole}: String, {Whole, Int64}: Int64, {Whole, UInt64}: UInt64, {Whole, Float64}: Float64,
		{Whole, String}: String, {Whole, Object}: String,
		{Bool, Int64}: String, {Bool, UInt64}: String, {Bool, Float64}: String, {Bool, String}: String, {Bool, Object}: String,
		{Int64, UInt64}: Float64, {Int64, Float64}: Float64, {Int64, String}: String, {Int64, Object}: String,
		{UInt64, Float64}: Float64, {UInt64, String}: String, {UInt64, Object}: String,
		{Float64, String}: String, {Float64, Object}: String,
		{String, Object}: String,
	}
	for _, a := range kinds {
		for _, b := range kinds {
			w, ok := want[[2]Kind{a, b}]
			if !ok {
				w, ok = want[[2]Kind{b, a}]
			}
			switch {
			case a == b:
				w = a
			case a == None:
				w = b
			case b == None:
				w = a
			case !ok:
				t.Fatalf("no expectation for %v+%v", a, b)
			}
			if got := Merge(a, b); got != w {
				t.Errorf("Merge(%v, %v) = %v, want %v", a, b, got, w)
			}
			for _, c := range kinds {
				if l, r := Merge(Merge(a, b), c), Merge(a, Merge(b, c)); l != r {
					t.Errorf("(%v+%v)+%v = %v but %v+(%v+%v) = %v", a, b, c, l, a, b, c, r)
				}
			}
		}
	}
}

// TestServerOf: the versions at which each capability starts, and refusals.
func TestServerOf(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    Server
	}{
		{"18.16.1", Server{}},
		{"19.1.6", Server{AddIfNotExists: true}},
		{"21.6.9.7", Server{AddIfNotExists: true}},
		{"21.7.2.7", Server{AddIfNotExists: true, BigIntegers: true}},
		{"21.11.11.1", Server{AddIfNotExists: true, BigIntegers: true}},
		{"21.12.2.17", Server{Bool: true, AddIfNotExists: true, BigIntegers: true}},
		{"25.2.1", Server{Bool: true, AddIfNotExists: true, BigIntegers: true}},
		{"25.3.1.2703", Server{Bool: true, JSON: true, AddIfNotExists: true, BigIntegers: true}},
		{"26.7.2.1", Server{Bool: true, JSON: true, AddIfNotExists: true, BigIntegers: true}},
	} {
		got, err := ServerOf(tc.version)
		if err != nil || got != tc.want {
			t.Errorf("ServerOf(%q) = %+v, %v; want %+v", tc.version, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "26", "x.y", "26.x.1"} {
		if _, err := ServerOf(bad); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) {
			t.Errorf("ServerOf(%q): %v, want an error quoting it", bad, err)
		}
	}
}

// TestCheckName: names that may be columns as they are, and the refusals, each naming the field
// and the rule.
func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a", "a b", `q"x`, "it's", "ü名", "a.b", " lead", "x,y", "select", "_part2", "part",
		"SETTINGS x=1", "a VALUES b", "c FORMAT JSON", "a settings", strings.Repeat("z", 245), strings.Repeat("д", 40)} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q): %v", ok, err)
		}
	}
	for _, tc := range []struct{ name, want string }{
		{"", `field "" cannot be a column: the name is empty; a column needs a name`},
		{"a\x00b", `field "a\x00b" cannot be a column: the name contains a NUL character`},
		{"a`b", "field \"a`b\" cannot be a column: the name holds a backtick or a backslash, which clickhouse-go cannot name in an INSERT"},
		{`a\b`, `field "a\\b" cannot be a column: the name holds a backtick or a backslash, which clickhouse-go cannot name in an INSERT`},
		{"x SETTINGS max_threads=1", `field "x SETTINGS max_threads=1" cannot be a column: the name holds "SETTINGS max_threads=" after whitespace, a semicolon or a closing parenthesis, ` +
			`which clickhouse-go takes for the SETTINGS clause of the INSERT (it does not skip quoted names), so that the server would refuse every INSERT`},
		{"f(x)", `field "f(x)" cannot be a column: the name contains a parenthesis, which clickhouse-go cannot name in an INSERT`},
		{")", `field ")" cannot be a column: the name contains a parenthesis, which clickhouse-go cannot name in an INSERT`},
		// 246 bytes, or 45 Cyrillic letters (90 bytes of UTF-8, each %XX): with ".null.mrk2" more than
		// 255, which ClickHouse 18.16 took in the ADD COLUMN and then failed every INSERT with
		// (errno 36, File name too long).
		{strings.Repeat("z", 246), `" cannot be a column: the name is 246 bytes long as ClickHouse names the column's files (each byte other than A-Z, a-z, 0-9 and _ as %XX), more than 245: with a suffix such as .null.mrk2 that is more than a file name holds (255 bytes), and every INSERT into the table would then fail`},
		{strings.Repeat("д", 45), `field "` + strings.Repeat("д", 45) + `" cannot be a column: the name is 270 bytes long as ClickHouse names the column's files`},
		{"a.b" + strings.Repeat(" ", 81), `cannot be a column: the name is 248 bytes long`},
		{"_part", `field "_part" cannot be a column: the name is that of a virtual column of MergeTree tables, which ClickHouse (18.16 among others) reads instead of a column of that name`},
		{"_partition_id", `field "_partition_id" cannot be a column: the name is that of a virtual column of MergeTree tables`},
	} {
		err := CheckName(tc.name)
		var ne *NameError
		if !errors.As(err, &ne) || ne.Field != tc.name || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckName(%q) = %v,\nwant %s", tc.name, err, tc.want)
		}
	}
}

// TestDDL: the statements, with identifiers quoted (spaces, quotes, Unicode, and the escapes of
// a backtick and a backslash for database, table and cluster names).
func TestDDL(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{AddColumn("db", "t", "a b", "Nullable(Int64)", ""),
			"ALTER TABLE `db`.`t` ADD COLUMN IF NOT EXISTS `a b` Nullable(Int64)"},
		{AddColumn("db", "t", `q"x`, "Nullable(String)", "main cluster"),
			"ALTER TABLE `db`.`t` ON CLUSTER `main cluster` ADD COLUMN IF NOT EXISTS `q\"x` Nullable(String)"},
		{AddColumn("", "ta`b", "ü名", "JSON DEFAULT '{}'", ""),
			"ALTER TABLE `ta\\`b` ADD COLUMN IF NOT EXISTS `ü名` JSON DEFAULT '{}'"},
		{AddColumn(`d\b`, "t", "it's", "Nullable(Bool)", "c`1"),
			"ALTER TABLE `d\\\\b`.`t` ON CLUSTER `c\\`1` ADD COLUMN IF NOT EXISTS `it's` Nullable(Bool)"},
		{Server{}.AddColumn("db", "t", "n", "Nullable(UInt8)", ""),
			"ALTER TABLE `db`.`t` ADD COLUMN `n` Nullable(UInt8)"},
		{Server{AddIfNotExists: true}.AddColumn("db", "t", "n", "Nullable(UInt8)", "c"),
			"ALTER TABLE `db`.`t` ON CLUSTER `c` ADD COLUMN IF NOT EXISTS `n` Nullable(UInt8)"},
		{Server{AddIfNotExists: true}.AddColumn("db", "t", "n", "Nullable(UInt8)", ""), // so that the server says whether the column was there
			"ALTER TABLE `db`.`t` ADD COLUMN `n` Nullable(UInt8)"},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %s\nwant %s", tc.got, tc.want)
		}
	}
	cols := []Column{{Name: "a b", Type: "Nullable(Int64)"}, {Name: `q"x`, Type: "Nullable(String)"}, {Name: "ü", Type: "Nullable(Float64)"}}
	got, err := CreateTable("db", "t", cols, "", "")
	want := "CREATE TABLE `db`.`t`\n(\n    `a b` Nullable(Int64),\n    `q\"x` Nullable(String),\n    `ü` Nullable(Float64)\n)\nENGINE = MergeTree\nORDER BY tuple()"
	if err != nil || got != want {
		t.Errorf("CreateTable: %v\n%s", err, cmp.Diff(want, got))
	}
	got, err = CreateTable("", "t", cols[:1], "ReplacingMergeTree", "(`a b`)")
	want = "CREATE TABLE `t`\n(\n    `a b` Nullable(Int64)\n)\nENGINE = ReplacingMergeTree\nORDER BY (`a b`)"
	if err != nil || got != want {
		t.Errorf("CreateTable with engine and key: %v\n%s", err, cmp.Diff(want, got))
	}
	for _, engine := range []string{"Log", "Memory", "TinyLog", "StripeLog", "Buffer(db, t2, 16, 10, 100, 10000, 1000000, 10000000, 100000000)"} {
		got, err = CreateTable("db", "t", cols[:1], engine, "")
		want = "CREATE TABLE `db`.`t`\n(\n    `a b` Nullable(Int64)\n)\nENGINE = " + engine
		if err != nil || got != want {
			t.Errorf("CreateTable with engine %s: %v\n%s", engine, err, cmp.Diff(want, got))
		}
		if _, err := CreateTable("db", "t", cols[:1], engine, "tuple()"); err == nil ||
			err.Error() != "ORDER BY tuple() with engine "+engine+": ORDER BY is a clause of the MergeTree engines alone" {
			t.Errorf("CreateTable with engine %s and an ORDER BY: %v", engine, err)
		}
	}
	got, err = CreateTable("db", "t", cols[:1], "MergeTree PARTITION BY toYYYYMM(ts)", "(`a b`)")
	want = "CREATE TABLE `db`.`t`\n(\n    `a b` Nullable(Int64)\n)\nENGINE = MergeTree PARTITION BY toYYYYMM(ts)\nORDER BY (`a b`)"
	if err != nil || got != want {
		t.Errorf("CreateTable with an engine and its clauses: %v\n%s", err, cmp.Diff(want, got))
	}
	// The engine's own ORDER BY is kept, and the key goes before its SETTINGS.
	got, err = CreateTable("db", "t", cols[:1], "MergeTree ORDER BY (`a b`) SETTINGS index_granularity = 8192", "")
	want = "CREATE TABLE `db`.`t`\n(\n    `a b` Nullable(Int64)\n)\nENGINE = MergeTree ORDER BY (`a b`) SETTINGS index_granularity = 8192"
	if err != nil || got != want {
		t.Errorf("CreateTable with an engine's ORDER BY: %v\n%s", err, cmp.Diff(want, got))
	}
	if _, err := CreateTable("db", "t", cols[:1], "MergeTree order  by x", "y"); err == nil || !strings.Contains(err.Error(), "the engine has its ORDER BY already") {
		t.Errorf("CreateTable with two ORDER BY: %v", err)
	}
	got, err = CreateTable("db", "t", cols[:1], "MergeTree PARTITION BY f('SETTINGS') settings index_granularity = 8192", "")
	want = "CREATE TABLE `db`.`t`\n(\n    `a b` Nullable(Int64)\n)\nENGINE = MergeTree PARTITION BY f('SETTINGS')\nORDER BY tuple()\nsettings index_granularity = 8192"
	if err != nil || got != want {
		t.Errorf("CreateTable with an engine's SETTINGS: %v\n%s", err, cmp.Diff(want, got))
	}
	// The key goes before the table's COMMENT too (a newer server refuses it after), and before
	// the first of COMMENT and SETTINGS when the engine has both.
	for engine, want := range map[string]string{
		"MergeTree COMMENT 'x'":                                  "MergeTree\nORDER BY (`a b`)\nCOMMENT 'x'",
		"MergeTree comment'ORDER BY'":                            "MergeTree\nORDER BY (`a b`)\ncomment'ORDER BY'",
		"MergeTree SETTINGS index_granularity = 64 COMMENT 'x'":  "MergeTree\nORDER BY (`a b`)\nSETTINGS index_granularity = 64 COMMENT 'x'",
		"MergeTree PARTITION BY f('COMMENT') COMMENT 'SETTINGS'": "MergeTree PARTITION BY f('COMMENT')\nORDER BY (`a b`)\nCOMMENT 'SETTINGS'",
	} {
		got, err = CreateTable("db", "t", cols[:1], engine, "(`a b`)")
		if want := "CREATE TABLE `db`.`t`\n(\n    `a b` Nullable(Int64)\n)\nENGINE = " + want; err != nil || got != want {
			t.Errorf("CreateTable with engine %s: %v\n%s", engine, err, cmp.Diff(want, got))
		}
	}
	got, err = CreateTable("db", "t", cols[:1], "ReplicatedReplacingMergeTree('/t/{shard}', '{replica}')", "")
	want = "CREATE TABLE `db`.`t`\n(\n    `a b` Nullable(Int64)\n)\nENGINE = ReplicatedReplacingMergeTree('/t/{shard}', '{replica}')\nORDER BY tuple()"
	if err != nil || got != want {
		t.Errorf("CreateTable with a replicated engine: %v\n%s", err, cmp.Diff(want, got))
	}
	if _, err := CreateTable("db", "t", nil, "", ""); err == nil || !strings.Contains(err.Error(), "no column") {
		t.Errorf("CreateTable of no columns: %v", err)
	}
	if _, err := CreateTable("db", "t", []Column{{Name: "n"}}, "", ""); err == nil || err.Error() != `column "n" has no type: it was seen only with null` {
		t.Errorf("CreateTable of a column without type: %v", err)
	}
}

// TestSample: columns in order of first appearance, merged kinds, fields seen only with null,
// refused names, and the payloads Add refuses without changing the sample.
func TestSample(t *testing.T) {
	s := NewSample(old)
	for _, p := range []string{
		`{"id": 1, "gone": null, "flag": true, "obj": {"a": 1}, "f(x)": 1}`,
		`{"id": 18446744073709551615, "name": "n", "flag": false, "late": null}`,
		`{"late": 2.5, "id": -1, "obj": [1], "f(x)": 2, "\u00fc": "u", "": 0}`,
	} {
		if err := s.Add([]byte(p)); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	for _, bad := range []struct{ payload, want string }{
		{`[1]`, "is not a JSON object"},
		{`{"id": 1`, "invalid JSON"},
		{`{"id": 1} {}`, "unexpected text after the JSON object"},
		{`{"new": 1, "new": 2}`, `field "new" appears twice`},
		{"{\"new\": \"\xff\"}", "UTF-8"},
		{`{"\ud800": 1}`, "lone UTF-16 surrogate"},
	} {
		err := s.Add([]byte(bad.payload))
		var pe *convert.PayloadError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Add(%q) = %v, want a payload error containing %q", bad.payload, err, bad.want)
		}
	}
	want := []Column{
		{Name: "id", Kind: Float64, Type: "Nullable(Float64)"},
		{Name: "flag", Kind: Bool, Type: "Nullable(UInt8)"},
		{Name: "obj", Kind: String, Type: "Nullable(String)"},
		{Name: "name", Kind: String, Type: "Nullable(String)"},
		{Name: "late", Kind: Float64, Type: "Nullable(Float64)"},
		{Name: "ü", Kind: String, Type: "Nullable(String)"},
	}
	if diff := cmp.Diff(want, s.Columns()); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"gone"}, s.Pending()); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
	var refused []string
	for _, r := range s.Refused() {
		refused = append(refused, r.Error())
	}
	wantRefused := []string{
		`field "f(x)" cannot be a column: the name contains a parenthesis, which clickhouse-go cannot name in an INSERT`,
		`field "" cannot be a column: the name is empty; a column needs a name`,
	}
	if diff := cmp.Diff(wantRefused, refused); diff != "" {
		t.Errorf("refused (-want +got):\n%s", diff)
	}
	if s.Messages() != 3 {
		t.Errorf("%d messages, want 3", s.Messages())
	}
}

// TestAlreadyExists: only the server's refusal to add a column that exists.
func TestAlreadyExists(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&clickhouse.Exception{Code: 44, Message: "Cannot add column n: column with this name already exists"}, true},
		{fmt.Errorf("adding: %w", &clickhouse.Exception{Code: 44, Message: "Cannot add column n: column with this name already exists"}), true},
		{&clickhouse.Exception{Code: 15, Message: "Cannot add column `n`: column with this name already exists. (DUPLICATE_COLUMN)"}, true}, // 26.7
		{&clickhouse.Exception{Code: 44, Message: "Sorting key cannot contain nullable columns"}, false},
		{&clickhouse.Exception{Code: 15, Message: "Column n specified more than once"}, false},
		{&clickhouse.Exception{Code: 62, Message: "Syntax error"}, false},
		{errors.New("column with this name already exists"), false},
		{nil, false},
	} {
		if got := AlreadyExists(tc.err); got != tc.want {
			t.Errorf("AlreadyExists(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
