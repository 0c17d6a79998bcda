package udf

import (
	"context"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// Local applies the function of a Config to messages one at a time, outside a pipeline (the
// check command), exactly as the UDF stage does. It is not safe for concurrent use.
type Local struct {
	loader loader
	fn     *function
}

// Open reads the file of cfg and builds its function, as each worker's Setup does (cfg.Reload is
// ignored). The errors name the parameter at fault, as Check's do.
func Open(ctx context.Context, cfg Config) (*Local, error) {
	l := &Local{loader: loader{Config: cfg}}
	if err := l.loader.open(ctx); err != nil {
		return nil, err
	}
	fn, _, err := l.loader.load(ctx)
	if err != nil {
		l.loader.close()
		return nil, err
	}
	l.fn = fn
	return l, nil
}

// Apply applies the function to m. It returns the message to convert (Transformed, with
// Original set), or dropped true when the function dropped the message on purpose, or the dead
// letter the UDF stage would write (deadLetter not nil).
func (l *Local) Apply(m flow.Message) (out flow.Message, dropped bool, deadLetter *flow.DeadLetter) {
	out, o, err := applyTo(l.fn, m)
	switch o {
	case failed:
		dl := NewDeadLetter(m, err)
		return m, false, &dl
	case droppedByUDF:
		return m, true, nil
	}
	return out, false, nil
}

// Close releases the Cloud Storage client, if any.
func (l *Local) Close() { l.loader.close() }
