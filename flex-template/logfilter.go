package main

import (
	"context"
	"encoding/json"
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
// DoFns by modelNotLogged, and the password wherever else a message or one of its attributes
// holds it, of any kind, bound with With or not (the job the Dataflow runner logs on a dry run
// lists every parameter, and a parameter's value may hold the password too), by secret.Mask. The launcher logs through it when
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
	hidden := slog.NewRecord(r.Time, r.Level, h.hide(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		hidden.AddAttrs(h.hideAttr(a))
		return true
	})
	return h.Handler.Handle(ctx, hidden)
}

// hide replaces the password in text, as it is and as JSON escapes it (the dry run logs the job
// as JSON, where a password with &, <, > or a quote is escaped), by secret.Mask.
func (h modelFilter) hide(text string) string {
	text = h.password.Hide(text)
	if p := h.password.Text(); p != "" {
		if b, err := json.Marshal(p); err == nil {
			if escaped := string(b[1 : len(b)-1]); escaped != p {
				text = strings.ReplaceAll(text, escaped, secret.Mask)
			}
		}
	}
	return text
}

// hideAttr returns a with the password hidden in its value, whatever its kind: a string as it
// is, a group attribute by attribute, any other value (an error, a slice, a LogValuer's) as the
// text the handler would print, when that holds the password.
func (h modelFilter) hideAttr(a slog.Attr) slog.Attr {
	a.Value = a.Value.Resolve()
	switch a.Value.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(h.hide(a.Value.String()))
	case slog.KindGroup:
		attrs := a.Value.Group()
		hidden := make([]slog.Attr, len(attrs))
		for i, g := range attrs {
			hidden[i] = h.hideAttr(g)
		}
		a.Value = slog.GroupValue(hidden...)
	default:
		if text := a.Value.String(); h.hide(text) != text {
			a.Value = slog.StringValue(h.hide(text))
		}
	}
	return a
}

func (h modelFilter) WithAttrs(attrs []slog.Attr) slog.Handler {
	hidden := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		hidden[i] = h.hideAttr(a)
	}
	return modelFilter{h.Handler.WithAttrs(hidden), h.password}
}

func (h modelFilter) WithGroup(name string) slog.Handler {
	return modelFilter{h.Handler.WithGroup(name), h.password}
}
