//go:build chdb

package main

import (
	"fmt"
	"strings"

	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
)

// handshakeQuery is what clickhouse-go's HTTP transport asks first (conn_http.go, queryHello):
// the server's name, version, protocol revision and time zone, read at its own protocol
// revision (client_protocol_version).
const handshakeQuery = "SELECT displayName(), version(), revision(), timezone()"

func isHandshake(sql string) bool {
	return strings.EqualFold(strings.Join(strings.Fields(strings.TrimSuffix(strings.TrimSpace(sql), ";")), " "), handshakeQuery)
}

// handshake re-encodes the engine's answer to handshakeQuery (Native at revision 0, the only
// Native the engine writes) at the client's revision, with revision() 0 in it. clickhouse-go
// reads the handshake at the revision it sent, and every later result at the revision() the
// handshake returned: 0 makes it read the engine's Native output as it is, which is what a
// server writes for a client that gives no client_protocol_version (no block info, no custom
// serialisation flags). The block codec is clickhouse-go's own.
func handshake(native []byte, revision uint64) ([]byte, error) {
	in := proto.NewBlock()
	if err := in.Decode(chproto.NewReader(strings.NewReader(string(native))), 0); err != nil {
		return nil, fmt.Errorf("the engine's answer to %q: %w", handshakeQuery, err)
	}
	if len(in.Columns) != 4 || in.Rows() != 1 {
		return nil, fmt.Errorf("the engine's answer to %q has %d columns and %d rows, want 4 and 1", handshakeQuery, len(in.Columns), in.Rows())
	}
	out := proto.NewBlock()
	var row []any
	for _, c := range in.Columns {
		if err := out.AddColumn(c.Name(), c.Type()); err != nil {
			return nil, err
		}
		row = append(row, c.Row(0, false))
	}
	row[2] = uint32(0)
	if err := out.Append(row...); err != nil {
		return nil, fmt.Errorf("the handshake's row %v: %w", row, err)
	}
	var buf chproto.Buffer
	if err := out.Encode(&buf, revision); err != nil {
		return nil, err
	}
	return buf.Buf, nil
}
