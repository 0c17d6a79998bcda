package main

// The ClickHouse connection of the commands that use one (check, infer, replay --fromTable).

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
)

// openClickHouse opens the connection of o's ClickHouse parameters, for a command: it reads the
// password and the TLS material, opens and pings (a wrong port, scheme or password is said by
// chclient), then runs one query, so that an option of clickHouseUrl which clickhouse-go sends as
// a setting and which fails (a setting of text over the native protocol, a setting the server
// does not have: a misspelt option) is said at once, naming clickHouseUrl, whatever the
// command's first query of its own. Every error is labelled with the parameter to fix
// (pipeline.Labelled). The caller closes the connection.
func openClickHouse(ctx context.Context, o pipeline.Options) (driver.Conn, error) {
	ch, err := o.ClickHouse().Resolve(ctx)
	if err != nil {
		return nil, pipeline.Labelled(err, "")
	}
	conn, err := ch.Open(ctx)
	if err != nil {
		return nil, pipeline.LabelledSettings(err, o)
	}
	// The ping sends no setting; a query sends them all.
	if err := pipeline.FirstQuery(ctx, conn, o); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}
