package integration_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/shared"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/write"
)

// TestConversionCases runs every case of ../shared/cases/conversion-cases.json against the real
// server: the table is created from the case's DDL, its schema fetched from system.columns, the
// payload converted; a row case is inserted through the write stage's blocks and each expected
// column or expression read back as TabSeparated text; a dead-letter case must fail with an error
// naming each listed string.
func TestConversionCases(t *testing.T) {
	srv := chtest.New(t)
	conn := srv.Conn(t)
	ctx := context.Background()
	for _, c := range shared.Cases(t) {
		t.Run(c.ID, func(t *testing.T) {
			table := "case_" + strings.ToLower(c.ID)
			srv.CreateTable(t, c.DDL, table)
			sch, conv := converterOf(t, conn, srv.Database, table)
			row, convErr := conv.Convert(nil, c.Data())
			if dl := c.Expect.DeadLetter; dl != nil {
				if convErr == nil {
					t.Fatalf("payload %q: converted, want a dead letter naming %q", c.Data(), dl.ErrorContains)
				}
				for _, want := range dl.ErrorContains {
					if !strings.Contains(convErr.Error(), want) {
						t.Errorf("error %q does not name %q", convErr, want)
					}
					if col := columnNamed(sch, want); col != "" && !failedColumn(convErr, col) {
						t.Errorf("error %q has no error for column %q", convErr, col)
					}
				}
				t.Logf("dead letter: %v", convErr)
				return
			}
			if convErr != nil {
				t.Fatalf("payload %q: %v", c.Data(), convErr)
			}
			blocks, err := write.Blocks(sch.Writable(), []*write.Row{{Row: &flow.Row{MessageID: c.ID}, Data: row}}, 1000, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range blocks {
				if err := b.Insert(ctx, conn, srv.Database, table, nil); err != nil {
					t.Fatalf("insert: %v", err)
				}
			}
			if got := srv.MustQuery(t, "SELECT count() FROM "+table); got != "1" {
				t.Fatalf("rows in table = %s, want 1", got)
			}
			for expr, want := range c.Expect.Row {
				got := srv.MustQuery(t, fmt.Sprintf("SELECT %s FROM %s FORMAT TabSeparated", expr, table))
				if got != want {
					t.Errorf("SELECT %s = %q, want %q", expr, got, want)
				}
			}
		})
	}
}

func columnNamed(t *schema.Table, name string) string {
	for _, c := range t.Columns {
		if c.Name == name {
			return name
		}
	}
	return ""
}

func failedColumn(err error, column string) bool {
	var re *convert.RowError
	if !errors.As(err, &re) {
		return false
	}
	for _, ve := range re.Errs {
		if ve.Column == column {
			return true
		}
	}
	return false
}
