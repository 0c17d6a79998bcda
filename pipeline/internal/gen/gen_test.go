package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
)

// root is the module's root, from this package's directory.
const root = "../../.."

// TestFilesCurrent fails while metadata.json or docs/parameters.md is not what go generate
// ./pipeline writes from the parameter table.
func TestFilesCurrent(t *testing.T) {
	meta, err := os.ReadFile(filepath.Join(root, metadataFile))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(lines(metadata(pipeline.Parameters(), pipeline.Groups())), lines(meta)); diff != "" {
		t.Errorf("%s is not what the parameter table gives; run go generate ./pipeline (-generated +file):\n%s", metadataFile, diff)
	}
	docs, err := os.ReadFile(filepath.Join(root, docsFile))
	if err != nil {
		t.Fatal(err)
	}
	want, err := reference(docs, pipeline.Parameters())
	if err != nil {
		t.Fatalf("%s: %v", docsFile, err)
	}
	if diff := cmp.Diff(lines(want), lines(docs)); diff != "" {
		t.Errorf("%s's tables are not what the parameter table gives; run go generate ./pipeline (-generated +file):\n%s", docsFile, diff)
	}
}

func lines(b []byte) []string { return strings.Split(string(b), "\n") }

// TestReferenceMarkers checks that reference refuses what would lose a table or a parameter.
func TestReferenceMarkers(t *testing.T) {
	params := []pipeline.Parameter{
		{Name: "a", Group: "G", Shown: "required", Doc: "The a."},
		{Name: "b", Shown: "unset", Doc: "The b."},
	}
	table := func(g string) string { return beginMark + g + " -->\nold row\n" + endMark + "\n" }
	got, err := reference([]byte("# T\n"+table("G")+"text\n"+table(noGroup)), params)
	if err != nil {
		t.Fatal(err)
	}
	want := "# T\n" + beginMark + "G -->\n| Parameter | Required / default | Meaning |\n| --- | --- | --- |\n| `a` | required | The a. |\n" + endMark +
		"\ntext\n" + beginMark + "none -->\n| Parameter | Required / default | Meaning |\n| --- | --- | --- |\n| `b` | unset | The b. |\n" + endMark + "\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("reference (-want +got):\n%s", diff)
	}
	for name, docs := range map[string]string{
		"a group without its table": table("G"),
		"a table of no group":       table("G") + table(noGroup) + table("H"),
		"a marker without its end":  table(noGroup) + beginMark + "G -->\n| x |\n",
	} {
		if _, err := reference([]byte(docs), params); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := reference([]byte(table("G")+table(noGroup)), []pipeline.Parameter{{Name: "a", Group: "G", Doc: "two\nlines"}, params[1]}); err == nil {
		t.Error("a text with a line break: no error")
	}
}

// TestReadmeParameters: the README's short table of parameters (the first table under "##
// Template parameters") names parameters of the table, each with its default as the reference
// shows it ("optional, " before an optional one's), so that a renamed parameter or a changed
// default cannot leave the README behind.
func TestReadmeParameters(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]string{}
	for _, p := range pipeline.Parameters() {
		shown[p.Name] = p.Shown
	}
	_, section, _ := strings.Cut(string(readme), "\n## Template parameters\n")
	_, table, _ := strings.Cut(section, "\n| Parameter | Required / default | Meaning |\n| --- | --- | --- |\n")
	table, _, _ = strings.Cut(table, "\n\n")
	rows := strings.Split(table, "\n")
	if table == "" {
		t.Fatal("README.md has no table of parameters under ## Template parameters")
	}
	for _, row := range rows {
		cells := strings.SplitN(row, " | ", 3)
		name := strings.Trim(cells[0], "| `")
		want, ok := shown[name]
		switch {
		case len(cells) < 3:
			t.Errorf("README.md: %q is not a row of three cells", row)
		case !ok:
			t.Errorf("README.md names %q, which is not a parameter", name)
		case cells[1] != want && cells[1] != "optional, "+want:
			t.Errorf("README.md gives %s as %q, the reference as %q", name, cells[1], want)
		}
	}
}
