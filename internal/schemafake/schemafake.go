// Package schemafake answers the queries with which package schema reads a table (schema.Fetch)
// from values a test gives, for the tests of what reads a table's schema without a server:
// system.columns, system.tables and the server's time zone.
package schemafake

import (
	"context"
	"errors"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Conn answers schema.Fetch's queries; every other method of driver.Conn is absent (nil: a call
// panics), unless the test's own type embeds Conn and adds it.
type Conn struct {
	driver.Conn
	Zone    string      // the server's time zone
	Columns [][4]string // the table's rows of system.columns: name, type, default_kind, default_expression
	Engine  string      // the table's engine in system.tables; "" when it has no row
	// EngineFull is the table's engine_full in system.tables ("Buffer(db, dest, 16, ...)"); ""
	// gives Engine.
	EngineFull string
	// Views are the materialized views that read the table (system.tables' dependencies_table).
	Views []string
	Fail  error // the error of the system.columns query, if any
	Args  []any // the arguments of the last system.columns query
}

// QueryRow answers "SELECT timezone()" and the query of system.tables.
func (c *Conn) QueryRow(_ context.Context, query string, args ...any) driver.Row {
	switch {
	case query == "SELECT timezone()":
		return row{values: []string{c.Zone}}
	case strings.Contains(query, "FROM system.tables"):
		if c.Engine == "" {
			return row{err: errors.New("sql: no rows in result set")}
		}
		if strings.Contains(query, "engine_full") {
			full := c.EngineFull
			if full == "" {
				full = c.Engine
			}
			return row{values: []string{c.Engine, full}, views: c.Views}
		}
		return row{values: []string{c.Engine}}
	}
	return row{err: errors.New("unexpected query " + query)}
}

// Query answers the query of system.columns with Columns, or fails with Fail.
func (c *Conn) Query(_ context.Context, query string, args ...any) (driver.Rows, error) {
	if !strings.Contains(query, "FROM system.columns") {
		return nil, errors.New("unexpected query " + query)
	}
	c.Args = args
	if c.Fail != nil {
		return nil, c.Fail
	}
	return &rows{rows: c.Columns, next: -1}, nil
}

type row struct {
	driver.Row
	values []string
	views  []string // dependencies_table, scanned into a *[]string after values
	err    error
}

func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if n := len(dest); n > 0 {
		if v, ok := dest[n-1].(*[]string); ok {
			*v = r.views
			dest = dest[:n-1]
		}
	}
	return scan(r.values, dest)
}

type rows struct {
	driver.Rows
	rows [][4]string
	next int
}

func (r *rows) Next() bool             { r.next++; return r.next < len(r.rows) }
func (r *rows) Scan(dest ...any) error { return scan(r.rows[r.next][:], dest) }
func (r *rows) Err() error             { return nil }
func (r *rows) Close() error           { return nil }

func scan(values []string, dest []any) error {
	if len(values) != len(dest) {
		return errors.New("wrong number of columns scanned")
	}
	for i, d := range dest {
		*d.(*string) = values[i]
	}
	return nil
}
