package udf

import (
	"context"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// Local applies the function of a Config to messages one at a time, outside a pipeline (the
// check command), exactly as the UDF stage does. It is not safe for concurrent use.
type Local struct {
	loader loader
	fn     *sandbox
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
//
// The error is for a function whose process cannot be started again after a call ended it.
func (l *Local) Apply(m flow.Message) (out flow.Message, dropped bool, deadLetter *flow.DeadLetter, err error) {
	var r result
	if err := applyAll(l.fn, []flow.Message{m}, func(got result) { r = got }); err != nil {
		return m, false, nil, err
	}
	switch r.outcome {
	case failed:
		dl := NewDeadLetter(m, r.err)
		return m, false, &dl, nil
	case droppedByUDF:
		return m, true, nil, nil
	default:
		return r.msg, false, nil, nil
	}
}

// Close ends the function's process and releases the Cloud Storage client, if any.
func (l *Local) Close() {
	l.fn.close()
	l.loader.close()
}
