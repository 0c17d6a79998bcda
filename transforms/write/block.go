package write

import (
	"context"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// Row is one row of a batch: the message (flow.Row) and its RowBinaryWithDefaults over the write
// stage's columns (package convert), converted by the stage.
type Row struct {
	*flow.Row
	Data []byte
}

// Block is the rows of one INSERT. They all give the same columns (they omit the same DEFAULT
// columns), so the INSERT names those columns and ClickHouse computes each omitted DEFAULT.
type Block struct {
	// Columns are the columns the INSERT names, in table order.
	Columns []schema.Column
	// Rows are the block's rows, in the order they are inserted.
	Rows []*Row
	// spans[i][j] is the value bytes of Columns[j] in Rows[i].
	spans [][][]byte
	// table is every column the block's rows could give; a block whose rows give none (each
	// row takes every DEFAULT) is inserted by insertDefaults, through one of them.
	table []schema.Column
	// bytes is the length of the rows' Data, summed.
	bytes int64
}

// Blocks splits rows (RowBinaryWithDefaults over columns, see package convert) into blocks of at
// most maxRows rows that give the same columns, and with maxBytes positive, of at most maxBytes
// bytes of Data (a row larger than that is a block alone). Rows keep their order within a block;
// blocks come in the order of their first row. An error means a row does not match the columns
// (the parse and write stages disagree on the schema) and names the row's message id.
func Blocks(columns []schema.Column, rows []*Row, maxRows int, maxBytes int64) ([]*Block, error) {
	types := make([]*chtype.Type, len(columns))
	for i, c := range columns {
		types[i] = c.Type
	}
	layout, err := convert.NewLayout(types)
	if err != nil {
		return nil, err
	}
	var (
		blocks []*Block
		open   = map[string]*Block{} // by the mask of given columns, the block being filled
		mask   = make([]byte, len(columns))
		// every row's spans, cut from one array: a row's spans are len(columns) of it
		backing = make([][]byte, len(rows)*len(columns))
	)
	for r, row := range rows {
		spans, err := layout.Split(row.Data, backing[r*len(columns):r*len(columns):(r+1)*len(columns)])
		if err != nil {
			return nil, fmt.Errorf("row of message %q: %w", row.MessageID, err)
		}
		for i, s := range spans {
			mask[i] = '1'
			if s == nil {
				mask[i] = '0'
			}
		}
		b := open[string(mask)]
		if b == nil || len(b.Rows) >= maxRows || maxBytes > 0 && b.bytes+int64(len(row.Data)) > maxBytes {
			b = &Block{table: columns}
			for i, s := range spans {
				if s != nil {
					b.Columns = append(b.Columns, columns[i])
				}
			}
			open[string(mask)] = b
			blocks = append(blocks, b)
		}
		given := spans[:0]
		for _, s := range spans {
			if s != nil {
				given = append(given, s)
			}
		}
		b.Rows = append(b.Rows, row)
		b.spans = append(b.spans, given)
		b.bytes += int64(len(row.Data))
	}
	return blocks, nil
}

// Split returns the block's first and second halves (at least one row each; the block must have
// two rows or more).
func (b *Block) Split() (first, second *Block) {
	half := len(b.Rows) / 2
	return &Block{Columns: b.Columns, Rows: b.Rows[:half], spans: b.spans[:half], table: b.table},
		&Block{Columns: b.Columns, Rows: b.Rows[half:], spans: b.spans[half:], table: b.table}
}

// Statement returns "INSERT INTO `db`.`table` (`a`, `b`)" for the block's columns
// (chclient.InsertStatement).
func (b *Block) Statement(database, table string) string {
	return chclient.InsertStatement(database, table, b.columnNames())
}

// DeduplicationToken derives the block's insert_deduplication_token from its columns, its rows'
// message ids and their data (chclient.DeduplicationToken): the same block retried, or built
// again from the same rows, gets the same token, so a server that deduplicates inserts it once;
// two blocks of different messages never share one, even when the messages are identical.
func (b *Block) DeduplicationToken() string {
	return chclient.DeduplicationToken(b.columnNames(), b.identity())
}

func (b *Block) columnNames() []string {
	names := make([]string, len(b.Columns))
	for i, c := range b.Columns {
		names[i] = c.Name
	}
	return names
}

// identity is what the block's token is derived from: its rows' message ids and encoded rows.
func (b *Block) identity() chclient.Identity {
	id := chclient.Identity{IDs: make([]string, len(b.Rows)), Data: make([][]byte, len(b.Rows))}
	for i, r := range b.Rows {
		id.IDs[i], id.Data[i] = r.MessageID, r.Data
	}
	return id
}

// Insert sends the block as one INSERT (chclient.Insert), one column at a time, with settings as
// they are (no deduplication token is added). A block whose rows give no column is
// inserted by insertDefaults. It makes one attempt; the caller classifies the error and retries.
func (b *Block) Insert(ctx context.Context, conn driver.Conn, database, table string, settings clickhouse.Settings) error {
	return b.insert(ctx, conn, database, table, settings, false)
}

// insert is Insert with settings as chclient.ResolveSettings returns them and, when withToken
// (the server takes insert_deduplication_token), the block's DeduplicationToken added.
func (b *Block) insert(ctx context.Context, conn driver.Conn, database, table string, settings clickhouse.Settings, withToken bool) error {
	if len(b.Columns) == 0 {
		return b.insertDefaults(ctx, conn, database, table, chclient.InsertSettings(settings, withToken, b.columnNames(), b.identity()))
	}
	values, release, err := b.values()
	defer release()
	if err != nil {
		return err
	}
	return chclient.Insert(ctx, conn, database, table, b.columnNames(), values, settings, withToken, b.identity())
}

// values gives each of the block's columns as the driver takes it: a String column as Go
// strings that point into the rows' data (chclient.Strings, gathered by convert.StringColumn);
// another in the Native format (chclient.Native, built by convert.NativeColumn by copying the
// rows' values) when the column's type has one; else decoded into one Go slice (convert.Column)
// for the driver's columnar Append (chclient.Typed). Each carries the type its rows were
// converted for, for chclient.Insert to check against the server's. An error names the column
// and the row's message. release gives the columns' memory back once the driver has taken them
// (after the INSERT); the rows' data must stay as it is until then.
func (b *Block) values() (values []any, release func(), err error) {
	var pooled []interface{ Release() }
	release = func() {
		for _, c := range pooled {
			c.Release()
		}
	}
	cols := make([]interface{ Append([]byte) error }, len(b.Columns))
	for j, c := range b.Columns {
		if str, ok := convert.NewStringColumn(c.Type); ok {
			pooled = append(pooled, str)
			cols[j] = str
			continue
		}
		if native, ok := convert.NewNativeColumn(c.Type); ok {
			pooled = append(pooled, native)
			cols[j] = native
			continue
		}
		col, err := convert.NewColumn(c.Type)
		if err != nil {
			return nil, release, fmt.Errorf("column %q: %w", c.Name, err)
		}
		cols[j] = col
	}
	if err := b.fill(cols); err != nil {
		return nil, release, err
	}
	values = make([]any, len(b.Columns))
	for j, c := range b.Columns {
		switch col := cols[j].(type) {
		case *convert.StringColumn:
			values[j] = chclient.Strings{Values: col.Values(), Bytes: col.Bytes(), Type: c.TypeName}
		case *convert.NativeColumn:
			head, data, rows := col.Native()
			values[j] = chclient.Native{Head: head, Values: data, Rows: rows, Type: c.TypeName}
		case convert.Column:
			values[j] = chclient.Typed{Values: col.Values(), Type: c.TypeName}
		}
	}
	return values, release, nil
}

// fill appends the block's values of column j to cols[j], for every column, with room made first
// in the columns that take it (convert.Reserver). It goes through the rows in order, each row's
// values in one pass (their spans lie next to each other), rather than a column at a time across
// every row (a stride of a whole row's spans for each value): on blocks of 5,000 demo rows that
// took about a third longer (BenchmarkColumns). An error names the column and the row's message.
func (b *Block) fill(cols []interface{ Append([]byte) error }) error {
	sizes := make([]int, len(cols))
	for _, spans := range b.spans {
		for j, s := range spans {
			sizes[j] += len(s)
		}
	}
	for j, col := range cols {
		if r, ok := col.(convert.Reserver); ok {
			r.Reserve(len(b.Rows), sizes[j])
		}
	}
	for i, spans := range b.spans {
		for j, s := range spans {
			if err := cols[j].Append(s); err != nil {
				return fmt.Errorf("column %q of message %q: %w", b.Columns[j].Name, b.Rows[i].MessageID, err)
			}
		}
	}
	return nil
}

// insertDefaults inserts len(b.Rows) rows that take every column's DEFAULT. An INSERT must name a
// column (ClickHouse 18.16's native protocol, and clickhouse-go's batch), so it names one, c, and
// lets the server compute the value of c as its own DEFAULT would:
//
//	INSERT INTO db.t (c) SELECT <c's DEFAULT expression> FROM (SELECT arrayJoin(range(n)) AS __pubsub_to_clickhouse_row)
//
// the server then computes every other column's DEFAULT as for any INSERT. c is the first column
// whose DEFAULT expression the server can compute alone (one that names another column fails
// with code 47, UNKNOWN_IDENTIFIER, and the next is tried), or a Nullable column without a
// DEFAULT, given NULL. c's DEFAULT is the table's as it is now, read again from system.columns
// (schema.Fetch) before the INSERT, as the server's are for the other columns: the stage's
// schema may predate an ALTER ... MODIFY COLUMN that changed it, and the row would then hold
// c's old DEFAULT beside the new ones of the others. When no column will do, the rows cannot be
// inserted: a *chclient.RowsError saying so (a data error: the rows go to the dead letter). Any
// other server error, or a failure to read the table, is returned as it is, for the caller to
// classify (a DEFAULT the server cannot compute, such as a division by zero, is a data error of
// those rows).
func (b *Block) insertDefaults(ctx context.Context, conn driver.Conn, database, table string, settings clickhouse.Settings) error {
	current, err := schema.Fetch(ctx, conn, database, table)
	if err != nil {
		return err
	}
	now := make(map[string]schema.Column, len(current.Columns))
	for _, c := range current.Columns {
		now[c.Name] = c
	}
	var tried []string
	for _, c := range b.table {
		c, ok := now[c.Name]
		if !ok || !c.Writable() {
			continue // dropped, or made MATERIALIZED or ALIAS, since the stage read the table
		}
		expr := ""
		_, nullable := c.Type.Unwrap()
		switch {
		case c.HasDefault(): // DEFAULT, and EPHEMERAL: its expression, or its type's default value
			expr = c.DefaultExpression
		case c.DefaultKind == "" && nullable:
			expr = "NULL"
		default:
			continue
		}
		q := fmt.Sprintf("%s SELECT %s FROM (SELECT arrayJoin(range(%d)) AS __pubsub_to_clickhouse_row)",
			chclient.InsertStatement(database, table, []string{c.Name}), expr, len(b.Rows))
		err := conn.Exec(clickhouse.Context(ctx, clickhouse.WithSettings(settings)), q)
		if code, ok := chclient.Code(err); ok && code == 47 {
			tried = append(tried, c.Name)
			continue // the expression names another column
		}
		return err
	}
	return &chclient.RowsError{Err: fmt.Errorf("the message gives no column a value, so its row would take every column's DEFAULT, "+
		"but an INSERT must name a column and no column's DEFAULT can be computed on its own (tried %s): give at least one field", strings.Join(tried, ", "))}
}
