package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// serializedDoFn marks a log message that holds the pipeline's serialized DoFns: the URN of a Go
// DoFn's payload in the pipeline model, which the Dataflow runner logs in full (its text form)
// before it stages it.
const serializedDoFn = "beam:go:transform:dofn:v1"

// modelNotLogged is what is logged instead of such a message.
const modelNotLogged = "the pipeline model is not logged: its DoFns hold the ClickHouse password given as text " +
	"(keep it in Secret Manager instead, and the model is logged)"

// modelFilter is a slog.Handler that replaces every message holding the pipeline's serialized
// DoFns by modelNotLogged, and the password wherever else a message or one of its string
// attributes holds it (the job the Dataflow runner logs on a dry run lists every parameter, and a
// parameter's value may hold the password too) by secret.Mask. The launcher logs through it when
// the ClickHouse password is given as text: the DoFns then hold the password (base64-encoded
// JSON), and the launcher's log is readable more widely than the job.
type modelFilter struct {
	slog.Handler
	password secret.String
}

func (h modelFilter) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, serializedDoFn) {
		return h.Handler.Handle(ctx, slog.NewRecord(r.Time, r.Level, modelNotLogged, r.PC))
	}
	hidden := slog.NewRecord(r.Time, r.Level, h.password.Hide(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Value.Kind() == slog.KindString {
			a.Value = slog.StringValue(h.password.Hide(a.Value.String()))
		}
		hidden.AddAttrs(a)
		return true
	})
	return h.Handler.Handle(ctx, hidden)
}

func (h modelFilter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return modelFilter{h.Handler.WithAttrs(attrs), h.password}
}

func (h modelFilter) WithGroup(name string) slog.Handler {
	return modelFilter{h.Handler.WithGroup(name), h.password}
}
