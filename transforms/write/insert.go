// Package write is the write stage: it inserts batches of rows into the ClickHouse table through
// clickhouse-go/v2's batch API, one columnar Append per column.
package write

import (
	"context"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chtype"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/rowbinary"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
)

// Block is a set of rows that omit the same DEFAULT columns, so they go in one INSERT that names
// the other columns; ClickHouse computes each omitted column's DEFAULT.
type Block struct {
	// Columns are the columns the INSERT names, in table order.
	Columns []schema.Column
	// Data holds one rowbinary.Column per entry of Columns.
	Data []rowbinary.Column
	// Rows is the number of rows appended.
	Rows int
}

// Blocks decodes rows (RowBinaryWithDefaults over columns, see package convert) and groups them by
// the set of columns they give, in order of first appearance.
func Blocks(columns []schema.Column, rows [][]byte) ([]*Block, error) {
	types := make([]*chtype.Type, len(columns))
	for i, c := range columns {
		types[i] = c.Type
	}
	var (
		blocks []*Block
		byMask = map[string]*Block{}
		spans  [][]byte
		mask   = make([]byte, len(columns))
	)
	for _, row := range rows {
		var err error
		if spans, err = rowbinary.Split(types, row, spans); err != nil {
			return nil, err
		}
		for i, s := range spans {
			mask[i] = '1'
			if s == nil {
				mask[i] = '0'
			}
		}
		b := byMask[string(mask)]
		if b == nil {
			b = &Block{}
			for i, s := range spans {
				if s == nil {
					continue
				}
				col, err := rowbinary.NewColumn(columns[i].Type)
				if err != nil {
					return nil, fmt.Errorf("column %q: %w", columns[i].Name, err)
				}
				b.Columns = append(b.Columns, columns[i])
				b.Data = append(b.Data, col)
			}
			byMask[string(mask)] = b
			blocks = append(blocks, b)
		}
		j := 0
		for i, s := range spans {
			if s == nil {
				continue
			}
			if err := b.Data[j].Append(s); err != nil {
				return nil, fmt.Errorf("column %q: %w", columns[i].Name, err)
			}
			j++
		}
		b.Rows++
	}
	return blocks, nil
}

// InsertStatement returns "INSERT INTO `db`.`table` (`a`, `b`)" for the block's columns.
// ClickHouse 18.16 needs the columns named for clickhouse-go's native batch.
func (b *Block) InsertStatement(database, table string) string {
	names := make([]string, len(b.Columns))
	for i, c := range b.Columns {
		names[i] = quoteIdent(c.Name)
	}
	return fmt.Sprintf("INSERT INTO %s.%s (%s)", quoteIdent(database), quoteIdent(table), strings.Join(names, ", "))
}

// Insert sends the block as one INSERT.
func (b *Block) Insert(ctx context.Context, conn driver.Conn, database, table string) error {
	batch, err := conn.PrepareBatch(ctx, b.InsertStatement(database, table))
	if err != nil {
		return err
	}
	defer batch.Abort()
	for i, col := range b.Data {
		if err := batch.Column(i).Append(col.Values()); err != nil {
			return fmt.Errorf("column %q: %w", b.Columns[i].Name, err)
		}
	}
	return batch.Send()
}

// quoteIdent quotes a ClickHouse identifier with backticks.
func quoteIdent(s string) string {
	return "`" + strings.NewReplacer("\\", "\\\\", "`", "\\`").Replace(s) + "`"
}
