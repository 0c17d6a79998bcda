package integration_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/shared"
)

// TestModernCorpus runs the Wikipedia edits corpus through the whole pipeline over the http://
// path (clickhouse-go's HTTP transport, LZ4) into its natural modern table (DateTime64, Bool,
// LowCardinality(Nullable(String)), wikipedia_edits.modern.sql) on the ClickHouse 26 engine, served
// by the HTTP stand-in (chtest.StartModern): every line is one row with its values, read back from
// the engine; nothing is dead-lettered.
func TestModernCorpus(t *testing.T) {
	srv := chtest.StartModern(t)
	if !strings.HasPrefix(srv.URL, "http://") || !strings.HasPrefix(srv.Version, "26.") {
		t.Fatalf("the stand-in is %s, ClickHouse %s; want an http:// URL and 26.x", srv.URL, srv.Version)
	}
	dir := filepath.Join(shared.Dir(t), "data")
	ddl, err := os.ReadFile(filepath.Join(dir, "wikipedia_edits.modern.sql"))
	if err != nil {
		t.Fatal(err)
	}
	var c corpus
	for _, k := range corpora {
		if k.name == "wikipedia_edits" {
			c = k
		}
	}
	e := newE2EOn(t, srv.Server, string(ddl))
	landCorpus(t, e, filepath.Join(dir, "wikipedia_edits.jsonl"), c)
	if got := srv.MustQuery(t, "SELECT toTypeName(time), toTypeName(isAnonymous), countIf(isAnonymous), countIf(countryIsoCode IS NULL) FROM events GROUP BY 1, 2"); got != "DateTime64(3, \\'UTC\\')\tBool\t1688\t16514" {
		t.Errorf("the modern columns' types, anonymous edits and edits without a country: %q", got)
	}
}
