package evolve

import (
	"context"
	"fmt"
	"reflect"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
)

// codeSyntaxError is ClickHouse's SYNTAX_ERROR, which a server older than CHECK GRANT answers it
// with.
const codeSyntaxError = 62

// CheckAlter returns nil when the user of conn may run ALTER TABLE … ADD COLUMN on the table
// database.table as far as the server tells, else an error that says what stops it:
//
//   - the session's setting readonly is not 0 (1: only reads; 2: reads and settings; both refuse
//     DDL: ClickHouse docs, "Permissions for queries"), or its setting allow_ddl is 0, read from
//     system.settings; this is all that stops an ALTER on ClickHouse 18.16, which has no GRANT;
//   - on a server that knows CHECK GRANT (a recent release; docs, "CHECK GRANT Statement"),
//     CHECK GRANT ALTER ADD COLUMN ON database.table answers 0. A server that answers CHECK
//     GRANT with a syntax error (code 62) is older, and only the settings are checked.
//
// It is an error too that the table's engine passes its rows on to other tables (passesOn, read
// from system.tables; a refusal to read it is not), whose columns an ADD COLUMN of the table
// leaves as they are. A failure to ask is an error too. The check is what can be known before the
// first ALTER: a table whose engine takes no ALTER, or a cluster (ON CLUSTER) that refuses it, is
// found only then, and the message is a dead letter that says so.
func CheckAlter(ctx context.Context, conn driver.Conn, database, tableName, user string) error {
	t := table(database, tableName)
	var engine string
	if err := conn.QueryRow(ctx, "SELECT engine FROM system.tables WHERE database = ? AND name = ?", database, tableName).Scan(&engine); err == nil && passesOn[engine] != "" {
		return fmt.Errorf("%s has the engine %s, which passes its rows on to other tables: an ADD COLUMN changes %s alone, not them, so that %s; "+
			"add the columns to those tables and to %s yourself, or turn addNewColumns off", t, engine, t, passesOn[engine], t)
	}
	rows, err := conn.Query(ctx, "SELECT name, value FROM system.settings WHERE name IN ('readonly', 'allow_ddl')")
	if err != nil {
		return fmt.Errorf("reading the settings readonly and allow_ddl from system.settings: %w", err)
	}
	settings := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			rows.Close()
			return fmt.Errorf("reading the settings readonly and allow_ddl from system.settings: %w", err)
		}
		settings[name] = value
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the settings readonly and allow_ddl from system.settings: %w", err)
	}
	if v := settings["readonly"]; v != "" && v != "0" {
		return fmt.Errorf("the ClickHouse user %q has the setting readonly=%s, which refuses ALTER TABLE … ADD COLUMN: "+
			"give the user a settings profile with readonly=0 (and, where the server has GRANT, ALTER ADD COLUMN on %s), or turn addNewColumns off",
			user, v, t)
	}
	if settings["allow_ddl"] == "0" {
		return fmt.Errorf("the ClickHouse user %q has the setting allow_ddl=0, which refuses ALTER TABLE … ADD COLUMN: "+
			"give the user a settings profile with allow_ddl=1, or turn addNewColumns off", user)
	}
	granted, err := checkGrant(ctx, conn, "CHECK GRANT ALTER ADD COLUMN ON "+t)
	if code, ok := chclient.Code(err); ok && code == codeSyntaxError {
		return nil // no CHECK GRANT: the settings are what can be checked
	}
	if err != nil {
		return fmt.Errorf("CHECK GRANT ALTER ADD COLUMN ON %s: %w", t, err)
	}
	if !granted {
		return fmt.Errorf("the ClickHouse user %q may not ALTER TABLE … ADD COLUMN on %s: grant it with GRANT ALTER ADD COLUMN ON %s TO %s, or turn addNewColumns off",
			user, t, t, chclient.QuoteIdent(user))
	}
	return nil
}

// passesOn are the table engines that write what is inserted to other tables, with what becomes
// of an INSERT naming a column that only the table itself has (checked on ClickHouse 18.16).
var passesOn = map[string]string{
	"Distributed": "the shards' tables then refuse the rows of every INSERT naming a new column (code 16, no such column: at the INSERT, " +
		"which the messages behind it wait for, with insertDistributedSync; in the background sends without)",
	"Buffer": "its flushes then leave the new columns' values out, since a Buffer table writes the columns its destination has",
}

// checkGrant runs the CHECK GRANT query q and reports whether its one value is 1 (UInt8) or true
// (Bool), whichever type the server gives it.
func checkGrant(ctx context.Context, conn driver.Conn, q string) (bool, error) {
	rows, err := conn.Query(ctx, q)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return false, err
		}
		return false, fmt.Errorf("no result")
	}
	v := reflect.New(rows.ColumnTypes()[0].ScanType())
	if err := rows.Scan(v.Interface()); err != nil {
		return false, err
	}
	s := fmt.Sprint(v.Elem().Interface())
	return s == "1" || s == "true", nil
}
