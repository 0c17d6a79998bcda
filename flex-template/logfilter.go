package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"slices"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// serializedDoFn marks a log message that holds the pipeline's serialized DoFns: the URN of a Go
// DoFn's payload in the pipeline model, which the Dataflow runner logs in full (its text form)
// before it stages it.
const serializedDoFn = "beam:go:transform:dofn:v1"

// modelNotLogged is what is logged instead of such a message.
const modelNotLogged = "the pipeline model is not logged: its DoFns hold a password given as text " +
	"(keep ClickHouse's in Secret Manager instead, and the model is logged)"

// modelFilter is a slog.Handler that replaces every message holding the pipeline's serialized
// DoFns by modelNotLogged, and the password wherever else a message or one of its attributes
// holds it, of any kind, bound with With or not (the job the Dataflow runner logs on a dry run
// lists every parameter, and a parameter's value may hold the password too), by secret.Mask. The
// launcher logs through it when the ClickHouse configuration holds a secret as text
// (chclient.Config.TextSecrets: clickHousePassword given as text, or a password in
// clickHouseUrl, its http_proxy's among them): the DoFns then hold it (base64-encoded JSON), and
// the launcher's log is readable more widely than the job. secrets are those texts; each is
// hidden as it is and in the escaped forms a log line may show it in (textForms).
type modelFilter struct {
	slog.Handler
	secrets []string
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

// hide replaces the secrets in text, in each of their forms (textForms), by secret.Mask.
func (h modelFilter) hide(text string) string {
	for _, p := range h.secrets {
		for _, form := range textForms(p) {
			text = strings.ReplaceAll(text, form, secret.Mask)
		}
	}
	return text
}

// textForms returns the forms a secret may take in a log line, longest first: as it is; as JSON
// escapes it (the dry run logs the job as JSON, where a password with &, <, > or a quote is
// escaped); and percent-encoded as a URL's userinfo or query holds it, once or twice (the
// password of an http_proxy option is escaped within the proxy's URL, which the query escapes
// again).
func textForms(p string) []string {
	if p == "" {
		return nil
	}
	forms := []string{p}
	if b, err := json.Marshal(p); err == nil {
		forms = append(forms, string(b[1:len(b)-1]))
	}
	forms = append(forms, url.QueryEscape(p), url.PathEscape(p), url.QueryEscape(url.PathEscape(p)), url.QueryEscape(url.QueryEscape(p)))
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(forms)
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
	return modelFilter{h.Handler.WithAttrs(hidden), h.secrets}
}

func (h modelFilter) WithGroup(name string) slog.Handler {
	return modelFilter{h.Handler.WithGroup(name), h.secrets}
}
