package chclient_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
)

// insertNames are names clickhouse-go names as they are, then names it cannot (the comments say
// where the second part begins), for TestInsertNameFault and TestInsertNameFaultOnServer.
var insertNames = []string{
	// Names clickhouse-go names as they are.
	"plain", "a b", `q"r`, "it's", "a.b", "名前 ü",
	"a VALUES b", "c FORMAT JSON", "d -- e", "f /* g", "h $$ i",
	"SETTINGS x=1",                                // at the start: after the opening backtick, no clause
	"xSETTINGS a=1",                               // no word boundary before it
	"a,SETTINGS b=1",                              // a comma is not a boundary of clickhouse-go's
	"a SETTINGS b", "a settings", "a SETTINGS =1", // no setting's name and "="
	"a(b)", "f(x, y)", "a( b )", "(a)", "a(b)c(d)", "a\v(b)", "a(SETTINGS x=1)", // pairs side by side
	// Names it cannot.
	"x SETTINGS max_threads=1", "j settings k=1", "o' SETTINGS p = 2", "t\tSETTINGS s=1", "n\nSETTINGS v=1",
	"a;SETTINGS b=1", "a`b", `a\b`,
	"(", "a(b", "a)", ")a", ")(", "((a))", "a(b(c))", "a (b)", "a\t(b)", "a (id, b)",
}

// TestInsertNameFault: InsertNameFault finds nothing in the names before "x SETTINGS
// max_threads=1" in insertNames, and a fault in every name from it on (the server test holds
// the same list to the server's outcome).
func TestInsertNameFault(t *testing.T) {
	faulty := false
	for _, name := range insertNames {
		faulty = faulty || name == "x SETTINGS max_threads=1"
		if got := chclient.InsertNameFault(name); (got != "") != faulty {
			t.Errorf("InsertNameFault(%q) = %q, want a fault: %v", name, got, faulty)
		}
	}
	if !faulty {
		t.Fatal(`insertNames lacks "x SETTINGS max_threads=1", where its faulty names begin`)
	}
}

// TestInsertNameFaultOnServer holds InsertNameFault to what clickhouse-go does: on the server
// (ClickHouse 18.16 here), an INSERT through Insert that names a column of each name fails
// exactly when InsertNameFault finds a fault in the name, and otherwise stores the value under
// that name. Should a later clickhouse-go name more, the test says which rule to relax.
func TestInsertNameFaultOnServer(t *testing.T) {
	ctx := context.Background()
	srv := chtest.New(t)
	conn := srv.Conn(t)
	for i, name := range insertNames {
		t.Run(fmt.Sprintf("%d", i), func(t *testing.T) {
			table := fmt.Sprintf("names_%d", i)
			srv.MustExec(t, fmt.Sprintf("CREATE TABLE %s (id UInt8, %s String) ENGINE = Memory", table, chclient.QuoteIdent(name)))
			fault := chclient.InsertNameFault(name)
			err := chclient.Insert(ctx, conn, srv.Database, table, []string{"id", name}, []any{[]uint8{1}, []string{"v"}}, nil, false, chclient.Identity{})
			switch {
			case fault == "" && err != nil:
				t.Errorf("column %q: InsertNameFault finds nothing, but the INSERT failed: %v", name, err)
			case fault != "" && err == nil:
				t.Errorf("column %q: InsertNameFault says %q, but the INSERT succeeded", name, fault)
			case fault == "":
				if got := srv.MustQuery(t, fmt.Sprintf("SELECT %s FROM %s", chclient.QuoteIdent(name), table)); got != "v" {
					t.Errorf("column %q holds %q, want v", name, got)
				}
			}
		})
	}
}
